"""The A2A agent card of an entry agent open to other agents: who it is, its experts, its door."""

from __future__ import annotations

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from django.conf import settings
from google.protobuf.struct_pb2 import Struct

from agents.models import Agent

BEARER = "bearer"  # the card's name for our API tokens
LANGUAGES_EXTENSION = "urn:agent-platform:languages"  # answers come in the message's language
TEXT = ["text/plain"]


def a2a_agent(*, name: str) -> Agent | None:
    """The agent `name` if other agents may reach it: enabled, the entry agent, A2A on."""
    return Agent.objects.filter(name=name, enabled=True, is_entry=True, a2a_enabled=True).first()


def agent_card(*, agent: Agent, url: str) -> AgentCard:
    """The card for `agent`, whose JSON-RPC endpoint is `url`; skills are its experts."""
    experts = agent.allowed_subagents.filter(enabled=True, delegatable=True).order_by("name")
    return AgentCard(
        name=agent.display_name,
        description=agent.description or agent.display_name,
        version=str(agent.version),
        provider=AgentProvider(organization="Agent platform", url=url),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True, extensions=[_languages()]),
        security_schemes={
            BEARER: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer",
                    bearer_format="API token",
                    description="A platform user's API token; the agent acts as that user.",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList(list=[])})],
        default_input_modes=TEXT,
        default_output_modes=TEXT,
        skills=[_skill(expert) for expert in experts],
    )


def handler_card() -> AgentCard:
    """What the SDK's request handler checks of every open agent (each serves its own card)."""
    return AgentCard(
        name="agent-platform",
        description="Entry agents open to A2A.",
        version="1",
        supported_interfaces=[AgentInterface(url="/a2a/", protocol_binding="JSONRPC")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=TEXT,
        default_output_modes=TEXT,
        skills=[AgentSkill(id="turn", name="turn", description="One turn", tags=["chat"])],
    )


def _skill(expert: Agent) -> AgentSkill:
    return AgentSkill(
        id=expert.name,
        name=expert.display_name,
        description=expert.description or expert.display_name,
        tags=list(expert.tags or []) or [expert.name],
        input_modes=TEXT,
        output_modes=TEXT,
    )


def _languages() -> AgentExtension:
    """The languages answers come in (each answer in its message's language)."""
    params = Struct()
    params.update({"languages": [code for code, _name in settings.LANGUAGES]})
    return AgentExtension(
        uri=LANGUAGES_EXTENSION,
        description="Answers in the language of the message: "
        + ", ".join(name for _code, name in settings.LANGUAGES),
        required=False,
        params=params,
    )
