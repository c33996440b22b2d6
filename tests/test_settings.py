"""Settings: production passes `check --deploy`, secrets have no defaults, limits must nest."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "x7#kq2!v9$Lm4@pZ8&wR1^tY6*uI3(oP5)aS0-dF_gH+jK=lQ~zX<cV>bN",
    "DJANGO_ALLOWED_HOSTS": "chat.example.com",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**clean, **env},
    )


def test_production_settings_pass_check_deploy_without_warnings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    result = manage("check", **env)
    assert result.returncode != 0 and "DJANGO_SECRET_KEY" in result.stderr


def test_time_limits_that_do_not_nest_are_refused():
    result = manage(
        "check", DJANGO_DEBUG="true", OPENAI_TIMEOUT="600", CELERY_TASK_SOFT_TIME_LIMIT="100"
    )
    assert result.returncode != 0 and "Time limits must nest" in result.stderr


def test_redis_url_switches_on_redis_layer_and_broker():
    code = (
        "from django.conf import settings as s; "
        "print(s.CHANNEL_LAYERS['default']['BACKEND'], s.CELERY_BROKER_URL)"
    )
    result = manage(
        "shell", "-v", "0", "-c", code, REDIS_URL="redis://127.0.0.1:6379/3", DJANGO_DEBUG="true"
    )
    assert result.stdout.split() == [
        "channels_redis.core.RedisChannelLayer",
        "redis://127.0.0.1:6379/3",
    ]


def test_postgres_prepares_repeated_statements_unless_switched_off():
    code = (
        "from django.db import connection as c; o = c.settings_dict['OPTIONS']; "
        "print(o.get('server_side_binding'), o.get('prepare_threshold'))"
    )
    url = "postgres://postgres@127.0.0.1:5432/agent_platform"  # read, never connected to
    on = manage("shell", "-v", "0", "-c", code, DATABASE_URL=url, DJANGO_DEBUG="true")
    assert on.stdout.split() == ["True", "5"], on.stderr
    off = manage(
        "shell",
        "-v",
        "0",
        "-c",
        code,
        DATABASE_URL=url,
        DATABASE_PREPARE_THRESHOLD="",
        DJANGO_DEBUG="true",
    )
    assert off.stdout.split() == ["None", "None"], off.stderr


def test_channel_layer_reads_outlast_its_blocking_wait():
    # channels_redis blocks up to brpop_timeout per read; a shorter socket timeout kills idle
    # sockets (the redis client's default is 5 s, equal to the wait).
    code = (
        "from django.conf import settings as s; "
        "from channels_redis.core import RedisChannelLayer; "
        "h = s.CHANNEL_LAYERS['default']['CONFIG']['hosts'][0]; "
        "print(h['socket_timeout'] > RedisChannelLayer.brpop_timeout + 5, "
        "h['socket_keepalive'], h['health_check_interval'] > 0, h['retry'] is not None)"
    )
    result = manage(
        "shell", "-v", "0", "-c", code, REDIS_URL="redis://127.0.0.1:6379/3", DJANGO_DEBUG="true"
    )
    assert result.stdout.split() == ["True", "True", "True", "True"], result.stderr


def test_debug_is_off_unless_switched_on():
    code = "from django.conf import settings as s; print(s.DEBUG)"
    off = manage("shell", "-v", "0", "-c", code, **{**PRODUCTION, "DJANGO_DEBUG": ""})
    assert off.stdout.split() == ["False"], off.stderr
    unset = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_DEBUG"}
    assert manage("shell", "-v", "0", "-c", code, **unset).stdout.split() == ["False"]
    missing_key = manage("check")  # no DJANGO_* at all: production rules, so no secret key
    assert missing_key.returncode != 0 and "DJANGO_SECRET_KEY" in missing_key.stderr
    on = manage("shell", "-v", "0", "-c", code, DJANGO_DEBUG="true")
    assert on.stdout.split() == ["True"], on.stderr


def test_the_test_run_is_in_development_mode():
    assert os.environ["DJANGO_DEBUG"] == "true"  # inherited by the processes tests start
    assert settings.SECRET_KEY.startswith("insecure-embedded-development-key")


def test_a_request_is_logged_once_by_runserver(tmp_path):
    # `runserver` (daphne's) logs each request to django.channels.server: one line, from the
    # root's handler, successful requests included.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        # The embedded default, whatever database this test pass uses: logging is what is tested.
        env={
            **{k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")},
            "DJANGO_DEBUG": "true",
            "DATABASE_URL": f"sqlite:///{tmp_path}/log.sqlite3",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    server.terminate()
                    raise AssertionError(server.communicate(timeout=10)[0]) from None
                time.sleep(0.2)
    finally:
        server.terminate()
    output = server.communicate(timeout=10)[0]
    assert output.count("GET /accounts/login/ 200") == 1, output
