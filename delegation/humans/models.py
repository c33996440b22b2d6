"""Humans in the loop: inbox items (questions and tool approvals), validation verdicts,
the review queue and the activity log."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class ItemKind(models.TextChoices):
    """What a person is asked for."""

    QUESTION = "question", _("Question")  # ask_human / ask_user: an answer in words
    TOOL_APPROVAL = (
        "tool_approval",
        _("Tool approval"),
    )  # a gated tool call: approve, modify or reject


class Audience(models.TextChoices):
    """Who may decide the item."""

    STAFF = "staff", _("Staff")  # the inbox (the agent's assignment group, or every staff member)
    USER = "user", _("End user")  # the end user the run acts for (ask_user)


class ItemStatus(models.TextChoices):
    """Where an item is; every status but `pending` is final."""

    PENDING = "pending", _("Pending")
    ANSWERED = "answered", _("Answered")  # a question answered (decision approve)
    APPROVED = "approved", _("Approved")
    MODIFIED = "modified", _("Modified")  # approved with changed arguments
    REJECTED = "rejected", _("Rejected")
    EXPIRED = "expired", _("Expired")  # its deadline passed with no decision
    CANCELLED = "cancelled", _("Cancelled")  # the end user cancelled the wait, or the run ended


class Decision(models.TextChoices):
    """What a person decided."""

    APPROVE = "approve", _("Approve")
    MODIFY = "modify", _("Modify")
    REJECT = "reject", _("Reject")


class InboxItem(models.Model):
    """One pause of one run for a person: a question, or a tool call waiting for approval.

    The run waits (`waiting_human`) without a worker; the first decision wins; an approved tool
    runs in the transaction that marks the item executed and stores its result, once.
    """

    id = models.UUIDField(_("ID"), primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(
        "delegation.Run",
        on_delete=models.CASCADE,
        related_name="inbox_items",
        verbose_name=_("run"),
    )
    tool_call_id = models.CharField(_("tool call id"), max_length=128)
    # the tool message the page shows
    message_id = models.UUIDField(_("message id"), null=True, blank=True)
    kind = models.CharField(_("kind"), max_length=16, choices=ItemKind.choices)
    audience = models.CharField(
        _("audience"), max_length=8, choices=Audience.choices, default=Audience.STAFF
    )
    user = models.ForeignKey(  # on whose behalf the run acts
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("on behalf of"),
    )
    agent_name = models.CharField(_("agent name"), max_length=64)
    agent_display_name = models.CharField(_("agent"), max_length=120)
    # agent names from the entry agent down
    path = models.JSONField(_("path"), default=list)
    question = models.TextField(_("question"), blank=True)
    options = models.JSONField(_("options"), default=list, blank=True)
    urgency = models.CharField(_("urgency"), max_length=8, default="normal")
    tool = models.CharField(_("tool"), max_length=100, blank=True)  # the gated tool's key
    # as the model wrote them
    arguments = models.JSONField(_("arguments"), null=True, blank=True)
    # assignment group (name)
    group = models.CharField(_("assignment group"), max_length=150, blank=True)
    deadline = models.DateTimeField(_("deadline"))
    status = models.CharField(
        _("status"),
        max_length=10,
        choices=ItemStatus.choices,
        default=ItemStatus.PENDING,
        db_index=True,
    )
    decision = models.CharField(_("decision"), max_length=8, choices=Decision.choices, blank=True)
    answer = models.TextField(_("answer"), blank=True)
    note = models.TextField(_("note"), blank=True)
    # what ran (modified or not)
    final_arguments = models.JSONField(_("final arguments"), null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    # Why an approval is asked: "" (the tool needs one) or "may_have_run" (a call not safe to
    # repeat was under way when its worker stopped: approving runs it again).
    reason = models.CharField(_("reason"), max_length=16, blank=True)
    # the approved tool began to run
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    # the approved tool ran (once)
    executed_at = models.DateTimeField(_("executed at"), null=True, blank=True)
    result = models.TextField(_("result"), blank=True)  # the tool result content the model reads
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "tool_call_id"], name="one_item_per_call")
        ]
        indexes = [models.Index(fields=["status", "deadline"], name="inbox_status_deadline")]
        verbose_name = _("inbox item")
        verbose_name_plural = _("inbox items")

    def __str__(self) -> str:
        what = self.tool or self.question[:40]
        return f"{self.get_kind_display()}: {what} ({self.status})"

    @property
    def is_pending(self) -> bool:
        """Whether a decision is still awaited."""
        return self.status == ItemStatus.PENDING


class Verdict(models.Model):
    """The validator's judgement of one expert answer, and what the fallback chain did."""

    run = models.ForeignKey(
        "delegation.Run", on_delete=models.CASCADE, related_name="verdicts", verbose_name=_("run")
    )
    root_id = models.UUIDField(_("root run id"), db_index=True)
    agent_name = models.CharField(_("agent name"), max_length=64, db_index=True)
    mode = models.CharField(_("mode"), max_length=8)  # rules | model
    valid = models.BooleanField(_("valid"))
    issue = models.TextField(_("issue"), blank=True)
    confidence = models.FloatField(_("confidence"), null=True, blank=True)
    # the validator failed: trusted
    validator_failed = models.BooleanField(_("validator failed"), default=False)
    # accepted | a fallback step
    outcome = models.CharField(_("outcome"), max_length=16, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("validation verdict")
        verbose_name_plural = _("validation verdicts")

    def __str__(self) -> str:
        return f"{self.agent_name}: {'valid' if self.valid else 'invalid'}"


class ReviewStatus(models.TextChoices):
    """A flagged answer's review."""

    PENDING = "pending", _("Pending")
    CORRECT = "correct", _("Correct")
    WRONG = "wrong", _("Wrong")
    FIXED = "fixed", _("Fixed")  # a corrected answer was sent to the user's chat


class Review(models.Model):
    """An answer flagged `needs_review`, queued for a reviewer."""

    id = models.UUIDField(_("ID"), primary_key=True, default=uuid.uuid4, editable=False)
    run = models.OneToOneField(
        "delegation.Run",
        on_delete=models.CASCADE,
        related_name="review",
        verbose_name=_("run"),
    )  # the turn's root run
    session = models.ForeignKey(
        "chat.ChatSession",
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("chat session"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("user"),
    )
    # the answer as the user saw it
    message_id = models.UUIDField(_("message id"), null=True, blank=True)
    # the flagged agent
    agent_name = models.CharField(_("agent name"), max_length=64, db_index=True)
    # who reviews (assignment group)
    group = models.CharField(_("assignment group"), max_length=150, blank=True)
    question = models.TextField(_("question"))
    answer = models.TextField(_("answer"), blank=True)
    issue = models.TextField(_("issue"), blank=True)
    citations = models.JSONField(_("citations"), default=list, blank=True)
    status = models.CharField(
        _("status"),
        max_length=8,
        choices=ReviewStatus.choices,
        default=ReviewStatus.PENDING,
        db_index=True,
    )
    note = models.TextField(_("note"), blank=True)
    corrected_answer = models.TextField(_("corrected answer"), blank=True)
    followup_message_id = models.UUIDField(_("follow-up message id"), null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("reviewed by"),
    )
    reviewed_at = models.DateTimeField(_("reviewed at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("review")
        verbose_name_plural = _("reviews")

    def __str__(self) -> str:
        return f"{self.agent_name}: {self.question[:40]} ({self.status})"


class ActivityKind(models.TextChoices):
    """Notable events, one activity row each."""

    DELEGATION_ASKED = "delegation_asked", _("Expert asked")
    DELEGATION_ANSWERED = "delegation_answered", _("Expert answered")
    DELEGATION_REFUSED = "delegation_refused", _("Delegation refused")
    DELEGATION_FAILED = "delegation_failed", _("Delegation failed")
    VALIDATION = "validation", _("Answer checked")
    FALLBACK = "fallback", _("Fallback")
    ESCALATION_RAISED = "escalation_raised", _("Question asked")
    ESCALATION_DECIDED = "escalation_decided", _("Question answered")
    APPROVAL_REQUESTED = "approval_requested", _("Approval requested")
    APPROVAL_DECIDED = "approval_decided", _("Approval decided")
    TOOL_EXECUTED = "tool_executed", _("Approved tool ran")
    # a tool outside the platform (MCP, the web, mail) was called
    TOOL_CALLED = "tool_called", _("Outside tool called")
    WAIT_EXPIRED = "wait_expired", _("Wait expired")
    WAIT_CANCELLED = "wait_cancelled", _("Wait cancelled")
    WAIT_CYCLE = "wait_cycle", _("Wait cycle")
    WAIT_TIMEOUT = "wait_timeout", _("Wait timed out")
    WAIT_STUCK = "wait_stuck", _("Wait stuck")
    REVIEW_DECIDED = "review_decided", _("Review decided")
    # a watch's check ended: told, suppressed (unchanged), cleared, muted or an error
    WATCH_FINDING = "watch_finding", _("Watch finding")
    ERROR = "error", _("Error")


class Activity(models.Model):
    """One row per notable event of the agents' work, for admins and export.

    Scoped like what it reports (`delegation.humans.selectors.activity_for`): a row belongs to
    its agent's assignment group (or its inbox item's, or its review's), a row about a question
    to the end user is theirs alone, and a row whose run was shown knowledge (whose summary
    may quote it) carries those knowledge bases, whose access rules its reader must pass.
    """

    created_at = models.DateTimeField(_("created at"), auto_now_add=True, db_index=True)
    kind = models.CharField(_("kind"), max_length=24, choices=ActivityKind.choices, db_index=True)
    agent_name = models.CharField(_("agent name"), max_length=64, blank=True, db_index=True)
    run = models.ForeignKey(
        "delegation.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("run"),
    )
    root_id = models.UUIDField(_("root run id"), null=True, blank=True, db_index=True)
    user = models.ForeignKey(  # on whose behalf
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("on behalf of"),
    )
    actor = models.ForeignKey(  # the person who acted (a decision, a review)
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("actor"),
    )
    summary = models.CharField(_("summary"), max_length=500)
    data = models.JSONField(_("data"), default=dict, blank=True)
    # assignment group (name)
    group = models.CharField(_("assignment group"), max_length=150, blank=True)
    audience = models.CharField(
        _("audience"), max_length=8, choices=Audience.choices, default=Audience.STAFF
    )
    knowledge = models.ManyToManyField(  # what the row may quote: its readers must pass their rules
        "knowledge.KnowledgeBase", blank=True, related_name="+", verbose_name=_("knowledge bases")
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("activity")
        verbose_name_plural = _("activity")

    def __str__(self) -> str:
        return f"{self.kind}: {self.summary[:60]}"
