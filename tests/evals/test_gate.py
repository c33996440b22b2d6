"""The publish gate: a save of a gated agent runs its suites on the draft first; below the
threshold it is held (failing cases shown) until an admin publishes it anyway (recorded), fixes
it or discards it; above, it is published with the result; revisions keep that result."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from rest_framework.test import APIClient

from agents.models import Agent
from agents.services import PublishHeld, agent_revision_restore, agent_save
from delegation.evals.models import AgentDraft, DraftStatus, EvalRun, PublishRecord
from tests.evals.conftest import make_case, make_suite
from tests.evals.test_drafts import team  # noqa: F401  (the assistant → finance fake team)


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def gated(team):  # noqa: F811
    """A gated suite on the assistant that also gates finance; it expects finance's v1 words."""
    suite = make_suite(Agent.objects.get(name="assistant"), name="numbers", publish_gate=True)
    suite.gate_agents.set([Agent.objects.get(name="finance")])
    make_case(
        suite, "How are the numbers?", name="relays finance", expect={"answer_contains": ["v1"]}
    )
    return suite


def change_url(agent: Agent) -> str:
    return reverse("admin:agents_agent_change", args=[agent.pk])


def form_data(client: Any, agent: Agent, **changes: Any) -> dict[str, Any]:
    """The agent's change form as the browser would post it, with `changes`."""
    form = client.get(change_url(agent)).context["adminform"].form
    values = {name: form[name].value() for name in form.fields}
    values.update(changes)
    data: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, bool):
            if value:
                data[key] = "on"
        elif value is None:
            data[key] = ""
        elif isinstance(value, list | tuple):
            data[key] = [str(v) for v in value]
        else:
            data[key] = str(value)
    return data


def finance() -> Agent:
    return Agent.objects.get(name="finance")


@pytest.mark.django_db(transaction=True)
def test_a_save_below_the_threshold_is_held_with_the_failing_case_shown(admin_client, gated):
    response = admin_client.post(
        change_url(finance()),
        form_data(admin_client, finance(), system_prompt="You are finance-v2."),
    )
    draft = AgentDraft.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:evals_agentdraft_change", args=[draft.pk])
    assert (finance().version, finance().system_prompt) == (1, "You are finance.")
    assert not LogEntry.objects.exists()  # nothing changed yet
    assert draft.status == DraftStatus.HELD and draft.data["system_prompt"] == "You are finance-v2."
    page = admin_client.get(response["Location"]).content.decode()
    assert "Held" in page and "relays finance" in page and "missing: “v1”" in page
    assert "Publish anyway" in page and "Edit the draft" in page


@pytest.mark.django_db(transaction=True)
def test_publishing_anyway_is_recorded_on_the_revision(admin_client, admin_user, gated):
    admin_client.post(
        change_url(finance()),
        form_data(admin_client, finance(), system_prompt="You are finance-v2."),
    )
    draft = AgentDraft.objects.get()
    url = reverse("admin:evals_draft_publish", args=[draft.pk])
    response = admin_client.post(url, {"reason": "v1 wording is retired"})
    assert response.status_code == 302 and response["Location"] == change_url(finance())
    agent = finance()
    assert (agent.version, agent.system_prompt) == (2, "You are finance-v2.")
    revision = agent.revisions.get(version=2)
    assert "published anyway by admin over failing evals: numbers 0/1" in revision.comment
    record = PublishRecord.objects.get(revision=revision)
    assert (record.passed, record.override, record.override_reason) == (
        False,
        True,
        "v1 wording is retired",
    )
    assert record.result["suites"][0]["failing"] == ["relays finance"]
    draft.refresh_from_db()
    assert draft.status == DraftStatus.PUBLISHED and draft.decided_by == admin_user
    listing = admin_client.get(reverse("admin:agents_agentrevision_changelist")).content.decode()
    assert "published anyway: numbers 0/1" in listing


@pytest.mark.django_db(transaction=True)
def test_a_save_that_passes_is_published_with_its_eval_result(admin_client, gated):
    response = admin_client.post(
        change_url(finance()), form_data(admin_client, finance(), description="Money matters.")
    )
    draft = AgentDraft.objects.get()
    assert draft.status == DraftStatus.PUBLISHED and draft.published_version == 2
    agent = finance()
    assert agent.description == "Money matters." and agent.version == 2
    record = PublishRecord.objects.get(revision__agent=agent, revision__version=2)
    assert record.passed and not record.override
    assert "published after evals: numbers 1/1" in record.revision.comment
    assert (
        "Published as version 2 after its evals passed"
        in admin_client.get(response["Location"]).content.decode()
    )


@pytest.mark.django_db(transaction=True)
def test_fixing_a_held_draft_starts_from_its_values(admin_client, gated):
    admin_client.post(
        change_url(finance()),
        form_data(admin_client, finance(), system_prompt="You are finance-v2."),
    )
    held = AgentDraft.objects.get()
    page = admin_client.get(change_url(finance()) + f"?draft={held.pk}")
    assert page.context["adminform"].form["system_prompt"].value() == "You are finance-v2."
    assert "Editing the held draft" in page.content.decode()
    fixed = form_data(admin_client, finance(), description="Fixed, v1 kept.")
    admin_client.post(change_url(finance()), fixed)
    held.refresh_from_db()
    assert held.status == DraftStatus.DISCARDED
    assert finance().description == "Fixed, v1 kept." and finance().version == 2


@pytest.mark.django_db(transaction=True)
def test_discarding_a_draft_leaves_the_agent_as_it_was(admin_client, gated):
    admin_client.post(
        change_url(finance()),
        form_data(admin_client, finance(), system_prompt="You are finance-v2."),
    )
    draft = AgentDraft.objects.get()
    admin_client.post(reverse("admin:evals_draft_discard", args=[draft.pk]))
    draft.refresh_from_db()
    assert draft.status == DraftStatus.DISCARDED and finance().version == 1
    response = admin_client.post(reverse("admin:evals_draft_publish", args=[draft.pk]))
    assert finance().version == 1  # a discarded draft cannot be published
    assert (
        "only an open draft is published" in admin_client.get(response["Location"]).content.decode()
    )


@pytest.mark.django_db(transaction=True)
def test_a_draft_is_not_published_over_a_change_made_since(admin_client, gated):
    admin_client.post(
        change_url(finance()),
        form_data(admin_client, finance(), system_prompt="You are finance-v2."),
    )
    draft = AgentDraft.objects.get()
    agent_save(agent=finance(), data={"description": "Someone else's edit."}, gated=False)
    response = admin_client.post(reverse("admin:evals_draft_publish", args=[draft.pk]))
    assert (
        "changed since this draft was made (v1 → v2)"
        in admin_client.get(response["Location"]).content.decode()
    )
    assert finance().system_prompt == "You are finance." and finance().version == 2


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_publish_held_and_publishes_on_request(gated, admin_user):
    api = APIClient()
    api.force_authenticate(admin_user)
    held = api.patch(
        "/api/v1/agents/finance/", {"system_prompt": "You are finance-v2."}, format="json"
    )
    assert held.status_code == 409
    error = held.json()["error"]
    assert error["code"] == "publish_held" and error["details"]["suites"] == ["numbers"]
    draft_id = error["details"]["draft_id"]
    body = api.get(f"/api/v1/evals/drafts/{draft_id}/").json()
    assert body["status"] == "held" and body["suites"][0]["failing"] == ["relays finance"]
    published = api.post(f"/api/v1/evals/drafts/{draft_id}/publish/", {}, format="json")
    assert published.json() == {"version": 2, "passed": False, "override": True}
    assert finance().system_prompt == "You are finance-v2."


@pytest.mark.django_db(transaction=True)
def test_ungated_and_unchanged_saves_are_not_held(gated):
    gated.publish_gate = False
    gated.save()
    agent_save(agent=finance(), data={"system_prompt": "You are finance-v2."})
    assert finance().version == 2 and not AgentDraft.objects.exists()
    gated.publish_gate = True
    gated.save()
    agent_save(agent=finance(), data={"system_prompt": "You are finance-v2."})  # no change
    assert finance().version == 2 and not EvalRun.objects.exists()  # nothing saved


@pytest.mark.django_db(transaction=True)
def test_restoring_a_revision_passes_the_gate_too(gated):
    agent_save(agent=finance(), data={"system_prompt": "You are finance-v2."}, gated=False)
    agent_save(agent=finance(), data={"system_prompt": "You are finance."}, gated=False)
    with pytest.raises(PublishHeld) as held:
        agent_revision_restore(revision=finance().revisions.get(version=2))
    assert AgentDraft.objects.get(pk=held.value.details["draft_id"]).status == DraftStatus.HELD
    assert finance().version == 3
