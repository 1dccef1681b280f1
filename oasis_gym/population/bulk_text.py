"""Many synthetic profile texts at once, each the exact string its one-at-a-time renderer
gives (`IdStrings`, `ProfileStrings` in model.py): what a 10M-user journal writes in its
first commit. Per text, one f-string over pieces computed for all users by numpy (the
topics text per distinct interest mask, the opinion's lean and its ``+.2f`` figure), so
about 0.3 us a persona instead of ~5 us."""

from __future__ import annotations

import re

import numpy as np

from .topics import _topics_text

ROLES = ("an ordinary user", "an influential account with many followers")
LEANS = ("strongly agree", "lean towards agreeing", "strongly disagree", "lean towards disagreeing", "are undecided")


def lean_index(opinion: np.ndarray) -> np.ndarray:
    """The index in LEANS of each opinion (the thresholds of `ProfileStrings._render`)."""
    op = np.asarray(opinion, dtype=np.float64)
    return np.select([op > 0.6, op > 0.2, op < -0.6, op < -0.2], [0, 1, 2, 3], default=4)


def signed_2f(values: np.ndarray) -> list[str]:
    """``f"{float(v):+.2f}"`` of each value, the exact text: rounded through integers, and
    those within a hair of a rounding boundary (where x * 100 in floating point may round
    the other way than the exact decimal expansion Python formats) formatted by Python."""
    x = np.asarray(values, dtype=np.float64)
    scaled = x * 100.0
    cents = np.round(scaled)
    table = {c: f"{c / 100:+.2f}" for c in range(-100, 101)}
    table[0] = "+0.00"
    out = np.empty(len(x), dtype=object)
    ok = np.isfinite(x) & (np.abs(cents) <= 100)
    keys = cents.astype(np.int64, copy=False) if ok.all() else np.where(ok, cents, 0).astype(np.int64)
    out[:] = [table[c] for c in keys.tolist()]
    # Python keeps the sign of a negative figure that rounds to zero ("-0.00")
    exact = ~ok | (np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) < 1e-6) | ((cents == 0) & np.signbit(x))
    for i in np.flatnonzero(exact).tolist():
        out[i] = f"{float(x[i]):+.2f}"
    return out.tolist()


def personas(ids: np.ndarray, interests: np.ndarray, opinion: np.ndarray, is_core: np.ndarray) -> list[str]:
    """`ProfileStrings("persona", ...)._render(i)` for each i of `ids` (rows of the columns)."""
    ids = np.asarray(ids, dtype=np.int64)
    masks, inv = np.unique(np.asarray(interests, dtype=np.uint64)[ids], return_inverse=True)
    topics = np.empty(len(masks), dtype=object)
    topics[:] = [_topics_text(int(m)) for m in masks.tolist()]
    role = np.asarray(ROLES, dtype=object)[np.asarray(is_core, dtype=bool)[ids].astype(np.int64)]
    op = np.asarray(opinion)[ids]
    lean = np.asarray(LEANS, dtype=object)[lean_index(op)]
    return [
        f"You are user {i}, {r}. You are interested in {t}. On contested claims you {lw} (opinion score {o}"
        " on a -1..1 scale)."
        for i, r, t, lw, o in zip(
            ids.tolist(), role.tolist(), topics[inv.reshape(-1)].tolist(), lean.tolist(), signed_2f(op)
        )
    ]


_SIMPLE = re.compile(r"^([^{}]*)\{i\}([^{}]*)$")


def id_texts(template: str, ids: np.ndarray) -> list[str]:
    """``template.format(i=i)`` for each id; a template with one ``{i}`` and no other field is
    joined from its two halves (several times faster than ``str.format``)."""
    ids = np.asarray(ids, dtype=np.int64).tolist()
    simple = _SIMPLE.match(template)
    if simple is None:
        return [template.format(i=i) for i in ids]
    head, tail = simple.groups()
    return [f"{head}{i}{tail}" for i in ids]
