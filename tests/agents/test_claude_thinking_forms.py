"""The real Claude Code served on Claude models of another generation than the one it asked
for (`translate.claude`).

Claude Code 2.1.332 writes the thinking of the model it names: adaptive thinking with
`output_config.effort` for its default `claude-opus-5-5`, a thinking budget for
`claude-haiku-4-5`. The router serves the first on Haiku 4.5, which knows only the budget
form, and the second, escalated, on Sonnet 5.5, which refuses the budget form. The scripted
provider answers each refusal in the Messages API's own words, so a body sent as Claude Code
wrote it fails the run.
"""

from __future__ import annotations

import json
from pathlib import Path

from orca_cli.testing.upstream import Act, Seen
from tests.agents.kit import agent_binary, agent_env, run_agent, serving
from tests.agents.test_agent_loops import reply, scripted_upstream
from tests.e2e.translation.kit import (
    HAIKU_45,
    SONNET_55,
    messages_refusal,
    one_channel_two_tier,
)

HAIKU, SONNET = HAIKU_45, SONNET_55


def messages_api(seen: Seen) -> Act:
    refusal = messages_refusal(seen.body)
    if refusal is not None:
        return Act(status=400, body=json.dumps({"type": "error", "error": {
            "type": "invalid_request_error", "message": refusal}}).encode())
    return reply(seen, "Done: renamed.")


def _config(url: str) -> str:
    return one_channel_two_tier(url, "anthropic", "forms-key", (HAIKU, 1.0, 5.0),
                                (SONNET, 2.0, 10.0), ("claude-*", "claude"))


def test_claude_code_is_served_on_claude_models_of_the_other_thinking_form(
        tmp_path: Path) -> None:
    claude = agent_binary("claude")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    with scripted_upstream(messages_api) as fake, \
            serving(tmp_path, _config(fake.url("a", versioned=False))) as orca:
        base = agent_env(home, ANTHROPIC_BASE_URL=orca.base, ANTHROPIC_API_KEY="orca-dummy-key",
                         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        first = run_agent([claude, "-p", "Rename the helper in util.py"], base, work)
        strong = {**base, "ANTHROPIC_MODEL": HAIKU,
                  "ANTHROPIC_CUSTOM_HEADERS": "X-OrcaRouter-Tier: strong"}
        second = run_agent([claude, "-p", "Now the hard part"], strong, work)
        sent = [s.body for s in fake.calls("a") if s.body.get("messages")]
        rows = orca.cli("requests", "--limit", "20")
        traces = [orca.explain(r["request_id"]) for r in reversed(rows)]
    for run in (first, second):
        assert run.returncode == 0, (run.stdout, run.stderr[-3000:])
        assert "not supported" not in run.stdout + run.stderr
    asked = [(t["requested_model"], t["selected"]["model"], (t.get("translation") or {}).get(
        "thinking_form")) for t in traces if t.get("selected")]
    # Claude Code's default model, adaptive thinking, served on Haiku 4.5 with a budget; its
    # Haiku-named request, a budget, escalated to Sonnet 5.5 with adaptive thinking
    assert ("claude-opus-5-5", HAIKU, "enabled") in asked, asked
    assert (HAIKU, SONNET, "adaptive") in asked, asked
    on_haiku = [b for b in sent if b["model"] == HAIKU]
    assert on_haiku and all(b["thinking"]["type"] == "enabled" for b in on_haiku
                            if "thinking" in b)
    assert all(b["thinking"]["type"] == "adaptive" for b in sent
               if b["model"] == SONNET and "thinking" in b)
