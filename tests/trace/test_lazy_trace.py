"""The trace built when first read (`trace.build.Trace`): what a late read finds is what the
request's end would have written, on both stores, and its cheap fields agree with the whole."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

from orca_cli.clock import FakeClock
from orca_cli.state.base import CommitBatch
from orca_cli.state.keyspace import UNDECODED
from orca_cli.state.memory import MemoryStore
from orca_cli.trace.build import Trace, TraceHead, TraceResult
from orca_cli.trace.log import format_json, format_line
from tests.e2e.tier_bodies import FIX_THE_BUILD, Conversation, build_failure
from tests.e2e.tier_kit import Launch, ok, tier_config
from tests.e2e.tier_kit import test_store as tier_store

_ABSENT_KEYS = ("side", "purpose", "route", "translation", "error_kind", "mode", "auto", "nope")


class _Capture:
    """A trace sink keeping each request's trace and, made at once from a copy of its parts,
    the document the request's end would have written."""

    def __init__(self) -> None:
        self.seen: list[tuple[Trace, Trace, bytes]] = []

    def __call__(self, trace: Mapping[str, Any]) -> None:
        if isinstance(trace, Trace):
            pristine = copy.copy(trace)  # shares the parts; builds nothing yet
            self.seen.append((trace, pristine, orjson.dumps(copy.copy(trace).document())))


async def test_a_trace_built_late_reads_as_at_the_end_of_its_request(launch: Launch) -> None:
    st = await launch(tier_config())
    cap = _Capture()
    st.rt.trace_sinks.append(cap)
    conv = Conversation()
    ids = []
    # A failure loop (strikes escalate it), an explicit ask, a once, a reset, streams.
    for turn in range(1, 6):
        out = build_failure(turn) if turn >= 2 else None
        ids.append(ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=out),
                                    session="late-1", stream=turn % 2 == 0)).request_id)
        conv.reply("Patched the call site; rebuilding.")
    other = Conversation()
    for turn, tier in enumerate(("strong", None, "base", "once", None)):
        ids.append(ok(await st.chat(other.trivial_edit(turn), session="late-2",
                                    tier=tier)).request_id)
        other.reply("Done.")
    await st.sidecar.idle()
    assert len(cap.seen) == len(ids)
    decisions = set()
    for trace, pristine, at_end in cap.seen:
        # The log's fields, read before anything built the document, as the whole reads them.
        whole = orjson.loads(at_end)
        assert format_line(pristine) == format_line(whole)
        assert format_json(pristine) == format_json(whole)
        assert pristine.attempt_count == len(whole["attempts"])
        assert not pristine.built  # the log's fields, either format, built nothing
        for key in (*whole, *_ABSENT_KEYS):
            assert pristine.get(key) == whole.get(key), key
            assert (key in pristine) == (key in whole), key
        # Built now, after every later request: the same bytes as at the request's end.
        assert orjson.dumps(trace.document()) == at_end
        assert dict(pristine) == whole and pristine == whole
        stored = await st.store.get_trace(whole["request_id"])
        assert stored == whole
        decisions.add((whole["tier"]["decision"], whole["tier"]["reason"]))
    # The stories above took the decisions they were written for.
    assert {d for d, _ in decisions} == {"base", "strong"}
    assert len(decisions) >= 4, decisions


def _lazy(request_id: str, *, cid: str | None = None) -> Trace:
    head = TraceHead(request_id, cid, 1_000.0, "openai", "orca/coding", "s-1", "header",
                     "coding", False)
    return Trace(head, None, None, TraceResult(502, error="the upstream failed",
                                               latency_ms=12.3456))


async def test_a_lazy_trace_is_stored_as_its_document(backend: str) -> None:
    clock = FakeClock()
    async with tier_store(backend, clock) as store:
        trace = _lazy("req_lazy1", cid="client-7")
        await store.commit(CommitBatch("req_lazy1", trace=trace))
        expected = copy.copy(_lazy("req_lazy1", cid="client-7")).document()
        assert await store.get_trace("req_lazy1") == expected
        assert await store.get_trace("client-7") == expected  # by the client's id too
        assert expected["latency_ms"] == 12.346 and expected["tier"]["decision"] is None


async def test_the_memory_store_lets_the_parts_go_once_the_text_is_made() -> None:
    store = MemoryStore(clock=FakeClock())
    trace = _lazy("req_lazy2")
    await store.commit(CommitBatch("req_lazy2", trace=trace))
    [entry] = [e for k, e in store._data.items() if k.endswith("req_lazy2")]
    assert entry.doc is trace and not trace.built  # nothing built by the commit
    await store.get_trace("req_lazy2")
    assert isinstance(entry.value, str) and entry.doc is UNDECODED  # the text is the record
    assert orjson.loads(entry.value)["status"] == 502


def test_a_key_holding_a_lazy_trace_reads_as_its_text_and_document() -> None:
    from orca_cli.state.keyspace import DOC_TEXT, Entry, decode_view, entry_doc, entry_text

    whole = copy.copy(_lazy("req_lazy3")).document()
    as_doc = Entry(DOC_TEXT, None, _lazy("req_lazy3"))
    assert entry_doc(as_doc) == whole and type(entry_doc(as_doc)) is dict
    assert entry_text(as_doc) == orjson.dumps(whole).decode()
    as_view = Entry(DOC_TEXT, None, _lazy("req_lazy3"))
    assert decode_view(as_view) == whole  # an operator's scan
    assert as_view.doc is UNDECODED and as_view.value == orjson.dumps(whole).decode()
