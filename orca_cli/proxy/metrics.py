"""`/metrics`: a small Prometheus text-format registry, without a client library (SPEC §1.2).

Recording runs on every request, so each call is a few dict operations on plain tuples; all
formatting happens in `render`, when a scraper asks. Everything runs on the event loop with
no `await`, so no lock is needed.

Label values come from config (router and channel names) and from a handful of fixed sets
(API, tier, status), but a misconfigured client can still spread requests over many values
(an unknown router name, odd statuses). Each family keeps at most `max_series` label sets;
past that a new set is folded into one whose every label is `other`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = ["BUCKETS", "CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)
_OTHER = "other"
_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n"})

Key = tuple[str | int, ...]
T = TypeVar("T")


class _Histogram:
    """Per-bucket counts (not cumulative; `render` sums them) plus the running sum."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last slot is +Inf
        self.total = 0.0


class Metrics:
    """Counters, one histogram and two gauges for the sidecar; `render()` for `/metrics`."""

    def __init__(self, *, max_series: int = 1000) -> None:
        self._max = max_series
        self._requests: dict[Key, int] = {}
        self._durations: dict[Key, _Histogram] = {}
        self._served: dict[Key, list[int]] = {}  # router -> [total, strong]
        self._upstream: dict[Key, int] = {}
        # router -> [prompt tokens, cached tokens, billed responses that read the cache, cost]
        self._usage: dict[Key, list[float]] = {}
        self._degraded = False

    def request(self, path_api: str, router: str, status: int, latency_s: float, tier: str) -> None:
        """One answered request: its inbound API, router, status, wall time and served tier."""
        key: Key = (path_api, router, status, tier)
        requests = self._requests
        if key not in requests and len(requests) >= self._max:
            key = (_OTHER,) * 4
        requests[key] = requests.get(key, 0) + 1

        hist = _series(self._durations, (path_api, router), self._max, _Histogram)
        hist.counts[bisect_left(BUCKETS, latency_s)] += 1
        hist.total += latency_s

        served = _series(self._served, (router,), self._max, lambda: [0, 0])
        served[0] += 1
        if tier == "strong":
            served[1] += 1

    def upstream(self, channel: str, status: int | str) -> None:
        """One upstream attempt: its HTTP status, or a local outcome like `"timeout"`."""
        if isinstance(status, str) and status.isdigit():
            status = int(status)  # "503" and 503 are one series
        _bump(self._upstream, (channel, status), 1, self._max)

    def tokens(self, router: str, prompt: int, cached: int, cost_usd: float = 0.0) -> None:
        """Usage of one billed response: prompt tokens, the cached part of them (a response
        with any counts as a cache hit) and its cost."""
        sums = _series(self._usage, (router,), self._max, lambda: [0, 0, 0, 0.0])
        sums[0] += prompt
        sums[1] += cached
        if cached > 0:
            sums[2] += 1
        sums[3] += cost_usd

    def store_degraded(self, flag: bool) -> None:
        """Whether the state store is currently unreachable (serving degraded)."""
        self._degraded = flag

    def render(self) -> bytes:
        """The whole exposition, in Prometheus text format 0.0.4."""
        out: list[str] = []
        _family(out, "orca_requests_total", "counter",
                "Requests answered, by inbound API, router, status and served tier.",
                ("api", "router", "status", "tier"), self._requests.items())
        out.append("# HELP orca_request_duration_seconds Wall time from request to the last "
                   "byte of the answer.")
        out.append("# TYPE orca_request_duration_seconds histogram")
        bounds = [*(_num(b) for b in BUCKETS), "+Inf"]
        for key, hist in self._durations.items():
            labels = _labels(("api", "router"), key)
            running = 0
            for le, n in zip(bounds, hist.counts, strict=True):
                running += n
                out.append(f'orca_request_duration_seconds_bucket{{{labels},le="{le}"}} {running}')
            out.append(f"orca_request_duration_seconds_sum{{{labels}}} {_num(hist.total)}")
            out.append(f"orca_request_duration_seconds_count{{{labels}}} {running}")
        _family(out, "orca_upstream_responses_total", "counter",
                "Upstream attempts, by channel and HTTP status or local outcome.",
                ("channel", "status"), self._upstream.items())
        _family(out, "orca_prompt_tokens_total", "counter",
                "Prompt tokens reported by upstreams, by router.",
                ("router",), ((k, int(v[0])) for k, v in self._usage.items()))
        _family(out, "orca_cached_tokens_total", "counter",
                "Prompt tokens read from the provider's cache, by router.",
                ("router",), ((k, int(v[1])) for k, v in self._usage.items()))
        _family(out, "orca_cache_hits_total", "counter",
                "Billed responses that read prompt tokens from the provider's cache, by router.",
                ("router",), ((k, int(v[2])) for k, v in self._usage.items()))
        _family(out, "orca_cost_usd_total", "counter",
                "Estimated cost of billed responses in US dollars, by router.",
                ("router",), ((k, _num(v[3])) for k, v in self._usage.items()))
        out.append("# HELP orca_strong_share Share of requests served on the strong tier, by "
                   "router.")
        out.append("# TYPE orca_strong_share gauge")
        for key, (total, strong) in self._served.items():
            out.append(f"orca_strong_share{{{_labels(('router',), key)}}} {_num(strong / total)}")
        out.append("# HELP orca_store_degraded 1 while the state store is unreachable.")
        out.append("# TYPE orca_store_degraded gauge")
        out.append(f"orca_store_degraded {int(self._degraded)}")
        out.append("")
        return "\n".join(out).encode()


def _series(table: dict[Key, T], key: Key, cap: int, new: Callable[[], T]) -> T:
    """The entry of series `key`, made by `new` on first use; past `cap` series a new key
    joins the `_OTHER` series instead."""
    entry = table.get(key)
    if entry is None:
        if len(table) >= cap:
            key = (_OTHER,) * len(key)
            entry = table.get(key)
        if entry is None:
            entry = table[key] = new()
    return entry


def _bump(counter: dict[Key, Any], key: Key, by: float, cap: int) -> None:
    if key not in counter and len(counter) >= cap:
        key = (_OTHER,) * len(key)
    counter[key] = counter.get(key, 0) + by


def _family(out: list[str], name: str, kind: str, help_text: str, names: tuple[str, ...],
            samples: Iterable[tuple[Key, float | str]]) -> None:
    out.append(f"# HELP {name} {help_text}")
    out.append(f"# TYPE {name} {kind}")
    for key, value in samples:
        out.append(f"{name}{{{_labels(names, key)}}} {value}")


def _labels(names: tuple[str, ...], values: Key) -> str:
    return ",".join(f'{n}="{str(v).translate(_ESCAPES)}"' for n, v in zip(names, values, strict=True))


def _num(value: float) -> str:
    return repr(float(value))
