"""One fake provider and one sidecar per module, reconfigured per test with the translation
config (`kit.CONFIG`), for the cross-format tests of this package."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.testing import FakeUpstream, Sidecar, fake_upstream, sidecar
from tests.e2e.translation.kit import CONFIG


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> AsyncIterator[FakeUpstream]:
    async with fake_upstream() as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    provider.seen.clear()
    provider.rules.clear()
    provider.handler = None
    cfg = loads(CONFIG.format(up=provider.base_url), source="test")
    async with server.use(cfg) as st:
        yield st
