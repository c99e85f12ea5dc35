"""`orca score [FILE|-] [--api] [--json] [--config]` through the real typer app (SPEC §1.1,
§1.1a, §4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.routing.features import FEATURES, Scorer
from tests.routing import bodies as B


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["score", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _write(tmp_path: Path, body: Any, name: str = "body.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    return str(path)


def _assert_scored(doc: dict[str, Any]) -> None:
    for key in ("full", "delta", "banding"):
        assert set(doc[key]) == {"score", "features"}
        assert tuple(doc[key]["features"]) == FEATURES
        for fv in doc[key]["features"].values():
            assert set(fv) == {"value", "contribution"}
    assert doc["tokens_estimated"] is True


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_json_prints_both_scorers_and_detects_the_format(tmp_path: Path, api: str) -> None:
    body = B.hard_turn(api)
    code, out, err = _run(_write(tmp_path, body), "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)  # nothing but the document on stdout
    _assert_scored(doc)
    assert doc["api"] == api and doc["api_detected"] is True
    expected = Scorer()
    assert doc["delta"]["score"] == pytest.approx(expected.delta(body, api).score, abs=1e-6)  # type: ignore[arg-type]
    assert doc["full"]["score"] == pytest.approx(expected.full(body, api).score, abs=1e-6)  # type: ignore[arg-type]
    assert doc["delta"]["features"]["system_prompt_log_len"] == {"value": 0.0,
                                                                "contribution": 0.0}
    assert doc["turn"]["is_user_turn"] is True
    assert doc["tokens"]["delta"] < doc["tokens"]["full"]
    # the banding score leaves the constant prefix (system prompt, tool schemas) out
    assert doc["banding"]["score"] == pytest.approx(expected.banding(body, api).score, abs=1e-6)  # type: ignore[arg-type]
    assert doc["banding"]["features"]["has_tools"]["contribution"] == 0.0
    assert doc["tokens"]["banding"] < doc["tokens"]["full"]


def test_reads_stdin_by_default_and_with_dash(tmp_path: Path) -> None:
    body = json.dumps(B.opener())
    for args in ((), ("-",)):
        code, out, _ = _run(*args, "--json", stdin=body)
        assert code == 0
        assert 0.18 <= json.loads(out)["delta"]["score"] <= 0.24


def test_api_flag_overrides_detection(tmp_path: Path) -> None:
    body = B.anthropic_body([B.user("anthropic", "hello")])  # top-level system: anthropic
    code, out, _ = _run(_write(tmp_path, body), "--api", "openai", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["api"] == "openai" and doc["api_detected"] is False
    # OpenAI reads its system prompt from messages, so the top-level one scores nothing.
    assert doc["full"]["features"]["system_prompt_log_len"]["value"] == 0.0


RESPONSES_BODY = {
    "model": "gpt-5-codex",
    "instructions": "You are Codex, a coding agent.",
    "input": [
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "fix the failing test"}]},
        {"type": "function_call", "name": "shell", "call_id": "c1",
         "arguments": '{"command":["pytest"]}'},
        {"type": "function_call_output", "call_id": "c1", "output": "1 failed"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "now prove the invariant holds for every input"}]},
    ],
    "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
}


def test_api_responses_is_accepted_as_the_detector_names_it(tmp_path: Path) -> None:
    """`--api responses` reads a Responses API body as detection does (the format `orca score`
    prints), not a usage error."""
    path = _write(tmp_path, RESPONSES_BODY)
    code, out, err = _run(path, "--json")
    assert (code, err) == (0, "")
    detected = json.loads(out)
    assert detected["api"] == "responses" and detected["api_detected"] is True
    code, out, err = _run(path, "--api", "responses", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    _assert_scored(doc)
    assert doc["api"] == "responses" and doc["api_detected"] is False
    expected = Scorer()
    assert doc["full"]["score"] == pytest.approx(
        expected.full(RESPONSES_BODY, "responses").score, abs=1e-6)
    assert doc["delta"]["score"] == pytest.approx(
        expected.delta(RESPONSES_BODY, "responses").score, abs=1e-6)
    assert {k: doc[k] for k in ("full", "delta", "turn")} == {
        k: detected[k] for k in ("full", "delta", "turn")}
    assert doc["turn"]["is_user_turn"] is True
    assert doc["full"]["features"]["system_prompt_log_len"]["value"] > 0  # the instructions
    code, out, _ = _run(path, "--api", "responses")
    assert code == 0 and out.startswith("api: responses ")


def test_a_tool_continuation_is_reported_as_one(tmp_path: Path) -> None:
    code, out, _ = _run(_write(tmp_path, B.tool_continuation("anthropic")), "--json")
    turn = json.loads(out)["turn"]
    assert code == 0
    assert turn["is_tool_continuation"] is True and turn["is_user_turn"] is False
    assert turn["tool_results"] == 1


def test_table_output_shows_every_feature_and_says_tokens_are_estimated(tmp_path: Path) -> None:
    code, out, err = _run(_write(tmp_path, B.hard_turn("openai")))
    assert (code, err) == (0, "")
    for name in FEATURES:
        assert out.count(name) == 2  # one row per scorer
    for word in ("full transcript", "delta", "raw value", "cap", "weight", "contribution",
                 "chars/4"):
        assert word in out


@pytest.mark.parametrize(
    ("stdin", "needle"),
    [("{not json", "is not valid JSON"), ("[1, 2]", "not a request body object"),
     ('"text"', "not a request body object"), ("", "is not valid JSON")],
)
def test_bad_input_exits_1_with_one_sentence(stdin: str, needle: str) -> None:
    code, out, err = _run("-", "--json", stdin=stdin)
    assert code == 1 and out == ""
    assert needle in err and err.count("\n") == 1 and err.startswith("orca: ")


def test_a_missing_file_exits_1(tmp_path: Path) -> None:
    code, out, err = _run(str(tmp_path / "nope.json"))
    assert code == 1 and out == "" and "cannot read" in err and err.count("\n") == 1


def test_an_unknown_api_is_a_usage_error(tmp_path: Path) -> None:
    code, _, _ = _run(_write(tmp_path, B.opener()), "--api", "grpc")
    assert code == 2


_WEIGHTS = "[difficulty.has_tools]\nweight = 0.30\ncap = 1.0\n"


def test_weights_come_from_the_config_flag(tmp_path: Path) -> None:
    cfg = tmp_path / "custom.toml"
    cfg.write_text(_WEIGHTS)
    code, out, _ = _run(_write(tmp_path, B.opener()), "--config", str(cfg), "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["delta"]["features"]["has_tools"]["contribution"] == pytest.approx(0.30)
    assert doc["weights"]["has_tools"] == {"weight": 0.30, "cap": 1.0}


def test_weights_come_from_a_discovered_orca_toml(tmp_path: Path) -> None:
    (tmp_path / "orca.toml").write_text(_WEIGHTS)  # cwd is tmp_path (conftest)
    code, out, _ = _run(_write(tmp_path, B.opener()), "--json")
    assert code == 0
    assert json.loads(out)["delta"]["features"]["has_tools"]["contribution"] == pytest.approx(0.3)


def test_defaults_apply_when_no_config_exists(tmp_path: Path) -> None:
    code, out, _ = _run(_write(tmp_path, B.opener()), "--json")
    assert code == 0
    assert json.loads(out)["delta"]["features"]["has_tools"]["contribution"] == 0.15


def test_a_bad_config_exits_1_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[difficulty.has_tools]\nweight = 0.3\ncap = 0\n")
    code, out, err = _run(_write(tmp_path, B.opener()), "--config", str(cfg))
    assert code == 1 and out == ""
    assert "difficulty.has_tools.cap" in err


def test_a_missing_config_flag_file_exits_1(tmp_path: Path) -> None:
    code, _, err = _run(_write(tmp_path, B.opener()), "--config", str(tmp_path / "none.toml"))
    assert code == 1 and "no such config file" in err
