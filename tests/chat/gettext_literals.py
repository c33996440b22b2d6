"""Prints, as JSON, every literal the given Python files hand to a gettext function.

Run in its own process by tests/chat/test_i18n.py: CPython 3.11's AST constructor keeps its
recursion depth per interpreter, not per thread, so `ast.parse` beside another thread that parses
(a traceback being formatted, the calculator tool) can fail with "AST constructor recursion depth
mismatch" (python/cpython#106905). A process of its own has no such neighbour.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

GETTEXT_FUNCTIONS = {
    "_",
    "gettext",
    "gettext_lazy",
    "gettext_noop",
    "ngettext",
    "ngettext_lazy",
    "pgettext",
    "pgettext_lazy",
    "npgettext",
}


def code_msgids(path: Path) -> set[str]:
    """Every literal a module hands to a gettext function, as catalogue keys ("ctx\\x04id")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in GETTEXT_FUNCTIONS or not node.args:
            continue
        literals = [a.value for a in node.args if isinstance(a, ast.Constant)]
        if not literals or not all(isinstance(v, str) for v in literals):
            continue
        if node.func.id.startswith(("pgettext", "npgettext")) and len(literals) >= 2:
            found.add(f"{literals[0]}\x04{literals[1]}")
        else:
            found.add(literals[0])
    return found


if __name__ == "__main__":
    print(json.dumps({name: sorted(code_msgids(Path(name))) for name in sys.argv[1:]}))
