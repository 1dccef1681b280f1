"""The cascades a recorder tracks: their per-post tags and their dense per-minute curves.

A mixin of ``MetricsRecorder`` (metrics.online). Tracked cascades are the recorder's
``tracked_posts`` (tagged ``cascade/post_<id>/<stat>``) or, by default, the ``n_top`` largest
(tagged ``cascade/top<rank>/<stat>``); each one's curve goes to the ``cascade_curve`` table
(metrics.cascades) at every minute since its root was posted.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # pragma: no cover
    from ..platform import Platform

__all__ = ["TrackedCascades", "CASCADE_STATS"]

IntArray = NDArray[np.int64]

CASCADE_STATS = ("scale", "depth", "max_breadth", "structural_virality")


class TrackedCascades:
    """Tags and curves of the tracked cascades (see ``MetricsRecorder``'s ``tracked_posts``)."""

    def _tracked_roots(self, pf: Platform) -> IntArray:
        """Root post ids of the cascades tracked now (the explicit posts' roots, or the top n)."""
        if self.tracked is None:
            return self.forest.top_ids
        ids = self.tracked[self.tracked < self.forest.n_seen]
        return np.unique(self.forest.top.a[ids])

    def _tracked_values(self, tracked: IntArray) -> dict[str, float]:
        """Per tracked cascade: each of CASCADE_STATS; NaN for a rank or post not there yet."""
        values: dict[str, float] = {}
        if self.tracked is None:
            st = self.forest.stats(tracked)
            for rank in range(self.n_top):
                for name in CASCADE_STATS:
                    values[f"cascade/top{rank + 1}/{name}"] = float(st[name][rank]) if rank < tracked.size else math.nan
            return values
        exists = self.tracked < self.forest.n_seen
        roots = np.where(exists, self.forest.top.a[np.where(exists, self.tracked, 0)], 0)
        st = self.forest.stats(roots)
        for k, p in enumerate(self.tracked.tolist()):
            for name in CASCADE_STATS:
                values[f"cascade/post_{p}/{name}"] = float(st[name][k]) if exists[k] else math.nan
        return values

    def _write_curves(
        self, conn: sqlite3.Connection, pf: Platform, roots: Sequence[int] | IntArray, now: int, final: bool = False
    ) -> None:
        """Extend the dense per-minute curves of the tracked cascades to the current minute.

        A cascade tracked at the previous step gets the minutes since then appended; one that
        was not (newly tracked, or dropped and now completed by `finalize`) gets its whole
        curve rebuilt from the tree (formulas.cascade_curves)."""
        rows: list[tuple[int, ...]] = []
        f = self.forest
        for c in np.asarray(roots, dtype=np.int64).tolist():
            rel = now - int(pf.p_minute.a[c])
            cur = (int(f.scale.a[c]), int(f.max_depth.a[c]), int(f.max_breadth.a[c]))
            last = self._curves.get(c)
            if last is not None and last[0] >= rel:  # already written up to this minute
                if last[1] != cur:
                    rows.append((c, rel, *cur))
            elif last is not None and c in self._curve_live:
                rows += [(c, m, *last[1]) for m in range(last[0] + 1, rel)]
                rows.append((c, rel, *cur))
            else:
                curve = f.curve(pf, c, rel)
                rows += zip(
                    [c] * (rel + 1),
                    range(rel + 1),
                    curve.scale[0].tolist(),
                    curve.depth[0].tolist(),
                    curve.max_breadth[0].tolist(),
                )
            self._curves[c] = (rel, cur)
            self._ever_tracked.add(c)
        if not final:
            self._curve_live = set(np.asarray(roots, dtype=np.int64).tolist())
        if rows:
            conn.executemany(
                "INSERT OR REPLACE INTO cascade_curve (post_id, minute, scale, depth, max_breadth) VALUES (?,?,?,?,?)",
                rows,
            )
