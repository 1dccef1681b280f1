"""What a journal saves with every step so that a run continues exactly, and continuing from it.

`meta(sim)` is written with each step (the settings, the seed, the generators' states as they
are before the next activation, pending info-action views, the providers' states, the
recommender's weights); `resume(sim, path)` restores a `Simulation` from a journal and activates
the next step's users exactly as the uninterrupted run would have.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import blas
from ..errors import ConfigError
from ..platform import Journal, Platform
from ..platform.journal import read_meta
from ..platform.journal_lock import JournalLock
from .batches import ObsBatch
from .config import check_resumable, pipelined
from .heap import warm_heap


def meta(sim: Any) -> dict | None:
    """Saved with every step: what `resume` needs to continue exactly (generator states as
    they are before the next activation, pending info-action views, provider states);
    None in the training mode (nothing is saved)."""
    if not sim.config.journal:
        return None
    return {
        "config": sim.config,  # (a dataclass: the journal encodes it once, `meta_json`)
        "seed": sim.seed,
        "rng": [g.bit_generator.state for g in sim._generators()],
        "views": [[u, kind, ids.tolist()] for u, (kind, ids) in sim.views.items()],
        "state": {name: fn() for name, fn in sim.state_providers.items()},
        "recsys_weights": (np.asarray(sim.recsys.weights).tolist() if hasattr(sim.recsys, "weights") else None),
    }


def resume(sim: Any, db_path: str) -> ObsBatch:
    """Continue from a journal: restore the platform, generators and pending views, then
    activate the next step's users exactly as the uninterrupted run would have."""

    if not sim.config.journal:
        raise ConfigError("a resumed run goes on writing its journal: resume takes no journal=False")
    sim.close()
    sim.begun = None
    # the writer's lock first: nothing is read while another run writes, and what is read is
    # read in place (a journal this process writes is never copied: `journal_file.read_uri`)
    lock = JournalLock(str(db_path))
    try:
        meta = check_resumable(read_meta(db_path), db_path)
        sim.platform = Platform.from_db(db_path)
    except BaseException:  # the journal is left exactly as it was
        lock.release()
        raise
    warm_heap(sim.platform.n_users)
    blas.load()
    sim.journal = Journal(db_path, lock=lock, pipelined=pipelined(sim.platform.n_users))
    sim.db_path, sim._journal_id = str(db_path), sim.journal.journal_id
    sim.seed = meta.get("seed")
    sim.rng_active, sim.rng_recsys, sim.rng_text = (np.random.default_rng() for _ in range(3))
    sim.recsys.reset(sim.platform, np.random.default_rng(0))  # caches only: rebuilt from state
    for g, state in zip(sim._generators(), meta["rng"]):
        g.bit_generator.state = state
    sim.views = {int(u): (int(kind), np.asarray(ids, dtype=np.int64)) for u, kind, ids in meta.get("views", [])}
    sim.saved_state = meta.get("state", {})
    if meta.get("recsys_weights") is not None and hasattr(sim.recsys, "set_weights"):
        sim.recsys.set_weights(np.asarray(meta["recsys_weights"], dtype=np.float32))
    sim.last_outcome = None
    return sim._activate()
