"""Fixtures for evals: tasks run synchronously on commit, suites and cases, driving a run."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent
from delegation.evals.models import EvalCase, EvalRun, EvalSuite
from delegation.evals.services import case_save, eval_run_start, suite_save
from delegation.evals.stepper import eval_run_advance


@pytest.fixture(autouse=True)
def sync_tasks(request: pytest.FixtureRequest, settings) -> None:
    """Enqueued work (eval runs, turns) runs synchronously when its transaction commits;
    tests marked distributed send it to real Celery workers instead."""
    settings.TASKS_RUN_SYNC = request.node.get_closest_marker("distributed") is None


def make_suite(agent: Agent, name: str = "suite", **fields: Any) -> EvalSuite:
    """A suite for `agent` through the save service."""
    return suite_save(suite=None, data={"name": name, "agent": agent, **fields})


def make_case(suite: EvalSuite, message: str, name: str | None = None, **fields: Any) -> EvalCase:
    """A case through the save service (expectations in `expect`)."""
    data = {"suite": suite, "name": name or message[:60], "message": message, **fields}
    return case_save(case=None, data=data)


def run_suite(suite: EvalSuite, **options: Any) -> EvalRun:
    """Start a run of the suite and drive it here to its end."""
    run = eval_run_start(suite=suite, start=False, **options)
    while not run.is_final:
        eval_run_advance(run_id=run.pk)
        run.refresh_from_db()
    return run
