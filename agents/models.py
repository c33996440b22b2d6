"""Agent definitions managed in admin, and their stored revisions."""

from __future__ import annotations

import re
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from agents.names import NamedInLanguages, validate_descriptions, validate_display_names
from agents.registry import unknown_keys
from agents.revisions import Revision


class AnswerValidation(models.TextChoices):
    """How an agent's answers are checked before its caller gets them."""

    OFF = "off", _("Off")
    RULES = "rules", _("Rules (not empty, no needless refusal, citations in STRICT, length)")
    MODEL = "model", _("Rules, then a validator model")


# The fallback chain's steps, in the order an admin lists them (docs/humans.md).
FALLBACK_STEPS = {
    "retry": _("Retry once with the validator's issue appended"),
    "next_expert": _("Ask the next-best expert (by the routing policy), if one exists"),
    "low_confidence": _("Pass the answer on, marked low confidence (sent for review)"),
    "unanswered": _("Say honestly it could not be answered, and suggest whom to ask"),
}
DEFAULT_FALLBACK_CHAIN = ["retry", "next_expert", "low_confidence"]


def default_fallback_chain() -> list[str]:
    """A fresh copy of the default chain (a mutable default must not be shared)."""
    return list(DEFAULT_FALLBACK_CHAIN)


def validate_fallback_chain(value: object) -> None:
    """A list of known steps, each at most once, nothing after a step that ends the chain."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(_("A list of steps, e.g. retry, next_expert, low_confidence."))
    unknown = [v for v in value if v not in FALLBACK_STEPS]
    if unknown:
        raise ValidationError(
            _("Unknown step(s): %(unknown)s. Steps: %(steps)s.")
            % {"unknown": ", ".join(unknown), "steps": ", ".join(FALLBACK_STEPS)}
        )
    if len(set(value)) != len(value):
        raise ValidationError(_("A step is listed twice."))
    for step in value[:-1]:
        if step in ("low_confidence", "unanswered"):
            raise ValidationError(
                _("“%(step)s” ends the chain: it must be the last step.") % {"step": step}
            )


def validate_tool_key_list(value: object) -> None:
    """A list of tool keys the code registers."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(_("A list of tool keys."))
    unknown = unknown_keys(value)
    if unknown:
        raise ValidationError(_("Unknown tool key(s): %(keys)s.") % {"keys": ", ".join(unknown)})
    if len(set(value)) != len(value):
        raise ValidationError(_("A tool key is listed twice."))


# An http(s) URL with a host: a DNS name, a compose or Kubernetes service name (Django's
# URLValidator refuses `http://vllm:8000/v1`, having no top-level domain), an IPv4 or a bracketed
# IPv6 address; a port; a path. One regex, so the OpenAPI schema states it as its `pattern`.
validate_server_url = RegexValidator(
    r"^https?://(\[[0-9A-Fa-f:.]+\]|[^\s/?#:@\[\]]+)(:[0-9]{1,5})?(/\S*)?$",
    _(
        "Enter a valid URL: http:// or https://, a host, an optional port and path, e.g. "
        "http://vllm:8000/v1."
    ),
)


_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,99}$")
ENV_PATTERN = r"^[A-Z_][A-Z0-9_]*$"
ENV_NAME = RegexValidator(ENV_PATTERN, _("An environment variable name, e.g. VLLM_API_KEY."))


def validate_secret_headers(value: object) -> None:
    """Header names mapped to the environment variables that hold their values."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValidationError(
            _("An object of header names and variable names, e.g. {“X-Api-Key”: “PEER_KEY”}.")
        )
    if len(value) > 10:
        raise ValidationError(_("At most 10 headers."))
    for name, variable in value.items():
        if not _HEADER_NAME.match(name):
            raise ValidationError(_("“%(name)s” is not a header name.") % {"name": name})
        if not re.fullmatch(ENV_PATTERN, variable):
            raise ValidationError(
                _("“%(variable)s” is not an environment variable name, e.g. PEER_KEY.")
                % {"variable": variable}
            )


def validate_call_timeout(value: int | None) -> None:
    """A timeout one model call may take within the workers' time limits (settings)."""
    if value is not None and value > settings.MODEL_CALL_WORST_SECONDS:
        raise ValidationError(
            _(
                "At most %(limit)d seconds: a longer call would outlast a worker's time "
                "limit (raise OPENAI_TIMEOUT to allow more)."
            )
            % {"limit": settings.MODEL_CALL_WORST_SECONDS}
        )


def validate_group_name(value: str) -> None:
    """The name of an existing group (a name with a NUL is none: the database is not asked,
    Postgres refuses NULs in text; the field's own validator names that)."""
    if value and "\x00" not in value and not Group.objects.filter(name=value).exists():
        raise ValidationError(_("No group named “%(name)s”.") % {"name": value})


class Provider(models.TextChoices):
    """Which model provider an agent talks to."""

    DEFAULT = "default", _("Default (OpenAI-compatible if configured, else offline)")
    OPENAI = "openai", _("OpenAI-compatible API")
    OFFLINE = "offline", _("Built-in offline model")
    A2A = "a2a", _("Remote agent (A2A): the base URL serves its agent card")


def _fallback_chain_help() -> str:
    """The fallback chain's help text, in the active language."""
    steps = "; ".join(f"{key}: {label}" for key, label in FALLBACK_STEPS.items())
    return str(
        _(
            "What happens to an invalid answer, in order: %(steps)s. When the chain runs out "
            "the answer goes on marked low confidence."
        )
        % {"steps": steps}
    )


class Agent(NamedInLanguages, models.Model):
    """One agent definition: prompt, model settings, tools, sub-agents, limits and access."""

    name = models.SlugField(
        _("name"), max_length=64, unique=True, help_text=_("Stable identifier, e.g. finance.")
    )
    display_name = models.CharField(
        _("display name"),
        max_length=120,
        help_text=_("The name people read where no name in their language is set."),
    )
    # Per language ("en", "zh-hant", "zh-hans"): the name and description people read there.
    display_names = models.JSONField(
        _("names per language"),
        default=dict,
        blank=True,
        validators=[validate_display_names],
        help_text=_(
            'The name in each language, e.g. {"zh-hant": "財務專家", "zh-hans": "财务专家", '
            '"en": "Finance expert"}. A missing Chinese one is converted from the other script; '
            "otherwise the display name is shown."
        ),
    )
    description = models.TextField(
        _("description"),
        blank=True,
        help_text=_("What this agent is good at; shown to agents that may delegate to it."),
    )
    descriptions = models.JSONField(
        _("descriptions per language"),
        default=dict,
        blank=True,
        validators=[validate_descriptions],
        help_text=_(
            "What people read about this agent in each language (en, zh-hant, zh-hans); "
            "falls back like the names, then to the description."
        ),
    )
    tags = models.JSONField(
        _("tags"), default=list, blank=True, help_text=_("Specialization tags for routing.")
    )
    system_prompt = models.TextField(_("system prompt"), blank=True)

    provider = models.CharField(
        _("provider"), max_length=16, choices=Provider.choices, default=Provider.DEFAULT
    )
    model = models.CharField(
        _("model"), max_length=200, blank=True, help_text=_("Model name; blank uses OPENAI_MODEL.")
    )
    base_url = models.CharField(
        _("base URL"),
        max_length=200,
        blank=True,
        validators=[validate_server_url],
        help_text=_(
            "OpenAI-compatible server for this agent, e.g. http://vllm:8000/v1; blank uses "
            "OPENAI_BASE_URL."
        ),
    )
    api_key_env = models.CharField(
        _("API key variable"),
        max_length=100,
        blank=True,
        validators=[ENV_NAME],
        help_text=_(
            "Name of the environment variable holding this agent's API key; blank uses "
            "OPENAI_API_KEY. Keys never live in the database."
        ),
    )
    secret_headers = models.JSONField(
        _("secret headers"),
        default=dict,
        blank=True,
        validators=[validate_secret_headers],
        help_text=_(
            "Extra HTTP headers sent to the model server or remote agent, each naming the "
            "environment variable that holds its value, e.g. {“X-Api-Key”: “PEER_KEY”}."
        ),
    )
    call_timeout_seconds = models.PositiveIntegerField(
        _("call timeout (seconds)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), validate_call_timeout],
        help_text=_(
            "How long one model call may take, or a remote agent's whole answer; blank uses "
            "OPENAI_TIMEOUT (A2A_TIMEOUT_SECONDS for a remote agent)."
        ),
    )
    temperature = models.FloatField(
        _("temperature"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(2.0)],
    )
    max_tokens = models.PositiveIntegerField(
        _("max tokens"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(200_000)],
    )

    tool_keys = models.JSONField(_("tools"), default=list, blank=True)
    allowed_subagents = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="allowed_callers",
        verbose_name=_("experts it may ask"),
    )
    max_depth = models.PositiveSmallIntegerField(
        _("max depth"),
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(10)],
        help_text=_("How deep a delegation chain started by this agent may go."),
    )
    max_steps = models.PositiveSmallIntegerField(
        _("max steps"),
        default=8,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text=_("Model calls per run; the last one is made without tools so the run answers."),
    )

    turn_max_cost = models.DecimalField(
        _("turn max cost"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0))],
        help_text=_(
            "As the entry agent: the most one turn may cost, delegations included, in "
            "USAGE_CURRENCY. Blank uses TURN_MAX_COST."
        ),
    )

    answer_from_knowledge_only = models.BooleanField(
        _("answer only from knowledge"),
        default=False,
        help_text=_(
            "Strict answers: only from this agent's knowledge bases, with citations; when "
            "they hold nothing relevant, the agent says what is missing instead of answering."
        ),
    )

    # Quality gate and humans in the loop (delegation/humans, docs/humans.md).
    validate_answers = models.CharField(
        _("validate answers"),
        max_length=8,
        choices=AnswerValidation.choices,
        default=AnswerValidation.OFF,
        help_text=_(
            "Check this agent's answers before its caller gets them; an invalid answer "
            "goes through the fallback chain."
        ),
    )
    validator_model = models.CharField(
        _("validator model"),
        max_length=200,
        blank=True,
        help_text=_("A fast model for the validator call; blank uses this agent's model."),
    )
    answer_min_chars = models.PositiveIntegerField(
        _("answer min characters"),
        default=0,
        help_text=_("Rules: an answer shorter than this is invalid (0: no bound)."),
    )
    answer_max_chars = models.PositiveIntegerField(
        _("answer max characters"),
        default=0,
        help_text=_("Rules: an answer longer than this is invalid (0: no bound)."),
    )
    fallback_chain = models.JSONField(
        _("fallback chain"),
        default=default_fallback_chain,
        blank=True,
        validators=[validate_fallback_chain],
        help_text=lazy(_fallback_chain_help, str)(),
    )
    require_approval = models.BooleanField(
        _("needs human approval for side-effect tools"),
        default=False,
        help_text=_(
            "Calls of the tools below wait in the inbox until staff approve, modify or "
            "reject them. With no tool ticked: every tool that changes data."
        ),
    )
    approval_tool_keys = models.JSONField(
        _("tools needing approval"),
        default=list,
        blank=True,
        validators=[validate_tool_key_list],
        help_text=_("Blank: every tool of this agent registered as changing data."),
    )
    human_sla_seconds = models.PositiveIntegerField(
        _("human answer deadline (seconds)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(10), MaxValueValidator(30 * 24 * 3600)],
        help_text=_(
            "How long a question or approval waits for a human; then the run goes on "
            "with “no answer from a human”. Blank uses HUMANS_SLA_SECONDS."
        ),
    )
    human_group = models.CharField(
        _("assignment group"),
        max_length=150,
        blank=True,
        validators=[validate_group_name],
        help_text=_(
            "The staff group whose members see this agent's questions and approvals "
            "(blank: every staff member)."
        ),
    )

    enabled = models.BooleanField(_("enabled"), default=True)
    delegatable = models.BooleanField(
        _("delegatable"), default=True, help_text=_("Other agents may delegate to it.")
    )
    is_entry = models.BooleanField(
        _("entry agent"), default=False, help_text=_("The agent users talk to by default.")
    )
    a2a_enabled = models.BooleanField(
        _("open to other agents (A2A)"),
        default=False,
        help_text=_(
            "As the entry agent: other platforms' agents may talk to it over the Agent2Agent "
            "protocol at /a2a/<name>/, with a user's API token (its card is public)."
        ),
    )
    access_group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=_("access group"),
        help_text=_("Only members of this group may use the agent (blank: every signed-in user)."),
    )
    access_permission = models.CharField(
        _("access permission"),
        max_length=200,
        blank=True,
        help_text=_("Permission the user needs, as app_label.codename (blank: none)."),
    )

    version = models.PositiveIntegerField(_("version"), default=0, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        constraints = [
            models.UniqueConstraint(
                fields=["is_entry"], condition=models.Q(is_entry=True), name="one_entry_agent"
            )
        ]

    def __str__(self) -> str:
        return self.name_in()  # as people read it, in the active language


# What admins (form or API) edit, in the order they see it; revisions snapshot the same.
AGENT_EDITABLE_FIELDS = [
    "name",
    "display_name",
    "display_names",
    "description",
    "descriptions",
    "tags",
    "system_prompt",
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "secret_headers",
    "call_timeout_seconds",
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
    "a2a_enabled",
    "access_group",
    "access_permission",
]


class AgentRevision(Revision):
    """A stored snapshot of an agent as saved, to diff against and restore."""

    subject_field = "agent"

    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="revisions", verbose_name=_("agent")
    )
    comment = models.CharField(_("comment"), max_length=500, blank=True)

    class Meta(Revision.Meta):
        verbose_name = _("agent revision")
        verbose_name_plural = _("agent revisions")
        constraints = [
            models.UniqueConstraint(fields=["agent", "version"], name="unique_agent_revision")
        ]
