"""Runs: one agent working on one task for one user; a run with a parent is a delegation."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.names import text_in


class RunStatus(models.TextChoices):
    """Where a run is in its life; the last four are final. `waiting`: for its experts;
    `waiting_human`: for a person (an inbox item: staff, or the end user); neither holds a
    worker."""

    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    WAITING = "waiting", _("Waiting for experts")
    WAITING_HUMAN = "waiting_human", _("Waiting for a person")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    TIMED_OUT = "timed_out", _("Timed out")
    CANCELLED = "cancelled", _("Cancelled")


FINAL_STATUSES = frozenset(
    {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.CANCELLED}
)
WAIT_STATUSES = frozenset({RunStatus.WAITING, RunStatus.WAITING_HUMAN})


class Run(models.Model):
    """One agent's work on one task: config pinned at creation, transcript, usage, outcome."""

    id = models.UUIDField(_("ID"), primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(
        "chat.ChatSession",
        on_delete=models.CASCADE,
        related_name="runs",
        verbose_name=_("chat session"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="runs",
        verbose_name=_("user"),
    )
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.PROTECT, related_name="runs", verbose_name=_("agent")
    )
    agent_version = models.PositiveIntegerField(_("agent version"))
    # the definition as it was when the run began
    agent_config = models.JSONField(_("agent configuration"))
    user_message = models.ForeignKey(
        "chat.ChatMessage",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user message"),
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
        verbose_name=_("parent run"),
    )
    parent_tool_call_id = models.CharField(_("parent's tool call id"), max_length=128, blank=True)
    root = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="descendants",
        verbose_name=_("root run"),
        help_text=_("The turn's root run (null on the root itself)."),
    )
    # why the caller chose this agent
    routing_reason = models.TextField(_("routing reason"), blank=True)
    # The root run's routing: what the turn asked for ({force_strict, force_guide, debug}) and
    # what was decided ({mode, reason, matched_rule, matched_keywords, target, …}).
    routing_request = models.JSONField(_("routing request"), default=dict, blank=True)
    routing = models.JSONField(_("routing"), null=True, blank=True)
    depth = models.PositiveSmallIntegerField(_("depth"), default=0)
    path = models.JSONField(_("path"), default=list)  # agent names from the root to this run
    task = models.TextField(_("task"))
    # The language its messages and tools answer in (a code of settings.LANGUAGES; "" = site's),
    # chosen at the turn's start from the user's words and page, inherited by its experts.
    language = models.CharField(_("language"), max_length=16, blank=True, default="")
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=RunStatus.choices,
        default=RunStatus.QUEUED,
        db_index=True,
    )
    waiting_since = models.DateTimeField(_("waiting since"), null=True, blank=True)
    # The check of this run's answer (an expert's, when its agent validates answers):
    # {mode, valid, issue, confidence, validator_failed, outcome, next_step}.
    validation = models.JSONField(_("validation"), null=True, blank=True)
    # The turn's answer (root runs): "high", "low", or "" when nothing was checked.
    confidence = models.CharField(_("confidence"), max_length=8, blank=True)
    needs_review = models.BooleanField(_("needs review"), default=False)
    # OpenAI-format messages after the system prompt
    transcript = models.JSONField(_("transcript"), default=list)
    steps = models.PositiveSmallIntegerField(_("model calls"), default=0)  # model calls made
    # The step whose model call was taken from the turn's budget already: its first, with its
    # creation (a turn's root) or its delegation (an expert); the one after a step that asked
    # experts, with the first of them. That call takes none again (delegation.tree.budget).
    reserved_call = models.PositiveSmallIntegerField(_("reserved call"), null=True, blank=True)
    # {prompt_tokens, completion_tokens, total_tokens}
    usage = models.JSONField(_("usage"), default=dict)
    answer = models.TextField(_("answer"), blank=True)
    # Knowledge passages and documents this run was shown, numbered as the model cites them
    # ([1], [2], …), and the ones its answer relies on (experts' included).
    references = models.JSONField(_("references"), default=list, blank=True)
    citations = models.JSONField(_("citations"), default=list, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True)  # {code, message}
    last_seq = models.PositiveIntegerField(_("events emitted"), default=0)
    deadline = models.DateTimeField(_("deadline"))
    lease_expires_at = models.DateTimeField(_("lease expires at"), null=True, blank=True)
    # which claim may write progress
    lease_token = models.UUIDField(_("lease token"), null=True, blank=True)
    # who claimed it last (Celery hostname)
    worker = models.CharField(_("worker"), max_length=200, blank=True)
    queued_at = models.DateTimeField(_("queued at"), null=True, blank=True)  # last became queued
    # The turn's budget and what the whole tree used, kept on the root run (its tokens are
    # summed from its ledger rows: delegation.tree.budget.turn_tokens).
    budget = models.JSONField(_("budget"), default=dict, blank=True)
    tree_model_calls = models.PositiveIntegerField(_("model calls in the turn"), default=0)
    tree_delegations = models.PositiveIntegerField(_("delegations in the turn"), default=0)
    # Calls of tools outside the platform (a database default too: a worker of the release
    # before this one inserts runs without naming it while a deploy rolls).
    tree_tool_calls = models.PositiveIntegerField(
        _("outside tool calls in the turn"), default=0, db_default=0
    )
    # Answers checked in the tree (delegation.humans.validation): the turn's answer is rated
    # from their checks, read only when there are some.
    tree_checks = models.PositiveIntegerField(_("answers checked in the turn"), default=0)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("run")
        verbose_name_plural = _("runs")
        indexes = [
            models.Index(fields=["session", "status"], name="run_session_status"),
            models.Index(fields=["status", "deadline"], name="run_status_deadline"),
        ]

    def __str__(self) -> str:
        return f"{'/'.join(self.path)} ({self.get_status_display()})"

    @property
    def root_id_or_self(self) -> uuid.UUID:
        """The id of the turn's root run."""
        return self.root_id or self.id

    @property
    def root_or_self(self) -> Run:
        """The turn's root run (this one, for a root)."""
        return self.root if self.root_id else self

    @property
    def agent_shown(self) -> str:
        """The agent's name as the reader reads it, in the active language (its name there, else
        the other Chinese script's converted, else its display name) from the pinned definition."""
        config = self.agent_config or {}
        return text_in(config.get("display_names"), config.get("display_name", ""))

    @property
    def is_final(self) -> bool:
        """Whether the run has ended."""
        return self.status in FINAL_STATUSES
