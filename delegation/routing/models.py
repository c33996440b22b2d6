"""Routing policies: ordered rules that put each turn in a mode (GUIDE, CHAT, STRICT) and may
name the expert to ask; a router model for what no rule decides; per-session memory."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from agents.revisions import Revision


class Mode(models.TextChoices):
    """How a turn is answered: orientation, explanation, or audit-grade with citations."""

    GUIDE = "GUIDE"
    CHAT = "CHAT"
    STRICT = "STRICT"


class RuleKind(models.TextChoices):
    """Overrides are tried before intent rules."""

    OVERRIDE = "override", "explicit override"
    INTENT = "intent", "intent rule"


class RoutingPolicy(models.Model):
    """A routing policy for one or more entry agents (edited in admin, versioned)."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    entry_agents = models.ManyToManyField(
        "agents.Agent",
        blank=True,
        related_name="routing_policies",
        help_text="Entry agents whose turns this policy routes (an agent has at most one).",
    )
    default_mode = models.CharField(max_length=6, choices=Mode.choices, default=Mode.CHAT)
    chat_top_k = models.PositiveSmallIntegerField(
        default=3, help_text="Knowledge passages to retrieve in CHAT mode."
    )
    router_enabled = models.BooleanField(
        default=True,
        help_text="For what no rule decides, ask a model to pick the expert (else the default "
        "mode, answered by the entry agent itself).",
    )
    router_provider = models.CharField(
        max_length=20, blank=True, help_text="Blank: the entry agent's provider."
    )
    router_model = models.CharField(
        max_length=200, blank=True, help_text="A fast model for routing (blank: the agent's)."
    )
    router_timeout = models.FloatField(
        default=5.0, help_text="Seconds; past it the keyword/tag fallback decides."
    )
    memory_per_user = models.BooleanField(
        default=False, help_text="Keep routing memory per user instead of per chat session."
    )
    version = models.PositiveIntegerField(default=0, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "routing policies"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RoutingRule(models.Model):
    """One rule: words or a pattern that put a message in a mode, optionally with an expert."""

    policy = models.ForeignKey(RoutingPolicy, on_delete=models.CASCADE, related_name="rules")
    kind = models.CharField(max_length=8, choices=RuleKind.choices, default=RuleKind.INTENT)
    order = models.PositiveIntegerField(default=0, help_text="Lower first, within its kind.")
    enabled = models.BooleanField(default=True)
    name = models.CharField(max_length=100, help_text="Shown in the routing debug, e.g. 'resume'.")
    keywords = models.TextField(
        blank=True,
        help_text="Words or phrases, one per line or comma-separated (Chinese and English; "
        "Traditional and Simplified match each other).",
    )
    pattern = models.CharField(
        max_length=500, blank=True, help_text="A regular expression (case-insensitive)."
    )
    max_chars = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Matches any message at most this long (e.g. vague one-word questions).",
    )
    mode = models.CharField(max_length=6, choices=Mode.choices)
    target = models.ForeignKey(
        "agents.Agent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The expert to ask (blank: the entry agent answers or chooses).",
    )
    strict_on_numbers = models.BooleanField(
        default=False,
        help_text="STRICT instead when the same sentence carries a number, year or percentage.",
    )
    reason = models.CharField(
        max_length=300, blank=True, help_text="Why, in words (recorded as the routing reason)."
    )

    class Meta:
        ordering = ["policy", "kind", "order", "pk"]

    def __str__(self) -> str:
        return f"{self.name} → {self.mode}"

    def clean(self) -> None:
        """A rule must match something, and its pattern must be a valid regular expression."""
        words = [w for w in re.split(r"[\n,，、;；]+", self.keywords or "") if w.strip()]
        if not (words or self.pattern or self.max_chars):
            raise ValidationError(
                "A rule needs keywords, a pattern or a maximum length: as it is, it matches "
                "nothing."
            )
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValidationError(
                    {"pattern": f"Not a valid regular expression: {exc}."}
                ) from exc


class RoutingPolicyRevision(Revision):
    """A policy (with its rules) as saved, to diff and restore."""

    subject_field = "policy"

    policy = models.ForeignKey(RoutingPolicy, on_delete=models.CASCADE, related_name="revisions")

    class Meta(Revision.Meta):
        constraints = [
            models.UniqueConstraint(fields=["policy", "version"], name="unique_policy_revision")
        ]


class SessionMemory(models.Model):
    """What routing remembers of a chat session (or a user): intents, topics, documents seen."""

    session = models.OneToOneField(
        "chat.ChatSession",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="routing_memory",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="routing_memories"
    )
    data = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "session memories"
        constraints = [
            models.UniqueConstraint(
                fields=["user"],
                condition=models.Q(session__isnull=True),
                name="one_user_memory",
            )
        ]

    def __str__(self) -> str:
        return f"memory of {self.session_id or self.user}"
