"""The fake provider (orca_cli.testing.fake_upstream) on 127.0.0.1:0, in-process.

Each test sets `upstream.handler` to an aiohttp handler; the fake records every request
(headers, body, peer port) and every handler that ended because the client went away, so
tests can assert that the upstream saw the cancel.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from orca_cli.testing import FakeUpstream, fake_upstream
from orca_cli.testing import closed_port as free_closed_port


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with fake_upstream() as fake:
        yield fake


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening (connects are refused)."""
    return free_closed_port()
