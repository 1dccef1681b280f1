"""What every PNG a command writes shares: the figure, the series styles, legible text, saving.

The report's plots (`metrics.report_plots`), training's learning curves (`train/report.py`,
`train/benchmark.py`, `train/rllib.py`) and a sweep's effect plot
(`scenarios/sweep.py`) are drawn with matplotlib's object API on an Agg canvas (no pyplot, no
global backend switch, so drawing never changes the caller's matplotlib state) and follow
one set of rules, checked axis by axis by `tests/test_figures.py` (on every figure of a real
run's report, and on the training and sweep figures):

- every y-label says what it measures in words and ends with its unit in parentheses
  ("impressions (count)", "time (s)", "share of impressions (0-1)"); a count's axis
  (label ending "(count)") has whole-number ticks;
- every series of a panel has its own colour, line style and marker (`series_style`), so
  series that overlap stay apart, and series that coincide are said to (`coincide_note`);
- no text smaller than `MIN_FONT` points at the saved dpi (`legible`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "PALETTE",
    "LINESTYLES",
    "MARKERS",
    "MIN_FONT",
    "COUNT",
    "new_figure",
    "series_style",
    "whole_numbers",
    "is_count_label",
    "coincide_groups",
    "visual_tolerance",
    "coincide_note",
    "legible",
    "save_png",
]

#: Okabe & Ito (2008), distinguishable with every common colour-vision deficiency
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: the smallest text on a figure, in points (at 100 dpi: 12.5 pixels)
MIN_FONT = 9.0
#: the unit of a count's y-label
COUNT = "(count)"


def new_figure(n_panels: int = 1, *, stacked: bool = False, panel: tuple[float, float] = (5.0, 3.2)):
    """(figure, axes): n panels of `panel` inches in a grid of 2 columns (`stacked`: one
    column), on an Agg canvas; no empty panel is made."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 1 if n_panels == 1 or stacked else 2
    rows = -(-n_panels // cols)
    width = panel[0] * (1.6 if cols == 1 else 2.0)
    fig = Figure(figsize=(width, panel[1] * rows + (0.4 if rows > 1 else 0.0)))
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]


def series_style(i: int) -> dict:
    """The i-th series' colour, line style and marker: no two of the first 32 alike (colours
    first; after 8 series the line style changes too, and the markers shift)."""
    return {
        "color": PALETTE[i % len(PALETTE)],
        "linestyle": LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)],
        "marker": MARKERS[(i + i // len(PALETTE)) % len(MARKERS)],
        "markersize": 4,
    }


def whole_numbers(axis) -> None:
    """Ticks at whole numbers only (steps, counts): no 2.5 on an axis of whole things."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def is_count_label(label: str) -> bool:
    """Whether a y-label is a count's (it ends with `COUNT`)."""
    return label.endswith(COUNT)


def coincide_groups(names: Sequence[str], series: Sequence[np.ndarray], atol: float = 0.0) -> list[list[str]]:
    """Groups (two or more) of the named series equal everywhere within `atol` (NaNs equal
    NaNs), in order; `visual_tolerance` gives the atol under which lines drawn on one axes
    cover each other."""
    groups: list[list[str]] = []
    reps: list[np.ndarray] = []
    for name, values in zip(names, series):
        v = np.asarray(values, dtype=np.float64)
        for group, rep in zip(groups, reps):
            if rep.shape == v.shape and np.allclose(rep, v, rtol=0.0, atol=atol, equal_nan=True):
                group.append(name)
                break
        else:
            groups.append([name])
            reps.append(v)
    return [g for g in groups if len(g) > 1]


def visual_tolerance(series: Sequence[np.ndarray]) -> float:
    """Half a percent of the values' range: lines closer than that cover each other on a panel."""
    v = np.concatenate([np.asarray(s, dtype=np.float64).ravel() for s in series] or [np.zeros(0)])
    v = v[np.isfinite(v)]
    return 0.005 * float(v.max() - v.min()) if v.size else 0.0


def coincide_note(groups: list[list[str]]) -> str:
    """ "A and B coincide; C, D and E coincide" ("" for none): what the eye cannot separate."""
    said = [", ".join(g[:-1]) + f" and {g[-1]} coincide" for g in groups]
    return "; ".join(said)


def legible(fig) -> None:
    """Every text of the figure at least `MIN_FONT` points (titles, labels, ticks, legends)."""
    from matplotlib.text import Text

    for ax in fig.axes:
        ax.tick_params(labelsize=MIN_FONT)
    for text in fig.findobj(Text):
        if text.get_fontsize() < MIN_FONT:
            text.set_fontsize(MIN_FONT)


def save_png(fig, path: str | Path, dpi: int = 100) -> Path:
    """`legible`, lay out (unless the figure has a layout engine) and write the PNG."""
    legible(fig)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi, format="png")
    return Path(path)
