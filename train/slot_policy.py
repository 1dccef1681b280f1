"""A slot-shared actor-critic for MultiDiscrete actions over slot-major observations.

The moderator observes M post slots of F features each (`Box(M * F)`, slot-major) and
picks one of A actions per slot (`MultiDiscrete([A] * M)`). A plain MLP must learn the
same rule ("act on a misinformation post") M times, once per slot position. Here one
small network is shared by all slots: slot i's logits are f([x_i, mean_j x_j, g]) -- its own
features plus the mean over slots and the `n_global` features after the slots (time, the
platform's rates) as context -- and the value is g(mean and max over
slots of h_i). The policy is permutation-equivariant over slots and learns from M
decisions per step. `first_bias` starts every slot's logit of action 0 ("none" for the
moderator) that much higher: with 4 alternatives, bias 3 gives P(none) = 0.83, so the
untrained policy explores a few actions a step instead of acting on 80 % of the posts
(whose action costs swamp the learning signal), and its greedy action is "none".

    PPO(SlotActorCriticPolicy, env, policy_kwargs={"n_slots": 20})
"""

from __future__ import annotations

import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import MultiCategoricalDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn
from torch.distributions import Categorical


class SlotExtractor(nn.Module):
    """(B, M*F) features -> actor latent (B, M*H) per slot, critic latent (B, 2H) pooled."""

    def __init__(self, features_dim: int, n_slots: int, hidden: int, n_global: int = 0):
        super().__init__()
        if (features_dim - n_global) % n_slots or n_global < 0:
            raise ValueError(f"observation size {features_dim} is not n_slots={n_slots} slots + {n_global} globals")
        self.n_slots, self.slot_dim, self.n_global = n_slots, (features_dim - n_global) // n_slots, n_global
        self.latent_dim_pi = n_slots * hidden
        self.latent_dim_vf = 2 * hidden
        width = 2 * self.slot_dim + n_global
        self.pi = nn.Sequential(nn.Linear(width, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.vf = nn.Sequential(nn.Linear(width, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())

    def _slots(self, features: th.Tensor) -> th.Tensor:
        """Per slot: its features, the mean over slots, the global features (after the slots)."""
        b, m = features.shape[0], self.n_slots
        x = features[:, : m * self.slot_dim].reshape(b, m, self.slot_dim)
        parts = [x, x.mean(dim=1, keepdim=True).expand_as(x)]
        if self.n_global:
            parts.append(features[:, m * self.slot_dim :].unsqueeze(1).expand(b, m, self.n_global))
        return th.cat(parts, dim=-1)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        """Per-slot actor latents, flattened slot-major: (B, M*H)."""
        return self._actor(self._slots(features))

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        """Critic latent: mean and max over slots of the per-slot hidden units, (B, 2H)."""
        return self._critic(self._slots(features))

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """(actor latent, critic latent), the slots' inputs built once for both (issue 57: the
        same numbers as the two calls above, one concatenation fewer per forward pass)."""
        slots = self._slots(features)
        return self._actor(slots), self._critic(slots)

    def _actor(self, slots: th.Tensor) -> th.Tensor:
        return self.pi(slots).flatten(1)

    def _critic(self, slots: th.Tensor) -> th.Tensor:
        h = self.vf(slots)
        return th.cat([h.mean(dim=1), h.amax(dim=1)], dim=-1)


class SlotHead(nn.Module):
    """Shared per-slot logits: (B, M*H) -> (B, M*A), slot-major like MultiDiscrete."""

    def __init__(self, hidden: int, n_actions: int, n_slots: int, first_bias: float = 0.0):
        super().__init__()
        self.hidden, self.n_slots = hidden, n_slots
        self.linear = nn.Linear(hidden, n_actions)
        nn.init.orthogonal_(self.linear.weight, gain=0.01)
        nn.init.zeros_(self.linear.bias)
        with th.no_grad():
            self.linear.bias[0] = first_bias

    def forward(self, latent: th.Tensor) -> th.Tensor:
        """Per-slot logits, slot-major like MultiDiscrete: (B, M*A)."""
        h = latent.reshape(latent.shape[0], self.n_slots, self.hidden)
        return self.linear(h).flatten(1)


class SlotCategorical(MultiCategoricalDistribution):
    """SB3's MultiCategorical for M slots of A actions each, as one batched Categorical over
    (B, M, A) logits instead of M Categoricals (the same probabilities; a PPO update with 20
    slots spent a quarter of its time building and summing the M distributions)."""

    def proba_distribution(self, action_logits: th.Tensor) -> SlotCategorical:
        """Set the distribution of `action_logits` (B, M*A), slot-major."""
        n_slots, n_actions = len(self.action_dims), int(self.action_dims[0])
        logits = action_logits.reshape(action_logits.shape[0], n_slots, n_actions)
        self.distribution = Categorical(logits=logits, validate_args=False)
        return self

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        """Summed over slots: (B,)."""
        return self.distribution.log_prob(actions.long()).sum(dim=1)

    def entropy(self) -> th.Tensor:
        """Summed over slots: (B,)."""
        return self.distribution.entropy().sum(dim=1)

    def sample(self) -> th.Tensor:
        """One action per slot: (B, M)."""
        return self.distribution.sample()

    def mode(self) -> th.Tensor:
        """The most likely action per slot: (B, M)."""
        return th.argmax(self.distribution.probs, dim=-1)


class SlotActorCriticPolicy(ActorCriticPolicy):
    """ActorCriticPolicy with `SlotExtractor` + `SlotHead` (MultiDiscrete with equal sizes)."""

    def __init__(
        self,
        observation_space,
        action_space,
        lr_schedule,
        *args,
        n_slots: int | None = None,
        hidden: int = 64,
        first_bias: float = 0.0,
        n_global: int = 0,
        **kwargs,
    ):
        if not isinstance(action_space, spaces.MultiDiscrete) or len(set(action_space.nvec.tolist())) != 1:
            raise ValueError("SlotActorCriticPolicy needs a MultiDiscrete action space with equal sizes")
        self.n_slots = int(n_slots or len(action_space.nvec))
        self.hidden = hidden
        self.first_bias, self.n_global = first_bias, n_global
        kwargs.pop("net_arch", None)
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SlotExtractor(self.features_dim, self.n_slots, self.hidden, self.n_global)

    def _build(self, lr_schedule) -> None:
        self.action_dist = SlotCategorical(list(self.action_space.nvec))
        super()._build(lr_schedule)
        self.action_net = SlotHead(self.hidden, int(self.action_space.nvec[0]), self.n_slots, self.first_bias)
        # the optimizer must see the new head's parameters
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        data.update(n_slots=self.n_slots, hidden=self.hidden, first_bias=self.first_bias, n_global=self.n_global)
        return data
