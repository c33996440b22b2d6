"""The channels gateway as a Django app (label `chat_channels`: `channels` is Django Channels')."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChannelsGatewayConfig(AppConfig):
    """Links, inbound events and deliveries of the messaging channels."""

    name = "chat.channels"
    label = "chat_channels"
    verbose_name = _("Messaging channels")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat.channels.approvals import approval_after_wait
        from chat.channels.delivery import delivery_after_turn
        from chat.channels.progress import progress_after_answer_grew, progress_after_expert_asked
        from chat.channels.questions import question_after_wait
        from delegation.runs.hooks import hooks_register

        hooks_register(
            turn_ended=delivery_after_turn,
            person_waiting=question_after_wait,
            expert_asked=progress_after_expert_asked,
            answer_growing=progress_after_answer_grew,
        )
        hooks_register(person_waiting=approval_after_wait)  # (a list hook: one per call)
