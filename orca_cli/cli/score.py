"""`orca score [FILE|-] [--api openai|anthropic|responses] [--json] [--config PATH]` (SPEC §1.1,
§4).

Scores one request body with both scorers — the full transcript and the delta (the latest
turn) — and shows every feature's raw value, cap, weight and contribution; beside them the
banding score `gated_adaptive` bands on (the conversation without the agent's system prompt
and tool schemas, SPEC §19). The wire format is detected from the body (a top-level `system`
or Anthropic-only content blocks mean Anthropic; `input` or `instructions` without `messages`
mean the Responses API) unless `--api` says it. Weights and caps come from the effective
config (`[difficulty.*]`); with no config file anywhere, the SPEC §4 defaults.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer

from orca_cli.cli.output import fail, out_console, print_json

if TYPE_CHECKING:
    from orca_cli.config.schema import DifficultyConfig
    from orca_cli.routing.features import Delta, Scorer

__all__ = ["register", "score_document"]


class ApiChoice(str, Enum):
    openai = "openai"
    anthropic = "anthropic"
    responses = "responses"


def register(app: typer.Typer) -> None:
    @app.command("score")
    def score_cmd(
        file: str = typer.Argument("-", metavar="[FILE|-]",
                                   help="A JSON request body; `-` or nothing reads stdin."),
        api: ApiChoice | None = typer.Option(None, "--api", metavar="openai|anthropic|responses",
                                             help="Wire format; detected when absent."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
        config: str | None = typer.Option(None, "--config", help="Config file (weights, caps)."),
    ) -> None:
        """Score one request body: full transcript and delta, per feature.

        \b
        Example:
            orca score request.json --json
            pbpaste | orca score - --api anthropic
        """
        from orca_cli.errors import ConfigError

        body = _read_body(file)
        difficulty = _difficulty_config(config)
        try:
            doc = score_document(body, api.value if api else None, difficulty)
        except ConfigError as exc:  # a weight or cap the loader let through
            fail(str(exc))
        if as_json:
            print_json(doc)
        else:
            _render(doc)


def score_document(
    body: Any, api: str | None = None, difficulty: DifficultyConfig | None = None
) -> dict[str, Any]:
    """The `score --json` document (SPEC §1.1a) for a parsed body."""
    from orca_cli.routing.auto.classify import classify_local
    from orca_cli.routing.features import Scorer
    from orca_cli.wire.transcript import detect_api

    chosen = api or detect_api(body)
    scorer = Scorer(difficulty)
    full = scorer.full(body, chosen)  # type: ignore[arg-type]
    delta = scorer.delta(body, chosen)  # type: ignore[arg-type]
    banding = scorer.banding(body, chosen)  # type: ignore[arg-type]
    return {
        "full": full.to_json(),
        "delta": delta.difficulty.to_json(),
        "banding": banding.to_json(),
        "tokens_estimated": True,
        "tokens_method": "chars/4",
        "tokens": {"full": full.tokens, "delta": delta.difficulty.tokens,
                   "banding": banding.tokens},
        "api": chosen,
        "api_detected": api is None,
        "turn": _turn_json(delta),
        "delta_max": round(scorer.max_delta, 6),
        "weights": _weights_json(scorer),
        "workload": classify_local(body, delta, full).to_json(),  # the auto router's (§16)
    }


def _turn_json(delta: Delta) -> dict[str, Any]:
    return {
        "is_user_turn": delta.is_user_turn,
        "is_tool_continuation": delta.is_tool_continuation,
        "tool_results": len(delta.tool_result_texts),
        "message_count": delta.message_count,
        "has_tools": delta.has_tools,
    }


def _weights_json(scorer: Scorer) -> dict[str, dict[str, float]]:
    from orca_cli.routing.features import FEATURES

    out: dict[str, dict[str, float]] = {}
    for name in FEATURES:
        spec = scorer.spec(name)
        out[name] = {"weight": spec.weight, "cap": round(spec.cap, 6)}
    return out


def _read_body(file: str) -> Any:
    import orjson

    where = "stdin" if file == "-" else file
    try:
        if file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        fail(f"cannot read {where}: {exc.strerror or exc}; pass a readable file or `-` for stdin")
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        fail(f"{where} is not valid JSON ({exc}); pass one request body as a JSON object")
    if not isinstance(body, dict):
        fail(f"{where} holds a JSON {type(body).__name__}, not a request body object; "
             "pass one chat-completions or messages request body")
    return body


def _difficulty_config(path: str | None) -> DifficultyConfig:
    """The effective `[difficulty]` tables: the config `load()` finds, else the defaults."""
    from orca_cli.config.load import load
    from orca_cli.errors import ConfigError

    try:
        return load(path).difficulty
    except ConfigError as exc:
        fail(str(exc))


def _render(doc: dict[str, Any]) -> None:
    from rich.table import Table

    console = out_console()
    detected = " (detected)" if doc["api_detected"] else ""
    turn = doc["turn"]
    kind = ("user turn" if turn["is_user_turn"]
            else "tool-result continuation" if turn["is_tool_continuation"] else "no new turn")
    console.print(f"api: {doc['api']}{detected}   messages: {turn['message_count']}   "
                  f"latest turn: {kind}, {turn['tool_results']} tool result(s)")
    for label, key in (("full transcript", "full"), ("delta (latest turn)", "delta")):
        scored = doc[key]
        table = Table(title=f"{label}: score {scored['score']:.3f}", title_justify="left")
        for col in ("feature", "raw value", "cap", "weight", "contribution"):
            table.add_column(col, justify="left" if col == "feature" else "right")
        for name, fv in scored["features"].items():
            w = doc["weights"][name]
            table.add_row(name, f"{fv['value']:.3f}", f"{w['cap']:.3f}", f"{w['weight']:.2f}",
                          f"{fv['contribution']:.3f}")
        console.print(table)
    console.print(f"banding score (gated_adaptive: the conversation without the system "
                  f"prompt and tool schemas): {doc['banding']['score']:.3f}")
    console.print(f"tokens estimated as chars/4: full {doc['tokens']['full']}, "
                  f"delta {doc['tokens']['delta']}; the delta's maximum is "
                  f"{doc['delta_max']:.2f} (the system-prompt term is fixed at 0 there)")
    w = doc["workload"]
    console.print(f"auto router workload: {', '.join(w['workloads'])}; complexity "
                  f"{w['complexity']:.2f}, confidence {w['confidence']:.2f} (local classifier)")
