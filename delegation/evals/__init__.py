"""Evals: suites of cases run as real, isolated turns against live or draft agents, and the
publish gate that holds agent saves below a suite's threshold."""
