"""Routing policies: ordered rules that put each turn in a mode (GUIDE, CHAT, STRICT) and may
name the expert to ask; a router model for what no rule decides; per-session memory."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from agents.revisions import Revision


class Mode(models.TextChoices):
    """How a turn is answered: orientation, explanation, or audit-grade with citations."""

    GUIDE = "GUIDE", pgettext_lazy("routing mode", "Guide")
    CHAT = "CHAT", pgettext_lazy("routing mode", "Chat")
    STRICT = "STRICT", pgettext_lazy("routing mode", "Strict")


class RuleKind(models.TextChoices):
    """Overrides are tried before intent rules."""

    OVERRIDE = "override", _("explicit override")
    INTENT = "intent", _("intent rule")


class Learning(models.TextChoices):
    """Whether routing uses its statistics: not at all, shown only, or in the choice."""

    OFF = "off", pgettext_lazy("routing learning", "Off")
    ADVISORY = "advisory", pgettext_lazy("routing learning", "Advisory")
    ON = "on", pgettext_lazy("routing learning", "On")


class RoutingPolicy(models.Model):
    """A routing policy for one or more entry agents (edited in admin, versioned)."""

    name = models.SlugField(verbose_name=_("name"), max_length=100, unique=True)
    description = models.TextField(verbose_name=_("description"), blank=True)
    entry_agents = models.ManyToManyField(
        "agents.Agent",
        verbose_name=_("entry agents"),
        blank=True,
        related_name="routing_policies",
        help_text=_("Entry agents whose turns this policy routes (an agent has at most one)."),
    )
    default_mode = models.CharField(
        verbose_name=_("default mode"), max_length=6, choices=Mode.choices, default=Mode.CHAT
    )
    chat_top_k = models.PositiveSmallIntegerField(
        verbose_name=_("passages in CHAT mode"),
        default=3,
        help_text=_("Knowledge passages to retrieve in CHAT mode."),
    )
    router_enabled = models.BooleanField(
        verbose_name=_("router enabled"),
        default=True,
        help_text=_(
            "For what no rule decides, ask a model to pick the expert (else the default "
            "mode, answered by the entry agent itself)."
        ),
    )
    router_provider = models.CharField(
        verbose_name=_("router provider"),
        max_length=20,
        blank=True,
        help_text=_("Blank: the entry agent's provider."),
    )
    router_model = models.CharField(
        verbose_name=_("router model"),
        max_length=200,
        blank=True,
        help_text=_("A fast model for routing (blank: the agent's)."),
    )
    router_timeout = models.FloatField(
        verbose_name=_("router timeout"),
        default=5.0,
        help_text=_("Seconds; past it the keyword/tag fallback decides."),
    )
    memory_per_user = models.BooleanField(
        verbose_name=_("memory per user"),
        default=False,
        help_text=_("Keep routing memory per user instead of per chat session."),
    )
    learning = models.CharField(
        verbose_name=_("learning"),
        max_length=8,
        choices=Learning.choices,
        default=Learning.OFF,
        help_text=_(
            "Off: statistics are not read. Advisory: each decision shows and records the "
            "figures, which change nothing. On: they break ties, and an expert below the "
            "threshold for the intent is asked only after the alternatives."
        ),
    )
    learning_threshold = models.PositiveSmallIntegerField(
        verbose_name=_("learning threshold (%)"),
        default=50,
        validators=[MaxValueValidator(100)],
        help_text=_(
            "An expert whose share of good answers for an intent is below this is asked after "
            "the alternatives (good: validated or rated up, out of those judged)."
        ),
    )
    learning_min_turns = models.PositiveSmallIntegerField(
        verbose_name=_("minimum turns"),
        default=5,
        help_text=_("An expert's figures for an intent count only from this many delegations."),
    )
    version = models.PositiveIntegerField(verbose_name=_("version"), default=0, editable=False)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("routing policy")
        verbose_name_plural = _("routing policies")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RoutingRule(models.Model):
    """One rule: words or a pattern that put a message in a mode, optionally with an expert."""

    policy = models.ForeignKey(
        RoutingPolicy, verbose_name=_("policy"), on_delete=models.CASCADE, related_name="rules"
    )
    kind = models.CharField(
        verbose_name=_("kind"), max_length=8, choices=RuleKind.choices, default=RuleKind.INTENT
    )
    order = models.PositiveIntegerField(
        verbose_name=_("order"), default=0, help_text=_("Lower first, within its kind.")
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    name = models.CharField(
        verbose_name=_("name"),
        max_length=100,
        help_text=_("Shown in the routing debug, e.g. 'resume'."),
    )
    keywords = models.TextField(
        verbose_name=_("keywords"),
        blank=True,
        help_text=_(
            "Words or phrases, one per line or comma-separated (Chinese and English; "
            "Traditional and Simplified match each other)."
        ),
    )
    pattern = models.CharField(
        verbose_name=_("pattern"),
        max_length=500,
        blank=True,
        help_text=_("A regular expression (case-insensitive)."),
    )
    max_chars = models.PositiveSmallIntegerField(
        verbose_name=_("maximum length"),
        null=True,
        blank=True,
        help_text=_("Matches any message at most this long (e.g. vague one-word questions)."),
    )
    mode = models.CharField(verbose_name=_("mode"), max_length=6, choices=Mode.choices)
    target = models.ForeignKey(
        "agents.Agent",
        verbose_name=_("target"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The expert to ask (blank: the entry agent answers or chooses)."),
    )
    strict_on_numbers = models.BooleanField(
        verbose_name=_("strict on numbers"),
        default=False,
        help_text=_("STRICT instead when the same sentence carries a number, year or percentage."),
    )
    reason = models.CharField(
        verbose_name=_("reason"),
        max_length=300,
        blank=True,
        help_text=_("Why, in words (recorded as the routing reason)."),
    )

    class Meta:
        verbose_name = _("routing rule")
        verbose_name_plural = _("routing rules")
        ordering = ["policy", "kind", "order", "pk"]

    def __str__(self) -> str:
        return f"{self.name} → {self.mode}"

    def clean(self) -> None:
        """A rule must match something, and its pattern must be a valid regular expression."""
        words = [w for w in re.split(r"[\n,，、;；]+", self.keywords or "") if w.strip()]
        if not (words or self.pattern or self.max_chars):
            raise ValidationError(
                gettext(
                    "A rule needs keywords, a pattern or a maximum length: as it is, it matches "
                    "nothing."
                )
            )
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValidationError(
                    {
                        "pattern": gettext("Not a valid regular expression: %(error)s.")
                        % {"error": exc}
                    }
                ) from exc


class RoutingPolicyRevision(Revision):
    """A policy (with its rules) as saved, to diff and restore."""

    subject_field = "policy"

    policy = models.ForeignKey(
        RoutingPolicy, verbose_name=_("policy"), on_delete=models.CASCADE, related_name="revisions"
    )

    class Meta(Revision.Meta):
        verbose_name = _("routing policy revision")
        verbose_name_plural = _("routing policy revisions")
        constraints = [
            models.UniqueConstraint(fields=["policy", "version"], name="unique_policy_revision")
        ]


class SessionMemory(models.Model):
    """What routing remembers of a chat session (or a user): intents, topics, documents seen."""

    session = models.OneToOneField(
        "chat.ChatSession",
        verbose_name=_("session"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="routing_memory",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="routing_memories",
    )
    data = models.JSONField(verbose_name=_("data"), default=dict, blank=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("session memory")
        verbose_name_plural = _("session memories")
        constraints = [
            models.UniqueConstraint(
                fields=["user"],
                condition=models.Q(session__isnull=True),
                name="one_user_memory",
            )
        ]

    def __str__(self) -> str:
        return gettext("memory of %(owner)s") % {"owner": self.session_id or self.user}


NO_INTENT = "none"  # the intent of a turn no intent rule decided


class RoutingStat(models.Model):
    """How an entry agent's delegations to one expert went for one intent on one day: counters
    bumped where each thing happens (a run's end, a verdict, a rating), never recounted."""

    entry = models.CharField(verbose_name=_("entry agent"), max_length=100)
    expert = models.CharField(verbose_name=_("expert"), max_length=100)
    intent = models.CharField(verbose_name=_("intent"), max_length=100, default=NO_INTENT)
    day = models.DateField(verbose_name=_("day"))
    delegations = models.PositiveIntegerField(verbose_name=_("delegations"), default=0)
    succeeded = models.PositiveIntegerField(verbose_name=_("succeeded"), default=0)
    validation_passed = models.PositiveIntegerField(verbose_name=_("validation passed"), default=0)
    validation_failed = models.PositiveIntegerField(verbose_name=_("validation failed"), default=0)
    rated_up = models.IntegerField(verbose_name=_("rated up"), default=0)
    rated_down = models.IntegerField(verbose_name=_("rated down"), default=0)
    fell_back = models.PositiveIntegerField(verbose_name=_("fell back"), default=0)
    refused = models.PositiveIntegerField(verbose_name=_("refused"), default=0)

    class Meta:
        verbose_name = _("routing statistic")
        verbose_name_plural = _("routing statistics")
        ordering = ["-day", "entry", "expert", "intent"]
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "expert", "intent", "day"], name="one_routing_stat_per_day"
            )
        ]  # (its index, entry first, serves the window's read of one entry agent)

    def __str__(self) -> str:
        return f"{self.entry} → {self.expert} ({self.intent}, {self.day})"
