"""Recommender-v4: Recommender-v3 under OASIS's rules: a like, a repost, a report is one per user and post.

Make it with ``gymnasium.make("oasis_gym/Recommender-v4", difficulty="medium")`` (after
`import oasis_gym`), K of them stepped together with
``gymnasium.make_vec("oasis_gym/Recommender-v4", num_envs=K)`` (a native vector env: one
batched numpy step for all K), or import `RecommenderEnv` / `RecommenderVectorEnv`.

| Action space       | `Box(-1.0, 1.0, (72,), float32)` (`ranking="global"`: `(9,)`)  |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (19,), float32)`                                |
| Import             | `gymnasium.make("oasis_gym/Recommender-v4")`                    |

## Description
Recommender-v3 (`envs/recommender_v3.py`: kinds of users that want different feeds,
satisfaction, churn and return, opinion change, campaigns that fake popularity) with the
platform's rules (`oasis_gym.model.tiers.TIERS_V4`, `Dynamics.oasis_rules`). On the platform
(OASIS) a like is a row and a second like of the same post is refused; v1-v3's users have no
such rule: with the default ranking 18-20 % of their likes, 7-8 % of their reposts and 1 % of
their reports repeat a (user, post) pair of the episode (`bench/research/fast_path_repeats.py`, issue 51
finding 1). Here, as on the platform:
- a user likes or reposts a post at most once per episode, and reports it at most once (a post
  once engaged or reported is not reported); a brigader's report counts as its report;
- each campaign bot likes each campaign post once (v3: one like per bot every step of the
  campaign). The bots are accounts: `campaign_amplify` is now the number of bot accounts per
  misinformation account (`V4_BOTS`), each liking a live campaign post once and viewing it twice.

## The amplification constant (`V4_BOTS`)
Under once-per-pair likes v3's lie is capped: with one bot per misinformation account a campaign
post gets one like per bot once, not once every step of the campaign. `bench/research/campaign_signal.py`
measured how many bot accounts per misinformation account say as much as v3's bots (1 000 users,
the default ranking, the tuning seeds 5000-5007 of population 0, never the evaluation seeds
9000+; 8 episodes x 100 steps, 233 campaign steps per tier; load 8.3): the mean popularity
feature of the live campaign posts minus that of the other live posts during campaigns was
0.221 (medium) / 0.209 (hard) in v3, and in v4 with 1, 2, 4, 8, 16 bots 0.096 / 0.081, 0.159 /
0.150, 0.234 / 0.226, 0.312 / 0.305, 0.394 / 0.387. Four bots are nearest in both tiers and
keep what the ranking sees and what the lie does near v3's: the observation's pool popularity
rises by 0.031 / 0.030 during campaigns (v3 0.034 / 0.035), and the misinformation share of
the impressions during campaigns is 0.149 / 0.136 (v3 0.152 / 0.131). So `V4_BOTS = 4`
(`model/tiers.py`), fixed before any v4 policy was tuned or trained.
Checked after (`bench/research/recommender_state_headroom.py --version 4 --difficulty medium --iterations
5 --population 16`, a smaller search than the README's v3 rows; tuned on seeds 5000-5007, scored
on 9000-9019; load 7.0): changing the ranking while a campaign runs still pays, as in v3: told
the campaign, +27.0 [19.0, 35.0] over the tuned per-user constant on held-out seeds (20 of 20
wins) and +23.7 [16.6, 30.8] on the held-out population; a campaign detector on the
observation (AUC 0.95 in sample) +25.8 [16.8, 34.7] and +24.9 [17.4, 32.4]. The tuned change
lowers popularity, recency, reports and like rate during campaigns: the lie still points at
misinformation.

## Action space, observation space, rewards, starting state, episode end, arguments
As Recommender-v3 (W of 8 x 9, the same accepted actions, the same 19 observations, the same
reward, 100 steps, the same arguments). `difficulty` "easy" has no campaigns (v2's easy tier
under the rules).

## Backends
`RecommenderEnv(..., backend="platform", journal=False, db_path=None, overwrite=False,
user_policy=None, policy_users=None)` plays the same episode on the platform itself
(`envs/lockstep.py`'s `use_backend`, `env.resume()`). The platform backend runs the task on a
`Simulation`'s split step (`oasis_gym/world/sim_world.py`): the feeds are the task ranking
(`recsys/task_ranking.py`), the users a user policy, `oasis_gym.TASK_USER_POLICY`
(`policies/task_users.py`: the model's likes, reposts and reports). `user_policy=` (any user policy:
`act(env, obs)` -> `ActionArrays`; ABM, scripted, LLM) drives the users `policy_users` names
(indexes, default all) in the task users' place: their rows are applied and journaled as any user's,
and the world counts what they did (their likes, reposts and reports move the model's counters,
satisfaction and opinions); their posts are theirs (only the task users' posts enter the task's
feeds). The spaces are the same.

## LLM users
`user_policy=LLMPolicy(...)` (`policies/llm_policy.py`; or a `HybridPolicy` of LLM and ABM
users) for the users `policy_users` names. Who visits is still the model's (its visit draw, churn
and return: a churned LLM user stays away until the return draw brings it back). A visiting LLM user reads its feed view
(`Simulation.feed_views`, rendered by `policies/llm/prompt.py`), exactly: its name (`You are
u17.`), the simulated time, the task ranking's feed (up to 10 posts, one line each: `#<platform
post id> u<author> @u<author> [<likes>L <reposts>R]: <text>`, the counts where not zero), its
memory of its last actions (`policies/llm/memory.py`) and the actions allowed now (`do_nothing`,
`create_post`, and with a feed `like_post`, `repost`, `report_post`). A task post's text is written
by the world from the model's attributes (`oasis_gym/world/texts.py`): its topic (a word per model
topic: economy, climate, election, health) as a hashtag and in its sentence, its stance as the
stance-matched template of its bin (`sim/content.py`: strongly against ... strongly for), its
arousal as shouting (arousal >= 0.7: the hashtag in capitals, "!"), e.g. `#climate Not convinced
by climate so far.` or `#ELECTION Firmly with election. It is excellent and a huge win!`; the
template's variant from the episode's seed and the post's id. Not in it: the post's quality and
its misinformation label (a misinformation post reads as any post of its topic, stance and
arousal; the model's users report it at the misinformation rate, an LLM user only from what it
reads). The prompt's default budget (`feed_tokens`) cuts each text of a full feed to about 40
characters; topic and stance come first. The texts are written only where something reads them
(a journal, or `user_policy=`): they feed no number of the model, so episodes are unchanged
(`tests/test_task_texts.py`). From what the platform applied (not what was intended) the model
infers: a like or repost of a feed post is an engagement (a repost also the post its followers
see), a report a report (OASIS's rules: once per user and post); these move the posts' counters
the ranking and the moderator's queue read, the user's history summaries (engagement rate,
arousal affinity), its session value, so its satisfaction and churn, and its opinion (pulled
toward the stances it engaged). An LLM user's own posts are journaled as its own and, from the
next step, are task posts in the feeds, with the model's attributes by a stated rule (topic named
in the text else drawn around the author's interests, stance around the author's opinion,
misinformation only for a misinformation account; `oasis_gym/world/user_posts.py`).
`tests/test_transfer.py` plays a policy trained on the fast path (`train/task_policy.py`) beside
tiny-LLM users and checks what the model counted.

## Version history
- v4 (issue 57): `info` as Recommender-v1's (its Info): the hidden truth's values only with
  `privileged_info=True`; observations and rewards unchanged.
- v4 + `backend="platform"` (issue 51, plan commits 15-16): the same episodes on the platform; no result changes.
- v4 (issue 51, plan commit 12): v3's dynamics under OASIS's rules (once per pair; bots as
  accounts, `V4_BOTS` of them per misinformation account). A new id because every result
  changes: v1-v3 keep theirs (tests/test_pins.py); v4 is the form a platform backend can
  reproduce.
- v3: `envs/recommender_v3.py` (unchanged).
"""

from __future__ import annotations

from . import recommender_v1
from .lockstep import check_backend, check_policy_users, use_backend
from .recommender_v1 import RecommenderReward

__all__ = ["RecommenderEnv", "RecommenderVectorEnv", "RecommenderReward"]


class RecommenderEnv(recommender_v1.RecommenderEnv):
    """One Recommender-v4 episode at a time (module docstring)."""

    version = 4

    def __init__(self, difficulty="medium", users=1000, population_seed=0, max_steps=100, ranking="per_user",
                 reward: RecommenderReward | None = None, render_mode=None, backend="fast", journal=False,
                 db_path=None, overwrite=False, user_policy=None, policy_users=None, *,
                 privileged_info=False):  # fmt: skip
        check_backend(backend, journal, db_path)
        check_policy_users(backend, users, user_policy, policy_users)
        super().__init__(
            difficulty, users, population_seed, max_steps, ranking, reward, render_mode, privileged_info=privileged_info
        )
        self.world = use_backend(self.task, backend, journal, db_path, overwrite, user_policy, policy_users)


class RecommenderVectorEnv(recommender_v1.RecommenderVectorEnv):
    """`num_envs` Recommender-v4 episodes stepped together (module docstring)."""

    version = 4
