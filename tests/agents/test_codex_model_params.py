"""The real Codex served on an OpenAI model that does not reason (`native.fit_openai`).

Codex 0.171 sends `reasoning: {effort, context}` and `text: {verbosity}` and includes
`reasoning.encrypted_content` on every request, written for the reasoning model it asked
for. Its router's base tier is `gpt-4.1-mini`, which refuses each of them with OpenAI's own
400; escalated, the turn goes to a reasoning model, GPT-5.4, which takes them but for
`reasoning.context`, which only GPT-5.6 and later read. Codex asks for its default,
`gpt-6.2-sol`, which the config's alias (the example's) sends to the router; on the second
turn with Codex's `max` effort, which GPT-5.4 lacks (none to xhigh).
"""

from __future__ import annotations

import json
from pathlib import Path

from orca_cli.testing.upstream import Act, Seen
from tests.agents.kit import agent_binary, agent_env, run_agent, serving
from tests.agents.test_agent_loops import reply, scripted_upstream
from tests.agents.test_codex import codex_config
from tests.e2e.translation.kit import one_channel_two_tier

PLAIN, REASONING = "gpt-4.1-mini", "gpt-5.4"
CODEX_DEFAULT = "gpt-6.2-sol"  # what Codex 0.171 asks for with no `model` line


def openai_api(seen: Seen) -> Act:
    model, body = str(seen.body.get("model", "")), seen.body
    refused = model == PLAIN and ("reasoning" in body or "verbosity" in (body.get("text") or {})
                                  or "reasoning.encrypted_content" in (body.get("include") or []))
    if refused:
        return Act(status=400, body=json.dumps({"error": {
            "message": "Unsupported parameter: 'reasoning.effort' is not supported with this "
                       "model.", "type": "invalid_request_error", "param": "reasoning.effort",
            "code": "unsupported_parameter"}}).encode())
    effort = (body.get("reasoning") or {}).get("effort")
    if model == REASONING and effort in ("minimal", "max"):  # GPT-5.4: none to xhigh
        return Act(status=400, body=json.dumps({"error": {
            "message": f"Unsupported value: '{effort}' is not supported with the '{model}' "
                       "model. Supported values are: 'none', 'low', 'medium', 'high', and "
                       "'xhigh'.", "type": "invalid_request_error", "param": "reasoning.effort",
            "code": "unsupported_value"}}).encode())
    if model == REASONING and "context" in (body.get("reasoning") or {}):  # GPT-5.6 and later
        return Act(status=400, body=json.dumps({"error": {
            "message": "Unsupported parameter: 'reasoning.context' is not supported with this "
                       "model.", "type": "invalid_request_error", "param": "reasoning.context",
            "code": "unsupported_parameter"}}).encode())
    return reply(seen, "The parser tests check ids.")


def _config(url: str) -> str:
    # Codex's default model reaches the router through the example config's alias
    return one_channel_two_tier(url, "openai", "params-key", (PLAIN, 0.4, 1.6),
                                (REASONING, 1.25, 10.0), ("gpt-6*", "coding"),
                                api='["responses", "openai"]')


def test_codex_is_served_on_a_model_that_does_not_reason_then_on_one_that_does(
        tmp_path: Path) -> None:
    codex = agent_binary("codex")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with scripted_upstream(openai_api) as fake, \
            serving(tmp_path, _config(fake.url("r"))) as orca:
        (home / "config.toml").write_text(codex_config(orca, CODEX_DEFAULT))
        env = agent_env(home, CODEX_HOME=str(home), ORCA_API_KEY="orca-dummy-key",
                        ORCA_TEST_REQUEST_ID="params-1")
        first = run_agent([codex, "exec", "--skip-git-repo-check",
                           "Explain what the parser tests check"], env, work)
        # the second turn asks Codex's `max` effort, which gpt-6.2-sol takes and GPT-5.4 not
        (home / "config.toml").write_text(
            'model_reasoning_effort = "max"\n' + codex_config(orca, CODEX_DEFAULT)
            + '\n[model_providers.orca.http_headers]\n"X-OrcaRouter-Tier" = "strong"\n')
        second = run_agent([codex, "exec", "--skip-git-repo-check", "resume", "--last",
                            "Now the hard part"], {**env, "ORCA_TEST_REQUEST_ID": "params-2"},
                           work)
        sent = [s.body for s in fake.calls("r")]
        traces = [orca.explain("params-1"), orca.explain("params-2")]
    for run in (first, second):
        assert run.returncode == 0, (run.stdout, run.stderr[-3000:])
        assert "unsupported_parameter" not in run.stdout + run.stderr
    assert [t["selected"]["model"] for t in traces] == [PLAIN, REASONING]
    # Codex writes `text.verbosity` only for a model it knows, not for `orca/coding`
    assert {"reasoning", "include:reasoning.encrypted_content"} <= set(
        traces[0]["translation"]["params_dropped"])
    on_plain = [b for b in sent if b["model"] == PLAIN]
    assert on_plain and not any("reasoning" in b for b in on_plain)
    on_reasoning = [b for b in sent if b["model"] == REASONING]
    assert on_reasoning and all("reasoning" in b for b in on_reasoning)
    # Codex writes `reasoning.context` for gpt-6.2-sol; GPT-5.4 reads none (GPT-5.6 and later do)
    assert all("context" not in b["reasoning"] for b in on_reasoning)
    assert "reasoning.context" in traces[1]["translation"]["params_dropped"]
    assert all("reasoning.encrypted_content" in b["include"] for b in on_reasoning)
    # Codex sent `max`; GPT-5.4's highest is `xhigh`
    assert {b["reasoning"]["effort"] for b in on_reasoning} == {"xhigh"}
    assert traces[1]["translation"]["params_renamed"]["reasoning.effort: max"] == \
        "reasoning.effort: xhigh"
