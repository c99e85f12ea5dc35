"""The Prometheus exposition: valid lines, cumulative histograms, escaping, bounded series."""

from __future__ import annotations

import re

import pytest

from orca_cli.proxy.metrics import BUCKETS, Metrics

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
_VALUE = r"(?:[+-]?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)|[+-]Inf|NaN)"
SAMPLE = re.compile(rf"^({_NAME})(?:\{{({_LABEL}(?:,{_LABEL})*)\}})? ({_VALUE})$")
HELP = re.compile(rf"^# HELP ({_NAME}) .+$")
TYPE = re.compile(rf"^# TYPE ({_NAME}) (counter|gauge|histogram|summary|untyped)$")
PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: bytes) -> tuple[dict[str, str], list[tuple[str, dict[str, str], float]]]:
    """Check every line against the exposition grammar; return TYPEs and samples."""
    decoded = text.decode()
    assert decoded.endswith("\n")
    types: dict[str, str] = {}
    helps: set[str] = set()
    samples: list[tuple[str, dict[str, str], float]] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for line in decoded.splitlines():
        if m := HELP.match(line):
            helps.add(m[1])
        elif m := TYPE.match(line):
            assert m[1] not in types, f"TYPE repeated for {m[1]}"
            types[m[1]] = m[2]
        else:
            m = SAMPLE.match(line)
            assert m, f"not a valid exposition line: {line!r}"
            labels = dict(PAIR.findall(m[2] or ""))
            family = re.sub(r"_(bucket|sum|count)$", "", m[1]) if m[1] not in types else m[1]
            assert family in types and family in helps, f"sample before TYPE/HELP: {line!r}"
            ident = (m[1], tuple(sorted(labels.items())))
            assert ident not in seen, f"duplicate series: {line!r}"
            seen.add(ident)
            samples.append((m[1], labels, float(m[3])))
    return types, samples


def value(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    found = [v for n, lab, v in samples if n == name and all(lab.get(k) == x for k, x in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_an_empty_registry_renders_every_family() -> None:
    types, samples = parse(Metrics().render())
    assert types == {
        "orca_requests_total": "counter",
        "orca_request_duration_seconds": "histogram",
        "orca_upstream_responses_total": "counter",
        "orca_prompt_tokens_total": "counter",
        "orca_cached_tokens_total": "counter",
        "orca_cache_hits_total": "counter",
        "orca_cost_usd_total": "counter",
        "orca_strong_share": "gauge",
        "orca_store_degraded": "gauge",
    }
    assert samples == [("orca_store_degraded", {}, 0.0)]


def test_requests_are_counted_per_label_set() -> None:
    m = Metrics()
    m.request("openai", "coding", 200, 0.01, "base")
    m.request("openai", "coding", 200, 0.02, "base")
    m.request("anthropic", "coding", 429, 0.001, "strong")
    _, s = parse(m.render())
    assert value(s, "orca_requests_total", api="openai", router="coding", status="200",
                 tier="base") == 2
    assert value(s, "orca_requests_total", api="anthropic", status="429", tier="strong") == 1


def test_histogram_buckets_are_cumulative_and_inf_equals_count() -> None:
    m = Metrics()
    latencies = [0.0005, 0.001, 0.003, 0.2, 0.2, 7.0, 59.0, 61.0, 300.0]
    for lat in latencies:
        m.request("openai", "r", 200, lat, "base")
    _, s = parse(m.render())
    buckets = [(lab["le"], v) for n, lab, v in s if n == "orca_request_duration_seconds_bucket"]
    assert [le for le, _ in buckets] == [*(repr(b) for b in BUCKETS), "+Inf"]
    counts = [v for _, v in buckets]
    assert counts == sorted(counts)
    for (le, cum) in buckets:  # le is "less than or equal": 0.001 lands in the 0.001 bucket
        bound = float(le)
        assert cum == sum(1 for lat in latencies if lat <= bound)
    count = value(s, "orca_request_duration_seconds_count", api="openai", router="r")
    assert counts[-1] == count == len(latencies)
    total = value(s, "orca_request_duration_seconds_sum", api="openai", router="r")
    assert total == pytest.approx(sum(latencies))


def test_upstream_statuses_and_local_outcomes() -> None:
    m = Metrics()
    m.upstream("anthropic-main", 200)
    m.upstream("anthropic-main", "200")
    m.upstream("anthropic-main", "timeout")
    m.upstream("openai-backup", 503)
    _, s = parse(m.render())
    assert value(s, "orca_upstream_responses_total", channel="anthropic-main", status="200") == 2
    assert value(s, "orca_upstream_responses_total", status="timeout") == 1
    assert value(s, "orca_upstream_responses_total", channel="openai-backup", status="503") == 1


def test_tokens_and_strong_share_per_router() -> None:
    m = Metrics()
    m.tokens("coding", 1000, 800, 0.25)
    m.tokens("coding", 500, 0, 0.5)
    for tier in ("strong", "base", "base", "base"):
        m.request("openai", "coding", 200, 0.01, tier)
    m.request("openai", "chat", 200, 0.01, "base")
    _, s = parse(m.render())
    assert value(s, "orca_prompt_tokens_total", router="coding") == 1500
    assert value(s, "orca_cached_tokens_total", router="coding") == 800
    assert value(s, "orca_cache_hits_total", router="coding") == 1
    assert value(s, "orca_cost_usd_total", router="coding") == 0.75
    assert value(s, "orca_strong_share", router="coding") == 0.25
    assert value(s, "orca_strong_share", router="chat") == 0.0


def test_store_degraded_gauge_follows_the_flag() -> None:
    m = Metrics()
    m.store_degraded(True)
    assert value(parse(m.render())[1], "orca_store_degraded") == 1
    m.store_degraded(False)
    assert value(parse(m.render())[1], "orca_store_degraded") == 0


def test_label_values_are_escaped() -> None:
    m = Metrics()
    nasty = 'a"b\\c\nd'
    m.upstream(nasty, 500)
    text = m.render()
    assert b'channel="a\\"b\\\\c\\nd"' in text
    _, s = parse(text)  # still one valid line per sample
    assert sum(1 for n, _, _ in s if n == "orca_upstream_responses_total") == 1


def test_series_past_the_cap_fold_into_other() -> None:
    m = Metrics(max_series=5)
    for i in range(50):
        m.request("openai", f"router-{i}", 200, 0.01, "base")
        m.upstream(f"ch-{i}", 200)
        m.tokens(f"router-{i}", 10, 1)
    _, s = parse(m.render())
    for family in ("orca_requests_total", "orca_upstream_responses_total",
                   "orca_prompt_tokens_total", "orca_cached_tokens_total", "orca_strong_share",
                   "orca_request_duration_seconds_count"):
        series = [lab for n, lab, _ in s if n == family]
        assert len(series) == 6, family  # five kept, one "other"
    assert value(s, "orca_requests_total", router="other") == 45
    assert value(s, "orca_prompt_tokens_total", router="other") == 450
    assert value(s, "orca_request_duration_seconds_count", router="other") == 45
    # known label sets keep counting after the cap is reached
    m.request("openai", "router-0", 200, 0.01, "base")
    assert value(parse(m.render())[1], "orca_requests_total", router="router-0") == 2
