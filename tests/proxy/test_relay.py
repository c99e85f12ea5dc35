"""`ModelNameRewriter` (SPEC §14.2): every `model` field of an answer carries the name the
client sent, whether a chunk repeats the field seen before (a plain replace) or not."""

from __future__ import annotations

import orjson

from orca_cli.proxy.relay import ModelNameRewriter


def _event(model: str, text: str, spacing: str = "") -> bytes:
    return (b'data: {"id":"c1","model"' + spacing.encode() + b":" + spacing.encode()
            + orjson.dumps(model) + b',"choices":[{"delta":{"content":'
            + orjson.dumps(text) + b"}}]}\n\n")


def _models(out: bytes) -> list[str]:
    return [orjson.loads(line[6:])["model"] for line in out.split(b"\n")
            if line.startswith(b"data: {")]


def test_every_event_of_a_stream_carries_the_requested_name() -> None:
    rw = ModelNameRewriter("orca/coding")
    chunks = [_event("gpt-4o-mini", "a"), _event("gpt-4o-mini", 'say "model":"x"'),
              _event("gpt-4o-mini-2", "b"),  # another served name mid-stream
              _event("gpt-4o-mini", "c", spacing=" ") + _event("gpt-4o-mini", "d"),
              _event("gpt-4o", "e") + _event("gpt-4o-mini", "f")]
    out = b"".join(rw.feed(c) for c in chunks) + rw.flush()
    assert _models(out) == ["orca/coding"] * 7
    texts = [orjson.loads(line[6:])["choices"][0]["delta"]["content"]
             for line in out.split(b"\n") if line.startswith(b"data: {")]
    assert texts[1] == 'say "model":"x"'  # a quoted `"model"` inside a string is content


def test_a_field_split_across_chunks_is_rewritten() -> None:
    rw = ModelNameRewriter("orca/coding")
    first = rw.feed(_event("gpt-4o-mini", "a"))
    event = _event("gpt-4o-mini", "b")
    cut = event.index(b'"model"') + 4
    out = first + rw.feed(event[:cut]) + rw.feed(event[cut:]) + rw.flush()
    assert _models(out) == ["orca/coding", "orca/coding"]


def test_a_longer_served_name_is_not_mistaken_for_the_one_seen() -> None:
    rw = ModelNameRewriter("alias")
    rw.feed(_event("m", "a"))
    out = rw.feed(_event("m2", "b") + _event("m", "c")) + rw.flush()
    assert _models(out) == ["alias", "alias"]


def test_a_one_key_event_is_rewritten_as_the_pattern_does() -> None:
    """The one-key shortcut (the field seen before, found once) gives the pattern's bytes."""
    from orca_cli.proxy.relay import _MODEL_FIELD

    for served, spacing, text in (("gpt-4o-mini", "", "a"), ("gpt-4o-mini", " ", "b"),
                                  ("gpt-4o-mini-2", "", "c"), ("gpt-4o", "", 'x"model":"y')):
        rw = ModelNameRewriter("orca/coding")
        rw.feed(_event("gpt-4o-mini", "first"))
        event = _event(served, text, spacing)
        expected = _MODEL_FIELD.sub(
            lambda m: b'"model"' + m.group(1) + b":" + m.group(2) + b'"orca/coding"', event)
        assert rw.feed(event) == expected
