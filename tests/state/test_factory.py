"""`open_store`: backends by config, lazy connection, config errors that say what to fix."""

from __future__ import annotations

import pytest

from orca_cli.clock import FakeClock
from orca_cli.config.schema import StateConfig
from orca_cli.errors import ConfigError, StoreUnavailable
from orca_cli.state.base import ReadRequest
from orca_cli.state.factory import open_store
from orca_cli.state.memory import MemoryStore
from orca_cli.state.redis import RedisStore
from orca_cli.testing import free_port


def test_memory_is_the_default_backend() -> None:
    assert isinstance(open_store(StateConfig(), clock=FakeClock()), MemoryStore)


async def test_a_redis_store_is_built_without_connecting() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    store = open_store(
        StateConfig(backend="redis", redis_url=url, timeout_ms=100), clock=FakeClock()
    )
    assert isinstance(store, RedisStore)
    with pytest.raises(StoreUnavailable):  # only the first call finds Redis down
        await store.read(ReadRequest("coding"))
    await store.close()


@pytest.mark.parametrize(
    "cfg, key",
    [
        (StateConfig(key_prefix="or{ca}"), "state.key_prefix"),
        (StateConfig(backend="redis", redis_mode="sentinel"), "state.sentinels"),
        (
            StateConfig(backend="redis", redis_mode="sentinel", sentinels=("nohost",)),
            "state.sentinels",
        ),
    ],
)
def test_unusable_state_config_is_a_config_error(cfg: StateConfig, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        open_store(cfg, clock=FakeClock())
    assert err.value.key == key
