"""Shared fixtures: a scrubbed environment, state and config dirs under tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

_SCRUB_PREFIXES = ("ORCA_", "XDG_")
_KEEP = {"ORCA_TEST_REDIS_URL"}


@pytest.fixture(autouse=True)
def clean_environ(tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name in _KEEP:
            continue
        if name.startswith(_SCRUB_PREFIXES) or name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # type: ignore[operator]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # type: ignore[operator]
    monkeypatch.chdir(tmp_path)  # type: ignore[arg-type]
    yield
