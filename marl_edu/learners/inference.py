"""Inferring the other agents' policies (the MADDPG paper, section 4.2), for continuous actions.

MADDPG's critic target needs every agent's next action, y_i = r_i + gamma (1 - d_i) Q'_i(x', mu'_1(o'_1), ..,
mu'_N(o'_N)), and so assumes agent i can query the other agents' target policies. Without that, agent i learns its own
approximation mu_hat_i^j of every other agent j's policy from what j was seen doing:

    L(phi_i^j) = -E_{o_j, a_j ~ D}[ log mu_hat_i^j(a_j | o_j) + lambda H(mu_hat_i^j(. | o_j)) ]

and uses the approximations' targets in its critic's target instead of the true target policies:

    y_i = r_i + gamma (1 - d_i) Q'_i(x', mu_hat'_i^1(o'_1), .., mu'_i(o'_i), .., mu_hat'_i^N(o'_N)).

Here mu_hat_i^j is a Gaussian with mean tanh(g(o_j)) and a learned standard deviation per action entry: the actions
in the buffer are the other agent's deterministic policy plus exploration noise, so the mean should learn the policy
and the standard deviation the noise. The critic target uses the mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from marl_edu.base.shapes import check_shape
from marl_edu.base.threads import on_enclosing_threads
from marl_edu.base.validate import LIMITS, non_negative_number, positive_number
from marl_edu.learners.continuous import ContinuousMADDPG, ContinuousMADDPGConfig
from marl_edu.pieces.nets import MLP, gradient_step
from marl_edu.pieces.policies import gaussian_entropy, gaussian_log_prob
from marl_edu.pieces.targets import make_target, update_target


class GaussianPolicy(nn.Module):
    """An approximation of one agent's policy: N(mean = tanh(g(o)), diag(exp(log_std)^2)) over its A action entries.

    ``forward``: obs ``(B, O)`` -> mean ``(B, A)``. ``log_std`` ``(A,)`` is one learned number per action entry,
    the same for every observation.
    """

    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int] = (64, 64), log_std: float = 0.0):
        super().__init__()
        self.mlp = MLP(obs_dim, action_dim, hidden)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(log_std)))  # (A,)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mlp(obs))  # (B, A) the mean

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """log N(actions; mean(obs), std^2), summed over the A entries: obs ``(B, O)``, actions ``(B, A)`` -> ``(B,)``."""
        dims = check_shape(obs, ("B", self.mlp.in_dim), "obs", dtype="float")
        check_shape(actions, (dims["B"], self.mlp.out_dim), "actions", dtype="float")
        return gaussian_log_prob(self(obs), self.log_std, actions)  # (B,)

    def entropy(self) -> torch.Tensor:
        """H = sum over the A entries of 1/2 log(2 pi e std^2): a number (it does not depend on the observation)."""
        return gaussian_entropy(self.log_std)  # ()


def approximation_loss(policy: GaussianPolicy, obs_j: torch.Tensor, actions_j: torch.Tensor,
                       entropy_coef: float) -> torch.Tensor:
    """L(phi) = -mean_b log mu_hat(a_j | o_j) - entropy_coef * H(mu_hat): obs_j ``(B, O)``, actions_j ``(B, A)``."""
    return -policy.log_prob(obs_j, actions_j).mean() - entropy_coef * policy.entropy()


@dataclass
class InferenceConfig(ContinuousMADDPGConfig):
    """``ContinuousMADDPGConfig`` plus the approximations' learning rate and entropy weight lambda."""

    approx_lr: float = 1e-3
    entropy_coef: float = 1e-3

    def validate(self) -> InferenceConfig:
        super().validate()
        self.approx_lr = positive_number(self.approx_lr, "approx_lr", LIMITS["learning_rate"])
        self.entropy_coef = non_negative_number(self.entropy_coef, "entropy_coef", LIMITS["coefficient"])
        return self


class InferringMADDPG(ContinuousMADDPG):
    """Continuous MADDPG whose critic i bootstraps from agent i's own approximations of the other agents' policies.

    Networks for N agents: MADDPG's 4N, plus N(N-1) approximations ``approx["i->j"]`` and their targets.
    """

    def __init__(self, n_agents: int, obs_dim: int, action_dim: int, config: InferenceConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        if config is not None and not isinstance(config, InferenceConfig):
            raise ValueError(f"InferringMADDPG needs an InferenceConfig (ContinuousMADDPGConfig plus approx_lr and "
                             f"entropy_coef), got {type(config).__name__}")
        super().__init__(n_agents, obs_dim, action_dim, config or InferenceConfig(), seed, device)
        hidden = (self.config.hidden, self.config.hidden)
        self.approx = nn.ModuleDict({self.key(i, j): GaussianPolicy(obs_dim, action_dim, hidden)
                                     for i in range(n_agents) for j in range(n_agents) if j != i}).to(self.device)
        self.target_approx = make_target(self.approx)
        self.approx_optimizers = [torch.optim.Adam(self.approximations_of(i).parameters(), lr=self.config.approx_lr)
                                  for i in range(n_agents)]

    @staticmethod
    def key(i: int, j: int) -> str:
        """The name of agent i's approximation of agent j's policy."""
        return f"{i}->{j}"

    def approximations_of(self, i: int) -> nn.ModuleList:
        """Agent i's approximations of the other agents' policies (what agent i's optimizer steps)."""
        return nn.ModuleList([self.approx[self.key(i, j)] for j in range(self.n_agents) if j != i])

    def target_actions(self, next_obs: torch.Tensor, i: int) -> torch.Tensor:
        """What critic i's target plugs in: its own target actor's action mu'_i(o'_i) and, for every other agent j,
        the mean of agent i's target approximation mu_hat'_i^j(o'_j). next_obs ``(B, N, O)`` -> ``(B, N, A)``."""
        own = torch.tanh(self.target_actors[i](next_obs[:, i]))  # (B, A)
        inferred = [own if j == i else self.target_approx[self.key(i, j)](next_obs[:, j])
                    for j in range(self.n_agents)]  # N tensors (B, A)
        return torch.stack(inferred, dim=1)  # (B, N, A)

    def approximation_step(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient step of every agent's approximations on the batch's observed actions. Returns the mean loss
        and the mean absolute gap between the approximations' means and the other agents' true policies."""
        stats = {"approx_loss": 0.0, "approx_gap": 0.0}
        pairs = self.n_agents * (self.n_agents - 1)
        for i in range(self.n_agents):
            loss = sum(approximation_loss(self.approx[self.key(i, j)], batch["obs"][:, j], batch["actions"][:, j],
                                          self.config.entropy_coef)
                       for j in range(self.n_agents) if j != i)
            stats["approx_loss"] += gradient_step(self.approx_optimizers[i], self.approximations_of(i), loss,
                                                  self.config.grad_clip, f"agent {i}'s approximation loss",
                                                  self.updates + 1) / pairs
        with torch.no_grad():
            true = self.actions(batch["obs"])  # (B, N, A) the current policies, for the diagnostic only
            for i in range(self.n_agents):
                for j in range(self.n_agents):
                    if j != i:
                        gap = (self.approx[self.key(i, j)](batch["obs"][:, j]) - true[:, j]).abs().mean()
                        stats["approx_gap"] += gap.item() / pairs
        return stats

    @on_enclosing_threads
    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """Fit the approximations to the batch's actions, then MADDPG's update (whose critic targets use them),
        then a soft update of the approximations' targets.

        Departures from the paper's section 4.2: the approximations' one gradient step before the critics' uses
        the same minibatch as the critics and actors (the paper takes each agent's latest samples from the replay
        buffer), and their targets are soft-updated with the critics' tau; the rest are ``ContinuousMADDPG``'s."""
        b = self.checked_tensors(batch)  # checked once, before the approximations' step
        stats = self.approximation_step(b)
        stats.update(self.gradient_steps(b))
        update_target(self.target_approx, self.approx, self.updates, tau=self.config.tau)  # soft, as the critics'
        return stats
