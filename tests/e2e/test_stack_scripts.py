"""The stack's process supervision: honcho runs every process under bin/keep-running (honcho
itself never restarts a dead one), and docker compose restarts its services."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def wait_until(predicate, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def keep_running_a_failing_command(runs: Path, delay: str) -> subprocess.Popen:
    """bin/keep-running over a command that notes each run in `runs` and exits with 3."""
    return subprocess.Popen(
        [str(ROOT / "bin" / "keep-running"), "sh", "-c", f"echo run >> {runs}; exit 3"],
        env={"PATH": "/usr/bin:/bin", "RESTART_DELAY": delay},
        stderr=subprocess.PIPE,
        text=True,
    )


def test_keep_running_restarts_a_command_that_dies_and_stops_on_sigterm(tmp_path):
    runs = tmp_path / "runs"
    wrapper = keep_running_a_failing_command(runs, delay="0.05")
    wait_until(lambda: runs.exists() and len(runs.read_text().splitlines()) >= 3)
    wrapper.send_signal(signal.SIGTERM)
    assert wrapper.wait(timeout=10) == 0
    assert "exited with status 3; starting it again" in wrapper.stderr.read()


def test_keep_running_passes_sigterm_to_the_running_command(tmp_path):
    ready, stopped = tmp_path / "ready", tmp_path / "stopped"
    script = f"trap 'echo > {stopped}; exit 0' TERM; echo > {ready}; while :; do sleep 0.05; done"
    wrapper = subprocess.Popen(
        [str(ROOT / "bin" / "keep-running"), "sh", "-c", script],
        env={"PATH": "/usr/bin:/bin"},
    )
    wait_until(ready.exists)  # the command's trap is installed
    wrapper.send_signal(signal.SIGTERM)
    assert wrapper.wait(timeout=10) == 0
    wait_until(stopped.exists)


def test_keep_running_stopped_while_it_waits_to_restart_starts_nothing_more(tmp_path):
    runs = tmp_path / "runs"
    wrapper = keep_running_a_failing_command(runs, delay="1")
    wait_until(lambda: "starting it again" in wrapper.stderr.readline())  # now in its delay
    wrapper.send_signal(signal.SIGTERM)
    assert wrapper.wait(timeout=10) == 0
    assert runs.read_text().splitlines() == ["run"]


def test_every_procfile_process_is_restarted_when_it_dies():
    lines = [line for line in (ROOT / "Procfile").read_text().splitlines() if line.strip()]
    assert {line.split(":", 1)[0] for line in lines} == {"web", "worker", "knowledge", "beat"}
    for line in lines:
        assert line.split(":", 1)[1].split()[0] == "bin/keep-running", line


def test_compose_services_restart_unless_stopped():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("postgres", "redis", "web", "worker", "knowledge-worker", "beat"):
        assert services[name]["restart"] == "unless-stopped", name
    assert services["migrate"]["restart"] == "on-failure"  # one-shot


def test_make_run_stops_at_once_naming_port_when_the_port_is_taken():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        check = make("check-port", f"PORT={port}")
    assert check.returncode != 0
    assert f"port {port} is in use: set PORT=" in check.stderr
    assert make("check-port", f"PORT={port}").returncode == 0  # free again
    planned = make("-n", "run", f"PORT={port}").stdout.splitlines()
    check_line = next(i for i, line in enumerate(planned) if "bin/check-port" in line)
    serve_line = next(i for i, line in enumerate(planned) if "runserver" in line)
    assert check_line < serve_line  # checked before anything starts


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", *args], cwd=ROOT, capture_output=True, text=True)
