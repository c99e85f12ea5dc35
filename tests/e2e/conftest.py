"""A real `orca serve` stack on a real port: uvicorn + raw ASGI app + memory store + sim
channels (the upstream edge we cannot reach), driven by the official SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import openai
import pytest

from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.config.template import example_text
from orca_cli.testing import Sidecar
from orca_cli.testing import sidecar as serve_sidecar
from tests.e2e.tier_kit import backend, launch  # noqa: F401 - fixtures for every e2e test

__all__ = ["Sidecar", "anthropic_client", "example_config", "openai_client"]


def example_config(**overrides: str) -> Config:
    return loads(example_text(), source="example")


@pytest.fixture
async def sidecar() -> AsyncIterator[Sidecar]:
    async with serve_sidecar(example_config()) as sc:
        yield sc


def openai_client(sc: Sidecar, **headers: str) -> openai.AsyncOpenAI:
    """The official OpenAI SDK pointed at `sc`, no retries, closed with the sidecar."""
    client = openai.AsyncOpenAI(base_url=sc.base + "/v1", api_key="agent-key", max_retries=0,
                                default_headers=headers or None)
    sc.closers.append(client.close)
    return client


def anthropic_client(sc: Sidecar, **headers: str) -> anthropic.AsyncAnthropic:
    """The official Anthropic SDK pointed at `sc`, no retries, closed with the sidecar."""
    client = anthropic.AsyncAnthropic(base_url=sc.base, api_key="agent-key", max_retries=0,
                                      default_headers=headers or None)
    sc.closers.append(client.close)
    return client
