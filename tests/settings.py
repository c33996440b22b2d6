"""Settings for the test run: the project's, in development mode (DJANGO_DEBUG defaults to false).

Set in the environment, so the servers and workers the multi-process tests start inherit it.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")

# Parallel workers (pytest-xdist: gw0, gw1, …) each get their own Redis database, below the one
# given, so one worker's flush or queue never touches another's.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and os.environ.get("REDIS_URL"):
    _base, _, _db = os.environ["REDIS_URL"].rpartition("/")
    if _db.isdigit():
        os.environ["REDIS_URL"] = f"{_base}/{int(_db) - 1 - int(_worker[2:])}"

from django.conf import global_settings  # noqa: E402

from config.settings import *  # noqa: E402, F403

# Most tests create users; PBKDF2's 1,000,000 rounds cost 0.3 s per password here (Django's own
# advice for test speed). 1,000 rounds of the same algorithm: the servers some tests start with
# config.settings verify these hashes too (the rounds are stored in each hash).
PASSWORD_HASHERS = [
    "tests.hashers.QuickPBKDF2PasswordHasher",
    *(h for h in global_settings.PASSWORD_HASHERS if not h.endswith(".PBKDF2PasswordHasher")),
]

# The same backends with a cheaper flush at the end of each transactional test (tests/backends).
_TEST_BACKENDS = {
    "config.db.sqlite_backend": "tests.backends.sqlite3",
    "django.db.backends.postgresql": "tests.backends.postgresql",
}
_engine = DATABASES["default"]["ENGINE"]  # noqa: F405
DATABASES["default"]["ENGINE"] = _TEST_BACKENDS.get(_engine, _engine)  # noqa: F405

# The offline model streams a word each OFFLINE_MODEL_DELAY_MS (25 ms), so a person sees it
# stream; in-process tests would only sleep (a fuzzed message of a hundred words: 2.5 s a turn).
# Tests that need an answer to take time set it themselves; the servers tests start choose
# their own (tests/e2e/conftest.py).
OFFLINE_MODEL_DELAY_MS = 0
