"""manage.py compare_routing_learning SUITE: run an eval suite twice in this process, routing
with learning off and then on, and print the two side by side (the expert each case was routed
to, its verdict) with the pass rates. Exit codes: 0 done, 2 bad arguments or nothing to run."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from config.errors import AppError
from delegation.evals.learning import learning_comparison
from delegation.evals.models import EvalRun, Trigger
from delegation.evals.selectors import access_suite_by_name
from delegation.evals.services import eval_run_start
from delegation.evals.stepper import eval_run_advance
from delegation.routing.models import Learning

BAD_USAGE = 2


class Command(BaseCommand):
    """Routing with and without learning on the same cases."""

    help = "Run an eval suite with routing learning off, then on, and compare the two."

    def add_arguments(self, parser: CommandParser) -> None:
        """SUITE, and the model every agent answers with."""
        parser.add_argument("suite", help="the suite's name, e.g. departments")
        parser.add_argument(
            "--model", default="", help='every agent answers with this model ("offline": built-in)'
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Run both, then print a line per case and the totals."""
        try:
            suite = access_suite_by_name(options["suite"])
            runs = [
                eval_run_start(
                    suite=suite,
                    trigger=Trigger.COMMAND,
                    model=options["model"].strip(),
                    learning=learning,
                    start=False,
                )
                for learning in (Learning.OFF, Learning.ON)
            ]
        except AppError as exc:
            raise CommandError(exc.message, returncode=BAD_USAGE) from exc
        for run in runs:
            self.stdout.write(f"Running {suite.name} ({run.total} cases) against {run.target}.")
            _drive(run)
        compared = learning_comparison(without=runs[0], with_learning=runs[1])
        self.stdout.write(f"{'case':30} {'learning off':28} {'learning on':28}")
        for row in compared["rows"]:
            line = f"{row['name'][:30]:30} {_side(row['off']):28} {_side(row['on']):28}"
            if row["on"].get("changed"):
                line += f"\n{'':31}{row['on']['changed']}"
            self.stdout.write(line)
        rates = compared["pass_rate"]
        self.stdout.write(
            f"pass rate: off {rates['off']}%, on {rates['on']}%; "
            f"routed differently: {compared['routed_differently']} of {len(compared['rows'])}"
        )


def _side(case: dict[str, Any]) -> str:
    """A case's outcome on one side: "hr (passed)"."""
    if not case:
        return "—"
    return f"{case.get('target') or 'self'} ({case['status']})"


def _drive(run: EvalRun) -> None:
    """Advance the run here until it ends."""
    while not run.is_final:
        if eval_run_advance(run_id=run.pk) == "noop":
            time.sleep(0.5)  # another process holds it for now
        run.refresh_from_db()
