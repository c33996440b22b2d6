"""`/healthz`, `/readyz` and `/metrics`: probes answered for any Host and never redirected, a
dependency that does not answer makes the process unready, the scrape is for staff or the
token, and its figures move as a turn runs."""

from __future__ import annotations

import json
import logging
import uuid

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from pythonjsonlogger.json import JsonFormatter

from config.logs import TraceFilter
from delegation.models import Run
from delegation.runs.spans import run_traced
from delegation.turns import turn_start
from tests.factories import make_user

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-0123456789"


def probe(path: str, **headers: str) -> tuple[int, dict]:
    response = Client(HTTP_HOST="10.0.0.7").get(path, **headers)  # a pod's address, as kubelet
    return response.status_code, response.json()


def test_healthz_answers_any_host_over_plain_http(settings):
    settings.SECURE_SSL_REDIRECT = True  # as in production: everything else is redirected
    assert probe("/healthz") == (200, {"status": "ok"})


def test_readyz_checks_what_this_configuration_uses(settings):
    expected = {"database": True, "migrations": True}
    if settings.REDIS_URL:  # the Postgres + Redis pass
        expected["redis"] = True
    assert probe("/readyz") == (200, {"status": "ok", "checks": expected})


def test_readyz_is_unready_while_redis_does_not_answer_and_says_only_which(settings, caplog):
    settings.REDIS_URL = settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"  # nothing listens
    with caplog.at_level(logging.WARNING, logger="config.health"):
        status, body = probe("/readyz")
    assert (status, body["checks"]["redis"], body["checks"]["database"]) == (503, False, True)
    assert body == {"status": "unavailable", "checks": body["checks"]}  # nothing else
    assert "readiness check redis failed" in caplog.text  # the log says why


def test_readyz_checks_a_broker_of_its_own(settings):
    settings.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:9//"
    status, body = probe("/readyz")
    assert (status, body["checks"]["broker"]) == (503, False)


def test_a_probe_is_not_a_way_in():
    response = Client(HTTP_HOST="10.0.0.7").post("/healthz")
    assert response.status_code == 400  # not answered early: Django refuses the unknown host


def test_metrics_refuse_anonymous_and_non_staff_callers(settings):
    settings.METRICS_TOKEN = TOKEN
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    client = Client()
    client.force_login(make_user("alice"))
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_metrics_without_a_token_set_are_for_staff_only(settings):
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    client = Client()
    client.force_login(make_user("ops", is_staff=True))
    assert client.get("/metrics").status_code == 200


def scrape(settings) -> dict[tuple[str, tuple], float]:
    """Every sample of a token-bearing scrape from a pod's address, by name and labels."""
    settings.METRICS_TOKEN = TOKEN
    response = Client(HTTP_HOST="10.0.0.7").get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get(("agent_platform_" + name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.django_db(transaction=True)
def test_metrics_move_as_a_turn_runs(user, entry_agent, settings):
    settings.TASKS_RUN_SYNC = True
    before = scrape(settings)
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="12*(3+4)")
    assert Run.objects.get(pk=sent.run.id).status == "succeeded"
    after = scrape(settings)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("runs_ended_total", agent="assistant", kind="entry", status="succeeded") == 1
    assert moved("model_call_seconds_count", provider="offline", model="offline") >= 2
    assert moved("model_tokens_total", agent="assistant", model="offline", direction="input") > 0
    assert moved("run_queue_wait_seconds_count", kind="entry") == 1
    assert value(after, "runs_active", status="queued", agent="assistant") == 0
    assert value(after, "oldest_queued_run_seconds") == 0
    assert ("agent_platform_reminders_pending", ()) in after
    assert ("agent_platform_people_asked_oldest_seconds", ()) in after


def test_the_readings_show_runs_waiting_and_the_oldest_queued(user, entry_agent, settings):
    settings.TASKS_RUN_SYNC = False  # queued, and nobody takes it
    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="hello")
    samples = scrape(settings)
    assert value(samples, "runs_active", status="queued", agent="assistant") == 1
    assert value(samples, "oldest_queued_run_seconds") >= 0


def test_log_lines_of_a_runs_work_carry_its_ids(user, entry_agent, settings, caplog):
    settings.TASKS_RUN_SYNC = False
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="hi")
    run = Run.objects.get(pk=sent.run.id)
    formatter = JsonFormatter("%(levelname)s %(name)s %(message)s")
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(formatter.format(record))

    logger = logging.getLogger("tests.operations")
    handler = Keep()
    handler.addFilter(TraceFilter())
    logger.addHandler(handler)
    try:
        with run_traced(run):
            logger.warning("inside")
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)
    inside, outside = (json.loads(line) for line in records)
    assert inside["message"] == "inside" and inside["run_id"] == str(run.id)
    assert inside["trace_id"] == run.id.hex  # the turn's trace: its root run's id
    assert outside["run_id"] == outside["trace_id"] == ""


def test_the_admins_run_page_links_the_turns_trace_when_a_viewer_is_set(
    user, entry_agent, settings
):
    settings.TASKS_RUN_SYNC = False
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="hi")
    client = Client()
    client.force_login(make_user("admin", is_staff=True, is_superuser=True))
    page = f"/admin/delegation/run/{sent.run.id}/change/"
    assert "trace viewer" not in client.get(page).content.decode()
    settings.OTEL_TRACE_URL_TEMPLATE = "https://tempo.example/trace/{trace_id}"
    assert (
        f'href="https://tempo.example/trace/{sent.run.id.hex}"' in client.get(page).content.decode()
    )
