"""A session named by the start of its id (SPEC §1.1): the request log prints session ids
shortened, so `session show`, `escalate`, `reset` and `pins dump --session` take a unique
prefix of at least 8 characters, as `orca explain` takes a request id's first 8 hex digits."""

from __future__ import annotations

import pytest

from orca_cli.admin import service as S
from orca_cli.config.schema import Config
from orca_cli.state.base import Store
from tests.admin.conftest import ROUTER, drive
from tests.state.conftest import StoreEnv

ONE = "559f8439-f2aa-4c1e-9b7d-0a1b2c3d4e5f"
TWO = "559f8439-f2bb-4c1e-9b7d-0a1b2c3d4e5f"
OTHER = "7d1e0c44-1111-2222-3333-444455556666"


async def _three(store: Store, env: StoreEnv, cfg: Config) -> None:
    for i, sid in enumerate((ONE, TWO, OTHER)):
        await drive(store, cfg, sid, now=env.clock.now(), rid=f"r{i}")


async def test_a_unique_prefix_names_the_session(store: Store, env: StoreEnv,
                                                 cfg: Config) -> None:
    await _three(store, env, cfg)
    assert (await S.show_session(store, cfg, None, "7d1e0c44"))["session_id"] == OTHER
    assert (await S.show_session(store, cfg, ROUTER, "559f8439-f2a"))["session_id"] == ONE
    assert [v["session_id"] for v in await S.list_sessions(store, cfg, session="7d1e0c44")] == [
        OTHER]
    pins = await S.pins_dump(store, cfg, session="7d1e0c44")
    assert pins and {p["session"] for p in pins} == {OTHER}
    res = await S.escalate(store, cfg, None, "7d1e0c44", once=True, now=env.clock.now())
    assert res["status"] == "pending" and res["session_id"] == OTHER
    res = await S.reset(store, cfg, None, "559f8439-f2b", now=env.clock.now())
    assert res["status"] == "pending" and res["session_id"] == TWO


async def test_an_ambiguous_prefix_lists_the_candidates(store: Store, env: StoreEnv,
                                                        cfg: Config) -> None:
    await _three(store, env, cfg)
    calls = (lambda: S.show_session(store, cfg, None, "559f8439"),
             lambda: S.escalate(store, cfg, None, "559f8439-f2", now=env.clock.now()),
             lambda: S.pins_dump(store, cfg, session="559f8439"))
    for call in calls:
        with pytest.raises(S.OperatorError) as err:
            await call()
        assert err.value.status == 400 and err.value.code == "ambiguous_session"
        assert ONE in str(err.value) and TWO in str(err.value)
        assert OTHER not in str(err.value) and "more of the id" in str(err.value)


async def test_a_short_or_unknown_prefix_is_no_session(store: Store, env: StoreEnv,
                                                       cfg: Config) -> None:
    await _three(store, env, cfg)
    for text in ("7d1e0c4", "7d1e0c45"):  # under 8 characters; the start of no id
        with pytest.raises(S.OperatorError) as err:
            await S.show_session(store, cfg, None, text)
        assert err.value.status == 404 and "no such session" in str(err.value)
    assert await S.pins_dump(store, cfg, session="7d1e0c45") == []


async def test_requests_explain_and_the_status_line_take_the_prefix_too(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    """`orca requests --session`, `orca explain --session` (both `recent_requests`) and the
    status line (`session_status`) take the start the request log prints, as `session show`
    does; a start several sessions share is refused, never merged."""
    from orca_cli.admin.requests import recent_requests
    from orca_cli.admin.status import session_status
    from orca_cli.errors import AdminError

    await _three(store, env, cfg)
    rows = await recent_requests(store, session="7d1e0c44")
    assert rows and {r["session_id"] for r in rows} == {OTHER}
    assert {r["session_id"] for r in await recent_requests(store, session=ONE)} == {ONE}
    assert await recent_requests(store, session="7d1e0c4") == []  # under 8: no prefix
    with pytest.raises(AdminError) as err:
        await recent_requests(store, session="559f8439")
    assert err.value.status == 400 and ONE in str(err.value) and TWO in str(err.value)
    status = await session_status(store, cfg, "7d1e0c44", router=None, now=env.clock.now())
    assert status["session_id"] == OTHER
    with pytest.raises(AdminError) as err:
        await session_status(store, cfg, "559f8439", router=None, now=env.clock.now())
    assert err.value.status == 400


async def test_a_start_pasted_with_the_logs_ellipsis_names_the_session(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    """The request log shortens a long session id to its start and `…`; pasted as printed,
    it names the session everywhere a start does."""
    from orca_cli.admin.requests import recent_requests
    from orca_cli.admin.status import session_status

    await _three(store, env, cfg)
    assert (await S.show_session(store, cfg, None, "7d1e0c44-11…"))["session_id"] == OTHER
    assert {r["session_id"] for r in await recent_requests(store, session="7d1e0c44…")} == {
        OTHER}
    status = await session_status(store, cfg, "7d1e0c44-1111…", router=None,
                                  now=env.clock.now())
    assert status["session_id"] == OTHER


@pytest.mark.parametrize("limit", [1, 2])
async def test_an_ambiguous_start_is_refused_whatever_the_limit(
        store: Store, env: StoreEnv, cfg: Config, limit: int) -> None:
    """`orca explain --session` asks for one trace: the first `limit` traces may all be one
    session's, yet a start two sessions share is still refused."""
    from orca_cli.admin.requests import recent_requests
    from orca_cli.errors import AdminError

    await _three(store, env, cfg)
    with pytest.raises(AdminError) as err:
        await recent_requests(store, session="559f8439", limit=limit)
    assert err.value.status == 400 and ONE in str(err.value) and TWO in str(err.value)
    rows = await recent_requests(store, session="7d1e0c44", limit=1)
    assert [r["session_id"] for r in rows] == [OTHER]
