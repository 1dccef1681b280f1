"""Synthetic feed views (the env's data contract) for tests and benchmarks.

Why here: the LLM layer is developed and benchmarked without the env; these views have the
same shape as the env's (see the package doc) with realistic text lengths, drawn from an
explicit numpy Generator so a seed fixes them.
"""

from __future__ import annotations

import numpy as np

from oasis_gym.actions import ACTION_NAMES, TWITTER_DEFAULT_ACTIONS, ActionType

_WORDS = (
    "the new policy on city transport is finally out and people are not happy about the fare "
    "increase while others say it is overdue local news reports that the mayor will speak "
    "tomorrow morning about climate goals and housing prices rising fast in every district "
    "scientists published a study on sleep coffee and memory that got shared widely online "
    "fans celebrate the match result as the team wins its third title in a row great game "
    "a viral video claims the moon landing was staged but experts quickly debunked it again"
).split()

_NAMES = ("Ann", "Ben", "Chen", "Dana", "Eli", "Fatima", "Goran", "Hana", "Ivan", "Jade", "Kofi", "Lena")
_PERSONAS = (
    "A nurse who follows health news, shares practical tips and distrusts sensational headlines.",
    "A college student into football and memes; posts often, likes quickly, rarely reads links.",
    "A retired teacher interested in local politics and history; polite but firm in debates.",
    "A software engineer who loves science stories and calls out misinformation with sources.",
)
_LABELS = (None, None, None, None, "misleading")


def _sentence(rng: np.random.Generator, lo: int, hi: int) -> str:
    n = int(rng.integers(lo, hi + 1))
    return " ".join(_WORDS[i] for i in rng.integers(0, len(_WORDS), n)).capitalize() + "."


def synthetic_view(
    rng: np.random.Generator,
    agent_id: int,
    *,
    n_posts: int = 10,
    n_users: int = 5,
    step: int = 0,
    allowed=TWITTER_DEFAULT_ACTIONS,
    comments: bool = True,
    id_offset: int = 0,
) -> dict:
    """One feed view; ids are drawn so different agents see different (overlapping) items."""
    post_ids = np.sort(rng.choice(np.arange(1, 500), n_posts, replace=False)) + id_offset
    posts = []
    cid = int(rng.integers(1, 1000)) + id_offset
    for slot, pid in enumerate(post_ids.tolist()):
        author = int(rng.integers(0, 200))
        top = []
        if comments:
            for cslot in range(int(rng.integers(0, 3))):
                top.append(
                    {
                        "slot": cslot,
                        "comment_id": cid,
                        "author_name": f"user{int(rng.integers(0, 200))}",
                        "text": _sentence(rng, 4, 10),
                        "likes": int(rng.integers(0, 4)),
                    }
                )
                cid += 1
        posts.append(
            {
                "slot": slot,
                "post_id": int(pid),
                "author_id": author,
                "author_name": f"user{author}",
                "text": _sentence(rng, 8, 22),
                "quoted_text": _sentence(rng, 5, 10) if rng.random() < 0.1 else None,
                "likes": int(rng.integers(0, 50)),
                "dislikes": int(rng.integers(0, 3)),
                "reposts": int(rng.integers(0, 10)),
                "comments": len(top) + int(rng.integers(0, 3)),
                "label": _LABELS[int(rng.integers(0, len(_LABELS)))],
                "top_comments": top,
            }
        )
    users = []
    for slot, uid in enumerate(rng.choice(np.arange(200, 400), n_users, replace=False).tolist()):
        users.append({"slot": slot, "user_id": int(uid), "user_name": f"user{uid}", "bio": _sentence(rng, 3, 8)})
    names = [a if isinstance(a, str) else ACTION_NAMES[int(a)] for a in allowed]
    return {
        "agent": f"user_{agent_id}",
        "user_id": agent_id,
        "user_name": f"user{agent_id}",
        "name": _NAMES[agent_id % len(_NAMES)],
        "persona": _PERSONAS[agent_id % len(_PERSONAS)],
        "step": step,
        "time": f"2026-01-01 {8 + step // 20:02d}:{(3 * step) % 60:02d}",
        "allowed_actions": names,
        "posts": posts,
        "users": users,
        "memory": [f"step {max(0, step - k)}: liked post {int(post_ids[k % n_posts])}" for k in range(min(step, 3))],
    }


def synthetic_views(n_agents: int, seed: int = 0, **kw) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [synthetic_view(rng, i, **kw) for i in range(n_agents)]


ALL_USER_ACTIONS = tuple(a for a in ActionType if a != ActionType.SIGN_UP)
