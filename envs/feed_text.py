"""A user's feed view (`SocialMediaEnv.feed_view`) as text a person reads (`feed_text`).

The view is what an LLM user's prompt is built from (`policies.llm.prompt.PromptBuilder`
renders it for the model, cut to a token budget); this is the whole view, untruncated, for
people: who the user is and when, every post of the feed with its author, counts, quote and
top comments, the other users in view, the actions the user may take.
"""

from __future__ import annotations

__all__ = ["render_view"]


def _counts(item: dict, names: tuple[str, ...]) -> str:
    parts = [f"{int(item.get(n) or 0)} {n}" for n in names if item.get(n)]
    return f" ({', '.join(parts)})" if parts else ""


def render_view(view: dict) -> str:
    """`view` (a dict of `feed_view`) as lines of text."""
    handle = view.get("user_name")
    name = view.get("name") or handle or view.get("agent", "")
    head = f"{view.get('agent', '')}: {name}" + (f" (@{handle})" if handle and handle != name else "")
    lines = [f"{head}, step {view.get('step')}, {view.get('time')}"]
    if view.get("persona"):
        lines.append(str(view["persona"]))
    posts = list(view.get("posts") or ())
    lines.append(f"Feed ({len(posts)} posts):" if posts else "Feed: empty")
    for p in posts:
        label = f" [{p['label']}]" if p.get("label") else ""
        counts = _counts(p, ("likes", "dislikes", "reposts", "comments"))
        lines.append(f"  post {p['post_id']} by @{p.get('author_name', p.get('author_id'))}{counts}{label}:")
        lines.append(f"    {p.get('text', '')}")
        if p.get("quoted_text"):
            lines.append(f"    quoting: {p['quoted_text']}")
        for c in p.get("top_comments") or ():
            by = c.get("author_name", c.get("author_id", "?"))
            lines.append(f"    comment {c.get('comment_id')} by @{by}{_counts(c, ('likes',))}: {c.get('text', '')}")
    users = list(view.get("users") or ())
    if users:
        lines.append("Users in view:")
        for u in users:
            lines.append(f"  @{u.get('user_name', u.get('user_id'))}" + (f": {u['bio']}" if u.get("bio") else ""))
    if view.get("memory"):
        lines.append("Recent actions: " + "; ".join(map(str, view["memory"])))
    if view.get("allowed_actions"):
        lines.append("May do: " + ", ".join(view["allowed_actions"]))
    return "\n".join(lines)
