"""The README's worked routes file is valid against the documented example config and takes
the paths the README describes."""

from __future__ import annotations

from pathlib import Path

from orca_cli.config.load import load
from orca_cli.config.routes_file import with_routes_text
from orca_cli.routing.routes import RequestFacts, Spend, compile_routes, counter_key

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_796_371_200.0


def _routes_text() -> str:
    readme = (ROOT / "README.md").read_text("utf-8")
    start = readme.index("## Dynamic routes and budgets")
    body = readme.index("```toml", start) + len("```toml\n")
    return readme[body:readme.index("```", body)]


def test_the_readme_routes_file_checks_and_routes_as_described() -> None:
    cfg, errors = with_routes_text(load(str(ROOT / "orca.toml.example"), environ={}),
                                   _routes_text(), "README.md")
    assert errors == [] and cfg is not None
    table = compile_routes(cfg.routes)
    anon = table.evaluate(RequestFacts("openai", "gpt-4.1", now=NOW), {})
    assert (anon.route, anon.path, anon.deny and anon.deny.status) == (
        "no-key", ("known", "refuse"), 401)
    spent = {counter_key("key", "ci", "day", NOW): Spend(40, 20.0)}
    ci = RequestFacts("openai", "gpt-4.1", key_name="ci", now=NOW)
    assert table.evaluate(ci, spent).path == ("spend", "stop")
    shares = [table.evaluate(RequestFacts("openai", "m", session_id=f"s{i}", key_name="ci",
                                          now=NOW), {}).path[-1] for i in range(1000)]
    assert 0.07 < shares.count("new") / 1000 < 0.13


async def test_the_readme_routes_file_runs_live_on_the_example_config() -> None:
    """The worked file served by a sidecar over the example config's simulated channels: no
    key is refused, the CI key is split 90/10 sticky per session (the new model's channel is
    switched off in the example, so its fallback serves), and a spent day budget refuses."""
    import dataclasses
    import time

    from orca_cli.routing.routes import counter_key
    from orca_cli.state import keys as K
    from orca_cli.state.base import CommitBatch, HIncrOp, SlotWrite
    from orca_cli.testing import sidecar

    base = load(str(ROOT / "orca.toml.example"), environ={"ORCA_CI_TOKEN": "ci-secret"})
    cfg, errors = with_routes_text(base, _routes_text(), "README.md")
    assert errors == [] and cfg is not None
    cfg = dataclasses.replace(cfg, state=dataclasses.replace(cfg.state, backend="memory"))
    hello = {"model": "orca/coding", "messages": [{"role": "user", "content": "hello"}]}
    ci = {"authorization": "Bearer ci-secret"}
    async with sidecar(cfg) as sc:
        anon = await sc.http.post("/v1/chat/completions", json=hello)
        assert anon.status_code == 401 and anon.json()["error"]["message"] == "present a team key"
        served: dict[str, set[str]] = {}
        for i in range(40):
            for _ in range(2):
                r = await sc.http.post("/v1/chat/completions", json=hello,
                                       headers={**ci, "x-orca-session": f"ci-{i}"})
                assert r.status_code == 200, r.text
                await sc.idle()
                trace = await sc.store.get_trace(r.headers["x-orca-request-id"])
                assert trace is not None
                branch = trace["route"]["path"][-1]
                if branch == "new":  # openai:gpt-4.1 is off in the example: the fallback
                    assert r.headers["x-orca-model"] == "gpt-4.1-mini"
                served.setdefault(f"ci-{i}", set()).add(branch)
        assert all(len(branches) == 1 for branches in served.values())
        assert 0 < sum(b == {"new"} for b in served.values()) < 12  # the 10 % branch
        day = counter_key("key", "ci", "day", time.time())
        await sc.store.commit(CommitBatch("spent", (SlotWrite(K.BUDGETS, (
            HIncrOp(K.budget_counter_key(day), "usd", 20.0, 3600),)),)))
        stop = await sc.http.post("/v1/chat/completions", json=hello, headers=ci)
        assert stop.status_code == 429
        assert stop.json()["error"]["message"] == "the CI budget for today is spent"
