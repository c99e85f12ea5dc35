"""The README's worked routes file is valid against the documented example config and takes
the paths the README describes."""

from __future__ import annotations

from pathlib import Path

from orca_cli.config.load import load
from orca_cli.config.routes_file import with_routes_text
from orca_cli.routing.routes import RequestFacts, Spend, compile_routes, counter_key

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_796_371_200.0


def _routes_text() -> str:
    readme = (ROOT / "README.md").read_text("utf-8")
    start = readme.index("## Dynamic routes and budgets")
    body = readme.index("```toml", start) + len("```toml\n")
    return readme[body:readme.index("```", body)]


def test_the_readme_routes_file_checks_and_routes_as_described() -> None:
    cfg, errors = with_routes_text(load(str(ROOT / "orca.toml.example"), environ={}),
                                   _routes_text(), "README.md")
    assert errors == [] and cfg is not None
    table = compile_routes(cfg.routes)
    anon = table.evaluate(RequestFacts("openai", "gpt-4.1", now=NOW), {})
    assert (anon.route, anon.path, anon.deny and anon.deny.status) == (
        "no-key", ("known", "refuse"), 401)
    spent = {counter_key("key", "ci", "day", NOW): Spend(40, 20.0)}
    ci = RequestFacts("openai", "gpt-4.1", key_name="ci", now=NOW)
    assert table.evaluate(ci, spent).path == ("spend", "stop")
    shares = [table.evaluate(RequestFacts("openai", "m", session_id=f"s{i}", key_name="ci",
                                          now=NOW), {}).path[-1] for i in range(1000)]
    assert 0.07 < shares.count("new") / 1000 < 0.13
