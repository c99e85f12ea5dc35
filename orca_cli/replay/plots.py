"""`orca replay --plots DIR`: the replay's figures as PNG files, drawn from the JSON document
only (so a saved `--json` can be re-plotted and every figure shows a number `--json` has).

matplotlib is an optional extra (`pip install 'orca-cli[plots]'`) and is imported here, lazily:
`require()` checks for it before a run starts, so a missing install fails in a second rather
than after the replay. Figures are built on `matplotlib.figure.Figure` directly, never
`pyplot`: no global figure state and no GUI backend, whatever `MPLBACKEND` says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orca_cli.errors import OrcaError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "PlotsUnavailable", "require", "write_plots"]

INSTALL_HINT = "pip install 'orca-cli[plots]'"
FIGURES = (
    "difficulty_by_turn.png",
    "drift.png",
    "t2_sweep.png",
    "prevalence.png",
    "adversarial_share.png",
)
_SIZE = (7.0, 4.2)
_DPI = 110


class PlotsUnavailable(OrcaError):
    """`--plots` was asked for but matplotlib is not installed, or the document lacks a figure's
    data (a run without `--sweep` / `--adversarial`)."""


def require() -> None:
    """Fail with the install command when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotsUnavailable(f"--plots needs matplotlib, which is not installed; "
                               f"install it with: {INSTALL_HINT}") from None


def _nan(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


def _figure(title: str) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=_SIZE, dpi=_DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=11, loc="left")
    ax.grid(True, alpha=0.3)
    return fig, ax


def _t2(doc: dict[str, Any]) -> float | None:
    value = doc.get("config", {}).get("t2")
    return float(value) if isinstance(value, (int, float)) else None


def _difficulty(doc: dict[str, Any]) -> Figure:
    fig, ax = _figure("Delta difficulty by user turn")
    groups = doc["difficulty_by_turn"]["groups"]
    for name, style in (("easy", "-"), ("hard", "-")):
        mean = _nan(groups[name]["mean"])
        label = f"{name} sessions ({', '.join(groups[name]['archetypes'])})"
        ax.plot(range(1, len(mean) + 1), mean, style, marker="o", markersize=3, label=label)
    t2 = _t2(doc)
    if t2 is not None:
        ax.axhline(t2, color="grey", linestyle="--", linewidth=1, label=f"T2 = {t2:.2f}")
    ax.set_xlabel("user turn")
    ax.set_ylabel("mean delta score")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    return fig


def _drift(doc: dict[str, Any]) -> Figure:
    d = doc["drift"]
    fig, ax = _figure(f"Full transcript vs delta score, {d['sessions']} long trivial sessions")
    for key, label in (("full", "full transcript"), ("delta", "delta (latest turn)")):
        series = _nan(d[key])
        ax.plot(range(1, len(series) + 1), series, marker="o", markersize=3, label=label)
    t2 = _t2(doc)
    if t2 is not None:
        ax.axhline(t2, color="grey", linestyle="--", linewidth=1, label=f"T2 = {t2:.2f}")
    ax.set_xlabel("user turn")
    ax.set_ylabel("mean score")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    return fig


def _sweep(doc: dict[str, Any]) -> Figure:
    rows = doc["sweep"]
    fig, ax = _figure("T2 sweep: cost and hard-turn coverage")
    t2s = [r["t2"] for r in rows]
    ax.plot(t2s, [r["cost_per_1k"] for r in rows], marker="o", color="tab:blue",
            label="$ per 1,000 sessions")
    ax.set_xlabel("T2 (delta threshold)")
    ax.set_ylabel("$ per 1,000 sessions", color="tab:blue")
    right = ax.twinx()
    right.plot(t2s, [100 * r["coverage"] for r in rows], marker="s", color="tab:orange",
               label="hard-turn coverage")
    right.plot(t2s, [100 * r["strong_share"] for r in rows], marker="^", color="tab:green",
               label="served strong")
    right.set_ylabel("% of turns", color="tab:orange")
    right.set_ylim(0, 100)
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [str(line.get_label()) for line in lines], fontsize=8, loc="center right")
    return fig


def _prevalence(doc: dict[str, Any]) -> Figure:
    rows = doc["prevalence"]
    fig, ax = _figure("Prevalence: cost as the hard share varies")
    shares = [100 * r["hard_share"] for r in rows]
    for key, label in (("cheap_only", "cheap only (affinity)"), ("escalation", "escalation"),
                       ("frontier_only", "frontier only (affinity)")):
        ax.plot(shares, [r[key] for r in rows], marker="o", label=label)
    ax.set_xlabel("hard share of user turns (%)")
    ax.set_ylabel("$ per 1,000 sessions")
    ax.legend(fontsize=8)
    return fig


def _adversarial(doc: dict[str, Any]) -> Figure:
    adv = doc["adversarial"]
    fig, ax = _figure("Adversarial: every request asks for strong (caps on)")
    every = int(adv.get("series_every", 50))
    series = [100 * s for s in adv["series"]]
    ax.plot([every * (i + 1) for i in range(len(series))], series,
            label="served-strong share (running)")
    ax.axhline(100 * adv["cap"], color="tab:red", linestyle="--", linewidth=1,
               label=f"share cap {adv['cap']:.0%}")
    ax.set_xlabel("requests served")
    ax.set_ylabel("% served strong")
    ax.set_ylim(0, max(100 * adv["cap"] * 2, max(series, default=0) * 1.1, 1))
    ax.legend(fontsize=8, title=f"{adv['denied']} denials, {adv['audited']} audited",
              title_fontsize=8)
    return fig


_DRAW = {
    "difficulty_by_turn.png": ("difficulty_by_turn", _difficulty),
    "drift.png": ("drift", _drift),
    "t2_sweep.png": ("sweep", _sweep),
    "prevalence.png": ("prevalence", _prevalence),
    "adversarial_share.png": ("adversarial", _adversarial),
}


def write_plots(doc: dict[str, Any], directory: str | Path) -> list[Path]:
    """Write every figure of `FIGURES` into `directory` (created if needed); the paths written.
    The document must come from a run with the sweep, the adversarial run and prevalence."""
    require()
    missing = [key for key, _ in _DRAW.values() if not doc.get(key)]
    if missing:
        raise PlotsUnavailable(f"the replay document has no {', '.join(missing)} figures; "
                               "run with --sweep --adversarial (--plots does)")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in FIGURES:
        _, draw = _DRAW[name]
        path = out / name
        draw(doc).savefig(path, format="png")
        written.append(path)
    return written
