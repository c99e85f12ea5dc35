"""`orca replay --plots DIR` and the per-turn score series the figures draw (SPEC §10)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config.load import loads
from orca_cli.replay.plots import FIGURES, PlotsUnavailable, require, write_plots
from orca_cli.replay.reference import REFERENCE_TOML
from orca_cli.replay.run import ReplayOptions, replay

CFG = loads(REFERENCE_TOML, source="reference")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def doc() -> dict:
    return replay(CFG, ReplayOptions(sessions=40, sweep=True, adversarial=True))


def _assert_pngs(directory: Path) -> None:
    for name in FIGURES:
        data = (directory / name).read_bytes()
        assert data[:8] == PNG_MAGIC, name
        assert len(data) > 10_000, (name, len(data))  # axes, lines and labels, not a blank


def test_write_plots_writes_five_valid_pngs(doc: dict, tmp_path: Path) -> None:
    written = write_plots(doc, tmp_path / "figs")
    assert sorted(p.name for p in written) == sorted(FIGURES)
    assert len(FIGURES) == 5
    _assert_pngs(tmp_path / "figs")


def test_difficulty_by_turn_separates_hard_from_easy_after_the_opener(doc: dict) -> None:
    d = doc["difficulty_by_turn"]
    easy, hard = d["groups"]["easy"], d["groups"]["hard"]
    assert d["score"] == "delta"
    assert easy["archetypes"] == ["short_trivial", "long_trivial"]
    assert len(easy["mean"]) == 25  # the long trivial sessions reach turn 25
    assert all(0.1 < m < 0.35 for m in easy["mean"])
    # a latent-hard opener looks like an easy one; hard work shows up later on the delta
    assert abs(d["archetypes"]["latent_hard"][0] - easy["mean"][0]) <= 0.02
    assert max(m for m in hard["mean"] if m is not None) > 0.55
    assert easy["n"][0] == doc["archetypes"]["short_trivial"]["sessions"] \
        + doc["archetypes"]["long_trivial"]["sessions"]


def test_drift_full_score_sits_above_the_flat_delta(doc: dict) -> None:
    d = doc["drift"]
    assert d["archetype"] == "long_trivial" and d["sessions"] > 0
    assert len(d["delta"]) == len(d["full"]) == 25
    assert all(n == d["sessions"] for n in d["n"])
    assert all(f > x for f, x in zip(d["full"], d["delta"]))
    assert d["full"][-1] > d["full"][0]  # the history grows, the full score drifts up
    assert max(d["delta"]) - min(d["delta"]) < 0.1


def test_adversarial_series_is_spaced_as_documented(doc: dict) -> None:
    adv = doc["adversarial"]
    assert adv["series_every"] == 50
    assert len(adv["series"]) == doc["config"]["turns"] // 50


def test_write_plots_refuses_a_document_without_the_sweep(doc: dict, tmp_path: Path) -> None:
    partial = {k: v for k, v in doc.items() if k not in ("sweep", "adversarial")}
    with pytest.raises(PlotsUnavailable, match="sweep, adversarial"):
        write_plots(partial, tmp_path)
    assert not any(tmp_path.iterdir())


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    with pytest.raises(PlotsUnavailable, match=r"pip install 'orca-cli\[plots\]'"):
        require()
    result = CliRunner().invoke(app, ["replay", "--sessions", "5", "--plots", str(tmp_path)])
    assert result.exit_code == 1
    assert "pip install 'orca-cli[plots]'" in result.stderr
    assert not any(tmp_path.iterdir())


def test_cli_plots_implies_sweep_and_adversarial(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["replay", "--sessions", "20", "--plots", str(out)])
    assert result.exit_code == 0, result.output
    assert "T2 sweep" in result.stdout and "adversarial" in result.stdout
    _assert_pngs(out)
