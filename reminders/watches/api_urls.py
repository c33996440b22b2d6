"""REST routes of the user's own watches and notification settings, under /api/v1/."""

from django.urls import path

from reminders.watches.api import NotificationSettingsView, WatchDetailView, WatchListView

urlpatterns = [
    path("watches/", WatchListView.as_view(), name="watch-list"),
    path("watches/<int:watch_id>/", WatchDetailView.as_view(), name="watch-detail"),
    path(
        "notifications/settings/",
        NotificationSettingsView.as_view(),
        name="notification-settings",
    ),
]
