"""URLs of the channels: webhooks, the link pages, and the offline demo's LINE."""

from django.urls import path

from chat.channels import views
from chat.channels.demo import api as demo_api
from chat.channels.demo import phone as demo_phone

urlpatterns = [
    path("channels/line/webhook", views.line_webhook, name="line-webhook"),
    path("channels/slack/events", views.slack_events, name="slack-events"),
    path("channels/slack/interactions", views.slack_interactions, name="slack-interactions"),
    path("channels/link/<str:code>/", views.link_page, name="channel-link"),
    path("channels/links/", views.links_page, name="channel-links"),
    path(
        "channels/links/<int:link_id>/remove/", views.link_remove_view, name="channel-link-remove"
    ),
    path(
        "channels/links/<int:link_id>/reminders/",
        views.link_reminders_view,
        name="channel-link-reminders",
    ),
    path("demo/line/", demo_phone.demo_line_phone, name="demo-line"),
    path("demo/line/chat", demo_phone.demo_line_chat, name="demo-line-chat"),
    path("demo/line/send", demo_phone.demo_line_send, name="demo-line-send"),
    path("demo/line/api/v2/bot/<path:method>", demo_api.demo_line_api, name="demo-line-api"),
]
