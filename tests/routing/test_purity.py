"""STYLE §4.2 rule 1, SPEC §3: `orca_cli/routing` is pure — sync, no I/O, no wall clock.

An AST walk over every module under `orca_cli/routing/` rejects imports of the network,
store, web, terminal and async libraries and of `time` / `os` (routing takes `now` and a Clock;
it reads no environment). A second check imports the whole package in a fresh interpreter
and asserts none of the third-party I/O libraries got loaded transitively.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import orca_cli.routing

FORBIDDEN = frozenset(
    {"httpx", "redis", "aiohttp", "starlette", "uvicorn", "rich", "anyio", "asyncio", "time", "os"}
)
ROUTING = Path(orca_cli.routing.__file__).parent
MODULES = sorted(ROUTING.rglob("*.py"))


def forbidden_imports(source: str) -> list[str]:
    """Top-level module names from FORBIDDEN that `source` imports, statically or via
    `__import__("...")` / `importlib.import_module("...")` with a constant name."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = (
                func.id
                if isinstance(func, ast.Name)
                else (func.attr if isinstance(func, ast.Attribute) else "")
            )
            if called in {"__import__", "import_module"} and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        found.extend(n for n in names if n.split(".")[0] in FORBIDDEN)
    return found


def test_the_walk_sees_the_routing_modules() -> None:
    rel = {p.relative_to(ROUTING).as_posix() for p in MODULES}
    assert {"target.py", "candidates.py", "linucb.py", "strategies/__init__.py"} <= rel


@pytest.mark.parametrize(
    "source",
    [
        "import time",
        "import os.path",
        "from redis.asyncio import Redis",
        "import asyncio as aio",
        "from httpx import Client",
        "def f():\n    import rich",
        "__import__('anyio')",
        "import importlib\nimportlib.import_module('starlette.requests')",
    ],
)
def test_detector_flags_forbidden_imports(source: str) -> None:
    assert forbidden_imports(source)


@pytest.mark.parametrize(
    "source",
    [
        "import math",
        "from orca_cli.clock import Clock",
        "from . import time_helpers",
        "import timeit_like_name",
        "from dataclasses import dataclass",
    ],
)
def test_detector_allows_pure_imports(source: str) -> None:
    assert forbidden_imports(source) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROUTING).as_posix())
def test_routing_module_is_pure(path: Path) -> None:
    bad = forbidden_imports(path.read_text(encoding="utf-8"))
    assert not bad, f"{path.relative_to(ROUTING)} imports {bad}; orca_cli/routing must stay pure"


def test_importing_routing_loads_no_io_library() -> None:
    names = [m.name for m in pkgutil.walk_packages([str(ROUTING)], "orca_cli.routing.")]
    assert "orca_cli.routing.strategies.linucb" in names
    heavy = sorted(FORBIDDEN - {"time", "os"})
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROUTING.parent.parent,
    )
    assert out.stdout.strip() == ""


def test_routing_does_not_import_the_state_package() -> None:
    """Imports point one way: `state/` builds on the routing core, never the reverse."""
    offenders = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                    and (node.module == "orca_cli.state"
                         or node.module.startswith("orca_cli.state."))):
                offenders.append(f"{path.relative_to(ROUTING)}: {node.module}")
    assert offenders == []
