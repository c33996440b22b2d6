"""Agent definitions managed in admin, and their stored revisions."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models


class Provider(models.TextChoices):
    """Which model provider an agent talks to."""

    DEFAULT = "default", "Default (OpenAI-compatible if configured, else offline)"
    OPENAI = "openai", "OpenAI-compatible API"
    OFFLINE = "offline", "Built-in offline model"


class Agent(models.Model):
    """One agent definition: prompt, model settings, tools, sub-agents, limits and access."""

    name = models.SlugField(
        max_length=64, unique=True, help_text="Stable identifier, e.g. finance."
    )
    display_name = models.CharField(max_length=120)
    description = models.TextField(
        blank=True, help_text="What this agent is good at; shown to agents that may delegate to it."
    )
    tags = models.JSONField(default=list, blank=True, help_text="Specialization tags for routing.")
    system_prompt = models.TextField(blank=True)

    provider = models.CharField(max_length=16, choices=Provider.choices, default=Provider.DEFAULT)
    model = models.CharField(
        max_length=200, blank=True, help_text="Model name; blank uses OPENAI_MODEL."
    )
    base_url = models.URLField(
        blank=True, help_text="OpenAI-compatible server for this agent; blank uses OPENAI_BASE_URL."
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[
            RegexValidator(
                r"^[A-Z_][A-Z0-9_]*$", "An environment variable name, e.g. VLLM_API_KEY."
            )
        ],
        help_text="Name of the environment variable holding this agent's API key; blank uses "
        "OPENAI_API_KEY. Keys never live in the database.",
    )
    temperature = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)]
    )
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(200_000)]
    )

    tool_keys = models.JSONField(default=list, blank=True)
    allowed_subagents = models.ManyToManyField(
        "self", symmetrical=False, blank=True, related_name="allowed_callers"
    )
    max_depth = models.PositiveSmallIntegerField(
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(10)],
        help_text="How deep a delegation chain started by this agent may go.",
    )
    max_steps = models.PositiveSmallIntegerField(
        default=8,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Model calls per run; the last one is made without tools so the run answers.",
    )

    turn_max_cost = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0))],
        verbose_name="turn max cost",
        help_text="As the entry agent: the most one turn may cost, delegations included, in "
        "USAGE_CURRENCY. Blank uses TURN_MAX_COST.",
    )

    answer_from_knowledge_only = models.BooleanField(
        default=False,
        verbose_name="answer only from knowledge",
        help_text="Strict answers: only from this agent's knowledge bases, with citations; when "
        "they hold nothing relevant, the agent says what is missing instead of answering.",
    )

    enabled = models.BooleanField(default=True)
    delegatable = models.BooleanField(default=True, help_text="Other agents may delegate to it.")
    is_entry = models.BooleanField(
        default=False, verbose_name="entry agent", help_text="The agent users talk to by default."
    )
    access_group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        help_text="Only members of this group may use the agent (blank: every signed-in user).",
    )
    access_permission = models.CharField(
        max_length=200,
        blank=True,
        help_text="Permission the user needs, as app_label.codename (blank: none).",
    )

    version = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_entry"], condition=models.Q(is_entry=True), name="one_entry_agent"
            )
        ]

    def __str__(self) -> str:
        return self.display_name or self.name


# What admins (form or API) edit, in the order they see it; revisions snapshot the same.
AGENT_EDITABLE_FIELDS = [
    "name",
    "display_name",
    "description",
    "tags",
    "system_prompt",
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "max_tokens",
    "tool_keys",
    "answer_from_knowledge_only",
    "allowed_subagents",
    "max_depth",
    "max_steps",
    "turn_max_cost",
    "enabled",
    "delegatable",
    "is_entry",
    "access_group",
    "access_permission",
]


class AgentRevision(models.Model):
    """A stored snapshot of an agent as saved, to diff against and restore."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    snapshot = models.JSONField()
    comment = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "version"], name="unique_agent_revision")
        ]

    def __str__(self) -> str:
        return f"{self.agent.name} v{self.version}"
