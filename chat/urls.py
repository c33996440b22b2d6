"""HTTP routes of the chat app."""

from django.urls import path
from django.views.i18n import JavaScriptCatalog, set_language

from chat.inbox.views import inbox_index
from chat.views import chat_index

app_name = "chat"
urlpatterns = [
    path("", chat_index, name="index"),
    # The page's JavaScript strings (a script src, so the CSP holds) and the language menu.
    path("jsi18n/", JavaScriptCatalog.as_view(domain="djangojs"), name="javascript-catalog"),
    path("i18n/setlang/", set_language, name="set_language"),
    path("inbox/", inbox_index, name="inbox"),
]
