"""The lexical vocabularies of the difficulty scorer (SPEC §4), in one place, each entry
with the reason it is there.

Three vocabularies feed three features:

* `REASONING_CUES` -> ReasoningCueCount: words a developer uses when the task needs an
  argument rather than an edit (why, prove, race condition, invariant, ...).
* `CODE_KEYWORDS` -> CodeKeywordDensity: tokens typical of pasted source, stack traces and
  goroutine dumps, and rare in prose (def, func, goroutine, nil, traceback, ...).
* `MATH_MARKERS` -> MathMarkerCount: mathematical vocabulary and notation (theorem, lemma,
  O(n log n), x^2, mod p, ∑, ∫, ...).

How a term matches (see `Lexicon` for the one-pass matcher):

* `word`: a whole token of the lowercased text, where a token is a run of ASCII letters,
  digits and `_` (so `Invariants,` yields `invariants`). Inflections are listed as `forms`.
  Most terms are words: they are matched by one dict lookup per token.
* `phrase`: consecutive tokens ("race condition" also matches "Race-condition" and
  "race conditions"), counted only when its `trigger` token occurs in the text.
* `pattern`: a small bytes regex over the original text, run only when its trigger is
  present (`trigger` token, `^` for exponents, any non-ASCII byte for symbols). Every
  pattern starts with a literal (lookbehinds come after it), so the regex engine scans for
  that literal at memchr speed instead of trying the pattern at every position.

A token belongs to at most one vocabulary; `Lexicon` rejects a table that breaks that.
Calibration (the seed's measured properties, SPEC §4) is asserted in
tests/routing/test_features.py against the bodies in tests/routing/bodies.py.
"""

from __future__ import annotations

from typing import Literal

from orca_cli.immutable import immutable

__all__ = ["CODE_KEYWORDS", "MATH_MARKERS", "REASONING_CUES", "Term", "TermKind"]

TermKind = Literal["word", "phrase", "pattern"]


@immutable
class Term:
    """One vocabulary entry: its surface `text`, how it matches, and why it is here."""

    text: str
    reason: str
    kind: TermKind = "word"
    forms: tuple[str, ...] = ()  # word: more surface forms (plurals, verb forms)
    trigger: str = ""  # phrase: the token that must occur (default: its first word)
    regex: bytes = b""  # pattern: run over the raw UTF-8 text


def _w(text: str, reason: str, *forms: str) -> Term:
    return Term(text, reason, "word", forms)


def _p(text: str, reason: str, trigger: str = "") -> Term:
    return Term(text, reason, "phrase", trigger=trigger or text.split()[0])


REASONING_CUES: tuple[Term, ...] = (
    _w("why", "asks for a cause or a justification, not an edit"),
    _w("prove", "asks for an argument that something holds", "proves", "proving", "proven"),
    _w("proof", "a correctness argument is expected", "proofs"),
    _w("tradeoff", "design weighing between alternatives", "tradeoffs"),
    _p("trade off", "the hyphenated spelling: `trade-off`, `trade-offs`"),
    _p("race condition", "concurrency bug that needs reasoning about interleavings"),
    _p("data race", "concurrency bug named by the race detector", trigger="race"),
    _p("root cause", "asks past the symptom for the cause"),
    _p("happens before", "memory-model ordering (`happens-before`)", trigger="happens"),
    _p("worst case", "asymptotic or adversarial analysis"),
    _p("edge case", "reasoning about boundary behaviour"),
    _w("invariant", "a property the code must keep; reasoning about state", "invariants"),
    _w("complexity", "time/space analysis of an algorithm"),
    _w("deadlock", "lock-ordering reasoning", "deadlocks", "deadlocked"),
    _w("livelock", "progress reasoning under contention", "livelocks"),
    _w("starvation", "fairness reasoning under contention"),
    _w("counterexample", "asks to refute a claim", "counterexamples"),
    _w("hypothesis", "debugging by stating and testing a theory", "hypotheses"),
    _w("nondeterministic", "the bug does not reproduce on every run", "nondeterminism"),
    _w("intermittent", "the failure is timing dependent", "intermittently"),
    _w("concurrency", "interleavings, not a local edit", "concurrently", "concurrent"),
    _w("linearizable", "consistency-model reasoning", "linearizability"),
    _w("atomicity", "reasoning about indivisible updates"),
    _w("correctness", "asks whether, not how"),
    _w("guarantee", "asks what the code promises", "guarantees", "guaranteed"),
    _w("consistency", "consistency-model or data-integrity reasoning"),
    _w("subtle", "the author already suspects a non-obvious cause"),
)

CODE_KEYWORDS: tuple[Term, ...] = (
    # Python source and tracebacks.
    _w("def", "Python function definition"),
    _w("class", "class definition (Python, Java, TS, C++)"),
    _w("return", "statement in every C-family and Python function body"),
    _w("import", "module import (Python, Go, Java, JS)", "imports"),
    _w("self", "Python method receiver"),
    _w("lambda", "anonymous function (Python, Java)"),
    _w("yield", "Python/JS generator"),
    _w("raise", "Python exception raise", "raised"),
    _w("except", "Python exception handler"),
    _w("elif", "Python conditional"),
    _w("kwargs", "Python keyword arguments", "args"),
    _w("__init__", "Python constructor; frames and source"),
    _w("traceback", "Python traceback header"),
    _w("py", "`.py` file extension in every Python frame"),
    # Go source, panics and goroutine dumps.
    _w("func", "Go function definition and frames"),
    _w("struct", "Go/C/Rust record type"),
    _w("goroutine", "Go goroutine dump header", "goroutines"),
    _w("panic", "Go panic / Rust panic", "panicked"),
    _w("nil", "Go nil"),
    _w("err", "Go error variable"),
    _w("chan", "Go channel type"),
    _w("defer", "Go deferred call"),
    _w("runtime", "Go runtime frames (`runtime.gopark`)"),
    _w("ctx", "context variable in Go/TS"),
    _w("fmt", "Go fmt package"),
    _w("mutex", "lock type (`sync.Mutex`)", "rwmutex"),
    _w("goexit", "Go dump trailer frame"),
    _w("gopark", "Go runtime frame of every parked goroutine"),
    _w("selectgo", "Go runtime frame of a goroutine blocked in select"),
    _w("chanrecv", "Go runtime frame of a goroutine blocked on receive", "chanrecv1", "chanrecv2"),
    _w("chansend", "Go runtime frame of a goroutine blocked on send", "chansend1"),
    _w("semacquire", "Go runtime frame / goroutine state waiting on a lock", "semacquire1",
       "runtime_semacquiremutex", "runtime_semacquirermutex", "runtime_semacquirerwmutex"),
    _w("sigsegv", "segfault signal in Go and C crashes"),
    # JS / TS.
    _w("const", "JS/TS/C constant binding"),
    _w("async", "async function"),
    _w("await", "await expression"),
    _w("function", "JS function"),
    _w("var", "JS/Go variable declaration"),
    _w("null", "null literal (JS, Java, JSON)"),
    _w("undefined", "JS undefined / `is not defined` errors"),
    _w("typeof", "JS type test"),
    _w("console", "`console.log`"),
    _w("js", "`.js` file extension in Node frames"),
    _w("ts", "`.ts` file extension in TS frames"),
    # C-family, Java, Rust.
    _w("void", "C/Java return type"),
    _w("static", "C/Java storage class"),
    _w("public", "Java/C# visibility"),
    _w("private", "Java/C# visibility"),
    _w("interface", "Go/Java/TS interface type"),
    _w("enum", "enumeration type"),
    _w("throw", "exception throw (Java, JS, C++)", "throws"),
    _w("catch", "exception handler (Java, JS, C++)"),
    _w("fn", "Rust function"),
    _w("impl", "Rust impl block"),
    _w("mut", "Rust mutable binding"),
    _w("pub", "Rust visibility"),
    _w("unwrap", "Rust Option/Result unwrap (panics in traces)"),
    _w("rs", "`.rs` file extension in Rust backtraces"),
    _w("nullptr", "C++ null pointer"),
    _w("int", "integer type", "int32", "int64", "uint", "uint32", "uint64", "usize"),
    _w("string", "string type"),
    _w("bool", "boolean type"),
    _w("byte", "byte type", "bytes"),
    _w("exception", "exception name in traces", "nullpointerexception"),
    _w("stderr", "process output stream in tool output"),
    _w("printf", "formatted print (C, Go)", "println", "sprintf"),
)

MATH_MARKERS: tuple[Term, ...] = (
    _w("theorem", "a formal statement to establish", "theorems"),
    _w("lemma", "a formal intermediate result", "lemmas"),
    _w("corollary", "a formal consequence"),
    _w("probability", "probabilistic reasoning", "probabilities", "probabilistic"),
    _w("integral", "calculus", "integrals"),
    _w("derivative", "calculus", "derivatives"),
    _w("polynomial", "algebra / complexity class", "polynomials"),
    _w("logarithm", "growth-rate reasoning", "logarithmic"),
    _w("asymptotic", "growth-rate reasoning", "asymptotically"),
    _w("amortized", "amortised cost analysis", "amortised"),
    _w("variance", "statistics"),
    _w("modulo", "modular arithmetic", "modular"),
    _w("eigenvalue", "linear algebra", "eigenvalues", "eigenvector"),
    _w("induction", "proof technique (`by induction`)"),
    _w("recurrence", "recurrence relation for a running time"),
    _w("inequality", "bounds", "inequalities"),
    _w("quadratic", "growth class or equation"),
    _w("exponential", "growth class", "exponentially"),
    _w("combinatorial", "counting arguments", "combinatorics"),
    _w("binomial", "counting / distributions"),
    _p("expected value", "probability", trigger="expected"),
    _p("big o", "asymptotic notation spelled out (`big-O`)", trigger="big"),
    Term(
        "O(n log n)",
        "asymptotic notation: O(1), O(n), O(n log n), O(n^2), O(log n)",
        "pattern",
        trigger="o",
        regex=rb"\((?<=[oO]\()(?<![A-Za-z0-9_][oO]\()[^()\n]{1,24}\)",
    ),
    Term(
        "mod p",
        "modular arithmetic written out: `x mod p`, `(mod 7)`",
        "pattern",
        trigger="mod",
        regex=rb"mod(?<![A-Za-z0-9_]mod)\s+[A-Za-z0-9]{1,2}\b",
    ),
    Term(
        "x^2",
        "exponent notation: `x^2`, `2^32`, `n^k`",
        "pattern",
        trigger="^",
        regex=rb"\^(?<=[A-Za-z0-9)]\^)[A-Za-z0-9({]",
    ),
    Term(
        "∑",
        "mathematical operators, U+2200–U+22FF: ∑ ∫ ≤ ≥ ≠ ∈ ∀ ∃ √ ≈ …",
        "pattern",
        trigger="non-ascii",
        regex=rb"\xe2[\x88-\x8b][\x80-\xbf]",
    ),
    Term("²", "superscript exponents ² and ³", "pattern", trigger="non-ascii", regex=rb"\xc2[\xb2\xb3]"),
)
