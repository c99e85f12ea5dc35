"""Base banding on agent-sized prompts (SPEC §19): an easy session of a coding agent lands in
the weak band, a hard one in mid or strong, although the agent's constant prefix (a 15–25 KB
system prompt and 15+ tool schemas) alone saturates three terms of the full score."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from orca_cli.config.schema import RouterConfig
from orca_cli.routing.features import Scorer
from orca_cli.routing.strategies import STRATEGIES, StrategySignals
from orca_cli.routing.strategies.gated_adaptive import band_index
from orca_cli.types import Api
from tests.routing.bodies import (
    HARD_PROSE,
    SYSTEM_PROMPT,
    TRIVIAL_EDITS,
    assistant,
    goroutine_dump,
    python_traceback,
    user,
)

SCORER = Scorer()
ROUTER = RouterConfig(name="coding")  # default t1 = 0.35, t2 = 0.70


def _tools(n: int, api: Api) -> list[dict[str, Any]]:
    """`n` tool schemas of a real agent's size (≈ 1.5 KB each with their descriptions)."""
    out = []
    for i in range(n):
        params = {"type": "object", "properties": {
            f"arg{j}": {"type": "string", "description": "What this argument means and when "
                        "to pass it; the tool rejects values outside the documented set. " * 2}
            for j in range(5)}, "required": ["arg0"]}
        desc = f"Tool {i}: does one thing to the workspace and reports what it did. " * 6
        if api == "anthropic":
            out.append({"name": f"tool_{i}", "description": desc, "input_schema": params})
        else:
            out.append({"type": "function", "function": {"name": f"tool_{i}",
                                                          "description": desc,
                                                          "parameters": params}})
    return out


def agent_body(api: Api, system_kb: int, tools: int, messages: list[dict[str, Any]]
               ) -> dict[str, Any]:
    """A Claude-Code-sized (anthropic, 20 KB, 17 tools) or Codex-sized (openai, 10 KB) body."""
    system = (SYSTEM_PROMPT + "\n\n") * (system_kb * 1024 // (len(SYSTEM_PROMPT) + 2) + 1)
    system = system[: system_kb * 1024]
    body: dict[str, Any] = {"model": "orca/coding", "tools": _tools(tools, api)}
    if api == "anthropic":
        body["system"] = [{"type": "text", "text": system}]
        body["messages"] = messages
        body["max_tokens"] = 32000
    else:
        body["messages"] = [{"role": "system", "content": system}, *messages]
    return body


AGENTS: list[tuple[str, Api, int, int]] = [("claude-code", "anthropic", 20, 17),
                                           ("claude-code-25k", "anthropic", 25, 20),
                                           ("codex", "openai", 10, 8)]


def easy_session(api: Api) -> list[list[dict[str, Any]]]:
    """The request of each turn of an easy session: one-line edits and their answers."""
    msgs: list[dict[str, Any]] = []
    out = []
    for ask, answer in TRIVIAL_EDITS:
        msgs = [*msgs, user(api, f"<system-reminder>context</system-reminder>{ask}")]
        out.append(msgs)
        msgs = [*msgs, assistant(api, answer)]
    return out


def hard_first_turns(api: Api) -> list[list[dict[str, Any]]]:
    return [[user(api, HARD_PROSE)], [user(api, f"{HARD_PROSE}\n\n{goroutine_dump(8)}")],
            [user(api, f"{HARD_PROSE}\n\n{python_traceback(6)}")]]


@pytest.mark.parametrize(("agent", "api", "kb", "tools"), AGENTS, ids=[a[0] for a in AGENTS])
def test_an_easy_agent_session_bands_weak_though_its_full_score_is_mid(
        agent: str, api: Api, kb: int, tools: int) -> None:
    for messages in easy_session(api):
        body = agent_body(api, kb, tools, messages)
        full, band = SCORER.full(body, api).score, SCORER.banding(body, api).score
        assert band_index(full, ROUTER) == 1, (agent, full)  # the prefix alone: ≈ 0.45
        assert band_index(band, ROUTER) == 0, (agent, band)
        assert band < 0.2


@pytest.mark.parametrize(("agent", "api", "kb", "tools"), AGENTS, ids=[a[0] for a in AGENTS])
def test_a_hard_agent_session_bands_mid_or_strong(
        agent: str, api: Api, kb: int, tools: int) -> None:
    for messages in hard_first_turns(api):
        band = SCORER.banding(agent_body(api, kb, tools, messages), api).score
        assert band_index(band, ROUTER) >= 1, (agent, band)


def test_without_system_prompt_or_tools_banding_is_the_full_score() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": HARD_PROSE}]}
    assert SCORER.banding(body, "openai") == SCORER.full(body, "openai")


def test_gated_adaptive_bands_on_the_banding_score_and_shows_both() -> None:
    from tests.routing.test_strategies import ALL, _cands, _cfg, _router

    cfg = _cfg()
    rank = STRATEGIES["gated_adaptive"](_cands(ALL, cfg), cfg, _router(),
                                        StrategySignals(0.47, (0.0,) * 6, 0.08), {},
                                        random.Random(0))
    assert rank.ordered[0] == "weak"
    assert "full=0.470 banding=0.080 -> weak band" in rank.note
    json.dumps(rank.note)


@pytest.mark.parametrize(("agent", "api", "kb", "tools"), AGENTS, ids=[a[0] for a in AGENTS])
def test_the_decision_serves_an_easy_agent_session_from_the_weak_pool(
        agent: str, api: Api, kb: int, tools: int) -> None:
    from orca_cli.routing.route import RouteInput, plan_route
    from orca_cli.routing.target import resolve_target
    from orca_cli.state.base import Snapshot
    from tests.routing.cfg import channel, config, price

    cfg = config([channel("c1", ["cheap-a", "cheap-b"], api=api),
                  channel("f1", ["frontier"], api=api)],
                 models={"cheap-a": price(0.27, 1.1), "cheap-b": price(3, 15),
                         "frontier": price(5, 25)},
                 routers=[RouterConfig(name="coding", strategy="gated_adaptive",
                                       allowed_models=("cheap-a", "cheap-b", "frontier"),
                                       strong_pool=("frontier",), weak_pool=("cheap-a",),
                                       mid_pool=("cheap-b",))])

    def served(messages: list[dict[str, Any]]) -> str:
        body = agent_body(api, kb, tools, messages)
        inp = RouteInput(target=resolve_target("orca/coding", cfg), api=api, body=body,
                         delta=SCORER.delta(body, api), est_tokens=12_000, session="s1",
                         dedupe_key="d1")
        plan = plan_route(cfg, inp, Snapshot(), now=1_000_000.0, scorer=SCORER,
                          rng=random.Random(1))
        assert plan.ranking is not None and "banding=" in plan.ranking.note
        return plan.attempts[0].model

    assert {served(m) for m in easy_session(api)} == {"cheap-a"}
    assert {served(m) for m in hard_first_turns(api)} == {"cheap-b"}
