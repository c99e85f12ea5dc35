"""`orca_cli/translate` is pure like the routing core: no I/O, no clock, no randomness."""

from __future__ import annotations

from pathlib import Path

import pytest

import orca_cli.translate
from tests.routing.test_purity import forbidden_imports

MODULES = sorted(Path(orca_cli.translate.__file__).parent.rglob("*.py"))
ALSO_FORBIDDEN = ("random", "datetime", "uuid", "secrets")


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_module_is_pure(path: Path) -> None:
    source = path.read_text()
    assert forbidden_imports(source) == []
    for name in ALSO_FORBIDDEN:
        assert f"import {name}" not in source and f"from {name} " not in source
    assert len(source.splitlines()) <= 500
