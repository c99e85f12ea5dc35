"""An image in a real agent's conversation goes to a model that reads images (`vision`).

Claude Code reads a PNG with its Read tool, so the next request carries an `image` block in
its tool result, and every later request of the conversation carries it on. The router's
cheapest base model reads no images (`vision = false`, as DeepSeek's chat models): the
scripted provider answers an image sent to it with DeepSeek's own 400. orca must send the
image-carrying requests to the base tier's model that reads images, and move the session's
pin there, so the conversation goes on cached instead of failing on every turn.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from orca_cli.testing.upstream import Act, Script, Seen
from tests.agents.kit import agent_binary, agent_env, run_agent, serving
from tests.agents.test_agent_loops import reply, scripted_upstream

BLIND, SEEING = "blind-claude", "seeing-claude"
BLIND_ERROR = ("Failed to deserialize the JSON body into the target type: messages[1]: "
               "unknown variant `image_url`, expected `text`")


def _png(path: Path) -> None:
    """A valid 2×2 RGB PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _has_image(body: dict[str, object]) -> bool:
    return '"type": "image"' in json.dumps(body)


def _image_reader(png: Path) -> Script:
    """A model that has Claude Code Read `png` once, then answers in text; asked with an
    image in the conversation, the blind model answers DeepSeek's 400."""
    def answer(seen: Seen) -> Act:
        model = str(seen.body.get("model", ""))
        if model == BLIND and _has_image(seen.body):
            return Act(status=400, body=json.dumps({"type": "error", "error": {
                "type": "invalid_request_error", "message": BLIND_ERROR}}).encode())
        names = {t.get("name") for t in seen.body.get("tools", []) if isinstance(t, dict)}
        read = "Read" in names and not _has_image(seen.body)
        tool = ("call_read_1", "Read", json.dumps({"file_path": str(png)})) if read else None
        return reply(seen, "The screenshot shows two red pixels.", tool)
    return answer


def _config(url: str) -> str:
    return f"""
[[channels]]
name = "up-messages"
type = "anthropic"
base_url = "{url}"
keys = ["image-key"]
models = ["{BLIND}", "{SEEING}", "strong-claude"]

[models."{BLIND}"]
input = 0.27
output = 1.1
vision = false
[models."{SEEING}"]
input = 1.0
output = 5.0
[models."strong-claude"]
input = 15.0
output = 75.0

[routers.claude]
strategy = "cheapest"
allowed_models = ["{BLIND}", "{SEEING}", "strong-claude"]
strong_pool = ["strong-claude"]

[aliases]
"claude-*" = "orca/claude"
"""


def test_claude_code_reading_a_screenshot_moves_to_a_model_that_reads_images(
        tmp_path: Path) -> None:
    claude = agent_binary("claude")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    png = work / "screen.png"
    _png(png)
    with scripted_upstream(_image_reader(png)) as fake, \
            serving(tmp_path, _config(fake.url("a", versioned=False))) as orca:
        env = agent_env(home, ANTHROPIC_BASE_URL=orca.base, ANTHROPIC_API_KEY="orca-dummy-key",
                        ANTHROPIC_MODEL="claude-sonnet-4-5",
                        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        prompts = ["Look at screen.png and tell me what it shows", "And what colour is it?"]
        runs = [run_agent([claude, "-p", prompts[0], "--allowedTools", "Read"], env, work),
                run_agent([claude, "-p", "--continue", prompts[1]], env, work)]
        calls = [s for s in fake.calls("a") if s.body.get("tools")]
        rows = orca.cli("requests", "--limit", "50")
        traces = [orca.explain(r["request_id"]) for r in reversed(rows)]
    for run in runs:
        assert run.returncode == 0, (run.stdout, run.stderr[-3000:])
        assert BLIND_ERROR not in run.stdout + run.stderr
    assert calls and not any(s.body["model"] == BLIND and _has_image(s.body) for s in calls), [
        (s.body["model"], _has_image(s.body)) for s in calls]
    turns = [t for t in traces if t["router"] == "claude"]
    served = [(t["selected"]["model"], any(c.get("excluded") == "vision"
                                            for c in t["candidates"])) for t in turns]
    # the Read request itself went to the cheapest model; from the tool result on, every
    # request carries the image and is served by the model that reads it, second turn too
    assert served[0] == (BLIND, False), served
    assert len(served) >= 3 and all(s == (SEEING, True) for s in served[1:]), served
    assert len({t["session_id"] for t in turns}) == 1
    # the pin moved with it: the last request is a cache hit on the seeing model's pin
    pins = {(p["kind"], p["status"]) for p in turns[-1]["pins"]}
    assert ("model", "hit") in pins, turns[-1]["pins"]
    assert all(t["status"] == 200 for t in turns), [t["status"] for t in turns]
