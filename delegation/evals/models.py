"""Eval suites and cases, eval runs with a result per case, drafts the publish gate holds, the
sandbox users eval turns run as, and the eval result each gated publish was made with."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from delegation.usage.money import COST_DIGITS, COST_PLACES


class EvalSuite(models.Model):
    """Cases for one agent (usually the entry agent), a pass threshold and an optional gate."""

    name = models.SlugField(max_length=64, unique=True, help_text="e.g. planner.")
    description = models.TextField(blank=True)
    agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.PROTECT,
        related_name="eval_suites",
        help_text="The agent every case talks to (usually the entry agent).",
    )
    pass_threshold = models.PositiveSmallIntegerField(
        default=100,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
        verbose_name="pass threshold (%)",
        help_text="The share of cases that must pass. Below it run_evals exits non-zero and the "
        "publish gate holds the save. 100: every case.",
    )
    publish_gate = models.BooleanField(
        default=False,
        help_text="Saving this suite's agent (or one listed below) runs the suite on the draft "
        "first; below the threshold the save is held as a draft.",
    )
    gate_agents = models.ManyToManyField(
        "agents.Agent",
        blank=True,
        related_name="gating_suites",
        verbose_name="also gate",
        help_text="Other agents whose saves this suite gates too, e.g. the experts its cases "
        "reach.",
    )
    judge_model = models.CharField(
        max_length=200,
        blank=True,
        help_text="Grades rubric expectations; blank: EVALS_JUDGE_MODEL.",
    )
    case_timeout = models.PositiveIntegerField(
        default=120,
        validators=[MinValueValidator(1), MaxValueValidator(3600)],
        verbose_name="case timeout (s)",
        help_text="Seconds one case may take; then its turn is stopped and the case errs.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EvalCase(models.Model):
    """One input (with optional earlier turns, user rights and flags) and what must hold."""

    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=120, help_text="A short label, unique in the suite.")
    order = models.PositiveIntegerField(default=0)
    enabled = models.BooleanField(default=True)
    message = models.TextField(help_text="What the user sends.")
    prior_turns = models.JSONField(
        default=list,
        blank=True,
        help_text='Earlier turns of the conversation: [{"user": "…", "assistant": "…"}].',
    )
    flags = models.JSONField(
        default=dict, blank=True, help_text='Routing flags, e.g. {"force_strict": true}.'
    )
    user_groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="+",
        help_text="The groups the case's user is in (its rights: e.g. none to test a refusal).",
    )
    user_permissions = models.JSONField(
        default=list, blank=True, help_text='Permissions of the case\'s user: ["app.codename"].'
    )
    user_timezone = models.CharField(
        max_length=64, blank=True, help_text="The user's timezone (blank: the site's)."
    )
    expect = models.JSONField(
        default=dict, blank=True, help_text="The expectations (docs/evals.md)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["suite", "order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "name"], name="one_case_name_per_suite")
        ]

    def __str__(self) -> str:
        return f"{self.suite.name}: {self.name}"


class DraftStatus(models.TextChoices):
    """Where a held save is."""

    EVALUATING = "evaluating"
    HELD = "held"  # below a threshold: waits for publish-anyway, a fix or a discard
    PUBLISHED = "published"
    DISCARDED = "discarded"


class AgentDraft(models.Model):
    """An agent save the publish gate held: the definition waiting for its suites to pass."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="eval_drafts")
    base_version = models.PositiveIntegerField(help_text="The version the draft was edited from.")
    data = models.JSONField(help_text="The draft definition, as a revision snapshot stores it.")
    comment = models.CharField(max_length=500, blank=True)
    status = models.CharField(
        max_length=12, choices=DraftStatus.choices, default=DraftStatus.EVALUATING, db_index=True
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    override_reason = models.TextField(blank=True)
    published_version = models.PositiveIntegerField(null=True, blank=True)
    note = models.CharField(max_length=500, blank=True)  # why it was not published by itself

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"draft of {self.agent.name} (from v{self.base_version}, {self.status})"


class EvalRunStatus(models.TextChoices):
    """Where a run of a suite is."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"  # could not run (e.g. the suite's agent is gone)
    CANCELLED = "cancelled"


EVAL_RUN_FINAL = frozenset({EvalRunStatus.FINISHED, EvalRunStatus.FAILED, EvalRunStatus.CANCELLED})


class Trigger(models.TextChoices):
    """Who started an eval run."""

    ADMIN = "admin"
    API = "api"
    COMMAND = "command"
    GATE = "gate"


class EvalRun(models.Model):
    """One run of a suite: which definitions and model it ran against, and its outcome."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(
        max_length=10, choices=EvalRunStatus.choices, default=EvalRunStatus.QUEUED, db_index=True
    )
    trigger = models.CharField(max_length=8, choices=Trigger.choices, default=Trigger.ADMIN)
    draft = models.ForeignKey(
        AgentDraft, null=True, blank=True, on_delete=models.SET_NULL, related_name="eval_runs"
    )
    # Definitions pinned instead of the live ones ({agent name: pinned config}) and the model
    # every run of the turn uses instead of its own ("" keeps each agent's; "offline").
    overrides = models.JSONField(default=dict, blank=True)
    model = models.CharField(max_length=200, blank=True)
    target = models.CharField(max_length=300, help_text="What ran, in words.")
    threshold = models.PositiveSmallIntegerField(default=100)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)  # errors included
    succeeded = models.BooleanField(null=True, blank=True)  # pass rate ≥ threshold, once ended
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lease_token = models.UUIDField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.suite.name} {self.created_at:%Y-%m-%d %H:%M} ({self.status})"

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

    PENDING = "pending"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the turn failed or timed out, or a grader broke
    CANCELLED = "cancelled"


CASE_FINAL = frozenset(
    {CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.ERROR, CaseStatus.CANCELLED}
)


class EvalCaseResult(models.Model):
    """One case of an eval run: each expectation's verdict with the evidence behind it."""

    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(
        EvalCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="results"
    )
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=120)
    case_snapshot = models.JSONField(help_text="The case as it ran.")
    status = models.CharField(max_length=10, choices=CaseStatus.choices, default=CaseStatus.PENDING)
    expectations = models.JSONField(default=list, blank=True)
    evidence = models.JSONField(default=dict, blank=True)
    # The turn ran in a sandbox that is wiped afterwards: ids only, no foreign keys.
    root_run_id = models.UUIDField(null=True, blank=True, db_index=True)
    session_id = models.UUIDField(null=True, blank=True)
    sandbox_user = models.CharField(max_length=150, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    tokens = models.PositiveIntegerField(null=True, blank=True)
    model_calls = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(
        max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True
    )
    error = models.TextField(blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["eval_run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["eval_run", "position"], name="one_result_per_place")
        ]

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
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="eval_sandbox"
    )
    leased_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.user.get_username()


class PublishRecord(models.Model):
    """The eval result an agent revision was published with (through the gate or over it)."""

    revision = models.OneToOneField(
        "agents.AgentRevision", on_delete=models.CASCADE, related_name="eval_record"
    )
    draft = models.OneToOneField(
        AgentDraft, null=True, blank=True, on_delete=models.SET_NULL, related_name="record"
    )
    passed = models.BooleanField(help_text="Every gated suite reached its threshold.")
    override = models.BooleanField(default=False, help_text="Published anyway, below threshold.")
    override_reason = models.TextField(blank=True)
    result = models.JSONField(help_text="Each suite's run: pass rate, threshold, failing cases.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.revision}: {'passed' if self.passed else 'overridden'}"
