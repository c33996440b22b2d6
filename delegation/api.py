"""REST endpoints of runs: a run with its delegation tree, and stopping it."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import ErrorSerializer
from delegation.humans.decisions import items_close_stopped
from delegation.models import Run
from delegation.selectors import access_run, run_tree
from delegation.serializers import TurnSerializer
from delegation.turns import turn_stop

ERRORS = {code: ErrorSerializer for code in (400, 401, 403, 404, 429)}


def _tree_context(run: Run) -> dict[str, object]:
    by_parent: dict[object, list[Run]] = {}
    for item in run_tree(run=run):
        by_parent.setdefault(item.parent_id, []).append(item)
    return {"by_parent": by_parent}


class RunDetailView(APIView):
    """One of the user's runs with the experts below it."""

    @extend_schema(operation_id="runs_retrieve", responses={200: TurnSerializer, **ERRORS})
    def get(self, request: Request, run_id: uuid.UUID) -> Response:
        """Status, agent, timings and tokens of the run and, nested, of every delegation."""
        run = access_run(request.user, run_id)
        return Response(
            TurnSerializer(run, context={**_tree_context(run), "request": request}).data
        )


class RunCancelView(APIView):
    """Stop a run and everything below it."""

    @extend_schema(
        operation_id="runs_cancel", request=None, responses={202: TurnSerializer, **ERRORS}
    )
    def post(self, request: Request, run_id: uuid.UUID) -> Response:
        """Cancel (a run that already ended is answered as it is)."""
        run = access_run(request.user, run_id)
        turn_stop(run=run)
        items_close_stopped(run=run)  # its questions and approvals stop waiting
        run.refresh_from_db()
        return Response(
            TurnSerializer(run, context={**_tree_context(run), "request": request}).data,
            status=status.HTTP_202_ACCEPTED,
        )
