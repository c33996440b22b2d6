"""manage.py run_evals SUITE: run an eval suite in this process (turns go through the enqueue
seam: the in-process pool, or Celery when a broker is set) and exit non-zero below its
threshold. Exit codes: 0 passed, 1 below the threshold, 2 bad arguments or nothing to run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import AgentRevision
from config.errors import AppError
from delegation.evals.junit import junit_xml
from delegation.evals.models import CaseStatus, EvalRun, EvalSuite, Trigger
from delegation.evals.selectors import access_suite_by_name, case_results_for_junit
from delegation.evals.services import eval_run_cancel, eval_run_start
from delegation.evals.stepper import eval_run_advance
from delegation.evals.waits import waits_text

BELOW_THRESHOLD, BAD_USAGE = 1, 2
MARKS = {
    CaseStatus.PASSED: "PASS",
    CaseStatus.FAILED: "FAIL",
    CaseStatus.ERROR: "ERROR",
    CaseStatus.CANCELLED: "SKIP",
}


class Command(BaseCommand):
    """Run one suite and report each case; for CI pipelines."""

    help = "Run an eval suite against the agents (or one agent's older version) and report."

    def add_arguments(self, parser: CommandParser) -> None:
        """SUITE, and what to run it against."""
        parser.add_argument("suite", help="the suite's name, e.g. planner")
        parser.add_argument(
            "--agent-version",
            type=int,
            help="run the suite's agent as it was at this version (a stored revision)",
        )
        parser.add_argument(
            "--model", default="", help='every agent answers with this model ("offline": built-in)'
        )
        parser.add_argument("--junit", type=Path, help="write a JUnit XML report here")

    def handle(self, *args: Any, **options: Any) -> None:
        """Run, print a line per case and the verdict, write JUnit; exit 1 below threshold."""
        suite = _suite(options["suite"])
        revision = _revision(suite, options["agent_version"])
        try:
            run = eval_run_start(
                suite=suite,
                trigger=Trigger.COMMAND,
                revision=revision,
                model=options["model"].strip(),
                start=False,
            )
        except AppError as exc:
            raise CommandError(exc.message, returncode=BAD_USAGE) from exc
        self.stdout.write(f"Running {suite.name} ({run.total} cases) against {run.target}.")
        run = self._drive(run)
        results = case_results_for_junit(run=run)
        for result in results:
            self.stdout.write(self._line(result))
        if options["junit"]:
            options["junit"].write_text(junit_xml(run=run, results=results), encoding="utf-8")
        verdict = (
            f"{suite.name}: {run.passed}/{run.total} passed ({run.pass_rate}%), "
            f"threshold {run.threshold}%"
        )
        if not run.succeeded:
            raise CommandError(f"{verdict}: FAILED", returncode=BELOW_THRESHOLD)
        self.stdout.write(self.style.SUCCESS(f"{verdict}: passed"))

    def _drive(self, run: EvalRun) -> EvalRun:
        """Advance the run here until it ends (Ctrl-C cancels it and stops its turn)."""
        try:
            while not run.is_final:
                if eval_run_advance(run_id=run.pk) == "noop":
                    time.sleep(0.5)  # another process holds it for now
                run.refresh_from_db()
        except KeyboardInterrupt:
            eval_run_cancel(run=run)
            eval_run_advance(run_id=run.pk)
            raise
        return run

    def _line(self, result: Any) -> str:
        mark = MARKS.get(result.status, result.status.upper())
        seconds = f"{(result.latency_ms or 0) / 1000:.2f} s"
        line = f"{mark:5} {result.name} ({seconds}, {result.model_calls or 0} model calls)"
        problems = [
            f"{o['label']}: {o['detail'] or o['actual']}"
            for o in result.expectations or []
            if o["status"] in ("fail", "error")
        ]
        unjudged = [o["label"] for o in result.expectations or [] if o["status"] == "unavailable"]
        if result.error:
            problems.insert(0, result.error)
        if problems:
            line += "\n        " + "\n        ".join(problems)
        if unjudged:
            line += f"\n        not judged: {', '.join(unjudged)}"
        waits = (result.evidence or {}).get("waits")
        if waits:
            line += f"\n        {waits_text(waits)}"
        return line


def _suite(name: str) -> EvalSuite:
    try:
        return access_suite_by_name(name)
    except AppError:
        names = ", ".join(EvalSuite.objects.values_list("name", flat=True)) or "none"
        raise CommandError(
            f"No eval suite is named {name!r} (suites: {names}).", returncode=BAD_USAGE
        ) from None


def _revision(suite: EvalSuite, version: int | None) -> AgentRevision | None:
    if version is None:
        return None
    revision = AgentRevision.objects.filter(agent=suite.agent, version=version).first()
    if revision is None:
        raise CommandError(
            f"{suite.agent.name} has no version {version} (it is at v{suite.agent.version}).",
            returncode=BAD_USAGE,
        )
    return revision
