"""Eval runs on real Celery workers (Postgres, Redis): the run task hands itself back to the
queue between slices while other worker processes run the turns, and a run whose worker was
killed is taken over once its lease expires, with each case counted once."""

from __future__ import annotations

import time

import pytest

from delegation.evals.models import CaseStatus, EvalRun, EvalRunStatus
from delegation.evals.services import eval_run_start
from tests.e2e.conftest import flush_redis, workers  # noqa: F401  (the worker fixtures)
from tests.evals.conftest import make_case, make_suite

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


def wait_for(check, limit: float = 90, what: str = "the eval run") -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not get there in {limit} s")


def arithmetic_suite(agent) -> object:
    suite = make_suite(agent)
    for a in range(3):
        make_case(
            suite, f"what is {a}+{a}?", name=f"adds {a}", expect={"answer_contains": [str(2 * a)]}
        )
    return suite


def test_a_suite_runs_on_celery_workers_in_slices(workers, entry_agent):  # noqa: F811
    workers.start("w1", EVALS_TASK_SLICE_SECONDS="0.2")
    run = eval_run_start(suite=arithmetic_suite(entry_agent))
    wait_for(lambda: EvalRun.objects.get(pk=run.pk).is_final)
    run.refresh_from_db()
    assert run.succeeded and (run.passed, run.done) == (3, 3)


def test_a_run_whose_worker_died_is_taken_over(workers, entry_agent):  # noqa: F811
    slow = {
        "EVALS_TASK_SLICE_SECONDS": "60",  # w1 holds the run until it dies
        "EVALS_LEASE_SECONDS": "3",
        "RUN_LEASE_SECONDS": "3",
        "OFFLINE_MODEL_DELAY_MS": "100",
    }
    first = workers.start("w1", **slow)
    run = eval_run_start(suite=arithmetic_suite(entry_agent))
    wait_for(lambda: run.results.filter(status=CaseStatus.RUNNING).exists(), what="a case")
    workers.kill(first)
    workers.start("w2", beat=True, EVALS_SWEEP_SECONDS="1", SWEEP_INTERVAL_SECONDS="1", **slow)
    wait_for(lambda: EvalRun.objects.get(pk=run.pk).is_final, limit=120)
    run.refresh_from_db()
    assert run.status == EvalRunStatus.FINISHED and run.succeeded
    assert (run.done, run.passed) == (3, 3) and run.results.filter(status="passed").count() == 3
