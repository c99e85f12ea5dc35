"""SPEC §16: the local classifier on our own labelled requests (workload, complexity, confidence)."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.routing.auto.classify import classify_local, hard_facts
from orca_cli.routing.features import Scorer
from orca_cli.types import Api

SCORER = Scorer()
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}


def _chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "orca/auto", "messages": [{"role": "user", "content": text}], **extra}


PY = ("def merge(a, b):\n    for k, v in b.items():\n        if isinstance(v, dict):\n"
      "            a[k] = merge(a.get(k, {}), v)\n        else:\n            a[k] = v\n"
      "    return a\n")
TS = ("export function parse(input: string): number {\n  const n = Number(input);\n"
      "  if (Number.isNaN(n)) { throw new Error('bad'); }\n  return n;\n}\n")
GO_TRACE = ("panic: runtime error: invalid memory address or nil pointer dereference\n"
            "goroutine 1 [running]:\nmain.main()\n\t/app/main.go:12 +0x1d\n")

# (label, body): the expected primary workload.
LABELLED: list[tuple[str, dict[str, Any]]] = [
    ("code", _chat("Review this TypeScript function for correctness.\n```ts\n" + TS + "```")),
    ("code", _chat("Fix the bug in this Python:\n```python\n" + PY + "```")),
    ("code", _chat("Why does this crash?\n" + GO_TRACE)),
    ("code", _chat("```\n" + PY + "```\nadd type hints")),
    ("code", _chat("Refactor:\n```js\nconst f = (x) => { return x.map(y => y * 2); };\n```")),
    ("code", _chat(PY + "\nwrite unit tests for merge")),
    ("reasoning", _chat("Prove that the square root of 2 is irrational, step by step.")),
    ("reasoning", _chat("Why would a mutex and a channel deadlock here? Explain the trade-off "
                        "and the invariant that breaks, step by step.")),
    ("reasoning", _chat("Derive the closed form of the sum of i^2 for i = 1..n and prove it "
                        "by induction.")),
    ("reasoning", _chat("Think step by step: if a train leaves at 3pm at 60 km/h and another "
                        "at 4pm at 90 km/h, when does the second catch up?")),
    ("tool_use", _chat("List the files in the repo.", tools=TOOLS)),
    ("tool_use", _chat("What's the weather in Paris?", tools=TOOLS)),
    ("tool_use", {"model": "orca/auto", "tools": TOOLS, "messages": [
        {"role": "user", "content": "read main.py"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"}]}),
    ("tool_use", {"model": "orca/auto", "max_tokens": 100, "tools": [
        {"name": "search", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "Search the docs for rate limits."}]}),
    ("structured_output", _chat("Extract the name and age from: Ana is 31.",
                                response_format=JSON_SCHEMA)),
    ("structured_output", _chat("Give me three colours.",
                                response_format={"type": "json_object"})),
    ("structured_output", {"model": "orca/auto", "input": "Extract the city from: I live in Oslo.",
                           "text": {"format": {"type": "json_schema", "name": "c", "schema": {}}}}),
    ("structured_output", _chat("Return the list of invoice fields as JSON schema, valid json "
                                "only.")),
    ("translation", _chat("Translate to French: the meeting is moved to Monday.")),
    ("translation", _chat("Traduce al inglés: el informe está listo.")),
    ("translation", _chat("Please put this paragraph into German: we ship on Friday.")),
    ("translation", _chat("Traduire en anglais : la réunion est annulée.")),
    ("translation", _chat("Übersetze bitte ins Englische: Das Paket ist angekommen.")),
    ("summary", _chat("Summarize this article in three bullet points: " + "Lorem ipsum. " * 30)),
    ("summary", _chat("tl;dr of the thread below please\n" + "We discussed the launch. " * 20)),
    ("summary", _chat("Give me a short recap of yesterday's meeting notes: budget, hiring.")),
    ("summary", _chat("Resume este texto en dos frases: el proyecto avanza bien.")),
    ("general", _chat("Hello! How are you today?")),
    ("general", _chat("Write a short poem about autumn leaves.")),
    ("general", _chat("What is the capital of Australia?")),
    ("general", _chat("Suggest a name for a bakery.")),
]


@pytest.mark.parametrize(("label", "body"), LABELLED,
                         ids=[f"{i}-{lbl}" for i, (lbl, _) in enumerate(LABELLED)])
def test_labelled_primary_workload(label: str, body: dict[str, Any]) -> None:
    api: Api = "anthropic" if "input_schema" in str(body.get("tools")) else "openai"
    cls = classify_local(body, SCORER.delta(body, api), SCORER.full(body, api))
    assert cls.workload == label, cls
    assert 0.0 <= cls.complexity <= 1.0 and 0.0 <= cls.confidence <= 1.0


def test_at_least_thirty_labelled_examples_over_every_workload() -> None:
    assert len(LABELLED) >= 30
    assert {lbl for lbl, _ in LABELLED} == {"code", "reasoning", "tool_use", "structured_output",
                                            "translation", "summary", "general"}


def test_deterministic() -> None:
    body = LABELLED[0][1]
    a = classify_local(body, SCORER.delta(body, "openai"))
    b = classify_local(body, SCORER.delta(body, "openai"))
    assert a == b


def test_hard_facts_are_most_confident() -> None:
    hard = LABELLED[14][1]
    cued = LABELLED[18][1]
    plain = LABELLED[-1][1]
    confidences = [classify_local(b, SCORER.delta(b, "openai")).confidence
                   for b in (hard, cued, plain)]
    assert confidences == [0.9, 0.7, 0.5]


def test_reasoning_is_more_complex_than_a_translation_of_similar_length() -> None:
    reasoning = _chat("Why does this deadlock? Prove the invariant holds, step by step.")
    translation = _chat("Translate to Spanish: the deadline is tomorrow at noon, thanks all.")
    r = classify_local(reasoning, SCORER.delta(reasoning, "openai"))
    t = classify_local(translation, SCORER.delta(translation, "openai"))
    assert r.complexity > t.complexity


def test_secondary_workloads_are_kept_strongest_first() -> None:
    body = _chat("Translate this Python to Go:\n```python\n" + PY + "```", tools=TOOLS)
    cls = classify_local(body, SCORER.delta(body, "openai"))
    assert cls.workloads[0] == "tool_use"
    assert {"translation", "code"} <= set(cls.workloads)


def test_hard_facts_read_every_format() -> None:
    assert hard_facts(_chat("x", tools=TOOLS)) == (True, False)
    assert hard_facts(_chat("x", tools=[])) == (False, False)
    assert hard_facts(_chat("x", response_format={"type": "text"})) == (False, False)
    assert hard_facts({"output_format": {"type": "json_schema"}}) == (False, True)
    assert hard_facts({"tool_choice": {"type": "tool", "name": "emit"}}) == (False, True)
    assert hard_facts({"tool_choice": "auto"}) == (False, False)


def test_to_json_is_content_free() -> None:
    body = _chat("Translate to French: my secret password is hunter2")
    doc = classify_local(body, SCORER.delta(body, "openai")).to_json()
    assert "hunter2" not in str(doc)
    assert set(doc) == {"workloads", "complexity", "confidence", "classifier"}


def test_orca_score_shows_the_local_classification() -> None:
    from orca_cli.cli.score import score_document

    doc = score_document(_chat("Translate to French: hello"))
    assert doc["workload"]["workloads"] == ["translation"]
    assert doc["workload"]["classifier"] == "local"
