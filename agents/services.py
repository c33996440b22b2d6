"""Writes to agent definitions: one save path (rules, publish gates, entry flag, version,
revision), restore."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import F

from agents.models import AGENT_EDITABLE_FIELDS, Agent, AgentRevision
from agents.validation import agent_validate
from config.errors import AppError

SNAPSHOT_FIELDS = [
    f for f in AGENT_EDITABLE_FIELDS if f not in ("allowed_subagents", "access_group")
]  # those two are stored by name, below
DECIMAL_FIELDS = [
    f.name for f in Agent._meta.concrete_fields if f.get_internal_type() == "DecimalField"
]


def agent_snapshot(*, agent: Agent, subagents: Iterable[Agent] | None = None) -> dict[str, Any]:
    """The agent's editable definition as plain JSON (sub-agents and group by name); with
    `subagents`, as it would be saved with those (an unsaved draft). An agent loaded
    `with_subagent_names` (agents.selectors) brings its sub-agents' names along."""
    data = {field: _plain(getattr(agent, field)) for field in SNAPSHOT_FIELDS}
    if subagents is not None:
        names = [a.name for a in subagents]
    elif hasattr(agent, "subagent_names"):
        names = agent.subagent_names or []
    else:
        names = agent.allowed_subagents.values_list("name", flat=True)
    data["allowed_subagents"] = sorted(names)
    data["access_group"] = agent.access_group.name if agent.access_group_id else None
    return data


def agent_data_from_snapshot(*, snapshot: Mapping[str, Any], agent: Agent) -> dict[str, Any]:
    """`agent_save` data making `agent` as the snapshot says (its name kept; sub-agents and
    group looked up by name, the ones that no longer exist left out)."""
    data: dict[str, Any] = {
        field: snapshot[field] for field in SNAPSHOT_FIELDS if field in snapshot and field != "name"
    }
    group_name = snapshot.get("access_group")
    data["access_group"] = Group.objects.filter(name=group_name).first() if group_name else None
    data["allowed_subagents"] = Agent.objects.filter(
        name__in=snapshot.get("allowed_subagents", [])
    ).exclude(pk=agent.pk)
    return data


class PublishHeld(AppError):
    """A publish gate held an agent save as a draft; `details` name the draft and its evals."""

    status = 409

    def __init__(self, message: str, *, details: dict[str, Any]) -> None:
        super().__init__("publish_held", message, details=details)


PublishGate = Callable[..., None]
_publish_gates: list[PublishGate] = []


def publish_gate_register(gate: PublishGate) -> None:
    """Have `gate(agent=, draft=, user=, comment=)` see each gated save of an existing agent
    before it is written (`draft`: the definition as `agent_snapshot` would store it). A gate
    holds the save by recording what it needs and raising PublishHeld (evals registers one)."""
    if gate not in _publish_gates:
        _publish_gates.append(gate)


def unix_newlines(value: Any) -> Any:
    """Text with "\r\n" and lone "\r" line ends as "\n" (other values as they are)."""
    if isinstance(value, str) and "\r" in value:
        return value.replace("\r\n", "\n").replace("\r", "\n")
    return value


def agent_unchanged(*, agent: Agent, subagents: Iterable[Agent] | None = None) -> bool:
    """Whether the (unsaved) `agent`, with `subagents` if given, defines what its stored row
    does: the same snapshot, amounts compared as numbers (1.5 is 1.5000)."""
    stored = Agent.objects.filter(pk=agent.pk).first()
    if stored is None:
        return False
    draft = _comparable(agent_snapshot(agent=agent, subagents=subagents))
    return draft == _comparable(agent_snapshot(agent=stored))


def _comparable(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot with its amounts as Decimals and its text with "\n" line ends."""
    plain = {k: unix_newlines(v) for k, v in snapshot.items()}
    for field in DECIMAL_FIELDS:
        if plain.get(field) not in (None, ""):
            plain[field] = Decimal(str(plain[field]))
    return plain


def _plain(value: Any) -> Any:
    """A field's value as JSON can hold it (decimal amounts as strings)."""
    return str(value) if isinstance(value, Decimal) else value


def agent_check(
    *, agent: Agent, subagents: Iterable[Agent] | None = None, exclude: Collection[str] = ()
) -> None:
    """Every rule an unsaved definition must pass, as one ValidationError keyed by field.

    In order: field values and the unique name (model validation), then the cross-field rules
    of agents.validation. The one-entry-agent constraint is not a rule here: saving an entry
    agent moves the flag to it (`agent_save`). `exclude` names fields a form already refused.
    """
    errors: dict[str, Any] = {}
    try:
        agent.full_clean(exclude=[*exclude, "is_entry"])
    except ValidationError as exc:
        errors = exc.update_error_dict(errors)
    if subagents is None:
        subagents = agent.allowed_subagents.all() if agent.pk else []
    stored = Agent.objects.filter(pk=agent.pk).values_list("tool_keys", flat=True).first()
    try:
        agent_validate(
            agent_pk=agent.pk,
            tool_keys=list(agent.tool_keys or []),
            allowed_subagent_pks=[a.pk for a in subagents],
            provider=agent.provider,
            model=agent.model,
            access_permission=agent.access_permission,
            base_url=agent.base_url,
            is_entry=agent.is_entry,
            enabled=agent.enabled,
            stored_tool_keys=list(stored or []),
        )
    except ValidationError as exc:
        errors = exc.update_error_dict(errors)
    if errors:
        raise ValidationError(errors)


def agent_save(
    *,
    agent: Agent | None,
    data: Mapping[str, Any],
    user: Any = None,
    comment: str = "",
    gated: bool = True,
) -> Agent:
    """Create (`agent=None`) or change an agent, all or nothing: check every rule, pass the
    publish gates, move the entry flag to it if it is the entry agent, save, bump the version
    and store a revision.

    `data` maps editable fields to values (`allowed_subagents`: agents, `access_group`: a group
    or None); fields it leaves out keep their value. Text is stored with "\n" line ends (a
    browser's form posts "\r\n"). A save that changes nothing (as `agent_unchanged` compares)
    writes nothing: no new version, no revision, no gate; the stored agent is returned.
    Raises ValidationError keyed by field, and PublishHeld when a gate holds the change of an
    existing agent as a draft (nothing saved; what the gate recorded stays, so call this outside
    a transaction that the error would roll back). `gated=False` is for the gate's own publish.
    """
    unknown = set(data) - set(AGENT_EDITABLE_FIELDS)
    if unknown:
        raise ValueError(f"not editable agent fields: {sorted(unknown)}")
    agent = agent if agent is not None else Agent()
    for field, value in data.items():
        if field != "allowed_subagents":
            setattr(agent, field, unix_newlines(value))
    subagents = list(data["allowed_subagents"]) if "allowed_subagents" in data else None
    agent_check(agent=agent, subagents=subagents)
    if agent.pk is not None and agent_unchanged(agent=agent, subagents=subagents):
        return Agent.objects.get(pk=agent.pk)
    if gated and agent.pk is not None:
        draft = agent_snapshot(agent=agent, subagents=subagents)
        for gate in _publish_gates:
            gate(agent=agent, draft=draft, user=user, comment=comment)
    return _agent_write(agent=agent, subagents=subagents, user=user, comment=comment)


@transaction.atomic
def _agent_write(*, agent: Agent, subagents: list[Agent] | None, user: Any, comment: str) -> Agent:
    if agent.is_entry:
        _entry_move_to(agent=agent, user=user)
    agent.save()
    if subagents is not None:
        agent.allowed_subagents.set(subagents)
    agent_revision_record(agent=agent, user=user, comment=comment)
    return agent


def _entry_move_to(*, agent: Agent, user: Any) -> None:
    """Clear the entry flag of every other agent (a new version of each) before `agent` takes it."""
    # Locking the current entry makes a concurrent switch wait for this one; the second query is
    # a new statement, so it also sees an entry agent that such a switch committed meanwhile.
    list(Agent.objects.select_for_update().filter(is_entry=True).exclude(pk=agent.pk))
    previous = list(Agent.objects.select_for_update().filter(is_entry=True).exclude(pk=agent.pk))
    if not previous:
        return
    Agent.objects.filter(pk__in=[a.pk for a in previous]).update(is_entry=False)
    for old in previous:
        old.is_entry = False
        agent_revision_record(agent=old, user=user, comment=f"Entry agent is now {agent.name}.")


def validation_errors_by_field(exc: ValidationError) -> dict[str, list[str]]:
    """A ValidationError's messages by field, with non-field ones under `non_field_errors`."""
    return {
        ("non_field_errors" if field == NON_FIELD_ERRORS else field): messages
        for field, messages in exc.message_dict.items()
    }


@transaction.atomic
def agent_revision_record(*, agent: Agent, user: Any = None, comment: str = "") -> AgentRevision:
    """Bump the agent's version and store what it is now; call after it and its M2M are saved."""
    Agent.objects.filter(pk=agent.pk).update(version=F("version") + 1)
    agent.refresh_from_db(fields=["version"])
    return AgentRevision.objects.create(
        agent=agent,
        version=agent.version,
        snapshot=agent_snapshot(agent=agent),
        comment=comment[:500],
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def agent_revision_restore(*, revision: AgentRevision, user: Any = None) -> AgentRevision:
    """Make the agent as it was in `revision`, through `agent_save` (so with today's rules and
    publish gates), recorded as a new revision. Raises ValidationError if that definition is no
    longer valid, PublishHeld if a gate holds it."""
    agent = Agent.objects.get(pk=revision.agent_id)
    data = agent_data_from_snapshot(snapshot=revision.snapshot, agent=agent)
    agent = agent_save(
        agent=agent, data=data, user=user, comment=f"Restored from version {revision.version}."
    )
    return agent.revisions.get(version=agent.version)
