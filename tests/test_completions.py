"""`completions/` matches what the CLI generates (regenerate: python scripts/gen_completions.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_completions",
                                                  ROOT / "scripts" / "gen_completions.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_completion_scripts_are_current() -> None:
    for name, text in _generator().scripts().items():
        path = ROOT / "completions" / name
        assert path.read_text() == text, f"{path} is stale: run python scripts/gen_completions.py"


def test_the_completion_protocol_lists_the_commands() -> None:
    env = {**os.environ, "_ORCA_COMPLETE": "complete_bash", "COMP_WORDS": "orca ex",
           "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-m", "orca_cli"], env=env, capture_output=True,
                         text=True, timeout=60, check=False)
    assert "explain" in out.stdout.split()
