"""The window a request's estimate is measured against before any scan (SPEC §14.3): the
smallest among the models its target can reach, not among every configured model. A body
that fits it fits every candidate, so it is not scanned for inline media and the decision's
cost does not grow with the transcript; one that does not is scanned as before."""

from __future__ import annotations

import base64

import orjson

from orca_cli.config.schema import ModelConfig, RouterConfig
from orca_cli.routing.candidates import PLAIN, build_candidates
from orca_cli.routing.route import reachable_window, reaches_blind
from orca_cli.routing.target import resolve_target
from orca_cli.wire.estimate import IMAGE_TOKENS, estimate_tokens
from tests.routing.cfg import channel, config

SMALL, LARGE, DEFAULT = 8_000, 1_000_000, ModelConfig().context_window
CFG = config(
    [channel("ch", ["big-a", "big-b", "small", "plain"])],
    models={"big-a": ModelConfig(context_window=LARGE),
            "big-b": ModelConfig(context_window=LARGE * 2),
            "small": ModelConfig(context_window=SMALL)},  # `plain` has no table: the default
    routers=[RouterConfig(name="wide", allowed_models=("big-a", "big-b")),
             RouterConfig(name="mixed", allowed_models=("big-a", "small"))],
)
PNG = base64.b64encode(bytes(range(256)) * 200).decode()  # 68 KB of base64: ≈ 17k tokens
BODY = {"model": "x", "messages": [{"role": "user", "content": [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}},
    {"type": "text", "text": "what is this"}]}]}
RAW = orjson.dumps(BODY)


def test_the_window_is_the_smallest_among_the_models_the_target_reaches() -> None:
    assert CFG.compiled.smallest_window == SMALL  # some configured model is small
    assert reachable_window(CFG, resolve_target("orca/wide", CFG)) == LARGE
    assert reachable_window(CFG, resolve_target("orca/mixed", CFG)) == SMALL
    assert reachable_window(CFG, resolve_target("big-b", CFG)) == LARGE * 2
    assert reachable_window(CFG, resolve_target("plain", CFG)) == DEFAULT
    # a route's fallbacks are candidates too (SPEC §17)
    assert reachable_window(CFG, resolve_target("big-b", CFG), ("small",)) == SMALL


def test_a_body_within_every_reachable_window_is_not_scanned_and_routes_alike() -> None:
    wide = reachable_window(CFG, resolve_target("orca/wide", CFG))
    assert SMALL < len(RAW) // 4 <= wide
    unscanned = estimate_tokens(RAW, BODY, fits=wide)
    scanned = estimate_tokens(RAW, BODY, fits=CFG.compiled.smallest_window)
    assert unscanned == len(RAW) // 4  # by bytes: the scan was skipped
    assert scanned < unscanned  # the image counted as an item
    # Either figure leaves every model the target reaches as a candidate.
    for est in (unscanned, scanned):
        got = build_candidates(("big-a", "big-b"), "openai", est, CFG, PLAIN)
        assert [c.excluded for c in got] == [None, None]


def test_a_body_over_a_reachable_window_is_scanned() -> None:
    mixed = reachable_window(CFG, resolve_target("orca/mixed", CFG))
    est = estimate_tokens(RAW, BODY, fits=mixed)
    assert est < len(RAW) // 4
    assert est >= IMAGE_TOKENS


def test_only_a_target_that_reaches_a_blind_model_is_looked_at_for_images() -> None:
    blind = config(
        [channel("ch", ["text-only", "seeing", "other"])],
        models={"text-only": ModelConfig(vision=False)},
        routers=[RouterConfig(name="mixed", allowed_models=("text-only", "seeing")),
                 RouterConfig(name="eyes", allowed_models=("seeing", "other"))])
    assert reaches_blind(blind, resolve_target("orca/mixed", blind))
    assert not reaches_blind(blind, resolve_target("orca/eyes", blind))
    assert reaches_blind(blind, resolve_target("text-only", blind))
    assert not reaches_blind(blind, resolve_target("seeing", blind))
    assert reaches_blind(blind, resolve_target("seeing", blind), ("text-only",))
    assert not reaches_blind(CFG, resolve_target("orca/mixed", CFG))  # every model sees
