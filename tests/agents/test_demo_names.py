"""The demo shows every agent and knowledge base by its name in each language, and seeding it
again changes nothing; a demo made before names per language gets them once."""

from __future__ import annotations

import pytest

from agents.demo import DEMO_AGENTS, seed_demo_agents
from agents.knowledge.demo import knowledge_seed_demo
from agents.knowledge.models import KnowledgeBase
from agents.models import Agent, AgentRevision
from agents.names import LANGUAGES
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


def test_every_demo_agent_has_a_name_and_description_in_each_language():
    seed_demo_agents()
    for agent in Agent.objects.all():
        assert set(agent.display_names) == set(LANGUAGES), agent.name
        assert set(agent.descriptions) == set(LANGUAGES), agent.name
    finance = Agent.objects.get(name="finance")
    assert [finance.name_in(lang) for lang in LANGUAGES] == [
        "Finance expert",
        "財務專家",
        "财务专家",
    ]
    revisions = AgentRevision.objects.count()
    seed_demo_agents()
    assert AgentRevision.objects.count() == revisions  # idempotent


def test_an_older_demo_agent_gets_the_names_once_and_an_admins_stay():
    make_agent("finance", display_name="Finance expert")
    make_agent("hr", display_name="People team", display_names={"en": "People team"})
    seed_demo_agents()
    finance = Agent.objects.get(name="finance")
    assert finance.name_in("zh-hant") == "財務專家"
    assert finance.revisions.first().snapshot["display_names"]["zh-hans"] == "财务专家"
    assert Agent.objects.get(name="hr").display_names == {"en": "People team"}
    seed_demo_agents()
    assert Agent.objects.get(name="finance").version == finance.version


def test_the_demo_knowledge_bases_are_named_in_each_language(settings):
    settings.TASKS_RUN_SYNC = True
    seed_demo_agents()
    knowledge_seed_demo()
    knowledge_seed_demo()
    finance = KnowledgeBase.objects.get(name="finance")
    assert [finance.name_in(lang) for lang in LANGUAGES] == [
        "Finance documents",
        "財務文件",
        "财务文件",
    ]
    assert KnowledgeBase.objects.get(name="hr").description_in("zh-hans").startswith("人资")
    assert len(DEMO_AGENTS) == Agent.objects.count()
