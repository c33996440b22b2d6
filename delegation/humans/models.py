"""Humans in the loop: inbox items (questions and tool approvals), validation verdicts,
the review queue and the activity log."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class ItemKind(models.TextChoices):
    """What a person is asked for."""

    QUESTION = "question"  # ask_human / ask_user: an answer in words
    TOOL_APPROVAL = "tool_approval"  # a gated tool call: approve, modify or reject


class Audience(models.TextChoices):
    """Who may decide the item."""

    STAFF = "staff"  # the inbox (the agent's assignment group, or every staff member)
    USER = "user"  # the end user the run acts for (ask_user)


class ItemStatus(models.TextChoices):
    """Where an item is; every status but `pending` is final."""

    PENDING = "pending"
    ANSWERED = "answered"  # a question answered (decision approve)
    APPROVED = "approved"
    MODIFIED = "modified"  # approved with changed arguments
    REJECTED = "rejected"
    EXPIRED = "expired"  # its deadline passed with no decision
    CANCELLED = "cancelled"  # the end user cancelled the wait, or the run ended


class Decision(models.TextChoices):
    """What a person decided."""

    APPROVE = "approve"
    MODIFY = "modify"
    REJECT = "reject"


class InboxItem(models.Model):
    """One pause of one run for a person: a question, or a tool call waiting for approval.

    The run waits (`waiting_human`) without a worker; the first decision wins; an approved tool
    runs in the transaction that marks the item executed and stores its result, once.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey("delegation.Run", on_delete=models.CASCADE, related_name="inbox_items")
    tool_call_id = models.CharField(max_length=128)
    message_id = models.UUIDField(null=True, blank=True)  # the tool message the page shows
    kind = models.CharField(max_length=16, choices=ItemKind.choices)
    audience = models.CharField(max_length=8, choices=Audience.choices, default=Audience.STAFF)
    user = models.ForeignKey(  # on whose behalf the run acts
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    agent_name = models.CharField(max_length=64)
    agent_display_name = models.CharField(max_length=120)
    path = models.JSONField(default=list)  # agent names from the entry agent down
    question = models.TextField(blank=True)
    options = models.JSONField(default=list, blank=True)
    urgency = models.CharField(max_length=8, default="normal")
    tool = models.CharField(max_length=100, blank=True)  # the gated tool's key
    arguments = models.JSONField(null=True, blank=True)  # as the model wrote them
    group = models.CharField(max_length=150, blank=True)  # assignment group (name)
    deadline = models.DateTimeField()
    status = models.CharField(
        max_length=10, choices=ItemStatus.choices, default=ItemStatus.PENDING, db_index=True
    )
    decision = models.CharField(max_length=8, choices=Decision.choices, blank=True)
    answer = models.TextField(blank=True)
    note = models.TextField(blank=True)
    final_arguments = models.JSONField(null=True, blank=True)  # what ran (modified or not)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # Why an approval is asked: "" (the tool needs one) or "may_have_run" (a call not safe to
    # repeat was under way when its worker stopped: approving runs it again).
    reason = models.CharField(max_length=16, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)  # the approved tool began to run
    executed_at = models.DateTimeField(null=True, blank=True)  # the approved tool ran (once)
    result = models.TextField(blank=True)  # the tool result content the model reads
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "tool_call_id"], name="one_item_per_call")
        ]
        indexes = [models.Index(fields=["status", "deadline"], name="inbox_status_deadline")]

    def __str__(self) -> str:
        what = self.tool or self.question[:40]
        return f"{self.get_kind_display()}: {what} ({self.status})"

    @property
    def is_pending(self) -> bool:
        """Whether a decision is still awaited."""
        return self.status == ItemStatus.PENDING


class Verdict(models.Model):
    """The validator's judgement of one expert answer, and what the fallback chain did."""

    run = models.ForeignKey("delegation.Run", on_delete=models.CASCADE, related_name="verdicts")
    root_id = models.UUIDField(db_index=True)
    agent_name = models.CharField(max_length=64, db_index=True)
    mode = models.CharField(max_length=8)  # rules | model
    valid = models.BooleanField()
    issue = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    validator_failed = models.BooleanField(default=False)  # the validator failed: trusted
    outcome = models.CharField(max_length=16, blank=True)  # accepted | a fallback step
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent_name}: {'valid' if self.valid else 'invalid'}"


class ReviewStatus(models.TextChoices):
    """A flagged answer's review."""

    PENDING = "pending"
    CORRECT = "correct"
    WRONG = "wrong"
    FIXED = "fixed"  # a corrected answer was sent to the user's chat


class Review(models.Model):
    """An answer flagged `needs_review`, queued for a reviewer."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.OneToOneField(
        "delegation.Run", on_delete=models.CASCADE, related_name="review"
    )  # the turn's root run
    session = models.ForeignKey("chat.ChatSession", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    message_id = models.UUIDField(null=True, blank=True)  # the answer as the user saw it
    agent_name = models.CharField(max_length=64, db_index=True)  # the flagged agent
    group = models.CharField(max_length=150, blank=True)  # who reviews (assignment group)
    question = models.TextField()
    answer = models.TextField(blank=True)
    issue = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=8, choices=ReviewStatus.choices, default=ReviewStatus.PENDING, db_index=True
    )
    note = models.TextField(blank=True)
    corrected_answer = models.TextField(blank=True)
    followup_message_id = models.UUIDField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent_name}: {self.question[:40]} ({self.status})"


class ActivityKind(models.TextChoices):
    """Notable events, one activity row each."""

    DELEGATION_ASKED = "delegation_asked"
    DELEGATION_ANSWERED = "delegation_answered"
    DELEGATION_REFUSED = "delegation_refused"
    DELEGATION_FAILED = "delegation_failed"
    VALIDATION = "validation"
    FALLBACK = "fallback"
    ESCALATION_RAISED = "escalation_raised"
    ESCALATION_DECIDED = "escalation_decided"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_DECIDED = "approval_decided"
    TOOL_EXECUTED = "tool_executed"
    TOOL_CALLED = "tool_called"  # a tool outside the platform (MCP, the web, mail) was called
    WAIT_EXPIRED = "wait_expired"
    WAIT_CANCELLED = "wait_cancelled"
    WAIT_CYCLE = "wait_cycle"
    WAIT_TIMEOUT = "wait_timeout"
    WAIT_STUCK = "wait_stuck"
    REVIEW_DECIDED = "review_decided"
    ERROR = "error"


class Activity(models.Model):
    """One row per notable event of the agents' work, for admins and export.

    Scoped like what it reports (`delegation.humans.selectors.activity_for`): a row belongs to
    its agent's assignment group (or its inbox item's, or its review's), a row about a question
    to the end user is theirs alone, and a row whose run was shown knowledge (whose summary
    may quote it) carries those knowledge bases, whose access rules its reader must pass.
    """

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    kind = models.CharField(max_length=24, choices=ActivityKind.choices, db_index=True)
    agent_name = models.CharField(max_length=64, blank=True, db_index=True)
    run = models.ForeignKey(
        "delegation.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    root_id = models.UUIDField(null=True, blank=True, db_index=True)
    user = models.ForeignKey(  # on whose behalf
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor = models.ForeignKey(  # the person who acted (a decision, a review)
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    summary = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)
    group = models.CharField(max_length=150, blank=True)  # assignment group (name)
    audience = models.CharField(max_length=8, choices=Audience.choices, default=Audience.STAFF)
    knowledge = models.ManyToManyField(  # what the row may quote: its readers must pass their rules
        "knowledge.KnowledgeBase", blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "activity"

    def __str__(self) -> str:
        return f"{self.kind}: {self.summary[:60]}"
