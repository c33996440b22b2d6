"""A run's calls that wait for a person: `ask_human`, `ask_user`, and tools that need approval.

The call becomes an inbox item and the run waits (`waiting_human`) without a worker. When the
run resumes, the call's result comes from the item, as a delegate call's comes from its child;
an approved tool runs exactly once, inside the transaction that marks the item executed.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.registry import Tool, ToolContext, ToolResult, execute
from agents.tool_labels import call_summary, in_turn_script, tool_label
from agents.tool_questions import UserQuestion, arguments_answered, question_of
from chat.models import ChatMessage, MessageStatus
from config.text import sentences
from delegation.humans.activity import activity_record
from delegation.humans.models import ActivityKind, Audience, InboxItem, ItemKind, ItemStatus
from delegation.humans.notify import inbox_notify, session_notify
from delegation.humans.selectors import human_info, waiting_for
from delegation.humans.tools import ASK_USER, QUESTION_TOOLS
from delegation.models import Run
from delegation.runs.emitter import RunEmitter
from delegation.runs.hooks import HOOKS
from delegation.runs.transcript import arguments_shown
from delegation.steps.tool_run import budget_refusal, outside_call_logged, tool_message_save
from delegation.tree.budget import budget_take_tool_call

MAY_HAVE_RUN = "may_have_run"
# An item that is a tool's own question to the user (agents.tool_questions): its answer runs
# the call again (the question, kept on the call's message, says how).
TOOL_QUESTION = "tool_question"


def needs_person(run: Run, name: str, tools: dict[str, Tool]) -> bool:
    """Whether this call waits for a person: a question tool, or a tool the agent may use
    only with a staff member's approval: one that asks for it itself, or, when the agent
    requires approval, the ticked ones (none ticked: every tool that changes data)."""
    registered = tools.get(name)
    if registered is None:
        return False
    if name in QUESTION_TOOLS:
        return True
    if registered.approval:  # the tool asks for it whatever the agent says (e.g. send_email)
        return True
    config = run.agent_config
    if not config.get("require_approval"):
        return False
    keys = config.get("approval_tool_keys") or []
    return registered.key in keys if keys else registered.side_effect


def arguments_problem(registered: Tool, raw: str) -> bool:
    """Whether the arguments are unusable (they are then refused at once, as any bad call, and
    nobody is asked to approve them)."""
    try:
        arguments = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return True
    return not isinstance(arguments, dict) or any(registered.validator.iter_errors(arguments))


def human_call(
    run: Run, emitter: RunEmitter, call: dict[str, Any], message_id: uuid.UUID, tools: dict
) -> str | None:
    """The call's result content once a person decided (or the wait ended); None while the
    run must wait (the first time, the item is created and announced)."""
    item = InboxItem.objects.filter(run=run, tool_call_id=call["id"]).first()
    label = tool_label(tools.get(call["function"]["name"]), call["function"]["name"])
    if item is None:
        found = _tool_question(message_id)
        if found is not None:  # the tool itself asks the user (a clash to confirm, a city)
            asked, said = found
            _ask(
                run,
                emitter,
                call,
                message_id,
                reason=TOOL_QUESTION,
                label=label,
                asked=asked,
                said=said,
            )
            return None
        # Not a question nor a tool that needs approval: a call that may have run already.
        repeat = not needs_person(run, call["function"]["name"], tools)
        reason = MAY_HAVE_RUN if repeat else ""
        _ask(run, emitter, call, message_id, reason=reason, label=label)
        return None
    if item.is_pending:
        return None
    item.run = run
    content = approval_execute(item=item, run=run, tools=tools) if _runs_tool(item) else None
    if _answers_tool(item):
        content = answered_execute(item=item, run=run, tools=tools)
    content = content or outcome_content(item)
    _report(run, emitter, call, message_id, item, content, tools)
    return content


def waiting_summary(item: InboxItem, label: str) -> str:
    """The sentence of a call that waits for a person, in the turn's script."""
    return in_turn_script(_waiting_words(item, label))


def _waiting_words(item: InboxItem, label: str) -> str:
    """The user's own question as it is asked, else whom the call waits for."""
    if item.audience == Audience.USER and item.reason == TOOL_QUESTION:
        # The question itself is shown beside the call, with its buttons.
        return _("%(tool)s: waiting for your answer") % {"tool": label}
    if item.audience == Audience.USER:
        return item.question
    if item.kind == ItemKind.QUESTION:
        return _("Asked %(who)s: %(question)s") % {
            "who": waiting_for(item),
            "question": item.question,
        }
    return _("%(tool)s: waiting for approval from %(who)s") % {
        "tool": label,
        "who": waiting_for(item),
    }


def answered_execute(*, item: InboxItem, run: Run, tools: dict[str, Tool]) -> str:
    """The result of a call whose tool asked the user: the call runs again with the answer
    (confirm=true, or the argument it fills), once, under the item's row lock in the
    transaction that marks it executed; the user declining runs nothing. A redelivery gets
    the stored result."""
    with transaction.atomic():
        locked = InboxItem.objects.select_for_update().get(pk=item.pk)
        if locked.executed_at is not None:
            item.result, item.executed_at = locked.result, locked.executed_at
            return locked.result
        registered = tools.get(locked.tool)
        kept = _kept_tool(locked.message_id) if locked.message_id else {}
        asked = question_of({"ask": kept.get("ask")})
        arguments = (
            None
            if asked is None
            else arguments_answered(asked, dict(locked.arguments or {}), locked.answer)
        )
        if arguments is None:
            chose = _("You chose “%(answer)s”, so nothing was done.") % {"answer": locked.answer}
            said = sentences(str(kept.get("said") or ""), chose)
            result = ToolResult(True, data={"status": "declined", "message": said})
        elif registered is None:
            result = _gone(locked)
        else:
            locked.final_arguments = arguments
            locked.save(update_fields=["final_arguments"])
            result = _run_once(run, registered, locked, arguments)
        item.final_arguments = locked.final_arguments
        return _executed(item, locked, run, result)


def _kept_tool(message_id: uuid.UUID) -> dict[str, Any]:
    """The call's tool message as saved (empty when there is none)."""
    tool = ChatMessage.objects.filter(pk=message_id).values_list("tool", flat=True).first()
    return tool if isinstance(tool, dict) else {}


def _tool_question(message_id: uuid.UUID) -> tuple[UserQuestion, str] | None:
    """The question a call's tool put to the user in its result, with what the result said."""
    result = _kept_tool(message_id).get("result")
    asked = question_of(result)
    if asked is None or not isinstance(result, dict):
        return None
    return asked, str(result.get("message") or "")


def _answers_tool(item: InboxItem) -> bool:
    """Whether the item is a tool's own question whose answer runs the call again."""
    return item.status == ItemStatus.ANSWERED and item.reason == TOOL_QUESTION


def _ask(
    run: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    *,
    reason: str,
    label: str,
    asked: UserQuestion | None = None,
    said: str = "",
) -> None:
    """Create the item, push the deadlines of the run and its callers by the wait, and tell
    the session (the tool message shows who it waits for) and the staff inbox. `asked`: the
    tool's own question for the user (its call runs again with the answer)."""
    config = run.agent_config
    name = call["function"]["name"]
    arguments = json.loads(call["function"]["arguments"] or "{}")
    question = name in QUESTION_TOOLS or asked is not None
    if asked is not None:
        arguments = {"question": asked.question, "options": asked.options, "call": arguments}
    wait = timedelta(seconds=config.get("human_sla_seconds") or settings.HUMANS_SLA_SECONDS)
    with transaction.atomic():
        item = InboxItem.objects.create(
            run=run,
            tool_call_id=call["id"],
            message_id=message_id,
            kind=ItemKind.QUESTION if question else ItemKind.TOOL_APPROVAL,
            audience=Audience.USER if name == ASK_USER or asked else Audience.STAFF,
            user_id=run.user_id,
            agent_name=config["name"],
            agent_display_name=config["display_name"],
            path=list(run.path),
            question=arguments.get("question", "") if question else "",
            options=arguments.get("options", []) if question else [],
            urgency=arguments.get("urgency", "normal") if question else "normal",
            tool=name if asked else "" if question else name,
            arguments=arguments.get("call") if asked else None if question else arguments,
            reason=reason,
            group=config.get("human_group", "") if name != ASK_USER and not asked else "",
            deadline=timezone.now() + wait,
        )
        # The wait does not count against the time limits of the run and of its callers.
        Run.objects.filter(pk__in=[run.id, *_callers(run)]).update(deadline=F("deadline") + wait)
        run.deadline += wait
        # What people are shown is bounded as any tool call's is; the item keeps what runs.
        shown_arguments = arguments_shown(call["function"]["arguments"])
        shown = {
            "call_id": call["id"],
            "name": name,
            "arguments": shown_arguments,
            "summary": waiting_summary(item, label),
        }
        # A tool's own question stays on its message: how the answer goes back into the call.
        kept = {"ask": asked.as_data(), "said": said} if asked is not None else {}
        tool_message_save(
            run,
            emitter,
            message_id,
            MessageStatus.STREAMING,
            {**shown, **kept, "human": human_info(item)},
        )
        emitter.emit("tool.called", message_id, **shown, human=human_info(item))
        session_notify(item, "run.waiting")
        inbox_notify(item, "inbox.new_item")
        for waiting in HOOKS.person_waiting:  # (channels: the question in the user's chat)
            waiting(run, item)
        what = f"asked {waiting_for(item)}: {item.question}" if question else f"asks to run {name}"
        if reason == MAY_HAVE_RUN:
            what = f"asks whether to run {name} again: it may have run when its worker stopped"
        activity_record(
            kind=ActivityKind.ESCALATION_RAISED if question else ActivityKind.APPROVAL_REQUESTED,
            run=run,
            summary=f"{config['display_name']} {what}",
            data={"item_id": str(item.id), "tool": name, "arguments": shown_arguments},
            group=item.group,
            audience=item.audience,
        )


def _callers(run: Run) -> list[Any]:
    """The ids of the runs above this one, up to the root."""
    ids, parent_id = [], run.parent_id
    while parent_id is not None:
        ids.append(parent_id)
        parent_id = Run.objects.filter(pk=parent_id).values_list("parent_id", flat=True).first()
    return ids


def _runs_tool(item: InboxItem) -> bool:
    return item.kind == ItemKind.TOOL_APPROVAL and item.status in (
        ItemStatus.APPROVED,
        ItemStatus.MODIFIED,
    )


def approval_execute(*, item: InboxItem, run: Run, tools: dict[str, Tool]) -> str:
    """Run an approved tool once: under the item's row lock, in the transaction that marks it
    executed and stores the result. A second resume (a redelivery, a worker that took over
    after a crash) finds it executed and gets the stored result; a crash before the commit
    rolls the tool's writes back with the mark, so it runs again, once. A tool whose effects
    are outside this database (`outside`) cannot be rolled back: one not safe to repeat is
    marked started, committed, before it runs, and one found started but not executed is not
    run again (`tool_not_repeated`). An outside call takes one of the turn's outside calls
    first (taken before any lock: a redelivery may count one twice, never run one twice)."""
    registered = tools.get(item.tool)
    if registered is not None and registered.outside and item.executed_at is None:
        refused = None if budget_take_tool_call(root=run.root_or_self) else budget_refusal(run)
        if refused is not None:
            with transaction.atomic():
                locked = InboxItem.objects.select_for_update().get(pk=item.pk)
                if locked.executed_at is None:
                    return _executed(item, locked, run, refused)
    if registered is not None and registered.outside and not registered.safe_to_repeat:
        with transaction.atomic():
            locked = InboxItem.objects.select_for_update().get(pk=item.pk)
            if locked.executed_at is None and locked.started_at is not None:
                return _executed(item, locked, run, _not_repeated(locked))
            if locked.started_at is None:
                locked.started_at = timezone.now()
                locked.save(update_fields=["started_at"])
    with transaction.atomic():
        locked = InboxItem.objects.select_for_update().get(pk=item.pk)
        if locked.executed_at is not None:
            item.result, item.executed_at = locked.result, locked.executed_at
            return locked.result
        if registered is None:
            result = _gone(locked)
        else:
            arguments = (
                locked.final_arguments if locked.final_arguments is not None else locked.arguments
            )
            result = _run_once(run, registered, locked, arguments)
            if registered.outside:
                outside_call_logged(run, registered, result)
        return _executed(item, locked, run, result)


def _gone(item: InboxItem) -> ToolResult:
    """The result of a decided call whose tool the agent no longer has."""
    return ToolResult(
        False,
        error_code="unknown_tool",
        error=_("The tool %(name)s is no longer available to this agent.")
        % {"name": repr(item.tool)},
    )


def _run_once(run: Run, registered: Tool, item: InboxItem, arguments: Any) -> ToolResult:
    """The decided call, run as the user in a savepoint: a tool that fails leaves nothing."""
    context = ToolContext(
        user=run.user, session=run.session, run=run, agent=run.agent, call_id=item.tool_call_id
    )
    with transaction.atomic():
        result = execute(registered, context, json.dumps(arguments))
        if not result.ok:
            transaction.set_rollback(True)
    return result


def _not_repeated(item: InboxItem) -> ToolResult:
    """The result of an approved call found started but not finished (its worker stopped)."""
    return ToolResult(
        False,
        error_code="tool_not_repeated",
        error=_(
            "%(tool)s was started once and its worker stopped before it finished; it may have "
            "run. It was not run again."
        )
        % {"tool": item.tool},
    )


def _executed(item: InboxItem, locked: InboxItem, run: Run, result: ToolResult) -> str:
    """Mark the locked item executed with its result (inside the caller's transaction)."""
    locked.executed_at = timezone.now()
    locked.result = result.as_content()
    locked.save(update_fields=["executed_at", "result"])
    activity_record(
        kind=ActivityKind.TOOL_EXECUTED,
        run=run,
        summary=f"{locked.tool} ran after approval: {'ok' if result.ok else result.error}",
        data={"item_id": str(locked.id), "ok": result.ok},
        group=locked.group,
    )
    item.result, item.executed_at = locked.result, locked.executed_at
    return locked.result


# What the model reads when no tool ran or a question ended without an answer.
_ENDINGS = {
    ItemStatus.REJECTED: "human_declined",
    ItemStatus.EXPIRED: "human_no_answer",
    ItemStatus.CANCELLED: "human_cancelled",
}


def outcome_content(item: InboxItem) -> str:
    """The tool result content of a decided question, or of an approval whose tool did not run."""
    who = (
        (item.decided_by.get_full_name() or item.decided_by.get_username())
        if item.decided_by_id
        else ""
    )
    if item.status == ItemStatus.ANSWERED:
        said = _("%(who)s answered: %(answer)s") % {
            "who": who or _("A person"),
            "answer": item.answer,
        }
        body: dict[str, Any] = {
            "ok": True,
            "result": {
                "status": "answered",
                "answer": item.answer,
                "answered_by": who,
                "message": said,
            },
        }
        return json.dumps(body, ensure_ascii=False)
    note = _(" (%(note)s)") % {"note": item.note} if item.note else ""
    approval = item.kind == ItemKind.TOOL_APPROVAL
    if approval:
        rejected = _("%(who)s rejected this call; the tool did not run%(note)s.") % {
            "who": who or _("A staff member"),
            "note": note,
        }
    else:
        rejected = _("%(who)s declined to answer%(note)s.") % {
            "who": who or _("The person asked"),
            "note": note,
        }
    messages = {
        ItemStatus.REJECTED: rejected,
        ItemStatus.EXPIRED: _("No answer from a human before the deadline; the tool did not run.")
        if approval
        else _("No answer from a human before the deadline."),
        ItemStatus.CANCELLED: _("The user cancelled the wait; the tool did not run.")
        if approval
        else _("The user cancelled the wait."),
    }
    code = (
        "tool_rejected"
        if approval and item.status == ItemStatus.REJECTED
        else _ENDINGS[item.status]
    )
    if item.reason == MAY_HAVE_RUN and item.status == ItemStatus.REJECTED:
        code = "tool_not_repeated"
        messages[ItemStatus.REJECTED] = _(
            "%(who)s chose not to run it again; it may have run once before its worker stopped."
        ) % {"who": who or _("A staff member")}
    body = {"ok": False, "error": {"code": code, "message": messages[item.status]}}
    return json.dumps(body, ensure_ascii=False)


def _report(
    run: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    item: InboxItem,
    content: str,
    tools: dict[str, Tool],
) -> None:
    """Complete the call's tool message with its result and emit `tool.result`."""
    try:
        body = json.loads(content)
    except json.JSONDecodeError:
        body = {"ok": True, "result": content}
    outcome = (
        {"ok": True, "result": body.get("result", body.get("text"))}
        if body.get("ok")
        else {"ok": False, "error": body.get("error") or {"code": "tool_failed", "message": ""}}
    )
    name = call["function"]["name"]
    shown = {
        "call_id": call["id"],
        "name": name,
        "arguments": arguments_shown(call["function"]["arguments"]),
    }
    if item.final_arguments is not None:
        shown["arguments"] = item.final_arguments
    shown["summary"] = call_summary(tools.get(name), name, shown["arguments"], outcome)
    human = human_info(item)
    tool_message_save(
        run, emitter, message_id, MessageStatus.COMPLETED, {**shown, **outcome, "human": human}
    )
    emitter.emit("tool.result", message_id, **shown, **outcome, human=human)
