"""The channels in admin: links (an admin may link an account for a user), events, deliveries."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext as _

from chat.channels.configured import line_configured, slack_configured
from chat.channels.models import ChannelLink, Delivery, InboundEvent


def _say_which_channels_are_off(request: HttpRequest) -> None:
    if not line_configured():
        messages.warning(
            request,
            _("LINE is off: set LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN to turn it on."),
        )
    if not slack_configured():
        messages.warning(
            request, _("Slack is off: set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN to turn it on.")
        )


@admin.register(ChannelLink)
class ChannelLinkAdmin(admin.ModelAdmin):
    """Linked accounts; adding one here links an account for a user (as its owner would)."""

    list_display = ("channel", "external_id", "user", "linked_by", "created_at")
    list_filter = ("channel",)
    search_fields = ("external_id", "user__username")
    autocomplete_fields = ("user",)
    readonly_fields = ("linked_by", "session_id", "created_at")

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        _say_which_channels_are_off(request)
        return super().changelist_view(request, extra_context)

    def save_model(self, request: HttpRequest, obj: ChannelLink, form: Any, change: bool) -> None:
        if not change:
            obj.linked_by = cast(Any, request.user)
        super().save_model(request, obj, form, change)


@admin.register(InboundEvent)
class InboundEventAdmin(admin.ModelAdmin):
    """What the channels sent, each kept once; read-only."""

    list_display = ("received_at", "channel", "external_id", "kind", "status")
    list_filter = ("channel", "status", "kind")
    search_fields = ("event_id", "external_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """Answers on their way back to a channel; read-only."""

    list_display = ("run_id", "status", "attempts", "sent_at")
    list_filter = ("status",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
