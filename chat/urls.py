"""HTTP routes of the chat app."""

from django.urls import path

from chat.inbox.views import inbox_index
from chat.views import chat_index

app_name = "chat"
urlpatterns = [
    path("", chat_index, name="index"),
    path("inbox/", inbox_index, name="inbox"),
]
