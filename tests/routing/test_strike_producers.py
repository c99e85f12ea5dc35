"""Strike producers for the failures agents loop on (SPEC §19): each tool's real output (see
fixtures/strikes/README.md) gives the expected signature texts, and a second attempt that moved
lines, paths, timings and varying identifiers gives the same signatures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orca_cli.routing.strikes import (
    error_signatures,
    line_signature_text,
    signature_label,
    unwrap_exec_output,
)

FIXTURES = Path(__file__).parent / "fixtures" / "strikes"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def texts(output: str) -> list[str]:
    out: list[str] = []
    for line in unwrap_exec_output(output).splitlines():
        t = line_signature_text(line, line.lower())
        if t is not None and t not in out:
            out.append(t)
    return out


def next_attempt(output: str, renames: dict[str, str]) -> str:
    """The same failure one edit later: other line and column numbers, another checkout
    directory, other timings and process ids, and the identifiers that varied renamed."""
    s = re.sub(r"(?<=[:(])(?<!\":)(\d+)(?=[:,)])", lambda m: str(int(m.group(1)) + 7), output)
    s = re.sub(r"\d+\.\d+(?= ?m?s\b)", "0.93", s)
    s = re.sub(r"\((\d+)\) panicked", "(31337) panicked", s)
    s = s.replace("./main.go", "./cmd/app/main.go").replace("/home/dev/", "/srv/ci/")
    for old, new in renames.items():
        s = s.replace(old, new)
    return s


CASES: list[tuple[str, list[str], dict[str, str]]] = [
    ("go_build.txt", ["go:missing-return",
                      "go:cannot-use:string:variable declaration",
                      "go:declared-not-used", "go:arguments:too many",
                      "<path>:<n>:<n>: undefined: undefinedThing"],
     {"cannot use 5": "cannot use 6", " x declared": " y declared", "call to f": "call to g"}),
    ("go_build_go120.txt", ["go:declared-not-used", "go:missing-return"],
     {"used: x": "used: count"}),
    ("go_test.txt", ["--- FAIL: TestAdd (<n>.<n>s)"], {}),
    ("tsc.txt", ["ts:TS2322", "ts:TS2554", "ts:TS2304"],
     {"'missing'": "'absent'", "'number'": "'boolean'"}),
    ("rustc.txt", ["rust:E0425", "rust:E0308"], {"`y`": "`z`"}),
    ("cargo_test.txt", ["tests::adds --- FAILED", "rust:panic"], {}),
    ("python_traceback.txt", ["AssertionError"], {}),
    ("python_syntax.txt", ["SyntaxError: invalid syntax"], {}),
    ("pytest.txt", ["E assert -<n> == <n>", "FAILED test_x.py::test_add - assert -<n> == <n>"],
     {"-1": "-2"}),
    ("jest.txt", ["jest:expect:toBe", "jest:test:adds <n> + <n> to equal <n>"],
     {"Received: -1": "Received: 4"}),
    ("javac.txt", ["A.java:<n>: error: incompatible types: String cannot be converted to int",
                   "A.java:<n>: error: cannot find symbol"], {}),
    ("gcc.txt", ["a.c:<n>:<n>: error: too many arguments to function <q>",
                 "a.c:<n>:<n>: error: <q> undeclared (first use in this function)"], {}),
    ("ruff.txt", ["lint:I001", "lint:F401"], {"`os`": "`sys`"}),
    ("eslint.txt", ["<n>:<n> error <q> is assigned a value but never used no-unused-vars",
                    "<n>:<n> error <q> is not defined no-undef"], {"'x'": "'count'"}),
    ("kotlin_gradle.txt", ["kotlin:Type mismatch: inferred type is String but Int was expected",
                           "kotlin:Unresolved reference: lookupEntry"], {}),
    ("junit_surefire.txt", ["[ERROR] com.acme.CalcTest.adds Time elapsed: <n>.<n> s <<< FAILURE!",
                            "org.opentest<n>j.AssertionFailedError: expected: <<n>> but was: <-<n>>"],
     {"<-1>": "<-3>"}),
    ("claude_code_tool_errors.txt", ["tool:error:String to replace not found in file"],
     {"cache.get(key)": "cache.lookup(key)"}),
    ("claude_code_bash_exit.txt", ["tool:exit:1"], {}),
    ("claude_code_rejected.txt", ["tool:rejected"], {}),
    ("codex_exec_json.txt", ["tool:exit:2", "go:arguments:too many"], {"0.4": "1.7"}),
    ("codex_exec_text.txt", ["tool:exit:2", "go:arguments:too many"], {"0.4": "2.5"}),
    ("codex_exec_171.txt", ["tool:exit:127"],
     {"df215b": "7c01e4", "0.0000 seconds": "0.0132 seconds", "count: 13": "count: 14"}),
]


@pytest.mark.parametrize(("name", "expected", "renames"), CASES, ids=[c[0] for c in CASES])
def test_a_tools_failure_gives_its_template_and_the_next_attempt_the_same_signatures(
        name: str, expected: list[str], renames: dict[str, str]) -> None:
    output = fixture(name)
    found = texts(output)
    assert [e for e in expected if e not in found] == [], found
    sigs = error_signatures([output])
    assert sigs
    assert error_signatures([next_attempt(output, renames)]) == sigs


def test_codes_and_exit_statuses_tell_failures_apart() -> None:
    ts = error_signatures(["a.ts(2,7): error TS2322: Type 'number' is not assignable."])
    other = error_signatures(["a.ts(2,7): error TS2345: Argument of type 'number' is not."])
    assert ts and other and ts != other
    assert error_signatures(["Exit code 1"]) != error_signatures(["Exit code 2"])
    assert error_signatures(["Exit code 0\nok"]) == ()
    assert error_signatures(['{"output":"ok\\n","metadata":{"exit_code":0}}']) == ()
    assert error_signatures(["error[E0308]: mismatched types"]) != error_signatures(
        ["error[E0425]: cannot find value `y` in this scope"])


def test_source_lines_that_only_mention_expect_do_not_strike() -> None:
    assert error_signatures(["    > 3 |   expect(sum(1, 2)).toBe(3);"]) == ()


def test_an_exit_code_at_the_end_of_a_long_json_line_is_found() -> None:
    body = "x" * 5000
    line = f'{{"output":"{body}","metadata":{{"exit_code":2,"duration_seconds":0.5}}}}'
    assert error_signatures([line]) == error_signatures(['{"exit_code":2}']) != ()


@pytest.mark.parametrize("text", [
    # read by orjson
    '{"output":"src/a.go:3:2: declared and not used: x\\n","metadata":{"exit_code":1}}',
    '{"output": "FAIL\\tpkg 0.01s\\n", "metadata": {"exit_code": 2, "duration_seconds": 0.3}}',
    # what orjson refuses, or reads otherwise (a big integer, as a float), and the standard
    # library reads: the same reading as before
    '{"output":"panic: bad \\ud800 byte\\n","metadata":{"exit_code":1}}',
    '{"output":"error: x\\n","metadata":{"exit_code":1,"duration_seconds":NaN}}',
    '{"output":"error: x\\n","metadata":{"exit_code":123456789012345678901234567890}}',
    '{"output":"error: x\\n","metadata":{"exit_code":1.0}}',
    # no exec result (unreadable, or its output is no text): the text as it is
    '{"output":"error: unterminated',
    '{"output":["not", "text"],"metadata":{"exit_code":1}}',
])
def test_exec_output_unwraps_as_the_standard_library_reads_it(text: str) -> None:
    """Codex's exec results are read with orjson, and what orjson refuses goes through the
    standard library: the lines, the exit status and so the signatures are what
    `json.loads` makes of the text."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("output"), str):
        code = doc["metadata"].get("exit_code")
        want = f"{doc['output']}\nExit code: {code}" if isinstance(code, int) else doc["output"]
    else:
        want = text
    assert unwrap_exec_output(text) == want


def test_an_exec_output_nested_past_any_parser_is_plain_text() -> None:
    """A tool's output is any text: one nested deeper than orjson (1,024) and the interpreter
    read is no exec result, and scanning it raises nothing."""
    deep = '{"output":"error: x\\n","metadata":' + "[" * 5000 + "]" * 5000 + "}"
    assert unwrap_exec_output(deep) == deep
    assert isinstance(error_signatures([deep]), tuple)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")))
def test_labels_name_the_kind_of_failure_and_no_word_of_the_output(name: str) -> None:
    """`signature_label` (shown by `orca explain`): a template's kind and code, or the generic
    marker; one label a signature, and none holds a word of the tool's output that is not a
    marker's, a kind's or a code's."""
    texts: dict[str, str] = {}
    sigs = error_signatures([fixture(name)], texts)
    assert set(texts) == set(sigs)
    labels = {sig: signature_label(text) for sig, text in texts.items()}
    vocabulary = re.compile(r"^(?:error line(?:: (?:traceback|segmentation fault|panic|failed|"
                            r"exception|assert|cannot find|undefined|error))?"
                            r"|[a-z]+(?::[a-z-]+)?(?::[A-Z]{0,4}-?\d{1,5})?)$")
    for label in labels.values():
        assert vocabulary.match(label), label


def test_a_label_keeps_codes_and_drops_what_varies() -> None:
    secret = "./pkg/very_private_name.go:12:5: declared and not used: customerLedger"
    t = line_signature_text(secret, secret.lower())
    assert t is not None and signature_label(t) == "go:declared-not-used"
    assert signature_label("error: 'customerLedger' is <q> at <path>") == "error line: error"
    assert signature_label("tool:exit:127") == "tool:exit:127"
    assert signature_label("tool:exit:1:make: *** no rule") == "tool:exit:1"
    assert signature_label("lint:F401") == "lint:F401"
    assert signature_label("kotlin:unresolved reference: <q>") == "kotlin"
    # a group that is the failure's own words is never kept, even one shaped like a code
    for line in ("main.go:12:5: cannot use s (variable of type string) as T1 value in "
                 "argument to f", "  \u25cf ABC123"):
        text = line_signature_text(line, line.lower())
        assert text is not None and signature_label(text) in ("go:cannot-use", "jest:test")
    # a marker only inside a path or quoted text: a generic error line, nothing more
    frame = '  File "/home/u/proj/error_handling/app.py", line 3, in <module>'
    text = line_signature_text(frame, frame.lower())
    assert text is not None and signature_label(text) == "error line"


def test_a_failure_in_clines_text_protocol_strikes_like_a_tool_result_block() -> None:
    """Cline (tools called in XML in its text) sends a command's output as text blocks after
    `[execute_command for '…'] Result:`: the same signature as the tool_result block."""
    from orca_cli.routing.features import Scorer

    err = ("Command executed.\nOutput:\n# example.com/app\n"
           "./main.go:12:9: cannot use x (variable of type int) as string value in return "
           "statement\n")
    env = "<environment_details>\n# Current Time\nnow\n</environment_details>"

    def body(result: list[dict[str, object]]) -> dict[str, object]:
        return {"model": "m", "max_tokens": 10, "system": "You are Cline.", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<task>\nbuild\n</task>"}]},
            {"role": "assistant", "content": "<execute_command>\n<command>go build ./...</command>"
                                             "\n</execute_command>"},
            {"role": "user", "content": result}]}

    text = Scorer().delta(body([
        {"type": "text", "text": "[execute_command for 'go build ./...'] Result:"},
        {"type": "text", "text": err}, {"type": "text", "text": env}]), "anthropic")
    block = Scorer().delta(body([{"type": "tool_result", "tool_use_id": "t", "content": err},
                                 {"type": "text", "text": env}]), "anthropic")
    assert text.is_tool_continuation and block.is_tool_continuation
    sigs = error_signatures(text.strike_texts)
    assert sigs and sigs == error_signatures(block.strike_texts)
