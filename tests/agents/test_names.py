"""Names and descriptions per language: which one people read, the rules a set must satisfy,
the revision snapshot, the REST round trip and the migration that adds them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.utils import translation

from agents.mcp.models import McpServer
from agents.models import Agent
from agents.names import text_in, validate_descriptions, validate_display_names
from agents.services import agent_save
from delegation.runs.create import pinned_config
from tests.api.conftest import staff_api as staff_api  # a fixture
from tests.factories import make_agent
from tests.scratch_database import scratch_database

FINANCE = {"en": "Finance expert", "zh-hant": "財務專家", "zh-hans": "财务专家"}


@pytest.mark.parametrize(
    ("names", "language", "expected"),
    [
        (FINANCE, "zh-hant", "財務專家"),
        (FINANCE, "zh-hans", "财务专家"),
        (FINANCE, "en", "Finance expert"),
        ({"zh-hans": "财务专家"}, "zh-hant", "財務專家"),  # the other script, converted
        ({"zh-hant": "財務專家"}, "zh-hans", "财务专家"),
        ({"zh-hant": "財務專家"}, "en", "Finance"),  # English never gets Chinese
        ({"zh-hant": "財務專家"}, "zh-TW", "財務專家"),  # a browser's variant is ours
        ({"zh-hans": "财务专家"}, "zh-cn", "财务专家"),
        ({"en": "Finance expert"}, "en-us", "Finance expert"),
        ({"zh-hant": "  ", "zh-hans": "财务专家"}, "zh-hant", "財務專家"),  # blank: not set
        ({}, "zh-hant", "Finance"),
        (None, "fr", "Finance"),
    ],
)
def test_the_name_people_read_falls_back_sensibly(names, language, expected):
    assert text_in(names, "Finance", language) == expected


def test_without_a_language_the_active_one_is_read():
    with translation.override("zh-hant"):
        assert text_in({"zh-hans": "财务文件"}, "Finance documents") == "財務文件"
    with translation.override("en"):
        assert text_in({"zh-hans": "财务文件"}, "Finance documents") == "Finance documents"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("財務專家", "An object of language"),
        (["財務專家"], "An object of language"),
        ({"fr": "Finances"}, "Unknown language “fr”: use en, zh-hant, zh-hans."),
        ({"zh-TW": "財務"}, "Unknown language “zh-TW”"),
        ({"en": 5}, "The en name must be text."),
        ({"en": "x" * 121}, "The en name has 121 characters; the limit is 120."),
    ],
)
def test_malformed_names_are_refused_with_a_clear_error(value, message):
    with pytest.raises(ValidationError) as caught:
        validate_display_names(value)
    assert message in caught.value.messages[0]


def test_a_description_may_be_longer_than_a_name_but_not_endless():
    validate_descriptions({"zh-hant": "字" * 2000})
    with pytest.raises(ValidationError, match="The zh-hans description has 2001 characters"):
        validate_descriptions({"zh-hans": "字" * 2001})


@pytest.mark.django_db
def test_an_agent_reads_its_name_and_description_in_each_language():
    agent = make_agent(
        "finance",
        display_name="Finance expert",
        display_names={"zh-hans": "财务专家"},
        description="Budgets and costs.",
        descriptions={"zh-hant": "預算與費用。"},
    )
    assert agent.name_in("zh-hant") == "財務專家" and agent.name_in("en") == "Finance expert"
    assert agent.description_in("zh-hans") == "预算与费用。"
    assert agent.description_in("en") == "Budgets and costs."
    with translation.override("zh-hans"):
        assert agent.name_in() == "财务专家"


@pytest.mark.django_db
def test_an_mcp_server_name_converts_between_scripts_too():
    server = McpServer(name="erp", display_name="ERP", display_names={"zh-hant": "財務系統"})
    assert server.name_in("zh-hans") == "财务系统" and server.name_in("en") == "ERP"


@pytest.mark.django_db
def test_saving_bad_names_names_the_field_and_changes_nothing():
    agent = make_agent("finance")
    with pytest.raises(ValidationError) as caught:
        agent_save(agent=agent, data={"display_names": {"de": "Finanzen"}})
    assert "display_names" in caught.value.message_dict
    agent.refresh_from_db()
    assert agent.display_names == {} and agent.version == 1


@pytest.mark.django_db
def test_a_revision_and_a_run_carry_the_names_per_language():
    agent = make_agent("finance")
    agent_save(
        agent=agent,
        data={"display_names": FINANCE, "descriptions": {"en": "Money."}},
        comment="names",
    )
    snapshot = Agent.objects.get(pk=agent.pk).revisions.first().snapshot
    assert snapshot["display_names"] == FINANCE and snapshot["descriptions"] == {"en": "Money."}
    assert pinned_config(Agent.objects.get(pk=agent.pk))["display_names"] == FINANCE


@pytest.mark.django_db
def test_names_per_language_round_trip_over_rest(staff_api):
    body = {
        "name": "finance",
        "display_name": "Finance expert",
        "display_names": FINANCE,
        "descriptions": {"zh-hant": "預算與費用。"},
    }
    created = staff_api.post("/api/v1/agents/", body, format="json")
    assert created.status_code == 201, created.json()
    read = staff_api.get("/api/v1/agents/finance/").json()
    assert read["display_names"] == FINANCE and read["descriptions"] == {"zh-hant": "預算與費用。"}
    changed = staff_api.patch(
        "/api/v1/agents/finance/", {"display_names": {"en": "Money"}}, format="json"
    )
    assert changed.status_code == 200 and changed.json()["display_names"] == {"en": "Money"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("names", "fragment"),
    [
        ({"fr": "Finances"}, "Unknown language"),
        ({"en": 3}, "Must be a string."),
        ({"en": "x" * 121}, "120"),
        ("Finance", "dictionary"),
    ],
)
def test_bad_names_over_rest_are_named_and_nothing_is_saved(staff_api, names, fragment):
    body = {"name": "finance", "display_name": "Finance", "display_names": names}
    answer = staff_api.post("/api/v1/agents/", body, format="json")
    assert answer.status_code == 400
    details = answer.json()["error"]["details"]
    assert "display_names" in details and fragment in str(details["display_names"]), details
    assert not Agent.objects.filter(name="finance").exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_adds_empty_names_to_existing_rows():
    before = [
        ("agents", "0006_base_url_any_host"),
        ("knowledge", "0004_document_indexing_attempts"),
    ]
    after = [("agents", "0007_names_per_language"), ("knowledge", "0005_names_per_language")]
    # A scratch database migrated forward only: unapplying the test database's whole history
    # back to 0006 and forward again cost a minute per pass.
    with scratch_database() as scratch:
        executor = MigrationExecutor(scratch)
        # The original migrations, not the squash that replaces them in a new database.
        executor.loader = MigrationLoader(scratch, replace_migrations=False)
        executor.migrate(before)
        old = executor.loader.project_state(before).apps.get_model("agents", "Agent")
        old.objects.using(scratch.alias).create(name="finance", display_name="Finance expert")
        executor.loader.build_graph()
        executor.migrate(after)
        new = executor.loader.project_state(after).apps.get_model("agents", "Agent")
        row = new.objects.using(scratch.alias).get(name="finance")
        assert row.display_names == {}
        # The model's reading of such a row: the one name it has, in any language.
        agent = Agent(name=row.name, display_name=row.display_name, display_names=row.display_names)
        assert agent.name_in("zh-hant") == "Finance expert"
