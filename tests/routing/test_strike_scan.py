"""`_marked_lines` finds markers shared-stem by shared-stem, a stem with rare letters only in
a text holding all of them (SPEC §6.3 cost note): the lines it finds must be exactly the lines
one `str.find` pass per marker of `_FIND_MARKERS` finds, on the strike corpus and on texts
built to trip the stem checks (a stem without its marker, a marker at the very start,
overlapping stems, line breaks `str.splitlines` knows, rare letters with and without their
stems)."""

from __future__ import annotations

from bisect import bisect_right
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca_cli.routing.strikes import (
    _FIND_MARKERS,
    _LETTERS,
    _LINT_CODE,
    _LINT_CODE_ASCII,
    _SCANS,
    _STEMS_BY_LETTERS,
    TEMPLATES,
    _line_starts,
    _marked_lines,
    unwrap_exec_output,
)
from tests.routing import bodies as B

FIXTURES = Path(__file__).parent / "fixtures" / "strikes"


def one_pass_per_marker(chunk: str, low: str) -> list[int]:
    """The reference: every marker found by its own pass, the lines holding one, plus the
    Kotlin `e: ` line starts and the lint codes, as `_marked_lines` documents them."""
    starts = _line_starts(low)
    hit: set[int] = set()
    for m in _FIND_MARKERS:
        i = low.find(m)
        while i != -1:
            hit.add(bisect_right(starts, i) - 1)
            i = low.find(m, i + 1)
    i = 0 if low.startswith("e: ") else low.find("\ne: ")
    while i != -1:
        hit.add(bisect_right(starts, i + (low[i] == "\n")) - 1)
        i = low.find("\ne: ", i + 1)
    cstarts = _line_starts(chunk)
    hit.update(bisect_right(cstarts, m.start()) - 1 for m in _LINT_CODE.finditer(chunk))
    return sorted(k for k in hit if k < len(starts) - 1)


TRICKY = [
    "cannot open\nnot used here\nnothing to see\nannotation only",
    "not\ncannot\nstring to replace not found\nno t used",
    "notnot used\ncan not\ncannotnot",
    "exit\nexample text\nindex next\nexpect(x)\nexceptional\nexpected 3",
    "fail\nfailure\nfail:\nfailed\nfaill:\n--- FAIL: x",
    "panic\npanicked\npanicked at 'x'\npanic: boom\npanics:",
    "ex\rexit\x0bnot used\u2028fail:\x1cpanic:\x85cannot",
    "İİ not used\nİ exit 1\nfine",
    "e: x.kt:1:2 boom\ne: y\n pass",
    "a.py:1:2: E501 long\nnot a lint: 1:2: X\n",
    "exit 2\nno rare letters here at all\nerror",
    "EXCEPTION: x\nFailed\nTraceback (most recent call last):\nTOOL USE WAS REJECTED",
    "x\nf\nj\nk\np\ng\nundefined",
    "",
    "n",
    "not",
]


def corpus() -> list[str]:
    texts = [p.read_text() for p in sorted(FIXTURES.glob("*.txt"))]
    texts += [B.goroutine_dump(), B.python_traceback(), B.source_excerpt(), B.HARD_PROSE,
              B.SYSTEM_PROMPT, B.compile_error(), *TRICKY]
    return texts


@pytest.mark.parametrize("text", corpus())
def test_the_stem_scan_finds_exactly_the_lines_one_pass_per_marker_finds(text: str) -> None:
    chunk = unwrap_exec_output(text)
    low = chunk.lower()
    assert _marked_lines(chunk, low) == one_pass_per_marker(chunk, low)


def test_every_template_is_reached_by_a_scan_the_cost_note_counts() -> None:
    """A template runs only on a line a scan found: each marker holds one of `_FIND_MARKERS`
    (lint codes and Kotlin's `e: ` have scans of their own), and the markers added for the
    templates cost no pass beyond the 17 the module's cost note counts."""
    own_scan = {": ", "e: "}
    assert [t.marker for t in TEMPLATES
            if t.marker not in own_scan and not any(m in t.marker for m in _FIND_MARKERS)] == []
    assert len(_SCANS) == 17


def test_a_stem_is_left_out_only_for_a_text_without_a_letter_it_holds() -> None:
    """`_STEMS_BY_LETTERS` is keyed by the gate letters a text holds: every stem it leaves
    out of a key holds a gate letter missing from that key, so no text with exactly those
    letters holds the stem; every stem it keeps holds no gate letter the key lacks."""
    stems = [stem for stem, _ in _SCANS]
    assert len(_STEMS_BY_LETTERS) == 2 ** len(_LETTERS)
    for held, kept in _STEMS_BY_LETTERS.items():
        assert list(kept) == [s for s in stems if s in kept]  # the scan order
        for stem in set(stems) - set(kept):
            assert any(c in stem and c not in held for c in _LETTERS)
        for stem in kept:
            assert all(c in held for c in _LETTERS if c in stem)


_MARKERISH = st.lists(st.one_of(
    st.text(st.sampled_from(list("xjkpgfbweaEXFKBW :(\n")), max_size=8),
    st.sampled_from([m for m, _ in _SCANS] + ["FAIL:", "Exit code: 3", "panicked at"])),
    max_size=12).map("".join)


@given(_MARKERISH)
def test_the_gated_scan_finds_the_lines_one_pass_per_marker_finds(text: str) -> None:
    low = text.lower()
    assert _marked_lines(text, low) == one_pass_per_marker(text, low)


_LINTISH = st.text(st.sampled_from(list("0123456789:. ABEFZaz_\n|")), max_size=60)


@given(st.lists(st.one_of(_LINTISH, st.sampled_from(
    ["a.py:1:2: E501 x", "src/m.rs:10:4: W0612", ":1:2: ABCD1234", "x:9:9: F4011"])),
    max_size=6).map("".join))
def test_the_ascii_lint_pattern_finds_what_the_unicode_one_finds_on_ascii_text(
        text: str) -> None:
    """On ASCII text (the only text it is used on) the `re.ASCII` lint pattern's matches are
    the Unicode pattern's, span for span."""
    assert text.isascii()
    assert ([m.span() for m in _LINT_CODE_ASCII.finditer(text)]
            == [m.span() for m in _LINT_CODE.finditer(text)])


@pytest.mark.parametrize("text", [t for t in corpus() if t.isascii()])
def test_the_ascii_lint_pattern_matches_the_corpus_as_the_unicode_one(text: str) -> None:
    assert ([m.span() for m in _LINT_CODE_ASCII.finditer(text)]
            == [m.span() for m in _LINT_CODE.finditer(text)])
