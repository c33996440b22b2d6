"""Settings of the Celery workers the distributed humans tests start: the project's, plus the
test's side-effect tool (tests.humans.effect_tool) imported at worker start."""

from config.settings import *  # noqa: F403

CELERY_IMPORTS = ["tests.humans.effect_tool"]
