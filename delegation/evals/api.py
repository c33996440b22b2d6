"""REST endpoints of evals: suites, cases, runs with their reports, held drafts; each asks the
model permission the admin asks for it."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import Agent, AgentRevision
from agents.services import validation_errors_by_field
from config.api_errors import ERRORS
from config.permissions import ModelPermissions
from delegation.evals.expectations import LABELS
from delegation.evals.gate import draft_discard, draft_publish, draft_summary
from delegation.evals.models import AgentDraft, EvalCase, EvalRun, EvalSuite, Trigger
from delegation.evals.selectors import (
    access_case,
    access_draft,
    access_eval_run,
    access_suite,
    previous_run,
    run_diff,
)
from delegation.evals.serializers import (
    AgentDraftSerializer,
    DraftPublishSerializer,
    EvalCaseSerializer,
    EvalRunReportSerializer,
    EvalRunSerializer,
    EvalRunStartSerializer,
    EvalSuiteSerializer,
    PublishedSerializer,
)
from delegation.evals.services import case_save, eval_run_cancel, eval_run_start, suite_save

RECENT_RUNS = 50


class StaffView(APIView):
    """Evals are for staff who hold the model permission (each view names its model)."""

    permission_classes = [ModelPermissions]


def _invalid(exc: DjangoValidationError) -> serializers.ValidationError:
    """A service's ValidationError as the API's 400; expectation errors nest under `expect`."""
    errors = validation_errors_by_field(exc)
    expect = {k: errors.pop(k) for k in list(errors) if k in LABELS}
    if expect:
        errors["expect"] = expect  # type: ignore[assignment]
    return serializers.ValidationError(errors)


def _save_suite(suite: EvalSuite | None, data: dict[str, Any]) -> EvalSuite:
    try:
        return suite_save(suite=suite, data=data)
    except DjangoValidationError as exc:
        raise _invalid(exc) from exc


def _save_case(case: EvalCase | None, data: dict[str, Any]) -> EvalCase:
    try:
        return case_save(case=case, data=data)
    except DjangoValidationError as exc:
        raise _invalid(exc) from exc


class EvalSuiteListView(StaffView):
    """Every suite; create one."""

    permission_model = EvalSuite

    @extend_schema(
        operation_id="eval_suites_list", responses={200: EvalSuiteSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        """The suites, by name."""
        suites = EvalSuite.objects.select_related("agent").prefetch_related("gate_agents")
        return Response(EvalSuiteSerializer(suites, many=True).data)

    @extend_schema(
        operation_id="eval_suites_create",
        request=EvalSuiteSerializer,
        responses={201: EvalSuiteSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Create a suite for an agent."""
        serializer = EvalSuiteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        suite = _save_suite(None, dict(serializer.validated_data))
        return Response(EvalSuiteSerializer(suite).data, status=status.HTTP_201_CREATED)


class EvalSuiteDetailView(StaffView):
    """One suite: read, change, delete (with its cases and runs)."""

    permission_model = EvalSuite

    @extend_schema(
        operation_id="eval_suites_retrieve", responses={200: EvalSuiteSerializer, **ERRORS}
    )
    def get(self, request: Request, suite_id: int) -> Response:
        """The suite."""
        return Response(EvalSuiteSerializer(access_suite(suite_id)).data)

    @extend_schema(
        operation_id="eval_suites_update",
        request=EvalSuiteSerializer,
        responses={200: EvalSuiteSerializer, **ERRORS},
    )
    def patch(self, request: Request, suite_id: int) -> Response:
        """Change fields of the suite."""
        suite = access_suite(suite_id)
        serializer = EvalSuiteSerializer(suite, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        suite = _save_suite(suite, dict(serializer.validated_data))
        return Response(EvalSuiteSerializer(suite).data)

    @extend_schema(operation_id="eval_suites_destroy", responses={204: None, **ERRORS})
    def delete(self, request: Request, suite_id: int) -> Response:
        """Delete the suite, its cases and its runs."""
        access_suite(suite_id).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class EvalCaseListView(StaffView):
    """A suite's cases; add one."""

    permission_model = EvalCase

    @extend_schema(
        operation_id="eval_cases_list", responses={200: EvalCaseSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request, suite_id: int) -> Response:
        """The suite's cases, in order."""
        cases = access_suite(suite_id).cases.prefetch_related("user_groups")
        return Response(EvalCaseSerializer(cases, many=True).data)

    @extend_schema(
        operation_id="eval_cases_create",
        request=EvalCaseSerializer,
        responses={201: EvalCaseSerializer, **ERRORS},
    )
    def post(self, request: Request, suite_id: int) -> Response:
        """Add a case (its expectations are checked: known tools and agents, a valid regex…)."""
        suite = access_suite(suite_id)
        serializer = EvalCaseSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        case = _save_case(None, {**serializer.validated_data, "suite": suite})
        return Response(EvalCaseSerializer(case).data, status=status.HTTP_201_CREATED)


class EvalCaseDetailView(StaffView):
    """One case: read, change, delete."""

    permission_model = EvalCase

    @extend_schema(
        operation_id="eval_cases_retrieve", responses={200: EvalCaseSerializer, **ERRORS}
    )
    def get(self, request: Request, case_id: int) -> Response:
        """The case."""
        return Response(EvalCaseSerializer(access_case(case_id)).data)

    @extend_schema(
        operation_id="eval_cases_update",
        request=EvalCaseSerializer,
        responses={200: EvalCaseSerializer, **ERRORS},
    )
    def patch(self, request: Request, case_id: int) -> Response:
        """Change fields of the case."""
        case = access_case(case_id)
        serializer = EvalCaseSerializer(case, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        case = _save_case(case, dict(serializer.validated_data))
        return Response(EvalCaseSerializer(case).data)

    @extend_schema(operation_id="eval_cases_destroy", responses={204: None, **ERRORS})
    def delete(self, request: Request, case_id: int) -> Response:
        """Delete the case (past results keep their copy of it)."""
        access_case(case_id).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class EvalRunListView(StaffView):
    """A suite's recent runs; start one."""

    permission_model = EvalRun

    @extend_schema(
        operation_id="eval_runs_list", responses={200: EvalRunSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request, suite_id: int) -> Response:
        """The suite's latest runs, newest first."""
        runs = access_suite(suite_id).runs.select_related("suite", "created_by")[:RECENT_RUNS]
        return Response(EvalRunSerializer(runs, many=True).data)

    @extend_schema(
        operation_id="eval_runs_create",
        request=EvalRunStartSerializer,
        responses={202: EvalRunSerializer, **ERRORS},
    )
    def post(self, request: Request, suite_id: int) -> Response:
        """Start a run (it goes through the task queue; poll the run for its report)."""
        suite = access_suite(suite_id)
        serializer = EvalRunStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        options = serializer.validated_data
        revision = None
        if "agent_version" in options:
            agent = options.get("agent") or suite.agent
            revision = AgentRevision.objects.filter(
                agent=agent, version=options["agent_version"]
            ).first()
            if revision is None:
                raise serializers.ValidationError(
                    {"agent_version": [f"{agent.name} has no version {options['agent_version']}."]}
                )
        elif "agent" in options:
            raise serializers.ValidationError({"agent_version": ["Say which version to run."]})
        run = eval_run_start(
            suite=suite,
            user=request.user,
            trigger=Trigger.API,
            revision=revision,
            model=options["model"].strip(),
        )
        return Response(EvalRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class EvalRunDetailView(StaffView):
    """One run's report."""

    permission_model = EvalRun

    @extend_schema(
        operation_id="eval_runs_retrieve", responses={200: EvalRunReportSerializer, **ERRORS}
    )
    def get(self, request: Request, eval_run_id: Any) -> Response:
        """Progress or outcome, each case with its verdicts and evidence, and the diff."""
        run = access_eval_run(eval_run_id)
        before = previous_run(run=run)
        run.previous_run = before.pk if before else None  # type: ignore[attr-defined]
        run.diff = run_diff(run=run, before=before)  # type: ignore[attr-defined]
        return Response(EvalRunReportSerializer(run).data)


class EvalRunCancelView(StaffView):
    """Stop a run (evals.add_evalrun: the admin lets who may start runs stop them)."""

    permission_model = EvalRun

    @extend_schema(
        operation_id="eval_runs_cancel", request=None, responses={200: EvalRunSerializer, **ERRORS}
    )
    def post(self, request: Request, eval_run_id: Any) -> Response:
        """Cancel it (its current case's turn is stopped); an ended run is left as it is."""
        run = access_eval_run(eval_run_id)
        eval_run_cancel(run=run)
        return Response(EvalRunSerializer(EvalRun.objects.get(pk=run.pk)).data)


def _draft_body(draft: Any) -> dict[str, Any]:
    return AgentDraftSerializer(draft, context={"summary": draft_summary(draft=draft)}).data


class DraftDetailView(StaffView):
    """A save the publish gate held."""

    permission_model = AgentDraft

    @extend_schema(
        operation_id="eval_drafts_retrieve", responses={200: AgentDraftSerializer, **ERRORS}
    )
    def get(self, request: Request, draft_id: int) -> Response:
        """The draft, its status and each gated suite's run."""
        return Response(_draft_body(access_draft(draft_id)))


class DraftPublishView(StaffView):
    """Publish a held draft anyway (agents.change_agent, as the admin's gate page)."""

    permission_model = Agent
    permission_actions = {"POST": "change"}

    @extend_schema(
        operation_id="eval_drafts_publish",
        request=DraftPublishSerializer,
        responses={200: PublishedSerializer, **ERRORS},
    )
    def post(self, request: Request, draft_id: int) -> Response:
        """Publish it as the agent's next version; below the threshold this is recorded as an
        override, with who and why."""
        draft = access_draft(draft_id)
        serializer = DraftPublishSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            record = draft_publish(
                draft=draft,
                user=request.user,
                override=True,
                reason=serializer.validated_data["reason"],
            )
        except DjangoValidationError as exc:
            raise _invalid(exc) from exc
        body = {
            "version": record.revision.version,
            "passed": record.passed,
            "override": record.override,
        }
        return Response(PublishedSerializer(body).data)


class DraftDiscardView(StaffView):
    """Drop a held draft (agents.change_agent, as the admin's gate page)."""

    permission_model = Agent
    permission_actions = {"POST": "change"}

    @extend_schema(
        operation_id="eval_drafts_discard",
        request=None,
        responses={200: AgentDraftSerializer, **ERRORS},
    )
    def post(self, request: Request, draft_id: int) -> Response:
        """Discard it (its runs are cancelled); the live agent stays as it is."""
        draft = access_draft(draft_id)
        draft_discard(draft=draft, user=request.user)
        return Response(_draft_body(access_draft(draft_id)))
