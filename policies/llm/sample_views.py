"""Sample feed views for tests and benchmarks of the LLM layer: synthetic ones and ones of a real run.

Synthetic views (`synthetic_views`) have the env's data contract (see the package doc) with
realistic text lengths, drawn from an explicit numpy Generator so a seed fixes them: the LLM
layer is developed and benchmarked without the env.

Views of a real run (`simulation_views`): a ``Simulation`` over the OASIS Twitter profiles of
False_Business_0.csv, seeded with the Reddit counterfactual posts of counterfactual_36.json
cut to tweet length, a few steps of likes, reposts, comments and user searches (as the action
set allows), then ``Simulation.feed_views``: exactly what production renders into prompts.
The data files are the copies the package ships.
"""

from __future__ import annotations

import json

import numpy as np

from oasis_gym.actions import ACTION_NAMES, TWITTER_DEFAULT_ACTIONS, ActionType
from oasis_gym.population import data_path, load_twitter_csv
from oasis_gym.sim import ActionArrays, Simulation, SimulationConfig

ALL_USER_ACTIONS = tuple(a for a in ActionType if a != ActionType.SIGN_UP)

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
    """`n_agents` synthetic views (agent ids 0..n-1) drawn from one Generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    return [synthetic_view(rng, i, **kw) for i in range(n_agents)]


def tweet(text: str, n: int = 280) -> str:
    """Cut at a word boundary to at most n characters (a tweet)."""
    s = " ".join(text.split())
    return s if len(s) <= n else s[:n].rsplit(" ", 1)[0]


def counterfactual_texts() -> tuple[list[str], list[str]]:
    """(posts, comments) from OASIS' Reddit counterfactual set: selftexts and reply bodies."""
    rows = json.loads(data_path("counterfactual_36.json").read_text())
    posts = [tweet(r["RS"]["selftext"]) for r in rows]
    comments = [tweet(v["body"]) for r in rows for k, v in r.items() if k.startswith("RC")]
    return posts, comments


def simulation_views(
    n_views: int = 8,
    seed: int = 0,
    n_seed_posts: int = 60,
    actions=ALL_USER_ACTIONS,
    comment_rate: float = 0.1,
    search_rate: float = 0.3,
    steps: int = 2,
) -> list[dict]:
    """Feed views of a real Twitter-like run: 10 posts, comments, counts, visible users.

    ``steps`` steps (default two) of random likes, reposts and comments (each user comments with probability
    ``comment_rate`` per step) give the posts counts and top comments; in the last step
    some users search for users ("media"), so their next view lists search results too.
    Only what ``actions`` (the env's action set) allows happens: OASIS' Twitter default has
    no comments and no search. Viewers: users with a full feed (searchers first), longest
    personas first (the heavy end of ordinary users)."""
    rng = np.random.default_rng(seed)
    pop = load_twitter_csv(data_path("False_Business_0.csv"))
    posts, comments = counterfactual_texts()
    picked = rng.choice(len(posts), n_seed_posts, replace=False)

    def setup(sim: Simulation) -> None:
        sim.platform.create_posts(rng.integers(0, pop.n, n_seed_posts), [posts[i] for i in picked])

    codes = tuple(int(a) for a in actions)
    sim = Simulation(
        pop,
        SimulationConfig(platform="twitter", available_actions=codes, activation=1.0, db_path=":memory:"),
        setup=setup,
    )
    obs = sim.reset(seed=seed)
    searched: set[int] = set()
    for step in range(steps):
        n = len(obs.users)
        kind = rng.choice(
            [ActionType.CREATE_COMMENT, ActionType.LIKE_POST, ActionType.REPOST, ActionType.DO_NOTHING],
            n,
            p=[comment_rate, 0.35, 0.1, 0.55 - comment_rate],
        ).astype(np.int64)
        text = [comments[int(i)] for i in rng.integers(0, len(comments), n)]
        if step == steps - 1 and int(ActionType.SEARCH_USER) in codes:
            search = rng.random(n) < search_rate
            kind[search] = ActionType.SEARCH_USER
            for i in np.flatnonzero(search):
                text[i] = "media"
            searched = set(obs.users[search].tolist())
        sim.step(ActionArrays(obs.users, kind, post=rng.integers(0, sim.K, n), text=text))
        obs = sim.obs
    full = [u for r, u in enumerate(obs.users.tolist()) if (obs.post_ids[r] >= 0).all()]
    persona_len = {u: len(sim.platform.u_persona[u] or sim.platform.u_bio[u]) for u in full}
    viewers = sorted(full, key=lambda u: (u not in searched, -persona_len[u], u))[:n_views]
    views = sim.feed_views(np.array(sorted(viewers), dtype=np.int64))
    for v in views:
        v["memory"] = memory_lines(v, rng)
    sim.close()
    return views


def memory_lines(view: dict, rng: np.random.Generator) -> list[str]:
    """Three entries shaped like ``core.describe`` writes them."""
    p = view["posts"]
    step = int(view.get("step", 2))
    return [
        f"step {max(0, step - 2)}: like_post post {p[int(rng.integers(len(p)))]['post_id']}",
        f"step {max(0, step - 1)}: create_comment post {p[0]['post_id']}: " + tweet(p[0]["text"], 60),
        f"step {step}: repost post {p[-1]['post_id']}",
    ]
