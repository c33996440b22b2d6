"""Routing tests share the delegation tests' scripted team."""

from tests.delegation.conftest import team  # noqa: F401  (the fixture)
