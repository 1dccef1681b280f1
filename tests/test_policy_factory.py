"""The one policy factory (policies/factory.py) and ActionArrays' missing-column fill."""

from __future__ import annotations

import numpy as np
import pytest

from oasis_gym.actions import ActionType as A
from oasis_gym.errors import ConfigError
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.base import RandomPolicy
from oasis_gym.policies.factory import USER_POLICIES, llm_backend, user_policy
from oasis_gym.policies.hybrid import HybridPolicy
from oasis_gym.sim import ActionArrays


def test_user_policy_by_kind():
    made = []

    def llm():
        made.append(RandomPolicy())  # stands in for an LLM policy: only routing is checked
        return made[-1]

    assert isinstance(user_policy("abm"), ABMPolicy)
    assert isinstance(user_policy("random"), RandomPolicy)
    assert not made  # the LLM is made only for the kinds that use it
    assert user_policy("llm", llm=llm) is made[-1]
    abm = ABMPolicy()
    hybrid = user_policy("hybrid", llm=llm, abm=abm, core_ids=[3, 1])
    assert isinstance(hybrid, HybridPolicy) and hybrid.default is abm
    ((core, ids),) = hybrid.routes
    assert core is made[-1] and ids.dtype == np.int64 and ids.tolist() == [1, 3]
    assert set(USER_POLICIES) == {"hybrid", "abm", "random", "llm"}


def test_user_policy_bad_settings_are_config_errors():
    with pytest.raises(ConfigError, match="unknown policy 'gpt'"):
        user_policy("gpt")
    with pytest.raises(ConfigError, match="core_ids"):
        user_policy("hybrid", llm=RandomPolicy)


def test_llm_backend_setting_errors_stay_value_errors():
    pytest.importorskip("oasis_gym.policies.llm_policy")
    # a wrong setting (not a missing package): the caller names the flag
    with pytest.raises(ValueError, match="endpoint"):
        llm_backend("openai")
    with pytest.raises(ValueError, match="unknown LLM backend"):
        llm_backend("gpt")


def test_action_arrays_column_fills_what_is_missing():
    acts = ActionArrays(np.array([4, 2]), np.array([A.LIKE_POST, A.CREATE_POST]), post=[1, 0], stance=[0.5, np.nan])
    assert acts.column("post").dtype == np.int64 and acts.column("post").tolist() == [1, 0]
    assert acts.column("comment").tolist() == [0, 0] and acts.column("user").dtype == np.int64
    assert acts.column("stance").dtype == np.float32 and acts.column("stance")[0] == np.float32(0.5)
    assert np.isnan(ActionArrays(np.array([1]), np.array([0])).column("stance")).all()
    assert acts.texts() == [None, None]
    col = acts.column("type")
    col[0] = A.DO_NOTHING  # a new array: the batch is unchanged
    assert acts.type[0] == A.LIKE_POST
    joined = ActionArrays.concat([acts, ActionArrays(np.array([7]), np.array([A.CREATE_POST]), text=["hi"])])
    assert joined.users.tolist() == [4, 2, 7] and joined.post.tolist() == [1, 0, 0]
    assert joined.text == [None, None, "hi"] and np.isnan(joined.stance[1:]).all()
