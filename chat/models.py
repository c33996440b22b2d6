"""Chat sessions and messages, with application-chosen UUIDs so retries upsert."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


class ChatSession(models.Model):
    """A conversation of one user with the entry agent (and, through it, its experts)."""

    id = models.UUIDField(verbose_name=_("ID"), primary_key=True)  # chosen by the client
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="chat_sessions",
    )
    agent = models.ForeignKey(
        "agents.Agent",
        verbose_name=_("agent"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    title = models.CharField(verbose_name=_("title"), max_length=200, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("chat session")
        verbose_name_plural = _("chat sessions")
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["user", "-updated_at"], name="chat_session_user_recent")]

    def __str__(self) -> str:
        return self.title or str(self.id)


class MessageRole(models.TextChoices):
    """Who a message is from: the user, an agent's text, or an agent's tool call."""

    USER = "user", _("User")
    AGENT = "agent", _("Agent")
    TOOL = "tool", _("Tool")


class MessageStatus(models.TextChoices):
    """Whether a message is still streaming."""

    STREAMING = "streaming", _("Streaming")
    COMPLETED = "completed", _("Completed")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class MessageOrigin(models.TextChoices):
    """Where a user message came from, when not from the user typing it."""

    TYPED = "", _("typed by the user")
    SCHEDULED = "scheduled", _("a scheduled prompt")


class ChatMessage(models.Model):
    """One message as the user sees it; agent and tool messages carry their agent tag and run."""

    id = models.UUIDField(
        verbose_name=_("ID"), primary_key=True
    )  # client-chosen for users, uuid5(run, step) for agents
    session = models.ForeignKey(
        ChatSession, verbose_name=_("session"), on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(verbose_name=_("role"), max_length=8, choices=MessageRole.choices)
    run = models.ForeignKey(
        "delegation.Run",
        verbose_name=_("run"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
    )
    agent = models.JSONField(
        verbose_name=_("agent"), null=True, blank=True
    )  # {kind, name, display_name, depth, path}
    content = models.TextField(verbose_name=_("content"), blank=True)
    model = models.CharField(
        verbose_name=_("model"), max_length=200, blank=True
    )  # "offline" or the model's name
    tool = models.JSONField(
        verbose_name=_("tool"), null=True, blank=True
    )  # {call_id, name, arguments, ok, result}
    # The knowledge an answer relies on: [{ref, document_id, title, version, chunk_id, quote, …}]
    citations = models.JSONField(verbose_name=_("citations"), default=list, blank=True)
    # An answer's model call: tokens and cost, as `message.completed` carried them (a reload
    # shows them too); null for user messages, tool messages and failure notes.
    usage = models.JSONField(verbose_name=_("usage"), null=True, blank=True)
    status = models.CharField(
        verbose_name=_("status"),
        max_length=10,
        choices=MessageStatus.choices,
        default=MessageStatus.COMPLETED,
    )
    # A user message that was not typed by the user (a scheduled prompt sent as the user).
    origin = models.CharField(
        verbose_name=_("origin"), max_length=10, choices=MessageOrigin.choices, blank=True
    )
    # An edited user message points at the one it replaces.
    edited_from = models.ForeignKey(
        "self",
        verbose_name=_("edited from"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Set when a regenerated or edited turn replaced this message: the id of the new turn's root
    # run. The message stays in the history as an older branch; the models no longer read it.
    superseded_by = models.UUIDField(
        verbose_name=_("superseded by"), null=True, blank=True, db_index=True
    )
    # When it appeared: an agent message streamed before its first save is dated from its start.
    created_at = models.DateTimeField(
        verbose_name=_("created at"), default=timezone.now, db_index=True
    )
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("chat message")
        verbose_name_plural = _("chat messages")
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["session", "created_at"], name="chat_message_session_time")]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class FeedbackRating(models.IntegerChoices):
    """Thumbs up or down."""

    UP = 1, _("thumbs up")
    DOWN = -1, _("thumbs down")


class MessageFeedback(models.Model):
    """A user's thumbs up or down on an answer, with an optional note (one per user and answer)."""

    message = models.ForeignKey(
        ChatMessage, verbose_name=_("message"), on_delete=models.CASCADE, related_name="feedback"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="message_feedback",
    )
    rating = models.SmallIntegerField(verbose_name=_("rating"), choices=FeedbackRating.choices)
    note = models.TextField(verbose_name=_("note"), blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("message feedback")
        verbose_name_plural = _("message feedback")
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["message", "user"], name="chat_feedback_once_per_user")
        ]

    def __str__(self) -> str:
        return gettext("%(rating)s by %(user)s on %(message)s") % {
            "rating": self.get_rating_display(),
            "user": self.user,
            "message": self.message_id,
        }


class ChatPreference(models.Model):
    """Per-user chat settings; the timezone tools use for "now"."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="chat_preference",
    )
    timezone = models.CharField(verbose_name=_("timezone"), max_length=64, blank=True)

    class Meta:
        verbose_name = _("chat preference")
        verbose_name_plural = _("chat preferences")

    def __str__(self) -> str:
        zone = self.timezone or gettext("site timezone")
        return f"{self.user}: {zone}"


class ApiToken(models.Model):
    """A user's API token, stored as a hash; `prefix` lets people tell their tokens apart."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="api_tokens",
    )
    name = models.CharField(verbose_name=_("name"), max_length=100)
    prefix = models.CharField(verbose_name=_("prefix"), max_length=16)
    key_hash = models.CharField(verbose_name=_("key hash"), max_length=64, unique=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    last_used_at = models.DateTimeField(verbose_name=_("last used at"), null=True, blank=True)
    revoked_at = models.DateTimeField(verbose_name=_("revoked at"), null=True, blank=True)

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
