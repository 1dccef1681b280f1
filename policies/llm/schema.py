r"""Per-agent JSON schema of the actions an LLM user may take right now.

Why per agent: the schema enumerates only the action names the env allows this agent now and
only the post / comment / user ids that appear in *its own* feed view, so that with
constrained decoding (xgrammar in-process, vLLM's structured outputs) every reply that
matches the schema is a valid action for that agent — no hallucinated ids, no missing
arguments.

Shape (``style="anyof"``, the default): ``{"anyOf": [variant, ...]}`` with one closed object
per feasible action, properties in a fixed order ``action, <target id>, text, stance,
reason``, all required, ``additionalProperties: false``. xgrammar turns this into a union
of straight-line rules (the ``action`` const is the first key, so the branch is fixed after
a few tokens) and vLLM's xgrammar backend accepts it as is.

``style="flat"`` is for endpoints whose strict mode demands an object at the root (OpenAI
``strict: true`` refuses a root ``anyOf``): one object with every field required, unused
fields ``null``. A flat reply can pair an action with a null target, so the parser must
(and does) still check it; only ``anyof`` gives "schema-valid implies env-valid".

Strings are bounded with ``minLength``/``maxLength`` (no ``pattern``): xgrammar turns a
bounded string into a native repetition of one character class, cheap to match (about
10 us per token), whereas a counted regex such as ``^.{0,280}$`` costs tens of ms per token
per row with a 49k vocabulary, and xgrammar ignores the length bounds when a pattern is
present. The bound also caps the generated tokens. xgrammar's bounded-string class
(``[^"\\\r\n]``, no escapes) still admits raw control characters; :func:`xgrammar_ebnf`
tightens it for the in-process backends (no control characters, first character not blank),
and the parser accepts raw control characters in strings (``json.loads(strict=False)``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from oasis_gym.actions import (
    ACTION_BY_NAME,
    COMMENT_TARGET,
    POST_TARGET,
    TEXT_ACTIONS,
    USER_TARGET,
    ActionType,
)

# Actions whose text states an opinion get a stance in [-1, 1] (polarization metrics).
STANCE_ACTIONS = frozenset({ActionType.CREATE_POST, ActionType.QUOTE_POST, ActionType.CREATE_COMMENT})
QUERY_ACTIONS = frozenset({ActionType.SEARCH_POSTS, ActionType.SEARCH_USER})
KNOWN_FIELDS = ("action", "post_id", "comment_id", "user_id", "text", "stance", "reason")


@dataclass(frozen=True)
class SchemaConfig:
    """Knobs of the reply schema; shared by schema building and parsing."""

    style: str = "anyof"  # "anyof" | "flat"
    max_text_chars: int = 280  # posts, comments, quotes, report reasons
    max_query_chars: int = 64  # search_posts / search_user queries
    max_reason_chars: int = 80  # 0 drops the "reason" field
    stance: bool = True  # ask for a stance on opinionated actions

    def __post_init__(self) -> None:
        if self.style not in ("anyof", "flat"):
            raise ValueError(f"schema style must be 'anyof' or 'flat', not {self.style!r}")


def reply_token_bound(cfg: SchemaConfig) -> int:
    """Generation budget that fits the longest schema-valid reply at ~1 token per character
    (keys, ids, stance and punctuation included). Why: a reply cut by ``max_tokens`` is
    invalid JSON; with this budget the grammar always closes first in practice (a character
    split into several byte tokens, e.g. an emoji, can still exceed it)."""
    return max(cfg.max_text_chars, cfg.max_query_chars) + cfg.max_reason_chars + 80


def target_field(action: ActionType) -> str | None:
    """Name of the id field an action needs, or None."""
    if action in POST_TARGET:
        return "post_id"
    if action in COMMENT_TARGET:
        return "comment_id"
    if action in USER_TARGET:
        return "user_id"
    return None


def action_fields(action: ActionType, cfg: SchemaConfig) -> list[str]:
    """Fields after "action" that a reply for ``action`` carries, in schema order."""
    fields: list[str] = []
    tgt = target_field(action)
    if tgt:
        fields.append(tgt)
    if action in TEXT_ACTIONS:
        fields.append("text")
    if cfg.stance and action in STANCE_ACTIONS:
        fields.append("stance")
    if cfg.max_reason_chars > 0:
        fields.append("reason")
    return fields


def text_limit(action: ActionType, cfg: SchemaConfig) -> int:
    """Maximum characters of an action's text (search queries are shorter)."""
    return cfg.max_query_chars if action in QUERY_ACTIONS else cfg.max_text_chars


@dataclass(frozen=True)
class VisibleIds:
    """Ids an agent saw in its feed view, mapped to the slots the env expects back."""

    posts: dict[int, int]  # post_id -> post slot
    comments: dict[int, tuple[int, int]]  # comment_id -> (post slot, comment slot)
    users: dict[int, int]  # user_id -> user slot


def visible_ids(view: dict) -> VisibleIds:
    """Collect the ids of a feed view; first occurrence wins for duplicates."""
    posts: dict[int, int] = {}
    comments: dict[int, tuple[int, int]] = {}
    for i, p in enumerate(view.get("posts") or ()):
        pslot = int(p.get("slot", i))
        posts.setdefault(int(p["post_id"]), pslot)
        for j, c in enumerate(p.get("top_comments") or ()):
            comments.setdefault(int(c["comment_id"]), (pslot, int(c.get("slot", j))))
    users: dict[int, int] = {}
    for i, u in enumerate(view.get("users") or ()):
        users.setdefault(int(u["user_id"]), int(u.get("slot", i)))
    return VisibleIds(posts, comments, users)


def feasible_actions(view: dict, ids: VisibleIds | None = None) -> list[ActionType]:
    """Allowed actions that have something to act on; never empty (do_nothing)."""
    ids = ids or visible_ids(view)
    have = {"post_id": bool(ids.posts), "comment_id": bool(ids.comments), "user_id": bool(ids.users)}
    out: list[ActionType] = []
    for name in view.get("allowed_actions") or ():
        act = ACTION_BY_NAME.get(name)
        if act is None or act in out:
            continue
        tgt = target_field(act)
        if tgt is None or have[tgt]:
            out.append(act)
    return out or [ActionType.DO_NOTHING]


def _string(max_chars: int, min_chars: int = 0) -> dict[str, Any]:
    return {"type": "string", "minLength": min_chars, "maxLength": max_chars}


def _field_schema(field: str, action: ActionType, ids: VisibleIds, cfg: SchemaConfig) -> dict[str, Any]:
    if field == "post_id":
        return {"enum": list(ids.posts)}
    if field == "comment_id":
        return {"enum": list(ids.comments)}
    if field == "user_id":
        return {"enum": list(ids.users)}
    if field == "text":
        return _string(text_limit(action, cfg), 1)
    if field == "stance":
        return {"type": "number", "minimum": -1, "maximum": 1}
    if field == "reason":
        return _string(cfg.max_reason_chars)
    raise KeyError(field)


def _variant(action: ActionType, ids: VisibleIds, cfg: SchemaConfig) -> dict[str, Any]:
    fields = action_fields(action, cfg)
    props: dict[str, Any] = {"action": {"const": action.name.lower()}}
    for f in fields:
        props[f] = _field_schema(f, action, ids, cfg)
    return {"type": "object", "properties": props, "required": ["action", *fields], "additionalProperties": False}


def _flat(actions: list[ActionType], ids: VisibleIds, cfg: SchemaConfig) -> dict[str, Any]:
    """One closed object, every field required and nullable where an action may not use it."""
    names = [a.name.lower() for a in actions]
    longest = max((text_limit(a, cfg) for a in actions if a in TEXT_ACTIONS), default=cfg.max_text_chars)
    props: dict[str, Any] = {"action": {"enum": names}}
    for field, pool in (("post_id", ids.posts), ("comment_id", ids.comments), ("user_id", ids.users)):
        props[field] = {"enum": [*pool, None]}
    props["text"] = {"anyOf": [_string(longest), {"type": "null"}]}
    if cfg.stance:
        props["stance"] = {"anyOf": [{"type": "number", "minimum": -1, "maximum": 1}, {"type": "null"}]}
    if cfg.max_reason_chars > 0:
        props["reason"] = _string(cfg.max_reason_chars)
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def build_schema(view: dict, cfg: SchemaConfig | None = None) -> dict[str, Any]:
    """JSON schema of the replies valid for this agent now (see module doc)."""
    cfg = cfg or SchemaConfig()
    ids = visible_ids(view)
    actions = feasible_actions(view, ids)
    if cfg.style == "flat":
        return _flat(actions, ids, cfg)
    variants = [_variant(a, ids, cfg) for a in actions]
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


_CLASS = '(([^\\"\\\\\\r\\n]))'  # xgrammar's bounded-string character class
_TIGHT = '(([^\\0-\\x1f\\"\\\\]))'  # ... without control characters
_FIRST = '[^\\0-\\x20\\"\\\\]'  # first char of a non-empty string: not blank
_NONEMPTY = re.compile(r"(\w+_characters)\{1, (\d+)\}")


def xgrammar_ebnf(schema: dict, *, compact: bool = True) -> str | None:
    """xgrammar EBNF for ``schema`` with tightened strings, or None if xgrammar's text form
    is not the one this was written against (callers then fall back to the JSON schema).

    Why: with the JSON schema alone a random or odd model can emit raw control characters
    or a blank-only text; the tightened grammar makes every matching reply an env-valid
    action. Needs xgrammar (imported lazily).
    """
    import xgrammar as xgr

    g = xgr.Grammar.from_json_schema(
        json.dumps(schema), any_whitespace=False, separators=(",", ":") if compact else None, strict_mode=True
    )
    text = str(g)
    if _CLASS not in text:
        return None
    text = text.replace(_CLASS, _TIGHT)
    return _NONEMPTY.sub(lambda m: f"{_FIRST} {m.group(1)}{{0, {int(m.group(2)) - 1}}}", text)
