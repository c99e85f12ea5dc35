"""Strike producers (SPEC §6.3).

Request side: a normalised error signature taken from the turn's tool results (compiler
errors, failing tests, tracebacks, panics) that was already seen in an earlier evaluated turn
of the session strikes. Normalisation removes what changes between two runs of the same
failure — numbers, line and column positions, hex addresses, goroutine and process ids, paths
and quoted identifiers — and keeps the message template and error code, so an agent looping on
the same compile error strikes even though every run reports new line numbers.

Beyond the generic markers, `TEMPLATES` name the failures agents really loop on (SPEC §19)
and give each a canonical signature text that keeps the error's code or message template and
drops what changes between attempts: Go compile errors (`cannot use`, `declared and not used`,
`missing return`, `too many / not enough arguments`), TypeScript `error TS<n>`, Rust
`error[E<n>]`, Kotlin `e:` lines, jest / vitest matcher failures and `●` blocks, cargo's
`panicked at`, ruff / flake8 / pylint codes, and the tool-call errors an agent reports (Claude
Code's `<tool_use_error>`, "String to replace not found", a rejected tool use, a non-zero
`Exit code` of a shell tool, Codex's `exit_code` and its `Process exited with code N`).
Python, Java, C/C++, pytest, go test and eslint lines carry the generic markers and normalise
well as they are.

What is the same failure, and what is not one (SPEC §6.3, §19: a strike is the *same* error
again). A tool result the agent reports as succeeded signs nothing, whatever it holds — a file
it read may define `class ConfigError(Exception)`: Claude Code marks each result (`is_error`;
the transcript leaves the ones marked false out, `Turn.strike_texts`), and Codex's exec result
carries its exit status (0: succeeded). Lines that every failure of a tool prints alike sign
nothing either: a bare `exit code 1` (the generic failure status; another status, such as
127 for a command not found, still signs) and a runner's or compiler's summary line (`1
failed in 0.12s`, `Tests: 1 failed, 4 total`, `Found 2 errors in 1 file`, cargo's `could not
compile … due to 1 previous error`): two different failures share them, so they would strike
on any second failure.

Response side: malformed tool-call JSON, an empty answer, a refusal, truncation on a request
that allowed ≥ 1,024 output tokens. These come from `wire/usage.py`'s tap after the response.

Cost: markers are found with `str.find` on a lowercased, bounded copy (at most 17 passes:
markers with a shared stem share one, and a stem holding rare letters is looked for only in a
text holding all of them; ≈ 12 µs each per 32 KB) and lint codes with one regex scan;
the templates' regexes run only on the lines that carry a marker, each on at most 600
characters of the line. A 32 KB tool result without any error costs ≈ 0.3 ms.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, combinations
from typing import Any

import orjson

from orca_cli.immutable import immutable

__all__ = [
    "ERROR_MARKERS",
    "GENERIC_EXIT",
    "SCAN_LIMIT",
    "TEMPLATES",
    "Template",
    "error_signatures",
    "line_signature_text",
    "normalise_error_line",
    "request_strike",
    "response_strike_kinds",
    "signature_label",
    "unwrap_exec_output",
]

SCAN_LIMIT = 32 * 1024  # bytes of each tool result inspected
MAX_LINES = 6  # error lines kept per turn
MAX_LINE_CHARS = 300

# Lower-case markers of an error line, each there for a failure class agents loop on.
ERROR_MARKERS: tuple[str, ...] = (
    "error",  # compilers (gcc/clang/rustc/go/tsc: "error:", "error[E0308]", "TS2345"), linters
    "traceback (most recent call last)",  # Python tracebacks
    "exception",  # Java/.NET/Python exception lines
    "panic:",  # Go panics
    "failed",  # test runners: "FAILED tests/...", "--- FAIL", "1 failed"
    "fail:",  # go test "--- FAIL:"
    "assert",  # assertion failures
    "undefined",  # undefined symbols/references
    "cannot find",  # missing modules/symbols
    "segmentation fault",  # crashes
)

_QUOTED = re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`|‘[^’\n]{0,200}’")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+[\w.-]+")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b")
_NUM = re.compile(r"\d+")
_WS = re.compile(r"\s+")


def normalise_error_line(line: str) -> str:
    """The template of one error line: volatile parts replaced by placeholders."""
    s = line.strip()[:MAX_LINE_CHARS]
    s = _QUOTED.sub("<q>", s)
    s = _PATH.sub("<path>", s)
    s = _HEX.sub("<hex>", s)
    s = _NUM.sub("<n>", s)
    return _WS.sub(" ", s)


@immutable
class Template:
    """A known failure line: `marker` (lower case) gates the regex; the signature text is
    `kind` plus the normalised match groups (`kind` alone when the pattern has none)."""

    kind: str
    marker: str
    pattern: re.Pattern[str]


def _t(kind: str, marker: str, pattern: str) -> Template:
    return Template(kind, marker, re.compile(pattern))


TEMPLATES: tuple[Template, ...] = (
    # Go compiler (gc): the expression and identifiers vary, the template does not.
    _t("go:cannot-use", "cannot use", r"\bcannot use .+? as (.+?) value in (\w[\w ]*)"),
    _t("go:declared-not-used", "not used", r"\bdeclared (?:and|but) not used\b"),
    _t("go:missing-return", "missing return", r"^\S+?:\d+(?::\d+)?: missing return\b"),
    _t("go:arguments", "arguments in call", r"\b(too many|not enough) arguments in call\b"),
    # Codes: the code is the failure; the message around it names what varies.
    _t("ts", "error ts", r"\berror (TS\d+):"),
    _t("rust", "error[e", r"^error\[(E\d{4})\]"),
    _t("lint", ": ", r"^\S+?:\d+:\d+: ([A-Z]{1,4}\d{3,4})\b"),  # ruff concise, flake8
    _t("kotlin", "e: ", r"^e: \S+?(?::\d+:\d+|: \(\d+, \d+\)):? (.+)$"),
    # Test runners.
    _t("jest:expect", "expect(",
       r"^\s*expect\((?:received|jest\.fn\(\)|element)\)\.((?:not\.|resolves\.|rejects\.)*\w+)\("),
    _t("jest:test", "\u25cf ", r"^\s*\u25cf (.+)$"),
    _t("rust:panic", "panicked at", r"\bpanicked at\b"),
    # Tool-call errors the agent itself reports.
    _t("tool:error", "tool_use_error", r"<tool_use_error>\s*([^.\n<]{3,120})"),
    _t("tool:edit-not-found", "string to replace not found", r"(?i)string to replace not found"),
    _t("tool:rejected", "tool use was rejected", r"(?i)tool use was rejected"),
    _t("tool:exit", "exit code", r"(?i)\bexit code:? ?(-?[1-9]\d*)\b"),
    _t("tool:exit", "exit_code", r"(?i)\"exit_code\"\s*:\s*(-?[1-9]\d*)\b"),
    # Codex >= 0.171's plain-text shell result: "Chunk ID: df215b\nWall time: 0.0000 seconds\n
    # Process exited with code 127\nOriginal token count: 13\nOutput:\n...". Its status line
    # signs alone, as the two spellings above do (a failing command often prints no error line:
    # a test summary, "command not found"), so one failure signs alike in every Codex format
    # and in Claude Code's; the output's error lines sign beside it, the volatile fields never.
    _t("tool:exit", "exited with code", r"(?i)\bexited with code (-?[1-9]\d*)\b"),
)
_CODE = re.compile(r"^[A-Z]{0,4}-?\d{1,5}$")  # an error code or exit status: kept as it is


_CODE_FRAME = re.compile(r"^\s*>?\s*\d*\s*\|")  # gcc / rustc / jest echo of the source
# The words a summary line is made of (with counts, times and paths): such a line says how
# many failed, not what failed.
_SUMMARY_WORDS = frozenset({
    "failed", "failures", "failure", "failing", "fail", "passed", "passing", "pass", "skipped",
    "pending", "error", "errors", "warning", "warnings", "in", "s", "ms", "total", "tests",
    "test", "suites", "suite", "files", "file", "result", "results", "ok", "deselected",
    "xfailed", "xpassed", "ignored", "measured", "filtered", "out", "finished", "found", "of",
    "and", "snapshots", "todo", "assertions", "examples", "specs", "n", "q", "path", "hex"})
_SUMMARY_WORD = re.compile(r"[a-z]+")
_TRAILERS = (re.compile(r"could not compile .*due to (?:<n> )?previous errors?"),  # cargo
             re.compile(r"^make(?:\[<n>\])?: \*\*\* .* error <n>"))  # make's recipe failed


def _summary(template: str) -> bool:
    """A line every failure of its tool prints alike (a count of failures, a build's
    trailer): no signature (module docstring)."""
    low = template.lower()
    return (all(w in _SUMMARY_WORDS for w in _SUMMARY_WORD.findall(low))
            or any(t.search(low) for t in _TRAILERS))
_TOOL_ERROR_END = "</tool_use_error>"


def line_signature_text(line: str, low_line: str) -> str | None:
    """The text one line's signature is taken from: a template's canonical text, else the
    normalised line when it carries a generic marker, else None (not an error line). Source
    lines a compiler echoes under its message (`  12 |   code`) are not error lines: the
    agent edits them between attempts."""
    if "|" in line and _CODE_FRAME.match(line):
        return None
    if _TOOL_ERROR_END in low_line:
        line = line.replace(_TOOL_ERROR_END, "")
        low_line = low_line.replace(_TOOL_ERROR_END, "")
    if len(line) > 2 * MAX_LINE_CHARS:  # a long line (JSON output): its head and its tail
        line = f"{line[:MAX_LINE_CHARS]} {line[-MAX_LINE_CHARS:]}"
    for t in TEMPLATES:
        if t.marker in low_line:
            m = t.pattern.search(line)
            if m is not None:
                parts = [g if _CODE.match(g) else normalise_error_line(g)
                         for g in m.groups() if g]
                if t.kind == "tool:exit" and parts == ["1"]:
                    return GENERIC_EXIT  # no failure in particular (`error_signatures`)
                return ":".join([t.kind, *parts])
    if any(m in low_line for m in ERROR_MARKERS):
        template = normalise_error_line(line)
        return None if _summary(template) else template
    return None


def unwrap_exec_output(chunk: str) -> str:
    """Codex's exec result `{"output": "...", "metadata": {"exit_code": N}}` as the lines it
    holds, its exit status last; any other text unchanged."""
    if not chunk.startswith('{"output"'):
        return chunk
    doc = _exec_doc(chunk)
    if not isinstance(doc, dict) or not isinstance(doc.get("output"), str):
        return chunk
    meta = doc.get("metadata")
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return f"{doc['output']}\nExit code: {code}" if isinstance(code, int) else doc["output"]


def _exec_doc(chunk: str) -> Any:
    """The chunk as `json.loads` reads it (None where it refuses it), by orjson where the two
    agree. orjson refuses a lone surrogate or a NaN, which `json` reads, and reads an integer
    past 64 bits as a float: those, and any float exit status, go through `json`. A text nested
    deeper than both read (a tool's output is any text) is no exec result."""
    try:
        doc = orjson.loads(chunk)
    except orjson.JSONDecodeError:
        doc = None
    else:
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if not (isinstance(meta, dict) and isinstance(meta.get("exit_code"), float)):
            return doc
    try:
        return json.loads(chunk)
    except (ValueError, RecursionError):  # nested past the interpreter's depth: plain text
        return None


# Lines are found by these substrings (a template marker that contains a generic marker, such
# as "error ts", needs no scan of its own; "cannot use" is found by "cannot", the three
# exit-status spellings by "exit"), by a Kotlin `e: ` at a line start, and by a lint code after
# `path:line:col: ` (a regex whose literal first character lets `re` skip ahead).
_FIND_MARKERS: tuple[str, ...] = tuple(dict.fromkeys((
    *ERROR_MARKERS, "cannot", "not used", "missing return", "arguments in call", "expect(",
    "\u25cf ", "panicked at", "string to replace not found", "tool use was rejected",
    "exit")))
# Each `str.find` pass costs about the same per character whatever it looks for, so markers
# that start with a shared stem rare in ordinary output ("fail", "panic") are found in one
# pass over the stem, each hit then checked for the markers; and "cannot find" needs no pass:
# every line with it has "cannot". The lines found are exactly those holding a marker of
# `_FIND_MARKERS` (tests/routing/test_strike_scan.py). Commoner stems ("ex", "not") were
# measured to cost more in checks than the passes they save.
_SHARED_STEMS = ("fail", "panic")


def _stem_scans(markers: Sequence[str], stems: Sequence[str]
                ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(substring to find, the markers starting with it; () when it is the marker itself)."""
    kept = [m for m in markers if not any(o != m and o in m for o in markers)]
    scans = [(stem, tuple(m for m in kept if m.startswith(stem))) for stem in stems]
    kept = [m for m in kept if not m.startswith(tuple(stems))]
    return (*scans, *((m, ()) for m in kept))


_SCANS = _stem_scans(_FIND_MARKERS, _SHARED_STEMS)
_STEM_MARKERS = dict(_SCANS)
# A pass for a stem of several characters walks the text at about 2.5 instructions a
# character; `str.__contains__` of one character is a `memchr`, about a tenth of that. So a
# stem holding letters rare in text is looked for only in a text that holds every one of them
# (a text without one holds no such stem: the same stems are found): "segmentation fault" only
# where both a g and an f occur. By English letter frequency, rarest first; a stem holding
# none ("error", "assert", "cannot", "not used", "\u25cf ") is always looked for.
_RARE_LETTERS = "zqxjkvbpygfw"


def _stems_by_letters(stems: Sequence[str], rare: str) -> tuple[str, dict[str, tuple[str, ...]]]:
    """(the gate letters: the rare letters some stem holds, in `rare` order; for each subset
    of them a text may hold, as a string in that order, the stems to look for in it, in
    `stems` order: those whose rare letters the subset holds all of)."""
    gate = {stem: {c for c in rare if c in stem} for stem in stems}
    letters = "".join(c for c in rare if any(c in g for g in gate.values()))
    return letters, {
        "".join(held): tuple(s for s in stems if gate[s] <= set(held))
        for n in range(len(letters) + 1) for held in combinations(letters, n)}


_LETTERS, _STEMS_BY_LETTERS = _stems_by_letters([stem for stem, _ in _SCANS], _RARE_LETTERS)
_LINT_CODE = re.compile(r":\d+:\d+: [A-Z]{1,4}\d{3,4}\b")
# The same pattern for ASCII text (most tool output), where it finds the same matches: `\d`
# and `\b` then read no Unicode tables (a quarter of the scan).
_LINT_CODE_ASCII = re.compile(_LINT_CODE.pattern, re.ASCII)


def _marked_lines(chunk: str, low: str) -> list[int]:
    """Indices (in `str.splitlines` terms) of the lines that carry a marker or a lint code,
    found with one `str.find` pass per scan of `_SCANS` and one regex scan for lint codes
    (its literal first character lets `re` skip ahead): per-line work runs only on those
    lines, and the line table is built only once something was found."""
    starts: list[int] = []
    hit: set[int] = set()
    # The passes run in C (`filter` over `str.__contains__`), for the stems the text's rare
    # letters leave (`_STEMS_BY_LETTERS`): most texts hold no marker, and only a stem the
    # text holds is walked here, from its first occurrence.
    stems = _STEMS_BY_LETTERS["".join(filter(low.__contains__, _LETTERS))]
    for stem in filter(low.__contains__, stems):
        markers = _STEM_MARKERS[stem]
        i = low.find(stem)
        while i != -1:
            if markers and not low.startswith(markers, i):
                i = low.find(stem, i + 1)
                continue
            starts = starts or _line_starts(low)
            k = bisect_right(starts, i) - 1
            hit.add(k)
            i = low.find(stem, starts[k + 1]) if k + 1 < len(starts) else -1
    i = 0 if low.startswith("e: ") else low.find("\ne: ")
    if i != -1 and not starts:
        starts = _line_starts(low)
    while i != -1:  # Kotlin's `e: ` starts its line
        k = bisect_right(starts, i + (low[i] == "\n")) - 1
        hit.add(k)
        i = low.find("\ne: ", i + 1)
    lint_code = _LINT_CODE_ASCII if chunk.isascii() else _LINT_CODE
    lint = lint_code.search(chunk)
    if lint is not None:
        starts = starts or _line_starts(low)
        cstarts = _line_starts(chunk)
        hit.update(bisect_right(cstarts, m.start()) - 1 for m in lint_code.finditer(chunk))
    if not hit:  # most texts: no generator built
        return []
    last = len(starts) - 1
    return sorted(k for k in hit if k < last)


def _line_starts(text: str) -> list[int]:
    """The offset of each `str.splitlines` line, then the text's length."""
    return list(accumulate(map(len, text.splitlines(keepends=True)), initial=0))


def signature_label(template: str) -> str:
    """What kind of failure a signature text names, for operators (`orca explain`): a
    template's kind with its code or exit status (`go:declared-not-used`, `ts:TS2345`,
    `tool:exit:127`), never the varying text around it; for a generic error line, the marker
    that made it one (`error line: traceback`). Content-free: no word of the line itself."""
    for kind in _KINDS:
        if template == kind:
            return kind
        if template.startswith(kind + ":"):
            code = template[len(kind) + 1:].partition(":")[0]
            return f"{kind}:{code}" if kind in _CODED and _CODE.match(code) else kind
    low = template.lower()
    # A marker only inside quoted text or a path (now `<q>`, `<path>`) leaves none to name.
    return "error line" + next((f": {name}" for m, name in _LABELS if m in low), "")


_KINDS = tuple(sorted({t.kind for t in TEMPLATES}, key=len, reverse=True))
# The kinds whose first group is a code the tool assigns (TS2345, E0308, F401, an exit
# status); the others' groups are the failure's own words (a type name, a test's title).
_CODED = frozenset({"ts", "rust", "lint", "tool:exit"})
# The generic markers, the most telling first ("FAILED … AssertionError" is a test failure).
_LABELS = (("traceback (most recent call last)", "traceback"),
           ("segmentation fault", "segmentation fault"), ("panic:", "panic"),
           ("failed", "failed"), ("fail:", "failed"), ("exception", "exception"),
           ("assert", "assert"), ("cannot find", "cannot find"), ("undefined", "undefined"),
           ("error", "error"))


def error_signatures(tool_results: Iterable[str],
                     texts: dict[str, str] | None = None) -> tuple[str, ...]:
    """Signatures (short sha256 hex) of the error lines in a turn's tool results, in order,
    without repeats. Empty when the tool results carry no error. `texts`, when given, gets
    each signature's text (normalised, yet made of the tool's output: for `signature_label`,
    never to be stored or shown)."""
    out: list[str] = []
    for text in tool_results:
        if not text:
            continue
        chunk = unwrap_exec_output(text[:SCAN_LIMIT])
        if _succeeded(chunk):
            continue
        low = chunk.lower()
        marked = _marked_lines(chunk, low)
        if not marked:
            continue
        lines, low_lines = chunk.splitlines(), low.splitlines()
        templates = [t for k in marked
                     if (t := line_signature_text(lines[k], low_lines[k])) is not None]
        if GENERIC_EXIT in templates:
            # Exit status 1 and nothing else that names the failure: what the command
            # printed last names it (a `command not found`, a runner's own wording).
            templates = [t for t in templates if t != GENERIC_EXIT]
            if not templates and (last := _last_output_line(lines)) is not None:
                templates.append(f"{GENERIC_EXIT}:{normalise_error_line(last)}")
        for template in templates:
            if len(template) < 4:
                continue
            sig = hashlib.sha256(template.encode()).hexdigest()[:16]
            if sig not in out:
                out.append(sig)
                if texts is not None:
                    texts[sig] = template
                if len(out) >= MAX_LINES:
                    return tuple(out)
    return tuple(out)


GENERIC_EXIT = "tool:exit:1"
# Lines of a shell result that are no output of the command: its status and Codex's header.
_NOT_OUTPUT = re.compile(r"(?i)^(?:exit code:? ?-?\d+|process exited with code -?\d+|chunk id:"
                         r"|wall time:|original token count:|output:$|total output lines:"
                         r"|warning: truncated output)")


def _last_output_line(lines: Sequence[str]) -> str | None:
    """The last line the command printed that is neither blank, a status or header line, nor
    a summary line (`_summary`); None when there is none."""
    for line in reversed(lines):
        text = line.strip()
        if text and not _NOT_OUTPUT.match(text) and not _summary(normalise_error_line(text)):
            return text
    return None


_EXITED_0 = "\nProcess exited with code 0\n"  # Codex >= 0.171's plain-text exec result
_EXEC_HEAD = 200  # its status line sits in a short header (chunk id, wall time)


def _succeeded(chunk: str) -> bool:
    """A Codex exec result whose command exited 0: its JSON form (`unwrap_exec_output` puts
    the status last) or its plain-text form (the status in its header)."""
    return chunk.endswith("\nExit code: 0") or (
        chunk.startswith("Chunk ID:") and _EXITED_0 in chunk[:_EXEC_HEAD])


def request_strike(signatures: Sequence[str], seen: Sequence[str]) -> bool:
    """A repeated error: one of this turn's signatures was seen in an earlier evaluated turn."""
    if not signatures or not seen:
        return False
    seen_set = set(seen)
    return any(s in seen_set for s in signatures)


def response_strike_kinds(*, malformed_tool_json: bool, empty_answer: bool, refusal: bool,
                          truncated: bool) -> tuple[str, ...]:
    kinds = []
    if malformed_tool_json:
        kinds.append("malformed_tool_json")
    if empty_answer:
        kinds.append("empty_answer")
    if refusal:
        kinds.append("refusal")
    if truncated:
        kinds.append("truncated")
    return tuple(kinds)
