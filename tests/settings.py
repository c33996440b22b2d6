"""Settings for the test run: the project's, in development mode (DJANGO_DEBUG defaults to false).

Set in the environment, so the servers and workers the multi-process tests start inherit it.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")

from config.settings import *  # noqa: E402, F403
