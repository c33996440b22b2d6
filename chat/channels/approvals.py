"""Staff approvals in Slack: a request waiting for staff is posted to its approvals channel
(`SLACK_APPROVALS_CHANNEL` for no team, a team's own in `SLACK_APPROVALS_CHANNELS`), a gated
tool call with Approve and Reject buttons, a question with a link to the inbox (nobody outside
a team reads its requests); a click by a linked account decides it as the inbox would (the
same permission check, the first decision wins) and the message then says who decided what."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from chat.channels.configured import slack_configured
from chat.channels.gateway import link_invitation
from chat.channels.models import Channel, ChannelLink
from config.enqueue import enqueue
from config.errors import AppError
from delegation.humans.decisions import item_decide
from delegation.humans.models import Audience, Decision, InboxItem, ItemKind, ItemStatus
from delegation.humans.selectors import is_eval_item
from delegation.models import Run

logger = logging.getLogger(__name__)

POSTED_KEY = "slack-approval:{}"
ARGUMENTS_SHOWN = 1500  # characters of a tool call's arguments in the message
DECISIONS = {"approve": Decision.APPROVE, "reject": Decision.REJECT}


def approval_after_wait(run: Run, item: Any) -> None:
    """A run waits for staff: post it to Slack's approvals channel, if one is set (engine
    hook `person_waiting`)."""
    if item.audience == Audience.STAFF and approvals_channel(item.group) and slack_configured():
        enqueue("chat_channels.approval_post", str(item.id))


def approvals_channel(group: str) -> str:
    """Where a team's requests are posted ("" for none: they stay in the inbox only); a
    request for no team goes to the one channel for all staff."""
    if group:
        return str(settings.SLACK_APPROVALS_CHANNELS.get(group, ""))
    return str(settings.SLACK_APPROVALS_CHANNEL)


def approval_post(*, item_id: uuid.UUID) -> None:
    """Post a pending staff request to the approvals channel, at most once (the inbox keeps
    it whatever happens here)."""
    item = InboxItem.objects.select_related("run", "user").filter(pk=item_id).first()
    if item is None or item.status != ItemStatus.PENDING or is_eval_item(item):
        return
    channel = approvals_channel(item.group)
    if not channel:
        return
    from chat.channels.slack.sender import slack_post_blocks

    with translation.override(item.run.language or None):
        text, blocks = approval_message(item)
    if cache.add(POSTED_KEY.format(item.id), 1, 7 * 24 * 3600):
        slack_post_blocks(channel, text, blocks)


def approval_message(item: InboxItem) -> tuple[str, list[dict[str, Any]]]:
    """The request as Slack's fallback text and blocks, in the active language."""
    who = {"agent": item.agent_display_name, "user": item.user.get_username()}
    inbox = {
        "type": "button",
        "text": {"type": "plain_text", "text": _("Open the inbox")},
        "url": settings.SITE_URL.rstrip("/") + reverse("chat:inbox"),
        "action_id": "inbox",
    }
    if item.kind != ItemKind.TOOL_APPROVAL:
        text = _("%(agent)s asks, for %(user)s: %(question)s") % {
            **who,
            "question": item.question,
        }
        return text, [_section(text), {"type": "actions", "elements": [inbox]}]
    text = _("%(agent)s asks to use %(tool)s for %(user)s.") % {**who, "tool": item.tool}
    arguments = json.dumps(item.arguments or {}, ensure_ascii=False, indent=1)
    if len(arguments) > ARGUMENTS_SHOWN:
        arguments = arguments[:ARGUMENTS_SHOWN] + "…"
    buttons = [
        _button(_("Approve"), "approve", item.id, style="primary"),
        _button(_("Reject"), "reject", item.id, style="danger"),
        inbox,
    ]
    blocks = [
        _section(text),
        _section(f"```{arguments}```"),
        {"type": "actions", "block_id": f"approval:{item.id}", "elements": buttons},
    ]
    if item.group:
        team = _("Team: %(group)s") % {"group": item.group}
        blocks.insert(2, {"type": "context", "elements": [{"type": "mrkdwn", "text": team}]})
    return text, blocks


@dataclass(frozen=True)
class Click:
    """One click on a posted request's button: what, on which request, by whom, where."""

    decision: str
    item_id: uuid.UUID
    clicker: str  # the Slack account
    channel: str
    ts: str  # the message's


def approval_click(payload: dict[str, Any]) -> Click | None:
    """The click in an interactivity payload; None for the inbox link (Slack opened it);
    ValueError for a payload that is not a click on one of these buttons."""
    actions = payload.get("actions")
    if payload.get("type") != "block_actions" or not isinstance(actions, list) or not actions:
        raise ValueError("not a click on a button")
    action, user, where = actions[0], payload.get("user"), payload.get("container")
    if not isinstance(action, dict) or not isinstance(user, dict) or not isinstance(where, dict):
        raise ValueError("a click without its action, user or message")
    if action.get("action_id") == "inbox":
        return None
    if action.get("action_id") not in DECISIONS:
        raise ValueError("an unknown button")
    try:
        item_id = uuid.UUID(str(action.get("value")))
    except ValueError:
        raise ValueError("a button that names no request") from None
    return Click(
        decision=DECISIONS[action["action_id"]],
        item_id=item_id,
        clicker=str(user.get("id", "")),
        channel=str(where.get("channel_id", "")),
        ts=str(where.get("message_ts", "")),
    )


def approval_clicked(click: Click) -> None:
    """Decide the clicked request as the clicking account's linked user, then show who
    decided what (queued: Slack waits three seconds for the click's answer); a note only
    they see when nothing was decided (not linked, not theirs to decide, decided first)."""
    link = (
        ChannelLink.objects.select_related("user")
        .filter(channel=Channel.SLACK, external_id=click.clicker)
        .first()
    )
    if link is None:
        _tell(click, link_invitation(Channel.SLACK, click.clicker))
        return
    item = InboxItem.objects.select_related("run", "user").filter(pk=click.item_id).first()
    if item is None:
        _tell(click, _("This request no longer exists."))
        return
    try:
        item_decide(item=item, user=link.user, decision=click.decision)
    except AppError as exc:
        _tell(click, exc.message)
        return
    name = {"name": link.user.get_username()}
    with translation.override(item.run.language or None):
        if click.decision == Decision.APPROVE:
            done = _("Approved by %(name)s") % name
        else:
            done = _("Rejected by %(name)s") % name
        outcome = f"{done}: {approval_message(item)[0]}"
    enqueue("chat_channels.approval_shown", click.channel, click.ts, outcome)


def _tell(click: Click, text: str) -> None:
    """A note only the clicking account sees, beside the message."""
    enqueue("chat_channels.approval_note", click.channel, click.clicker, text)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _button(label: str, action: str, item_id: uuid.UUID, *, style: str) -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "action_id": action,
        "value": str(item_id),
        "style": style,
    }
