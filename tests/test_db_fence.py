"""config.db refuses to run on a Django whose private internals it was not written for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import django
import pytest
from django.core.exceptions import ImproperlyConfigured

from config.db import PRIVATE_INTERNALS, django_version_check

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("version", [(5, 2, 0, "final", 0), (5, 2, 99, "final", 0)])
def test_any_patch_release_of_the_supported_feature_release_passes(monkeypatch, version):
    monkeypatch.setattr(django, "VERSION", version)
    django_version_check()


@pytest.mark.parametrize(
    "version", [(5, 1, 9, "final", 0), (5, 3, 0, "alpha", 0), (6, 0, 0, "final", 0)]
)
def test_another_feature_release_is_refused_naming_the_internals(monkeypatch, version):
    monkeypatch.setattr(django, "VERSION", version)
    with pytest.raises(ImproperlyConfigured) as refused:
        django_version_check()
    message = str(refused.value)
    assert "written for Django 5.2.x" in message
    assert django.get_version() in message  # the installed version, as Django spells it
    for internal in PRIVATE_INTERNALS:
        assert internal in message
    for name in ("klass_info", "get_related_populators", "InsertQuery", "_commit()"):
        assert name in message


def test_importing_the_package_runs_the_check():
    """A process on another Django stops at import, before any statement is compiled."""
    probe = "import django; django.VERSION = (6, 0, 0, 'final', 0); import config.db.prepared"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode != 0
    assert "ImproperlyConfigured: config.db was written for Django 5.2.x" in out.stderr
