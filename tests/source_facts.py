"""Facts read from the project's Python sources with `ast`, in a process of their own.

CPython 3.11's AST constructor keeps its
recursion depth per interpreter, not per thread, so `ast.parse` beside another thread that parses
(a traceback being formatted, the calculator tool) can fail with "AST constructor recursion depth
mismatch" (python/cpython#106905). A process of its own has no such neighbour.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

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


def function_level_imports(path: Path, apps: list[str]) -> list[str]:
    """`file:line module` for every import of another app (of `apps`) made inside a function."""
    app = path.relative_to(ROOT).parts[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            names = []
            if isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
                names = [inner.module]
            elif isinstance(inner, ast.Import):
                names = [alias.name for alias in inner.names]
            for name in names:
                top = name.split(".")[0]
                if top in apps and top != app:
                    found.append(f"{path.relative_to(ROOT)}:{inner.lineno} {name}")
    return found


def source_facts(fact: str, paths: list[Path], apps: list[str] = ()) -> dict[str, list[str]]:
    """{path relative to the root: [facts]} for `fact` ("gettext" or "imports"), read by a
    child process (see the module docstring)."""
    names = [str(path.relative_to(ROOT)) for path in paths]
    result = subprocess.run(
        [sys.executable, __file__, fact, ",".join(apps), *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def _main(fact: str, apps: str, names: list[str]) -> dict[str, Any]:
    if fact == "gettext":
        return {name: sorted(code_msgids(ROOT / name)) for name in names}
    return {name: function_level_imports(ROOT / name, apps.split(",")) for name in names}


if __name__ == "__main__":
    print(json.dumps(_main(sys.argv[1], sys.argv[2], sys.argv[3:])))
