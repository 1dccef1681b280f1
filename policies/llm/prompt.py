"""Render an agent's feed view into chat messages, within a character budget.

Layout, chosen for prefix caching: message 0 (system) holds the shared instructions and the
action catalogue of the *platform's* action set; it is byte-identical for every agent and
every step, so vLLM's automatic prefix caching (and any server-side cache) computes its KV
once. Everything agent-specific follows in message 1 (user): persona, memory, time, feed,
other visible users and the actions allowed now.

Compact feed: one line per post ``#<post_id> u<author_id>[ @handle] [counts] (label): text``,
then an optional ``quoting:`` line and up to ``comments_per_post`` top comments
``c<comment_id> [likes]: text``. Every id the agent may act on (the reply schema's enums)
is printed: post and comment ids on their lines, feed authors as ``u<id>`` on their posts
(the handle is left out when it only restates the id, as OASIS' ``user<id>`` names do),
other visible users (search results) in a ``Users:`` section. Left out to save tokens:
authors' bios (OASIS' feed shows none either), comment authors' handles (a comment view
has no author id, so nothing can be done with them; ``comment_authors=True`` shows them),
counts the platform's actions cannot change, and a comment count that only repeats the
number of comments shown. Ids are digits, one token each with SmolLM2's tokenizer, so they
and the counts are about half of a compact feed's tokens.

Budget: ``feed_tokens`` bounds the feed and users sections together, in estimated tokens:
the markup (ids, counts, "#", "u", brackets; a digit is a token of its own) is measured by
rendering the sections with empty texts and costs :data:`MARKUP_TOKENS_PER_CHAR` per
character; the texts get the rest, costed by :class:`.textfit.TextCost` (prose at
``chars_per_token`` characters per token, 4.5; a digit 1 token, a non-ASCII character 2.5),
so digit soup or emoji cannot blow the budget. When every text fits at its per-item cap
(``max_post_chars``, ``max_comment_chars``, ``max_bio_chars``) it is shown whole (a 3-tweet
feed is); otherwise comments, quoted texts and bios are cut first (one cap for all, so short
ones stay whole) down to half the post cap, then posts and comments shrink together
(comments at half the post cap) down to ``min_post_chars`` / ``min_comment_chars``. Nothing
with an id is ever dropped, so a feed whose markup alone nears the budget (many comments,
searched users) overruns it rather than hiding something the agent could act on.
``feed_tokens=None`` disables the budget (per-item caps only). Cuts end on a word boundary
when one is near, marked with "…". The shared system part lives in :mod:`.catalogue`.

Measured with ``bench/research/prompt_tokens.py`` (views of a real ``Simulation`` over OASIS
profiles and posts, SmolLM2's tokenizer and chat template), defaults, 10-post feeds of
tweet-length posts: about 530 prompt tokens in all under OASIS' Twitter action set (system
part 144, posts cut to ~65 chars), about 555 with a few comments (Twitter plus replies,
system 165, posts ~45 chars); OASIS' Reddit set with comments and searched users is at the
floors, about 595 (system 187).

Customization: ``system_prompt`` replaces the shared text; ``user_template`` is either a
``str.format`` template over the section names in :data:`SECTION_NAMES` plus any top-level
key of the view, or a callable ``(view, sections) -> str``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from oasis_gym.actions import ACTION_NAMES, ActionType

from .catalogue import COUNTS, changeable_counts, system_prompt
from .schema import SchemaConfig, feasible_actions
from .textfit import TextCost, author, cut, field, fill_cap, short_time, squash

SECTION_NAMES = ("profile", "memory", "time", "feed", "users", "allowed")

DEFAULT_USER_TEMPLATE = "{profile}\n{memory}\n{time}\n{feed}\n{users}\n{allowed}"

# OASIS persona fields (Twitter CSV: name, username, description, user_char; Reddit JSON:
# realname, username, bio, persona, age, gender, mbti, country, profession, interested_topics).
_PERSONA_KEYS = ("persona", "user_char")
_BIO_KEYS = ("bio", "description")
_DEMO_KEYS = ("age", "gender", "mbti", "country", "profession")
# Tokens per character of the feed's markup (ids, counts, "#", "u", brackets): measured with
# SmolLM2's tokenizer on real feeds (a digit is a token of its own). Prose is ~4.6 chars/token.
MARKUP_TOKENS_PER_CHAR = 0.8

UserTemplate = str | Callable[[dict, dict], str]


class PromptBuilder:
    """Turns feed views into chat messages (see module doc).

    ``feed_tokens``: estimated-token budget of the feed + users sections (None: no budget);
    ``chars_per_token`` converts it for texts. The ``max_*`` limits cap single texts, the
    ``min_*`` ones are the floors the budget never cuts below. ``counts``: post counts to
    show (default: those the action set can change). ``comment_authors``: show commenters'
    handles.
    """

    def __init__(
        self,
        action_set: Sequence[ActionType] | None = None,
        *,
        schema_config: SchemaConfig | None = None,
        system_prompt: str | None = None,
        user_template: UserTemplate | None = None,
        feed_tokens: int | None = 270,
        chars_per_token: float = 4.5,
        max_post_chars: int = 280,
        max_comment_chars: int = 280,
        min_post_chars: int = 40,
        min_comment_chars: int = 20,
        comments_per_post: int = 2,
        max_persona_chars: int = 300,
        max_bio_chars: int = 40,
        max_users: int = 5,
        memory_items: int = 3,
        max_memory_chars: int = 56,
        counts: Sequence[str] | None = None,
        comment_authors: bool = False,
    ) -> None:
        if feed_tokens is not None and feed_tokens < 0:
            raise ValueError("feed_tokens must be >= 0 or None")
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be > 0")
        if min(max_post_chars, max_comment_chars, min_post_chars, min_comment_chars) < 1:
            raise ValueError("text limits must be >= 1")
        self.action_set = (
            tuple(action_set) if action_set is not None else tuple(a for a in ActionType if a != ActionType.SIGN_UP)
        )
        self.schema_config = schema_config or SchemaConfig()
        self.user_template: UserTemplate = user_template or DEFAULT_USER_TEMPLATE
        self.feed_tokens = feed_tokens
        self.chars_per_token = chars_per_token
        self.max_post_chars = max_post_chars
        self.max_comment_chars = max_comment_chars
        self.min_post_chars = min(min_post_chars, max_post_chars)
        self.min_comment_chars = min(min_comment_chars, max_comment_chars)
        self.comments_per_post = comments_per_post
        self.max_persona_chars = max_persona_chars
        self.max_bio_chars = max_bio_chars
        self.max_users = max_users
        self.memory_items = memory_items
        self.max_memory_chars = max_memory_chars
        # which post counts to show: by default those the platform's actions can change
        self._default_counts = counts is None
        self.counts = tuple(counts) if counts is not None else self._changeable_counts()
        unknown = set(self.counts) - {k for k, _, _ in COUNTS}
        if unknown:
            raise ValueError(f"unknown post counts {sorted(unknown)}: likes, dislikes, reposts, comments")
        self.comment_authors = comment_authors
        self._custom_system = system_prompt is not None
        self._system = system_prompt if system_prompt is not None else self._default_system()

    def _changeable_counts(self) -> tuple[str, ...]:
        return changeable_counts(self.action_set)

    def _default_system(self) -> str:
        return system_prompt(self.action_set, self.schema_config, self.counts)

    def for_action_set(self, action_set: Sequence[ActionType]) -> PromptBuilder:
        """This builder for another platform's action set: same settings, and the catalogue,
        the default counts and the default system prompt of that set."""
        other = copy.copy(self)
        other.action_set = tuple(action_set)
        if self._default_counts:
            other.counts = other._changeable_counts()
        if not self._custom_system:
            other._system = other._default_system()
        return other

    @property
    def system_prompt(self) -> str:
        """The shared system message (identical for every agent and step)."""
        return self._system

    # ---- per-agent sections --------------------------------------------------------------
    def profile(self, view: dict) -> str:
        """ "You are <name> (@handle)." plus persona, bio and demographics."""
        name = view.get("name") or view.get("realname") or view.get("user_name") or view.get("agent", "")
        handle = view.get("user_name") or view.get("username")
        same = handle and squash(handle) == squash(name)  # OASIS' "user_13" / "user13"
        head = f"You are {name}" + (f" (@{handle})." if handle and not same else ".")
        parts = [head]
        persona = field(view, _PERSONA_KEYS)
        bio = field(view, _BIO_KEYS)
        if persona:
            parts.append(cut(persona, self.max_persona_chars))
        if bio and (not persona or str(bio) not in str(persona)):
            parts.append("Bio: " + cut(bio, self.max_persona_chars // 2))
        demo = [str(v) for v in (field(view, (k,)) for k in _DEMO_KEYS) if v is not None]
        topics = field(view, ("interested_topics",))
        if topics:
            demo.append(
                "interests: " + (", ".join(map(str, topics)) if isinstance(topics, (list, tuple)) else str(topics))
            )
        if demo:
            parts.append("(" + "; ".join(demo) + ")")
        return " ".join(parts)

    def memory(self, view: dict, entries: Sequence[str] | None = None) -> str:
        """The agent's last ``memory_items`` actions, one line ("" if none)."""
        items = list(entries if entries is not None else view.get("memory") or ())
        items = items[-self.memory_items :] if self.memory_items > 0 else []
        return "Your recent actions: " + "; ".join(cut(e, self.max_memory_chars) for e in items) if items else ""

    @staticmethod
    def time(view: dict) -> str:
        """``Now: <time>``; an ISO date-time loses its year and seconds ("Jan 1 08:06"):
        the digits of "2026-01-01 08:06:00" cost a token each."""
        t = view.get("time")
        return "" if t is None else f"Now: {short_time(t)}"

    # ---- feed ------------------------------------------------------------------------------
    def _comments(self, p: dict) -> list[dict]:
        return list(p.get("top_comments") or ())[: max(0, self.comments_per_post)]

    def _post_lines(self, p: dict, post_cap: int, comment_cap: int) -> list[str]:
        """``#id u<author> [counts] (label): text``, then quote and comment lines. Metadata
        goes before the text so that a cut text ends its line (and "]:" is one token)."""
        shown = len(self._comments(p))
        counts = " ".join(
            f"{int(p.get(k) or 0)}{c}"
            for k, c, _ in COUNTS
            if k in self.counts and int(p.get(k) or 0) and not (k == "comments" and int(p[k]) <= shown)
        )
        head = f"#{p['post_id']} {author(p.get('author_id'), p.get('author_name'))}"
        if counts:
            head += f" [{counts}]"
        if p.get("label"):
            head += f" ({p['label']})"
        out = [f"{head}: {cut(p.get('text'), post_cap)}"]
        if p.get("quoted_text"):
            out.append(f"  quoting: {cut(p['quoted_text'], comment_cap)}")
        for c in self._comments(p):
            likes = int(c.get("likes") or 0)
            who = f" @{c.get('author_name', '?')}" if self.comment_authors else ""
            out.append(
                f"  c{c['comment_id']}{who}"
                + (f" [{likes}L]" if likes else "")
                + f": {cut(c.get('text'), comment_cap)}"
            )
        return out

    def feed_caps(self, view: dict) -> tuple[int, int]:
        """(post cap, comment cap) in characters for this view under ``feed_tokens`` (see
        module doc). The fixed part (the feed and users sections rendered with empty texts:
        ids, authors, counts) is measured; the rest of the budget goes to the texts. Quoted
        texts and the bios of listed users are cut like comments (bios never beyond
        ``max_bio_chars``)."""
        posts, users = list(view.get("posts") or ()), self._listed_users(view)
        pmax, cmax = self.max_post_chars, self.max_comment_chars
        if self.feed_tokens is None or not (posts or users):
            return pmax, cmax
        markup = (len(self._render(posts, 0, 0)) if posts else 0) + len(self._users_text(users, 0))
        budget = self.feed_tokens - markup * MARKUP_TOKENS_PER_CHAR
        cpt = self.chars_per_token
        pcost = [TextCost(p.get("text"), cpt) for p in posts]
        ccost = [TextCost(p.get("quoted_text"), cpt) for p in posts if p.get("quoted_text")]
        ccost += [TextCost(c.get("text"), cpt) for p in posts for c in self._comments(p)]
        ccost += [TextCost(u.get("bio"), cpt, self.max_bio_chars) for u in users]
        c_floor = min(cmax, max(self.min_comment_chars, pmax // 2))
        c_cap = fill_cap(ccost, budget - sum(t(pmax) for t in pcost), c_floor, cmax)
        if c_cap is not None:  # comments are cut first, down to half the post cap ...
            return pmax, c_cap

        def comment_cap(p: int) -> int:  # ... then posts and comments shrink together
            return min(cmax, max(self.min_comment_chars, p // 2))

        def fits(p: int) -> bool:
            c = comment_cap(p)
            return sum(t(p) for t in pcost) + sum(t(c) for t in ccost) <= budget

        lo, hi = self.min_post_chars, pmax
        if not fits(lo):
            return lo, comment_cap(lo)  # the floors overrun the budget: ids are never dropped
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        return lo, comment_cap(lo)

    def _render(self, posts: list[dict], post_cap: int, comment_cap: int) -> str:
        return "Feed:\n" + "\n".join(line for p in posts for line in self._post_lines(p, post_cap, comment_cap))

    def feed(self, view: dict, caps: tuple[int, int] | None = None) -> str:
        """The posts, one line each plus quote and comment lines, cut to ``caps``."""
        posts = list(view.get("posts") or ())
        if not posts:
            return "Your feed is empty."
        return self._render(posts, *(caps or self.feed_caps(view)))

    def _listed_users(self, view: dict) -> list[dict]:
        """Visible users not already shown as a post's author (search results), deduplicated,
        at most ``max_users``."""
        shown = {int(p["author_id"]) for p in view.get("posts") or () if p.get("author_id") is not None}
        out: list[dict] = []
        for u in view.get("users") or ():
            uid = int(u["user_id"])
            if uid not in shown and len(out) < self.max_users:
                shown.add(uid)
                out.append(u)
        return out

    def _users_text(self, users: list[dict], bio_cap: int) -> str:
        cap = min(bio_cap, self.max_bio_chars)
        lines = [
            author(u["user_id"], u.get("user_name")) + (f": {cut(u['bio'], cap)}" if u.get("bio") else "")
            for u in users
        ]
        return "Users:\n" + "\n".join(lines) if lines else ""

    def users(self, view: dict, comment_cap: int | None = None) -> str:
        """Visible users other than the feed's authors (search results), with short bios."""
        users = self._listed_users(view)
        if not users:
            return ""
        return self._users_text(users, self.feed_caps(view)[1] if comment_cap is None else comment_cap)

    def allowed(self, view: dict, names: Sequence[str] | None = None) -> str:
        """The feasible actions; with the default system prompt, relative to its catalogue
        ("all" / "all except ...") when that is shorter."""
        if names is not None:
            return "Allowed now: " + ", ".join(names)
        acts = feasible_actions(view)
        listed = "Allowed now: " + ", ".join(ACTION_NAMES[a] for a in acts)
        if self._custom_system or not set(acts) <= set(self.action_set):
            return listed
        missing = [ACTION_NAMES[a] for a in sorted(self.action_set) if a not in acts]
        relative = "Allowed now: all" + (" except " + ", ".join(missing) if missing else "")
        return relative if len(relative) < len(listed) else listed

    def sections(
        self, view: dict, memory: Sequence[str] | None = None, allowed: Sequence[str] | None = None
    ) -> dict[str, str]:
        """Each section of the user message by name (see :data:`SECTION_NAMES`)."""
        caps = self.feed_caps(view)
        return {
            "profile": self.profile(view),
            "memory": self.memory(view, memory),
            "time": self.time(view),
            "feed": self.feed(view, caps),
            "users": self.users(view, caps[1]),
            "allowed": self.allowed(view, allowed),
        }

    def user_message(
        self, view: dict, memory: Sequence[str] | None = None, allowed: Sequence[str] | None = None
    ) -> str:
        """The agent-specific message: ``user_template`` over the sections."""
        sec = self.sections(view, memory, allowed)
        if callable(self.user_template):
            return self.user_template(view, sec)
        fields = {k: v for k, v in view.items() if isinstance(k, str)}
        fields.update(sec)
        text = self.user_template.format(**fields)
        return "\n".join(line for line in text.split("\n") if line.strip())  # drop empty sections

    def messages(
        self, view: dict, memory: Sequence[str] | None = None, allowed: Sequence[str] | None = None
    ) -> list[dict]:
        """Chat messages for one decision: shared system message, then the agent's part."""
        return [
            {"role": "system", "content": self._system},
            {"role": "user", "content": self.user_message(view, memory, allowed)},
        ]

    def interview_messages(self, view: dict, question: str, memory: Sequence[str] | None = None) -> list[dict]:
        """Free-form, in-character interview (OASIS's interview action)."""
        sec = self.sections(view, memory)
        body = "\n".join(x for x in (sec["profile"], sec["memory"], sec["time"], sec["feed"]) if x)
        return [
            {
                "role": "system",
                "content": "You are a user of a social media platform. "
                "Answer the interviewer in character, briefly and honestly.",
            },
            {"role": "user", "content": f"{body}\nInterviewer: {question}"},
        ]
