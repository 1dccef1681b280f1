"""Render an agent's feed view into chat messages.

Layout, chosen for prefix caching: message 0 (system) holds the shared instructions and the
action catalogue of the *platform's* action set; it is byte-identical for every agent and
every step, so vLLM's automatic prefix caching (and any server-side cache) computes its KV
once. Everything agent-specific follows in message 1 (user): persona, memory, time, feed,
visible users and the actions allowed now.

The feed is compact: one line per post (id, author, text, non-zero counts, label), an
optional quoted-text line, then up to ``comments_per_post`` top comments indented. Texts
are cut to fixed character budgets so a 10-post feed stays around 500 tokens.

Customization: ``system_prompt`` replaces the shared text; ``user_template`` is either a
``str.format`` template over the section names in :data:`SECTION_NAMES` plus any top-level
key of the view, or a callable ``(view, sections) -> str``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from oasis_gym.actions import ACTION_NAMES, ActionType

from .schema import SchemaConfig, action_fields, feasible_actions

SECTION_NAMES = ("profile", "memory", "time", "feed", "users", "allowed")

DEFAULT_USER_TEMPLATE = "{profile}\n{memory}\n{time}\n{feed}\n{users}\n{allowed}"

# OASIS persona fields (Twitter CSV: name, username, description, user_char; Reddit JSON:
# realname, username, bio, persona, age, gender, mbti, country, profession, interested_topics).
_PERSONA_KEYS = ("persona", "user_char")
_BIO_KEYS = ("bio", "description")
_DEMO_KEYS = ("age", "gender", "mbti", "country", "profession")

UserTemplate = str | Callable[[dict, dict], str]


def _cut(text: str | None, n: int) -> str:
    """One-line text of at most n characters (ellipsis when cut)."""
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: max(0, n - 1)].rstrip() + "…"


def _field(view: dict, keys: Iterable[str]):
    prof = view.get("profile") if isinstance(view.get("profile"), dict) else {}
    for k in keys:
        for src in (view, prof):
            v = src.get(k)
            if v not in (None, "", [], ()):
                return v
    return None


class PromptBuilder:
    """Turns feed views into chat messages (see module doc)."""

    def __init__(
        self,
        action_set: Sequence[ActionType] | None = None,
        *,
        schema_config: SchemaConfig | None = None,
        system_prompt: str | None = None,
        user_template: UserTemplate | None = None,
        max_post_chars: int = 140,
        max_comment_chars: int = 80,
        comments_per_post: int = 2,
        max_persona_chars: int = 300,
        max_bio_chars: int = 40,
        max_users: int = 5,
        memory_items: int = 3,
    ) -> None:
        self.action_set = tuple(action_set) if action_set is not None else tuple(
            a for a in ActionType if a != ActionType.SIGN_UP)
        self.schema_config = schema_config or SchemaConfig()
        self.user_template: UserTemplate = user_template or DEFAULT_USER_TEMPLATE
        self.max_post_chars = max_post_chars
        self.max_comment_chars = max_comment_chars
        self.comments_per_post = comments_per_post
        self.max_persona_chars = max_persona_chars
        self.max_bio_chars = max_bio_chars
        self.max_users = max_users
        self.memory_items = memory_items
        self._system = system_prompt if system_prompt is not None else self._default_system()

    # ---- shared part -------------------------------------------------------------------
    def _catalogue(self) -> list[str]:
        """Actions grouped by the fields they take, in action-code order."""
        groups: dict[tuple[str, ...], list[str]] = {}
        for a in sorted(self.action_set):
            fields = tuple(f for f in action_fields(a, self.schema_config) if f != "reason")
            groups.setdefault(fields, []).append(ACTION_NAMES[a])
        return [f"{', '.join(names)}: {', '.join(f) if f else '-'}" for f, names in groups.items()]

    def _id_line(self) -> str:
        """How feed ids map to reply fields, only for the target kinds this platform uses."""
        kinds = {f for a in self.action_set for f in action_fields(a, self.schema_config)}
        ex = [(k, tag, n) for k, tag, n in (("post_id", "post #", 17), ("comment_id", "comment c", 4),
                                            ("user_id", "user u", 5)) if k in kinds]
        parts = [f'{tag}{n} -> "{k}":{n}' for k, tag, n in ex]
        line = ("Ids are the numbers in your feed: " + ", ".join(parts) + ". ") if parts else ""
        return line + f"text: at most {self.schema_config.max_text_chars} characters."

    def _default_system(self) -> str:
        cfg = self.schema_config
        reason = ', then "reason"' if cfg.max_reason_chars else ""
        lines = [
            "You are a user of a social media platform. Pick exactly one action for this moment.",
            f'Reply with one JSON object only: "action" first, then the fields of that action{reason}.',
            "Actions: fields",
            *self._catalogue(),
            self._id_line(),
        ]
        if cfg.stance:
            lines.append("stance: your opinion, -1 (against) to 1 (for).")
        if cfg.max_reason_chars:
            lines.append("reason: a few words.")
        lines.append("Counts: L likes, D dislikes, R reposts, C comments.")
        lines.append('Example: {"action":"like_post","post_id":17' +
                     (',"reason":"funny"}' if cfg.max_reason_chars else "}"))
        return "\n".join(lines)

    @property
    def system_prompt(self) -> str:
        return self._system

    # ---- per-agent sections --------------------------------------------------------------
    def profile(self, view: dict) -> str:
        name = view.get("name") or view.get("realname") or view.get("user_name") or view.get("agent", "")
        handle = view.get("user_name") or view.get("username")
        head = f"You are {name}" + (f" (@{handle})." if handle and handle != name else ".")
        parts = [head]
        persona = _field(view, _PERSONA_KEYS)
        bio = _field(view, _BIO_KEYS)
        if persona:
            parts.append(_cut(persona, self.max_persona_chars))
        if bio and (not persona or str(bio) not in str(persona)):
            parts.append("Bio: " + _cut(bio, self.max_persona_chars // 2))
        demo = [str(v) for v in (_field(view, (k,)) for k in _DEMO_KEYS) if v is not None]
        topics = _field(view, ("interested_topics",))
        if topics:
            demo.append("interests: " + (", ".join(map(str, topics)) if isinstance(topics, (list, tuple)) else str(topics)))
        if demo:
            parts.append("(" + "; ".join(demo) + ")")
        return " ".join(parts)

    def memory(self, view: dict, entries: Sequence[str] | None = None) -> str:
        items = list(entries if entries is not None else view.get("memory") or ())[-self.memory_items:]
        return "Your recent actions: " + "; ".join(_cut(e, 80) for e in items) if items else ""

    @staticmethod
    def time(view: dict) -> str:
        t = view.get("time")
        return f"Now: {t}" if t is not None else ""

    def _post(self, p: dict) -> list[str]:
        counts = " ".join(f"{int(p.get(k) or 0)}{c}" for k, c in
                          (("likes", "L"), ("dislikes", "D"), ("reposts", "R"), ("comments", "C"))
                          if int(p.get(k) or 0))
        line = f"#{p['post_id']} @{p.get('author_name', p.get('author_id', '?'))}: {_cut(p.get('text'), self.max_post_chars)}"
        if counts:
            line += f" [{counts}]"
        if p.get("label"):
            line += f" ({p['label']})"
        out = [line]
        if p.get("quoted_text"):
            out.append(f"  quoting: {_cut(p['quoted_text'], self.max_comment_chars)}")
        for c in list(p.get("top_comments") or ())[: self.comments_per_post]:
            cl = f"  c{c['comment_id']} @{c.get('author_name', '?')}: {_cut(c.get('text'), self.max_comment_chars)}"
            if int(c.get("likes") or 0):
                cl += f" [{int(c['likes'])}L]"
            out.append(cl)
        return out

    def feed(self, view: dict) -> str:
        posts = list(view.get("posts") or ())
        if not posts:
            return "Your feed is empty."
        return "Feed:\n" + "\n".join(line for p in posts for line in self._post(p))

    def users(self, view: dict) -> str:
        users = list(view.get("users") or ())[: self.max_users]
        if not users:
            return ""
        return "Users:\n" + "\n".join(
            f"u{u['user_id']} @{u.get('user_name', '?')}" + (f": {_cut(u.get('bio'), self.max_bio_chars)}" if u.get("bio") else "")
            for u in users)

    @staticmethod
    def allowed(view: dict, names: Sequence[str] | None = None) -> str:
        if names is None:
            names = [ACTION_NAMES[a] for a in feasible_actions(view)]
        return "Allowed now: " + ", ".join(names)

    def sections(self, view: dict, memory: Sequence[str] | None = None,
                 allowed: Sequence[str] | None = None) -> dict[str, str]:
        return {"profile": self.profile(view), "memory": self.memory(view, memory), "time": self.time(view),
                "feed": self.feed(view), "users": self.users(view), "allowed": self.allowed(view, allowed)}

    def user_message(self, view: dict, memory: Sequence[str] | None = None,
                     allowed: Sequence[str] | None = None) -> str:
        sec = self.sections(view, memory, allowed)
        if callable(self.user_template):
            return self.user_template(view, sec)
        fields = {k: v for k, v in view.items() if isinstance(k, str)}
        fields.update(sec)
        text = self.user_template.format(**fields)
        return "\n".join(line for line in text.split("\n") if line.strip())  # drop empty sections

    def messages(self, view: dict, memory: Sequence[str] | None = None,
                 allowed: Sequence[str] | None = None) -> list[dict]:
        """Chat messages for one decision: shared system message, then the agent's part."""
        return [{"role": "system", "content": self._system},
                {"role": "user", "content": self.user_message(view, memory, allowed)}]

    def interview_messages(self, view: dict, question: str, memory: Sequence[str] | None = None) -> list[dict]:
        """Free-form, in-character interview (OASIS's interview action)."""
        sec = self.sections(view, memory)
        body = "\n".join(x for x in (sec["profile"], sec["memory"], sec["time"], sec["feed"]) if x)
        return [{"role": "system", "content": "You are a user of a social media platform. "
                 "Answer the interviewer in character, briefly and honestly."},
                {"role": "user", "content": f"{body}\nInterviewer: {question}"}]
