"""Strict validation of an LLM reply against the agent's own feed view.

Why strict: with constrained decoding every reply already matches the schema, so the checks
here only bite on unconstrained paths (an OpenAI-compatible endpoint that ignores
``response_format``, an interrupted generation). Anything that is not exactly a valid
action becomes ``do_nothing`` with a recorded reason, so a bad reply can never act on
something the agent did not see.

Decisions (documented contract):

* Whitespace around the reply and one surrounding Markdown code fence (```json ... ```) are
  stripped; nothing else is "repaired" (no JSON extraction from prose).
* ``empty``: nothing left after stripping. ``truncated``: the backend said it hit the token
  limit, or the JSON breaks off at the end of the text. ``not_json``: any other decode error.
  ``not_object``: valid JSON that is not an object.
* Unknown keys (not one of ``action, post_id, comment_id, user_id, text, stance, reason``)
  reject the reply (``extra_fields``): the schema is closed, so such a reply did not follow
  it. Known keys that the chosen action does not use are ignored (the "flat" schema style
  sends them as null).
* Ids must be JSON integers (not strings, floats or booleans) that appear in the agent's own
  view: ``unseen_post`` / ``unseen_comment`` / ``unseen_user`` otherwise.
* Text must be a non-blank string within the schema's limit; a longer one (say 10k
  characters) is rejected (``text_too_long``), not truncated: a cut text is content the
  model never wrote, and the env would reject it anyway. Raw control characters inside
  JSON strings are tolerated when decoding (``strict=False``: xgrammar's JSON-schema
  strings admit them); text holding NUL or lone surrogates (what the env rejects) is
  ``text_invalid``.
* ``stance`` must be a finite number in [-1, 1] when the action carries one.
* ``reason`` is informative only: optional, non-strings ignored, cut to the schema limit.
* Any reply text at all yields a result, never an exception (a model can emit anything):
  integers too long for Python's int parser (over 4,300 digits) decode as +-inf, so they are
  ``bad_post_id`` ids or out-of-range stances; very deep nesting is ``not_json``; a reply
  that is not a string is ``not_text``. A last-resort guard turns any other exception into
  ``parse_failed`` (a counted invalid reply; no known input reaches it).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field

from oasis_gym.actions import ACTION_BY_NAME, ActionType

from .schema import (
    KNOWN_FIELDS,
    SchemaConfig,
    VisibleIds,
    action_fields,
    feasible_actions,
    text_limit,
    visible_ids,
)


def empty_action(reason: str = "") -> dict:
    """The env action dict for do_nothing; unused fields 0 / ""."""
    return {
        "type": int(ActionType.DO_NOTHING),
        "post": 0,
        "comment": 0,
        "user": 0,
        "text": "",
        "stance": None,
        "reason": reason,
    }


@dataclass
class ParseResult:
    """The env action of one reply, whether it was valid, and why not."""

    action: dict
    ok: bool
    error: str = ""  # "" when ok, else the rejection code


@dataclass
class ParseStats:
    """Counters over many parses: ok count and one counter per rejection code."""

    ok: int = 0
    errors: Counter = field(default_factory=Counter)

    def add(self, res: ParseResult) -> None:
        """Count one parse result."""
        if res.ok:
            self.ok += 1
        else:
            self.errors[res.error] += 1

    @property
    def invalid(self) -> int:
        """Replies that were not valid actions."""
        return sum(self.errors.values())

    def as_dict(self) -> dict:
        """``ok``, ``invalid`` and one ``invalid_<reason>`` count per reason."""
        return {"ok": self.ok, "invalid": self.invalid, **{f"invalid_{k}": v for k, v in sorted(self.errors.items())}}


class _Reject(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _strip(reply: str) -> str:
    s = reply.strip()
    if s.startswith("```") and s.endswith("```") and len(s) >= 6:
        s = s[3:-3]
        if s[:4].lower() == "json":
            s = s[4:]
        s = s.strip()
    return s


_MAX_INT_DIGITS = 40  # longer integer literals decode as +-inf (no id or stance is that long)


def _parse_int(s: str):
    """json's int hook: Python refuses int() of over 4,300 digits (ValueError), and huge ints
    overflow float(); neither can be a valid id or stance, so they become +-inf."""
    if len(s.lstrip("-")) > _MAX_INT_DIGITS:
        return -math.inf if s.startswith("-") else math.inf
    return int(s)


def _decode(reply: str | None, finished: bool) -> dict:
    if reply is not None and not isinstance(reply, str):
        raise _Reject("not_text")
    if reply is None or not _strip(reply):
        raise _Reject("empty")
    s = _strip(reply)
    try:
        obj = json.loads(s, strict=False, parse_int=_parse_int)
    except json.JSONDecodeError as e:
        if not finished or e.pos >= len(s.rstrip()) - 1 or "Unterminated" in e.msg:
            raise _Reject("truncated") from None
        raise _Reject("not_json") from None
    except RecursionError:
        raise _Reject("not_json") from None
    if not isinstance(obj, dict):
        raise _Reject("not_object")
    return obj


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _id(obj: dict, key: str, pool: dict, code: str):
    v = obj.get(key)
    if not _is_int(v):
        raise _Reject(f"bad_{key}" if v is not None else f"missing_{key}")
    if v not in pool:
        raise _Reject(code)
    return pool[v]


def _text(v, limit: int) -> str:
    if not isinstance(v, str):
        raise _Reject("missing_text" if v is None else "bad_text")
    if not v.strip():
        raise _Reject("text_empty")
    if len(v) > limit:
        raise _Reject("text_too_long")
    if "\x00" in v:
        raise _Reject("text_invalid")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise _Reject("text_invalid") from None
    return v


def _stance(v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Reject("missing_stance" if v is None else "bad_stance")
    if not (isinstance(v, int) or math.isfinite(v)) or not -1 <= v <= 1:  # no float() of huge ints
        raise _Reject("stance_out_of_range")
    return float(v)


def _build(obj: dict, view: dict, ids: VisibleIds, cfg: SchemaConfig) -> dict:
    extra = [k for k in obj if k not in KNOWN_FIELDS]
    if extra:
        raise _Reject("extra_fields")
    name = obj.get("action")
    if not isinstance(name, str) or name not in ACTION_BY_NAME:
        raise _Reject("unknown_action")
    act = ACTION_BY_NAME[name]
    if act not in feasible_actions(view, ids):
        raise _Reject("action_not_allowed")
    out = empty_action()
    out["type"] = int(act)
    for f in action_fields(act, cfg):
        if f == "post_id":
            out["post"] = _id(obj, f, ids.posts, "unseen_post")
        elif f == "comment_id":
            out["post"], out["comment"] = _id(obj, f, ids.comments, "unseen_comment")
        elif f == "user_id":
            out["user"] = _id(obj, f, ids.users, "unseen_user")
        elif f == "text":
            out["text"] = _text(obj.get("text"), text_limit(act, cfg))
        elif f == "stance":
            out["stance"] = _stance(obj.get("stance"))
    reason = obj.get("reason")
    if isinstance(reason, str) and cfg.max_reason_chars > 0:
        out["reason"] = reason[: cfg.max_reason_chars]
    return out


def parse_reply(
    reply: str | None, view: dict, cfg: SchemaConfig | None = None, *, finished: bool = True
) -> ParseResult:
    """Validate one reply for one agent; invalid -> do_nothing with the error code.

    ``finished`` is False when the backend stopped on its token limit (finish_reason
    "length"): a reply that then fails to decode is reported as ``truncated``; one that
    happens to be complete (the grammar closed exactly at the limit) is accepted.
    """
    cfg = cfg or SchemaConfig()
    try:
        obj = _decode(reply, finished)
        return ParseResult(_build(obj, view, visible_ids(view), cfg), True)
    except _Reject as r:
        return ParseResult(empty_action(f"invalid: {r.code}"), False, r.code)
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        # last resort: a model's reply must never stop the run (the fuzz tests find none)
        return ParseResult(empty_action("invalid: parse_failed"), False, "parse_failed")
