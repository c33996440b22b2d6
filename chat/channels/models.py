"""Who a channel's user is here, which of their events arrived, and which answers went out."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Channel(models.TextChoices):
    """The messaging services a user can reach the agents through."""

    LINE = "line", "LINE"
    SLACK = "slack", "Slack"


class ChannelLink(models.Model):
    """A channel's user account, linked to one platform user (by them on the page, or an admin)."""

    channel = models.CharField(verbose_name=_("channel"), max_length=10, choices=Channel.choices)
    external_id = models.CharField(verbose_name=_("account in the channel"), max_length=100)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="channel_links",
    )
    # Whether reminders (and other notices the platform sends unasked) come here too.
    reminders = models.BooleanField(verbose_name=_("reminders here"), default=True)
    # The conversation this account's messages continue (created with its first turn).
    session_id = models.UUIDField(verbose_name=_("chat session"), default=uuid.uuid4)
    linked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("linked by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(verbose_name=_("linked at"), auto_now_add=True)

    class Meta:
        verbose_name = _("channel link")
        verbose_name_plural = _("channel links")
        constraints = [
            models.UniqueConstraint(fields=["channel", "external_id"], name="channel_link_once")
        ]

    def __str__(self) -> str:
        return f"{self.get_channel_display()} {self.external_id} → {self.user}"


class LinkCode(models.Model):
    """A one-time code sent to an unknown channel account: signed in, its owner confirms it."""

    code = models.CharField(verbose_name=_("code"), max_length=40, unique=True)
    channel = models.CharField(verbose_name=_("channel"), max_length=10, choices=Channel.choices)
    external_id = models.CharField(verbose_name=_("account in the channel"), max_length=100)
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    used_at = models.DateTimeField(verbose_name=_("used at"), null=True, blank=True)

    class Meta:
        verbose_name = _("link code")
        verbose_name_plural = _("link codes")

    def __str__(self) -> str:
        return f"{self.get_channel_display()} {self.external_id}"


class InboundStatus(models.TextChoices):
    """What became of an inbound event."""

    RECEIVED = "received", _("received")
    STARTED = "started", _("turn started")
    ANSWERED = "answered", _("answered a question")
    UNLINKED = "unlinked", _("account not linked")
    UNSUPPORTED = "unsupported", _("not text")
    REFUSED = "refused", _("refused")


class InboundEvent(models.Model):
    """One event a channel sent us, kept once by its own id (a redelivery changes nothing)."""

    channel = models.CharField(verbose_name=_("channel"), max_length=10, choices=Channel.choices)
    event_id = models.CharField(verbose_name=_("event id"), max_length=100)
    external_id = models.CharField(verbose_name=_("account in the channel"), max_length=100)
    kind = models.CharField(verbose_name=_("kind"), max_length=20)
    text = models.TextField(verbose_name=_("text"), blank=True)
    # How to answer in the channel's way (LINE: the reply token; Slack: the thread).
    reply = models.JSONField(verbose_name=_("reply"), default=dict, blank=True)
    status = models.CharField(
        verbose_name=_("status"),
        max_length=12,
        choices=InboundStatus.choices,
        default=InboundStatus.RECEIVED,
    )
    received_at = models.DateTimeField(verbose_name=_("received at"), auto_now_add=True)

    class Meta:
        verbose_name = _("inbound event")
        verbose_name_plural = _("inbound events")
        constraints = [
            models.UniqueConstraint(fields=["channel", "event_id"], name="inbound_event_once")
        ]

    def __str__(self) -> str:
        return f"{self.get_channel_display()} {self.event_id}"


class DeliveryStatus(models.TextChoices):
    """Whether a turn's answer reached the channel."""

    PENDING = "pending", _("pending")
    SENT = "sent", _("sent")
    FAILED = "failed", _("failed")


class Delivery(models.Model):
    """A turn started from a channel, and its answer's way back there: sent once."""

    event = models.OneToOneField(
        InboundEvent, verbose_name=_("inbound event"), on_delete=models.CASCADE
    )
    run_id = models.UUIDField(verbose_name=_("turn"), unique=True)
    status = models.CharField(
        verbose_name=_("status"),
        max_length=8,
        choices=DeliveryStatus.choices,
        default=DeliveryStatus.PENDING,
    )
    attempts = models.PositiveIntegerField(verbose_name=_("attempts"), default=0)
    attempted_at = models.DateTimeField(verbose_name=_("last attempt"), null=True, blank=True)
    # The channel's idempotency key for a retried send (LINE: X-Line-Retry-Key).
    retry_key = models.UUIDField(verbose_name=_("retry key"), default=uuid.uuid4)
    error = models.TextField(verbose_name=_("error"), blank=True)
    sent_at = models.DateTimeField(verbose_name=_("sent at"), null=True, blank=True)
    progress_at = models.DateTimeField(verbose_name=_("last progress shown"), null=True, blank=True)

    class Meta:
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")

    def __str__(self) -> str:
        return f"{self.run_id}: {self.get_status_display()}"
