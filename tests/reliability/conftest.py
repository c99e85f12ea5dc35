"""Reliability fixtures: redis-server processes of our own, always stopped by pid.

* `farm`: a `RedisFarm` for one test (start, crash, restart servers as the test needs).
* `module_farm`: one shared by a module's tests, for topologies that are slow to build
  (a cluster, a sentinel group) and that those tests leave as they found them.
* `up`: the kit's fake provider (`orca_cli.testing.fake_upstream`) for one test.

Each test uses its own key prefix on shared servers, so no test reads another's state.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from orca_cli.testing import FakeUpstream, fake_upstream
from tests.redis_procs import RedisFarm


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[RedisFarm]:
    f = RedisFarm(tmp_path / "redis")
    try:
        yield f
    finally:
        f.stop_all()


@pytest.fixture(scope="module")
def module_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisFarm]:
    f = RedisFarm(tmp_path_factory.mktemp("redis"))
    try:
        yield f
    finally:
        f.stop_all()


@pytest.fixture
def prefix() -> str:
    return f"orcarel-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def up() -> AsyncIterator[FakeUpstream]:
    async with fake_upstream() as fake:
        yield fake
