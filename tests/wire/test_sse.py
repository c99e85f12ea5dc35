"""The incremental SSE decoder (SPEC §3 step 8; RELIABILITY S11, S31)."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from orca_cli.wire.sse import Event, SSEDecoder


def decode_all(chunks: list[bytes]) -> list[Event]:
    d = SSEDecoder()
    out: list[Event] = []
    for c in chunks:
        out.extend(d.feed(c))
    return out


def test_openai_style_data_events_and_done() -> None:
    raw = b'data: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]\n\n'
    assert decode_all([raw]) == [
        Event(None, '{"a":1}'),
        Event(None, '{"a":2}'),
        Event(None, "[DONE]"),
    ]


def test_named_events_comments_and_multiline_data() -> None:
    raw = (
        b": keep-alive comment\n\n"
        b'event: message_start\ndata: {"x":1}\n\n'
        b"event: note\n: inner comment\ndata: line one\ndata:line two\ndata\n\n"
        b"id: 7\nretry: 100\n\n"  # no data: not dispatched
        b"data:  two leading spaces keep one\n\n"
    )
    assert decode_all([raw]) == [
        Event("message_start", '{"x":1}'),
        Event("note", "line one\nline two\n"),
        Event(None, " two leading spaces keep one"),
    ]


def test_crlf_and_bare_cr_line_endings() -> None:
    assert decode_all([b"event: e\r\ndata: 1\r\n\r\n"]) == [Event("e", "1")]
    assert decode_all([b"event: e\rdata: 1\r\rdata: 2\r\r"]) == [Event("e", "1"), Event(None, "2")]


def test_split_between_cr_and_lf_is_one_line_ending() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: 1\r") == []
    assert d.feed(b"\n\r") == [Event(None, "1")]  # dispatched at once, no waiting for the "\n"
    assert d.feed(b"\ndata: 2\r\n\r\n") == [Event(None, "2")]


def test_event_is_emitted_as_soon_as_its_blank_line_arrives() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: hel") == []
    assert d.feed(b"lo\n") == []
    assert d.feed(b"\n") == [Event(None, "hello")]
    assert d.pending == b""


def test_split_inside_a_multibyte_character() -> None:
    raw = "data: héllo ✓ 🐋\n\n".encode()
    cut = raw.index("🐋".encode()) + 2
    assert decode_all([raw[:cut], raw[cut:]]) == [Event(None, "héllo ✓ 🐋")]


def test_unfinished_event_stays_pending_and_is_not_dispatched() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: 1\n\ndata: partial\n") == [Event(None, "1")]
    assert d.pending == b"data: partial\n"


def test_leading_bom_is_ignored() -> None:
    assert decode_all([b"\xef\xbb\xbfdata: x\n\n"]) == [Event(None, "x")]


# --- property: any re-chunking gives the same events ---------------------------------------------

_line_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"),
    max_size=30,
)
_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
_event = st.tuples(
    st.none() | _name,
    st.lists(_line_text, min_size=1, max_size=3),
    st.lists(_line_text, max_size=2),
)


def _serialise(
    events: list[tuple[str | None, list[str], list[str]]], eol: str
) -> tuple[bytes, list[Event]]:
    out: list[str] = []
    expected: list[Event] = []
    for name, lines, comments in events:
        for c in comments:
            out.append(":" + c + eol)
        if name is not None:
            out.append("event: " + name + eol)
        for line in lines:
            out.append("data: " + line + eol)
        out.append(eol)
        expected.append(Event(name, "\n".join(lines)))
    return "".join(out).encode(), expected


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_event, min_size=1, max_size=8),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_any_rechunking_gives_the_same_events(
    events: list[tuple[str | None, list[str], list[str]]], eol: str, cuts: list[int]
) -> None:
    raw, expected = _serialise(events, eol)
    points = sorted({c % (len(raw) + 1) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert decode_all(chunks) == expected
    assert decode_all([raw[i : i + 1] for i in range(len(raw))]) == expected
    pairs_decoder = SSEDecoder()
    pairs = [p for c in chunks for p in pairs_decoder.feed_pairs(c)]
    assert pairs == [(e.event, e.data) for e in expected]


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=6))
def test_arbitrary_bytes_never_raise(raw: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(raw) + 1) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert decode_all(chunks) == decode_all([raw])


def test_real_anthropic_stream_split_into_seven_byte_slices() -> None:
    text = "naïve ✓ "
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"p": "' + text},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    raw = b"".join(
        b"event: " + n.encode() + b"\r\ndata: " + orjson.dumps(o) + b"\r\n\r\n" for n, o in events
    )
    got = decode_all([raw[i : i + 7] for i in range(0, len(raw), 7)])
    assert [(e.event, orjson.loads(e.data)) for e in got] == events


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_a_one_line_data_chunk_takes_the_general_path_s_answer(payload: bytes,
                                                                first: bool) -> None:
    """A chunk that is one `data: ` line and its blank line (the fast path) decodes as the
    same chunk split in two does (the general path), invalid UTF-8 and all."""
    chunk = b"data: " + payload.replace(b"\n", b"").replace(b"\r", b"") + b"\n\n"
    fast, general = SSEDecoder(), SSEDecoder()
    if not first:  # a decoder past its first event: no BOM check left
        fast.feed_pairs(b"data: x\n\n")
        general.feed_pairs(b"data: x\n\n")
    whole = fast.feed_pairs(chunk)
    assert whole == general.feed_pairs(chunk[:3]) + general.feed_pairs(chunk[3:])
    # The decoder goes on as the general one does: the next event's BOM is not its first.
    bom = "\ufeff".encode() + b"data: y\n\n"
    assert fast.feed_pairs(bom) == general.feed_pairs(bom)
