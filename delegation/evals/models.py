"""Eval suites and cases, eval runs with a result per case, drafts the publish gate holds, the
sandbox users eval turns run as, and the eval result each gated publish was made with."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from delegation.evals.targets import target_text
from delegation.usage.money import COST_DIGITS, COST_PLACES


class EvalSuite(models.Model):
    """Cases for one agent (usually the entry agent), a pass threshold and an optional gate."""

    name = models.SlugField(_("name"), max_length=64, unique=True, help_text=_("e.g. planner."))
    description = models.TextField(_("description"), blank=True)
    agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.PROTECT,
        related_name="eval_suites",
        verbose_name=_("agent"),
        help_text=_("The agent every case talks to (usually the entry agent)."),
    )
    pass_threshold = models.PositiveSmallIntegerField(
        default=100,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
        verbose_name=_("pass threshold (%)"),
        help_text=_(
            "The share of cases that must pass. Below it run_evals exits non-zero and the "
            "publish gate holds the save. 100: every case."
        ),
    )
    publish_gate = models.BooleanField(
        _("publish gate"),
        default=False,
        help_text=_(
            "Saving this suite's agent (or one listed below) runs the suite on the draft "
            "first; below the threshold the save is held as a draft."
        ),
    )
    gate_agents = models.ManyToManyField(
        "agents.Agent",
        blank=True,
        related_name="gating_suites",
        verbose_name=_("also gate"),
        help_text=_(
            "Other agents whose saves this suite gates too, e.g. the experts its cases reach."
        ),
    )
    judge_model = models.CharField(
        _("judge model"),
        max_length=200,
        blank=True,
        help_text=_("Grades rubric expectations; blank: EVALS_JUDGE_MODEL."),
    )
    case_timeout = models.PositiveIntegerField(
        default=120,
        validators=[MinValueValidator(1), MaxValueValidator(3600)],
        verbose_name=_("case timeout (s)"),
        help_text=_("Seconds one case may take; then its turn is stopped and the case errs."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("eval suite")
        verbose_name_plural = _("eval suites")

    def __str__(self) -> str:
        return self.name


class EvalCase(models.Model):
    """One input (with optional earlier turns, user rights and flags) and what must hold."""

    suite = models.ForeignKey(
        EvalSuite, on_delete=models.CASCADE, related_name="cases", verbose_name=_("suite")
    )
    name = models.CharField(
        _("name"), max_length=120, help_text=_("A short label, unique in the suite.")
    )
    order = models.PositiveIntegerField(_("order"), default=0)
    enabled = models.BooleanField(_("enabled"), default=True)
    message = models.TextField(_("message"), help_text=_("What the user sends."))
    prior_turns = models.JSONField(
        _("earlier turns"),
        default=list,
        blank=True,
        help_text=_('Earlier turns of the conversation: [{"user": "…", "assistant": "…"}].'),
    )
    flags = models.JSONField(
        _("routing flags"),
        default=dict,
        blank=True,
        help_text=_('Routing flags, e.g. {"force_strict": true}.'),
    )
    user_groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="+",
        verbose_name=_("user's groups"),
        help_text=_("The groups the case's user is in (its rights: e.g. none to test a refusal)."),
    )
    user_permissions = models.JSONField(
        _("user permissions"),
        default=list,
        blank=True,
        help_text=_('Permissions of the case\'s user: ["app.codename"].'),
    )
    user_timezone = models.CharField(
        _("user's timezone"),
        max_length=64,
        blank=True,
        help_text=_("The user's timezone (blank: the site's)."),
    )
    expect = models.JSONField(
        _("expectations"),
        default=dict,
        blank=True,
        help_text=_("The expectations (docs/evals.md)."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["suite", "order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "name"], name="one_case_name_per_suite")
        ]
        verbose_name = _("eval case")
        verbose_name_plural = _("eval cases")

    def __str__(self) -> str:
        return f"{self.suite.name}: {self.name}"


class DraftStatus(models.TextChoices):
    """Where a held save is."""

    EVALUATING = "evaluating", _("Evaluating")
    # below a threshold: waits for publish-anyway, a fix or a discard
    HELD = "held", _("Held")
    PUBLISHED = "published", _("Published")
    DISCARDED = "discarded", _("Discarded")


class AgentDraft(models.Model):
    """An agent save the publish gate held: the definition waiting for its suites to pass."""

    agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.CASCADE,
        related_name="eval_drafts",
        verbose_name=_("agent"),
    )
    base_version = models.PositiveIntegerField(
        _("base version"), help_text=_("The version the draft was edited from.")
    )
    data = models.JSONField(
        _("definition"), help_text=_("The draft definition, as a revision snapshot stores it.")
    )
    comment = models.CharField(_("comment"), max_length=500, blank=True)
    status = models.CharField(
        _("status"),
        max_length=12,
        choices=DraftStatus.choices,
        default=DraftStatus.EVALUATING,
        db_index=True,
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    override_reason = models.TextField(_("reason for publishing anyway"), blank=True)
    published_version = models.PositiveIntegerField(_("published version"), null=True, blank=True)
    # why it was not published by itself
    note = models.CharField(_("note"), max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("agent draft")
        verbose_name_plural = _("agent drafts")

    def __str__(self) -> str:
        return f"draft of {self.agent.name} (from v{self.base_version}, {self.status})"


class EvalRunStatus(models.TextChoices):
    """Where a run of a suite is."""

    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    FINISHED = "finished", _("Finished")
    FAILED = "failed", _("Failed")  # could not run (e.g. the suite's agent is gone)
    CANCELLED = "cancelled", _("Cancelled")


EVAL_RUN_FINAL = frozenset({EvalRunStatus.FINISHED, EvalRunStatus.FAILED, EvalRunStatus.CANCELLED})


class Trigger(models.TextChoices):
    """Who started an eval run."""

    ADMIN = "admin", _("Admin")
    API = "api", _("API")
    COMMAND = "command", _("Command")
    GATE = "gate", _("Publish gate")


class EvalRun(models.Model):
    """One run of a suite: which definitions and model it ran against, and its outcome."""

    id = models.UUIDField(_("ID"), primary_key=True, default=uuid.uuid4, editable=False)
    suite = models.ForeignKey(
        EvalSuite, on_delete=models.CASCADE, related_name="runs", verbose_name=_("suite")
    )
    status = models.CharField(
        _("status"),
        max_length=10,
        choices=EvalRunStatus.choices,
        default=EvalRunStatus.QUEUED,
        db_index=True,
    )
    trigger = models.CharField(
        _("started from"), max_length=8, choices=Trigger.choices, default=Trigger.ADMIN
    )
    draft = models.ForeignKey(
        AgentDraft,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="eval_runs",
        verbose_name=_("draft"),
    )
    # Definitions pinned instead of the live ones ({agent name: pinned config}) and the model
    # every run of the turn uses instead of its own ("" keeps each agent's; "offline").
    overrides = models.JSONField(_("pinned definitions"), default=dict, blank=True)
    model = models.CharField(_("model"), max_length=200, blank=True)
    target = models.CharField(_("target"), max_length=300, help_text=_("What ran, in words."))
    threshold = models.PositiveSmallIntegerField(_("pass threshold (%)"), default=100)
    total = models.PositiveIntegerField(_("cases"), default=0)
    done = models.PositiveIntegerField(_("cases done"), default=0)
    passed = models.PositiveIntegerField(_("cases passed"), default=0)
    failed = models.PositiveIntegerField(_("cases failed"), default=0)  # errors included
    # pass rate ≥ threshold, once ended
    succeeded = models.BooleanField(_("succeeded"), null=True, blank=True)
    error = models.TextField(_("error"), blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("started by"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    lease_expires_at = models.DateTimeField(_("lease expires at"), null=True, blank=True)
    lease_token = models.UUIDField(_("lease token"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("eval run")
        verbose_name_plural = _("eval runs")

    def __str__(self) -> str:
        return f"{self.suite.name} {self.created_at:%Y-%m-%d %H:%M} ({self.get_status_display()})"

    @property
    def target_text(self) -> str:
        """What ran, in the active language (`target` keeps it in English)."""
        return target_text(self.target)

    @property
    def pass_rate(self) -> float | None:
        """Passed cases over all cases, 0–100 (None before any case)."""
        return round(100 * self.passed / self.total, 1) if self.total else None

    @property
    def is_final(self) -> bool:
        """Whether the run has ended."""
        return self.status in EVAL_RUN_FINAL


class CaseStatus(models.TextChoices):
    """Where one case of an eval run is; the last four are final."""

    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    PASSED = "passed", _("Passed")
    FAILED = "failed", _("Failed")
    ERROR = "error", _("Error")  # the turn failed or timed out, or a grader broke
    CANCELLED = "cancelled", _("Cancelled")


CASE_FINAL = frozenset(
    {CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.ERROR, CaseStatus.CANCELLED}
)


class EvalCaseResult(models.Model):
    """One case of an eval run: each expectation's verdict with the evidence behind it."""

    eval_run = models.ForeignKey(
        EvalRun, on_delete=models.CASCADE, related_name="results", verbose_name=_("eval run")
    )
    case = models.ForeignKey(
        EvalCase,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="results",
        verbose_name=_("case"),
    )
    position = models.PositiveIntegerField(_("position"))
    name = models.CharField(_("name"), max_length=120)
    case_snapshot = models.JSONField(_("case as it ran"), help_text=_("The case as it ran."))
    status = models.CharField(
        _("status"), max_length=10, choices=CaseStatus.choices, default=CaseStatus.PENDING
    )
    expectations = models.JSONField(_("expectations"), default=list, blank=True)
    evidence = models.JSONField(_("evidence"), default=dict, blank=True)
    # The turn ran in a sandbox that is wiped afterwards: ids only, no foreign keys.
    root_run_id = models.UUIDField(_("root run id"), null=True, blank=True, db_index=True)
    session_id = models.UUIDField(_("chat session id"), null=True, blank=True)
    sandbox_user = models.CharField(_("sandbox user"), max_length=150, blank=True)
    latency_ms = models.PositiveIntegerField(_("latency (ms)"), null=True, blank=True)
    tokens = models.PositiveIntegerField(_("tokens"), null=True, blank=True)
    model_calls = models.PositiveIntegerField(_("model calls"), null=True, blank=True)
    cost = models.DecimalField(
        _("cost"), max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True
    )
    error = models.TextField(_("error"), blank=True)
    deadline = models.DateTimeField(_("deadline"), null=True, blank=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        ordering = ["eval_run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["eval_run", "position"], name="one_result_per_place")
        ]
        verbose_name = _("eval case result")
        verbose_name_plural = _("eval case results")

    def __str__(self) -> str:
        return f"{self.name}: {self.status}"

    @property
    def is_final(self) -> bool:
        """Whether the case has ended."""
        return self.status in CASE_FINAL


class EvalSandbox(models.Model):
    """A user eval turns run as: never signs in, reused case after case, its data wiped before
    and after each (so tools' writes never outlive the case). Leased to one case at a time."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="eval_sandbox",
        verbose_name=_("user"),
    )
    leased_until = models.DateTimeField(_("leased until"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("eval sandbox")
        verbose_name_plural = _("eval sandboxes")

    def __str__(self) -> str:
        return self.user.get_username()


class PublishRecord(models.Model):
    """The eval result an agent revision was published with (through the gate or over it)."""

    revision = models.OneToOneField(
        "agents.AgentRevision",
        on_delete=models.CASCADE,
        related_name="eval_record",
        verbose_name=_("revision"),
    )
    draft = models.OneToOneField(
        AgentDraft,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="record",
        verbose_name=_("draft"),
    )
    passed = models.BooleanField(
        _("passed"), help_text=_("Every gated suite reached its threshold.")
    )
    override = models.BooleanField(
        _("published anyway"), default=False, help_text=_("Published anyway, below threshold.")
    )
    override_reason = models.TextField(_("reason for publishing anyway"), blank=True)
    result = models.JSONField(
        _("eval result"), help_text=_("Each suite's run: pass rate, threshold, failing cases.")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("publish record")
        verbose_name_plural = _("publish records")

    def __str__(self) -> str:
        return f"{self.revision}: {'passed' if self.passed else 'overridden'}"
