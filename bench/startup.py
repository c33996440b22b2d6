"""Benchmark: how long a process of the platform takes to start, offline (no model configured)
and with agents defaulting to an OpenAI-compatible server (the SDK is then imported at start).

Three figures, each the p50 of `--runs` starts in fresh processes:

1. the ASGI server (daphne, or uvicorn with BENCH_ASGI_SERVER=uvicorn): from exec to the port
   accepting connections;
2. a command: `manage.py check`, from exec to exit;
3. the import of `config.asgi` alone (Django set up, every app loaded), in seconds of wall time.

Usage: .venv/bin/python bench/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from harness import ROOT, asgi_server_command, free_port, wait_for_port

IMPORT = "import time, django; t = time.perf_counter(); django.setup(); import config.asgi; "
IMPORT += "print(time.perf_counter() - t)"


def environment(provider: str, database: str) -> dict[str, str]:
    """A development environment on its own SQLite file, agents defaulting to `provider`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REDIS_URL"))}
    env |= {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{database}",
        "DEFAULT_MODEL_PROVIDER": provider,
    }
    return env


def server_ready(env: dict[str, str]) -> float:
    """Seconds from exec to the ASGI server's port accepting connections."""
    port = free_port()
    started = time.monotonic()
    process = subprocess.Popen(
        asgi_server_command(port),
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port)
        return time.monotonic() - started
    finally:
        process.terminate()
        process.wait(timeout=15)


def command_done(env: dict[str, str]) -> float:
    """Seconds of `manage.py check`, exec to exit."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    return time.monotonic() - started


def app_import(env: dict[str, str]) -> float:
    """Seconds of django.setup() and the ASGI application's import, in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", IMPORT],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print the p50 of each figure for the offline and the openai default."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        database = os.path.join(folder, "db.sqlite3")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT,
            check=True,
            env=environment("offline", database),
        )
        print(
            f"{'default provider':<18}{'server ready':>14}{'manage.py check':>17}{'app import':>12}"
        )
        for provider in ("offline", "openai"):
            env = environment(provider, database)
            figures = {name: [] for name in ("server", "command", "import")}
            for _ in range(runs):  # interleaved, so drift hits every figure alike
                figures["server"].append(server_ready(env))
                figures["command"].append(command_done(env))
                figures["import"].append(app_import(env))
            p50 = {name: statistics.median(values) for name, values in figures.items()}
            print(
                f"{provider:<18}{p50['server']:>13.2f}s{p50['command']:>16.2f}s"
                f"{p50['import']:>11.2f}s"
            )
            print(f"startup_{provider}_server_s={p50['server']:.2f}")


if __name__ == "__main__":
    main()
