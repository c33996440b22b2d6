"""Pages of watches for end users."""

from django.urls import path

from reminders.watches.views import watch_mute_view, watches_page

app_name = "watches"
urlpatterns = [
    path("watches/", watches_page, name="page"),
    path("watches/<int:watch_id>/mute/", watch_mute_view, name="mute"),
]
