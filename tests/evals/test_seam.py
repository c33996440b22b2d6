"""Eval runs on the real embedded seam (the in-process pool, not synchronous tasks): a run hands
itself back to the queue between slices, and a case past its timeout has its turn stopped."""

from __future__ import annotations

import time

import pytest

from config.enqueue import wait_for_in_process_tasks
from delegation.evals.models import CaseStatus, EvalRun
from delegation.evals.services import eval_run_start
from delegation.models import FINAL_STATUSES, Run
from tests.evals.conftest import make_case, make_suite, run_suite
from tests.factories import make_agent
from tests.fake_openai import Reply, Team


@pytest.fixture(autouse=True)
def in_process_pool(settings) -> None:
    """Tasks go to the in-process pool after commit, as in `make run`."""
    settings.TASKS_RUN_SYNC = False


def slow(text: str, seconds: float) -> Reply:
    return Reply(text_chunks=[text], stall_seconds=seconds)


def wait_until_ended(run: EvalRun, limit: float = 60) -> EvalRun:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        run.refresh_from_db()
        if run.is_final:
            return run
        time.sleep(0.05)
    raise AssertionError(f"the eval run did not end: {run.status}, {run.done}/{run.total}")


@pytest.mark.django_db(transaction=True)
def test_a_run_goes_through_the_queue_in_slices_until_it_ends(fake_openai, settings):
    settings.EVALS_TASK_SLICE_SECONDS = 0.05  # hand the run back to the queue very often
    agent = make_agent("assistant", provider="openai", model="fake-model", is_entry=True)
    Team(fake_openai).always["assistant"] = lambda body: slow("slow hello", 0.3)
    suite = make_suite(agent)
    for n in range(3):
        make_case(suite, f"hello {n}", name=f"case {n}", expect={"answer_contains": ["hello"]})
    run = wait_until_ended(eval_run_start(suite=suite))
    assert run.succeeded and run.passed == 3 and run.done == 3
    assert run.lease_token is None  # no task holds it any more


@pytest.mark.django_db(transaction=True)
def test_a_case_past_its_timeout_is_stopped_and_counted_as_an_error(fake_openai):
    agent = make_agent("assistant", provider="openai", model="fake-model", is_entry=True)
    Team(fake_openai).always["assistant"] = lambda body: slow("too late", 3)
    suite = make_suite(agent, case_timeout=1)
    make_case(suite, "hello", expect={"answer_contains": ["too late"]})
    run = run_suite(suite)
    result = run.results.get()
    assert result.status == CaseStatus.ERROR and not run.succeeded
    assert result.error == "The case took longer than 1 s; its turn was stopped."
    wait_for_in_process_tasks()
    assert not Run.objects.exclude(status__in=FINAL_STATUSES).exists()
