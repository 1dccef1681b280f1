"""The shared part of every decision prompt: instructions and the platform's action catalogue.

Why separate: this text is byte-identical for every agent and every step of a platform, so
it comes first and vLLM's prefix cache computes its KV once (see :mod:`.prompt`). It depends
only on the action set, the reply schema's settings and which post counts the feed shows.
"""

from __future__ import annotations

from collections.abc import Sequence

from oasis_gym.actions import ACTION_NAMES, ActionType

from .schema import QUERY_ACTIONS, SchemaConfig, action_fields, text_limit

# Count fields of a post, their letter, and the actions that can make them non-zero.
COUNTS = (
    ("likes", "L", (ActionType.LIKE_POST,)),
    ("dislikes", "D", (ActionType.DISLIKE_POST,)),
    ("reposts", "R", (ActionType.REPOST, ActionType.QUOTE_POST)),
    ("comments", "C", (ActionType.CREATE_COMMENT,)),
)
_EXAMPLE_VALUES = {
    "post_id": "7",
    "comment_id": "4",
    "user_id": "5",
    "text": '"so true"',
    "stance": "0.5",
    "reason": '"funny"',
}
_EXAMPLE_ORDER = (
    ActionType.LIKE_POST,
    ActionType.REPOST,
    ActionType.LIKE_COMMENT,
    ActionType.FOLLOW,
    ActionType.CREATE_POST,
)


def changeable_counts(action_set: Sequence[ActionType]) -> tuple[str, ...]:
    """Post counts that some action of the set can change (the ones worth showing)."""
    return tuple(k for k, _, acts in COUNTS if any(a in action_set for a in acts))


def catalogue(action_set: Sequence[ActionType], cfg: SchemaConfig) -> list[str]:
    """Actions grouped by the fields they take, in action-code order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for a in sorted(action_set):
        fields = tuple(f for f in action_fields(a, cfg) if f != "reason")
        groups.setdefault(fields, []).append(ACTION_NAMES[a])
    return [f"{', '.join(names)}: {', '.join(f) if f else '-'}" for f, names in groups.items()]


def _kinds(action_set: Sequence[ActionType], cfg: SchemaConfig) -> set[str]:
    return {f for a in action_set for f in action_fields(a, cfg)}


def id_line(action_set: Sequence[ActionType], cfg: SchemaConfig) -> str:
    """How feed ids map to reply fields, only for the target kinds this platform uses."""
    kinds = _kinds(action_set, cfg)
    ex = [
        f"{tag}{n} {k} {n}"
        for k, tag, n in (("post", "#", 7), ("comment", "c", 4), ("user", "u", 5))
        if f"{k}_id" in kinds
    ]
    ex[0:1] = [ex[0].replace(" ", " is ", 1)] if ex else []
    return ("Ids: " + ", ".join(ex) + ".") if ex else ""


def fields_line(action_set: Sequence[ActionType], cfg: SchemaConfig) -> str:
    """Text limits (a search query's is shorter) and the stance range."""
    limits = {a: text_limit(a, cfg) for a in action_set if "text" in action_fields(a, cfg)}
    text = ""
    if limits:
        longest = max(limits.values())
        short = {n for a, n in limits.items() if n < longest and a in QUERY_ACTIONS}
        text = f"text: max {longest} chars" + (f" ({min(short)} for search)." if short else ".")
    stance = "stance: -1 against to 1 for." if "stance" in _kinds(action_set, cfg) else ""
    return " ".join(p for p in (text, stance) if p)


def counts_line(counts: Sequence[str]) -> str:
    """Legend of the count letters shown on posts ("Counts: L likes, R reposts.")."""
    legend = [f"{c} {k}" for k, c, _ in COUNTS if k in counts]
    return ("Counts: " + ", ".join(legend) + ".") if legend else ""


def example(action_set: Sequence[ActionType], cfg: SchemaConfig) -> str:
    """One reply in schema order, for an action of this platform (like_post if it has it)."""
    act = next((a for a in _EXAMPLE_ORDER if a in action_set), min(action_set, default=ActionType.DO_NOTHING))
    body = "".join(f',"{f}":{_EXAMPLE_VALUES[f]}' for f in action_fields(act, cfg))
    return f'{{"action":"{ACTION_NAMES[act]}"{body}}}'


def system_prompt(action_set: Sequence[ActionType], cfg: SchemaConfig, counts: Sequence[str]) -> str:
    """The shared prefix: what to reply, the catalogue (action: fields), how feed ids map to
    reply fields, the text/stance ranges, the count letters and one example."""
    reason = ', "reason"' if cfg.max_reason_chars else ""
    lines = [
        "You are a social media user. Choose one action now.",
        f'Reply with JSON: "action", its fields{reason}. E.g. {example(action_set, cfg)}',
        "Actions: fields",
        *catalogue(action_set, cfg),
        id_line(action_set, cfg),
        fields_line(action_set, cfg),
        counts_line(counts),
    ]
    return "\n".join(line for line in lines if line)
