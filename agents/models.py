"""Agent definitions managed in admin, and their stored revisions."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from agents.registry import unknown_keys
from agents.revisions import Revision


class AnswerValidation(models.TextChoices):
    """How an agent's answers are checked before its caller gets them."""

    OFF = "off", "Off"
    RULES = "rules", "Rules (not empty, no needless refusal, citations in STRICT, length)"
    MODEL = "model", "Rules, then a validator model"


# The fallback chain's steps, in the order an admin lists them (docs/humans.md).
FALLBACK_STEPS = {
    "retry": "Retry once with the validator's issue appended",
    "next_expert": "Ask the next-best expert (by the routing policy), if one exists",
    "low_confidence": "Pass the answer on, marked low confidence (sent for review)",
    "unanswered": "Say honestly it could not be answered, and suggest whom to ask",
}
DEFAULT_FALLBACK_CHAIN = ["retry", "next_expert", "low_confidence"]


def default_fallback_chain() -> list[str]:
    """A fresh copy of the default chain (a mutable default must not be shared)."""
    return list(DEFAULT_FALLBACK_CHAIN)


def validate_fallback_chain(value: object) -> None:
    """A list of known steps, each at most once, nothing after a step that ends the chain."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError("A list of steps, e.g. retry, next_expert, low_confidence.")
    unknown = [v for v in value if v not in FALLBACK_STEPS]
    if unknown:
        raise ValidationError(
            f"Unknown step(s): {', '.join(unknown)}. Steps: {', '.join(FALLBACK_STEPS)}."
        )
    if len(set(value)) != len(value):
        raise ValidationError("A step is listed twice.")
    for step in value[:-1]:
        if step in ("low_confidence", "unanswered"):
            raise ValidationError(f"“{step}” ends the chain: it must be the last step.")


def validate_tool_key_list(value: object) -> None:
    """A list of tool keys the code registers."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError("A list of tool keys.")
    unknown = unknown_keys(value)
    if unknown:
        raise ValidationError(f"Unknown tool key(s): {', '.join(unknown)}.")
    if len(set(value)) != len(value):
        raise ValidationError("A tool key is listed twice.")


# An http(s) URL with a host: a DNS name, a compose or Kubernetes service name (Django's
# URLValidator refuses `http://vllm:8000/v1`, having no top-level domain), an IPv4 or a bracketed
# IPv6 address; a port; a path. One regex, so the OpenAPI schema states it as its `pattern`.
validate_server_url = RegexValidator(
    r"^https?://(\[[0-9A-Fa-f:.]+\]|[^\s/?#:@\[\]]+)(:[0-9]{1,5})?(/\S*)?$",
    "Enter a valid URL: http:// or https://, a host, an optional port and path, e.g. "
    "http://vllm:8000/v1.",
)


def validate_group_name(value: str) -> None:
    """The name of an existing group (a name with a NUL is none: the database is not asked,
    Postgres refuses NULs in text; the field's own validator names that)."""
    if value and "\x00" not in value and not Group.objects.filter(name=value).exists():
        raise ValidationError(f"No group named {value!r}.")


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
    base_url = models.CharField(
        max_length=200,
        blank=True,
        validators=[validate_server_url],
        help_text="OpenAI-compatible server for this agent, e.g. http://vllm:8000/v1; blank uses "
        "OPENAI_BASE_URL.",
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

    # Quality gate and humans in the loop (delegation/humans, docs/humans.md).
    validate_answers = models.CharField(
        max_length=8,
        choices=AnswerValidation.choices,
        default=AnswerValidation.OFF,
        help_text="Check this agent's answers before its caller gets them; an invalid answer "
        "goes through the fallback chain.",
    )
    validator_model = models.CharField(
        max_length=200,
        blank=True,
        help_text="A fast model for the validator call; blank uses this agent's model.",
    )
    answer_min_chars = models.PositiveIntegerField(
        default=0, help_text="Rules: an answer shorter than this is invalid (0: no bound)."
    )
    answer_max_chars = models.PositiveIntegerField(
        default=0, help_text="Rules: an answer longer than this is invalid (0: no bound)."
    )
    fallback_chain = models.JSONField(
        default=default_fallback_chain,
        blank=True,
        validators=[validate_fallback_chain],
        help_text="What happens to an invalid answer, in order: "
        + "; ".join(f"{k}: {v}" for k, v in FALLBACK_STEPS.items())
        + ". When the chain runs out the answer goes on marked low confidence.",
    )
    require_approval = models.BooleanField(
        default=False,
        verbose_name="needs human approval for side-effect tools",
        help_text="Calls of the tools below wait in the inbox until staff approve, modify or "
        "reject them. With no tool ticked: every tool that changes data.",
    )
    approval_tool_keys = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_tool_key_list],
        verbose_name="tools needing approval",
        help_text="Blank: every tool of this agent registered as changing data.",
    )
    human_sla_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(10), MaxValueValidator(30 * 24 * 3600)],
        verbose_name="human answer deadline (seconds)",
        help_text="How long a question or approval waits for a human; then the run goes on "
        "with “no answer from a human”. Blank uses HUMANS_SLA_SECONDS.",
    )
    human_group = models.CharField(
        max_length=150,
        blank=True,
        validators=[validate_group_name],
        verbose_name="assignment group",
        help_text="The staff group whose members see this agent's questions and approvals "
        "(blank: every staff member).",
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
    "validate_answers",
    "validator_model",
    "answer_min_chars",
    "answer_max_chars",
    "fallback_chain",
    "require_approval",
    "approval_tool_keys",
    "human_sla_seconds",
    "human_group",
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


class AgentRevision(Revision):
    """A stored snapshot of an agent as saved, to diff against and restore."""

    subject_field = "agent"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="revisions")
    comment = models.CharField(max_length=500, blank=True)

    class Meta(Revision.Meta):
        constraints = [
            models.UniqueConstraint(fields=["agent", "version"], name="unique_agent_revision")
        ]
