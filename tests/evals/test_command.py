"""manage.py run_evals: exit 0 at or above the threshold, 1 below it, 2 for bad arguments;
one JUnit testcase per eval case; a real process runs its turns through the embedded seam."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from django.core.management import CommandError, call_command

from delegation.evals.models import EvalRun
from tests.databases import child_database_url
from tests.evals.conftest import make_case, make_suite
from tests.factories import make_agent

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def suite(entry_agent):
    """Three cases on the offline entry agent: two pass, one fails (threshold 60%)."""
    suite = make_suite(entry_agent, name="arith", pass_threshold=60)
    make_case(suite, "what is 6*7?", name="multiplies", expect={"answer_contains": ["42"]})
    make_case(suite, "what is 2+2?", name="adds", expect={"tools_called": ["calculate"]})
    make_case(suite, "what is 1+1?", name="wrong", expect={"answer_contains": ["three"]})
    return suite


def run(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("run_evals", *args, stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_at_the_threshold_it_exits_0_and_writes_one_testcase_per_case(suite, tmp_path):
    code, out = run("arith", "--junit", str(tmp_path / "out.xml"))
    assert code == 0, out
    assert "PASS  multiplies" in out and "FAIL  wrong" in out and "missing: “three”" in out
    assert "arith: 2/3 passed (66.7%), threshold 60%: passed" in out
    tree = ET.parse(tmp_path / "out.xml").getroot()
    (testsuite,) = tree.findall("testsuite")
    assert (testsuite.get("tests"), testsuite.get("failures"), testsuite.get("errors")) == (
        "3",
        "1",
        "0",
    )
    cases = {c.get("name"): c for c in testsuite.findall("testcase")}
    assert list(cases) == ["multiplies", "adds", "wrong"]
    assert cases["wrong"].find("failure").get("message") == "answer contains: missing: “three”"
    assert cases["multiplies"].find("failure") is None
    assert "answer: [offline model] 6*7 = 42." in cases["multiplies"].find("system-out").text
    assert {c.get("classname") for c in cases.values()} == {"evals.arith"}


@pytest.mark.django_db(transaction=True)
def test_below_the_threshold_it_exits_1_and_still_writes_the_report(suite, tmp_path):
    suite.pass_threshold = 100
    suite.save()
    code, out = run("arith", "--junit", str(tmp_path / "out.xml"))
    assert code == 1 and "arith: 2/3 passed (66.7%), threshold 100%: FAILED" in out
    assert ET.parse(tmp_path / "out.xml").getroot().find("testsuite").get("failures") == "1"


@pytest.mark.django_db(transaction=True)
def test_a_case_whose_turn_fails_is_a_junit_error(db, tmp_path, settings):
    settings.OPENAI_API_KEY = settings.OPENAI_BASE_URL = ""  # the model cannot be reached
    suite = make_suite(make_agent("remote", provider="openai", model="m"), name="remote")
    make_case(suite, "hello", name="no model")
    code, out = run("remote", "--junit", str(tmp_path / "out.xml"))
    case = ET.parse(tmp_path / "out.xml").getroot().find("testsuite/testcase")
    assert code == 1 and "ERROR no model" in out
    assert case.find("error").get("message").startswith("The turn ended failed")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nope"], "No eval suite is named 'nope' (suites: arith)"),
        (["arith", "--agent-version", "9"], "assistant has no version 9 (it is at v1)"),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_bad_arguments_exit_2_and_run_nothing(suite, args, words):
    code, out = run(*args)
    assert code == 2 and words in out
    assert not EvalRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_suite_without_enabled_cases_exits_2(suite):
    suite.cases.update(enabled=False)
    code, out = run("arith")
    assert code == 2 and "has no enabled case" in out


@pytest.mark.django_db(transaction=True)
def test_a_real_process_runs_the_turns_in_process_and_exits_by_threshold(suite):
    env = {
        # No broker: the child runs its turns on its own in-process pool (the embedded seam).
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "TASKS_", "REDIS_", "CELERY_"))
        },
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": child_database_url(),
        "OFFLINE_MODEL_DELAY_MS": "0",
    }

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", "run_evals", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    passed = manage("arith")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    suite.pass_threshold = 100
    suite.save()
    failed = manage("arith")
    assert failed.returncode == 1 and "threshold 100%: FAILED" in failed.stderr
    assert EvalRun.objects.filter(trigger="command").count() == 2
