"""A real `orca serve` stack on a real port: uvicorn + raw ASGI app + memory store + sim
channels (the upstream edge we cannot reach), driven by the official SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.config.template import example_text
from orca_cli.testing import Sidecar
from orca_cli.testing import sidecar as serve_sidecar
from tests.e2e.tier_kit import backend, launch  # noqa: F401 - fixtures for every e2e test

__all__ = ["Sidecar", "example_config"]


def example_config(**overrides: str) -> Config:
    return loads(example_text(), source="example")


@pytest.fixture
async def sidecar() -> AsyncIterator[Sidecar]:
    async with serve_sidecar(example_config()) as sc:
        yield sc
