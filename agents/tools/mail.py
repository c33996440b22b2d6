"""`send_email`: mail to the end user themself or to addresses an admin allows, sent through
Django's mail backend after a staff member approves the call."""

from __future__ import annotations

import smtplib
import uuid
from email.utils import parseaddr
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import validate_email
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.registry import ToolContext, ToolError, tool

SUBJECT_CHARS = 200
BODY_CHARS = 20_000
# Message-IDs of this tool: a name of its own, so ids from other senders never collide with them.
_MESSAGE_IDS = uuid.uuid5(uuid.NAMESPACE_URL, "urn:agent-platform:send_email")


def mail_sender() -> str:
    """The From address of send_email: MAIL_FROM, else DEFAULT_FROM_EMAIL."""
    return settings.MAIL_FROM or settings.DEFAULT_FROM_EMAIL


def mail_recipient(user: Any, asked: str | None) -> str:
    """Whom the mail goes to: the user (no address, or their own) or an allowed address; a
    ToolError for anyone else."""
    own = (getattr(user, "email", "") or "").strip()
    address = (asked or "").strip()
    if not address or address.lower() == own.lower():
        if not own:
            raise ToolError(_("Your account has no email address, so no mail can be sent to you."))
        return own
    try:
        validate_email(address)
    except ValidationError as exc:
        raise ToolError(_("%(address)s is not an email address.") % {"address": address}) from exc
    if not recipient_allowed(address):
        raise ToolError(
            _(
                "Mail can go only to you or to addresses an admin allows "
                "(MAIL_ALLOWED_RECIPIENTS); %(address)s is not one of them."
            )
            % {"address": address}
        )
    return address


def recipient_allowed(address: str) -> bool:
    """Whether MAIL_ALLOWED_RECIPIENTS lists the address, or its domain as "@domain" (exactly:
    a subdomain is another domain)."""
    address = address.lower()
    domain = address.rpartition("@")[2]
    for entry in settings.MAIL_ALLOWED_RECIPIENTS:
        entry = entry.strip().lower()
        if entry == address or (entry.startswith("@") and entry[1:] == domain):
            return True
    return False


def message_id(context: ToolContext, sender: str) -> str:
    """A Message-ID made from the run and the model's call id: a mail sent again for the same
    call carries the same id, so receivers can tell it is a duplicate."""
    run_id = getattr(context.run, "id", "")
    token = uuid.uuid5(_MESSAGE_IDS, f"{run_id}:{context.call_id}")
    domain = parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    return f"<{token}@{domain}>"


@tool(
    "send_email",
    "Send an email to the user (leave `to` out) or to an address the admin allows. A staff "
    "member approves every mail before it is sent.",
    {
        "type": "object",
        "properties": {
            "to": {"type": "string", "maxLength": 254, "description": "Empty: the user."},
            # No line breaks: a subject is one header line.
            "subject": {
                "type": "string",
                "minLength": 1,
                "maxLength": SUBJECT_CHARS,
                "pattern": "^[^\\r\\n]*\\Z",
            },
            "body": {"type": "string", "minLength": 1, "maxLength": BODY_CHARS},
        },
        "required": ["subject", "body"],
        "additionalProperties": False,
    },
    side_effect=True,
    approval=True,
    repeatable=False,  # a mail that may have gone out is not sent again blindly
    outside=True,
    title=gettext_lazy("Send an email"),
)
def send_email(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Send one plain-text mail from MAIL_FROM through Django's configured mail backend."""
    recipient = mail_recipient(context.user, args.get("to"))
    sender = mail_sender()
    own = (getattr(context.user, "email", "") or "").strip()
    identifier = message_id(context, sender)
    mail = EmailMessage(
        subject=args["subject"],
        body=args["body"],
        from_email=sender,
        to=[recipient],
        # Someone else who answers answers the user, not the platform's mailbox.
        reply_to=[own] if own and recipient != own else None,
        headers={"Message-ID": identifier},
    )
    try:
        mail.send()
    except (smtplib.SMTPException, OSError) as exc:
        raise ToolError(
            _("The mail server did not accept the mail: %(problem)s") % {"problem": exc}
        ) from exc
    return {"sent": True, "to": recipient, "subject": args["subject"], "message_id": identifier}
