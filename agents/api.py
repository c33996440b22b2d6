"""REST endpoints of agents: the ones a user may use, and (by model permission) definitions
and tools."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import Agent
from agents.registry import all_tools
from agents.selectors import agent_usable_by, agents_usable_by
from agents.serializers import AgentSerializer, AgentSummarySerializer, ToolSerializer
from agents.services import agent_save, validation_errors_by_field
from config.api_errors import ERRORS
from config.errors import NotFound
from config.permissions import ModelPermissions, ModelWritePermissions, holds_model_permission

# Who may view agents reads the full definition, everyone else the summary: "one of the two".
AGENT_DETAIL = PolymorphicProxySerializer(
    component_name="AgentDetail",
    serializers=[AgentSerializer, AgentSummarySerializer],
    resource_type_field_name=None,
)


def sees_all_agents(user: Any) -> bool:
    """Whether the user may view every agent's definition (the admin's view permission)."""
    return holds_model_permission(user, Agent, "view")


def access_agent(user: Any, name: str) -> Agent:
    """An agent the user may use (who may view agents: any agent), or NotFound."""
    agent = Agent.objects.filter(name=name).first()
    if agent is None or not (
        sees_all_agents(user) or (agent.enabled and agent_usable_by(agent=agent, user=user))
    ):
        raise NotFound("agent")
    return agent


def agent_save_from_api(*, agent: Agent | None, data: dict[str, Any], user: Any) -> Agent:
    """Save through the one agent service; its rule violations become the API's 400."""
    try:
        return agent_save(agent=agent, data=data, user=user, comment="API")
    except DjangoValidationError as exc:
        raise serializers.ValidationError(validation_errors_by_field(exc)) from exc


class AgentListView(APIView):
    """Agents: the ones the user may use; who may view agents sees all, who may add them
    creates them."""

    permission_classes = [ModelWritePermissions]
    permission_model = Agent

    @extend_schema(
        operation_id="agents_list", responses={200: AgentSummarySerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        """Agents this user may use (who may view agents: every agent)."""
        agents = (
            Agent.objects.all()
            if sees_all_agents(request.user)
            else agents_usable_by(user=request.user)
        )
        return Response(AgentSummarySerializer(agents, many=True).data)

    @extend_schema(
        operation_id="agents_create",
        request=AgentSerializer,
        responses={201: AgentSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Create an agent (permission agents.add_agent), with the same validation as admin."""
        serializer = AgentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        agent = agent_save_from_api(agent=None, data=serializer.validated_data, user=request.user)
        return Response(AgentSerializer(agent).data, status=status.HTTP_201_CREATED)


class AgentDetailView(APIView):
    """One agent: read it (if usable), or update or disable it (agents.change_agent)."""

    permission_classes = [ModelWritePermissions]
    permission_model = Agent

    @extend_schema(operation_id="agents_retrieve", responses={200: AGENT_DETAIL, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        """The agent; the full definition for who may view agents, the summary for others."""
        agent = access_agent(request.user, name)
        serializer = AgentSerializer if sees_all_agents(request.user) else AgentSummarySerializer
        return Response(serializer(agent).data)

    @extend_schema(
        operation_id="agents_update",
        request=AgentSerializer,
        responses={200: AgentSerializer, **ERRORS},
    )
    def patch(self, request: Request, name: str) -> Response:
        """Change fields (agents.change_agent); `{"enabled": false}` disables the agent. Each
        save is a new version with a stored revision."""
        agent = access_agent(request.user, name)
        serializer = AgentSerializer(agent, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        agent = agent_save_from_api(agent=agent, data=serializer.validated_data, user=request.user)
        return Response(AgentSerializer(agent).data)


class AvailableAgentsView(APIView):
    """Experts for routing and UIs: enabled, delegatable agents the user may use."""

    @extend_schema(
        operation_id="agents_available",
        responses={200: AgentSummarySerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Name, display name, description and tags of each available expert."""
        agents = [a for a in agents_usable_by(user=request.user) if a.delegatable]
        return Response(AgentSummarySerializer(agents, many=True).data)


class ToolListView(APIView):
    """The tool registry (agents.view_agent: the tools an agent's definition offers)."""

    permission_classes = [ModelPermissions]
    permission_model = Agent

    @extend_schema(operation_id="tools_list", responses={200: ToolSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        """Every registered tool with its argument schema."""
        tools = [
            {
                "key": t.key,
                "description": t.description,
                "parameters": t.parameters,
                "permission": t.permission,
                "side_effect": t.side_effect,
            }
            for t in all_tools()
        ]
        return Response(ToolSerializer(tools, many=True).data)
