"""PPO with continuous actions: IPPO and MAPPO with a Gaussian policy on the particle environments.

Every agent i acts with one policy shared by the agents (its one-hot id in the input), a diagonal Gaussian over its
force with a learned standard deviation per action entry:

    a_{i,t} ~ N(m_theta(o_{i,t}, i), diag(sigma^2)),    sigma = exp(log_sigma), log_sigma (A,) learned

and the env receives clip(a_{i,t}, -1, 1): the action is **clipped, not squashed** (no tanh), so log pi_theta(a_{i,t})
is the Gaussian's log-density of the sample a_{i,t} itself, summed over its A entries, and the ratio of notebook 12 is
exp(log pi_theta - log pi_old) of that sample. Acting without exploration plays clip(m_theta(o_{i,t}, i), -1, 1).

Everything else is discrete PPO's, one function for both (``marl_edu.learners.ppo.ppo_update``): K episodes
played in lock-step with the current policy, pi_old and V_old computed once per batch with no gradient, GAE(lambda)
advantages (``gae_advantages``: the particle envs end every episode at their time limit, which bootstraps from V of
the state it was cut in), ``epochs`` passes over the batch in ``minibatches`` groups of whole episodes, each one
actor step on the clipped surrogate (``clipped_surrogate_loss``) less beta times the entropy and one critic step on
the squared error to the lambda-returns (the actor's steps stop once past ``target_kl``, if set). The particle envs'
observations carry every relative position the agents need, so the networks are feed-forward, as continuous MADDPG's
are. The two learners differ in what the value sees, V_{i,t}:

    MAPPO: the state s_t = [o_{0,t}, ..., o_{N-1,t}] (S = N*O), one V(s_t) for the team;
    IPPO:  agent i's own observation and id, V(o_{i,t}, i), shared by the agents.

Symbols as in the cheat sheet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from marl_edu.base.shapes import check_shape, one_hot
from marl_edu.base.threads import on_enclosing_threads
from marl_edu.base.validate import LIMITS, finite, learner_sizes, non_negative_number
from marl_edu.data.rollout import check_force_batch
from marl_edu.learners.ppo import ppo_update, validate_ppo_fields
from marl_edu.pieces.nets import MLP
from marl_edu.pieces.policies import gaussian_entropy, gaussian_log_prob, seeded_generator


@dataclass
class ContinuousPPOConfig:
    """Hyperparameters of continuous IPPO and MAPPO (``loops.train``). Every value is checked by
    ``validate``. PPO's usual values for continuous control, then three changes measured on simple_spread_v3's tuning
    seed 100 at 4,000 episodes (benchmarks/TUNING.md; one seed, so a guide, not a verdict): a gradient-norm
    clip of 10 instead of continuous MADDPG's 0.5, which held the critic back on returns of about -60 (-53.2 against
    -53.3 after twice the episodes), discount 0.99 (-51.3) and advantages left unnormalised (-50.4 with both)."""

    actor_lr: float = field(default=3e-4, metadata={"help": "actor learning rate"})
    critic_lr: float = field(default=1e-3, metadata={"help": "critic learning rate"})
    gamma: float = field(default=0.99, metadata={"help": "discount in [0, 1]"})
    # GAE(lambda) for the advantages, and so the critic's lambda-returns
    lam: float = field(default=0.95, metadata={"help": "TD(lambda) of the targets"})
    clip: float = field(default=0.2, metadata={"help": "PPO's clip range c: the ratio is clipped to [1 - c, 1 + c]"})
    epochs: int = field(default=10, metadata={"help": "passes over each batch of episodes"})
    # the batch's K episodes split evenly
    minibatches: int = field(default=4, metadata={"help": "groups of whole episodes per pass"})
    # Adv scaled to mean 0, std 1 over each batch (no padding here)
    normalise_advantages: bool = field(default=False, metadata={
        "switch": "--normalise-advantages",
        "help": "advantages scaled to mean 0 and std 1 over the steps agents act in each batch"})
    hidden: int = field(default=64, metadata={"help": "hidden units per layer"})  # of the networks' two
    # episodes per batch, in lock-step
    n_envs: int = field(default=16, metadata={
        "help": "environment copies stepped in lock-step; for the on-policy learners, episodes per update"})
    log_std_start: float = -0.5    # log sigma of every action entry before training (sigma about 0.61)
    entropy_coef: float = 0.0      # beta: weight of the Gaussian's entropy in the actor's loss
    grad_clip: float = 10.0
    # an update's actor stops once a minibatch's approximate KL from pi_old passes 1.5 x this (0: never, the default)
    target_kl: float = 0.0
    # every row learns the team reward; False (IPPO only): row i agent i's own
    team_reward: bool = field(default=True, metadata={
        "switch": "--per-agent-reward", "help": "critic row i learns agent i's own reward, not the team reward"})

    def validate(self) -> ContinuousPPOConfig:
        validate_ppo_fields(self)  # the fields discrete PPO shares
        self.entropy_coef = non_negative_number(self.entropy_coef, "entropy_coef", LIMITS["coefficient"])
        log_std = self.log_std_start
        if isinstance(log_std, bool) or not isinstance(log_std, (int, float)) or not -5.0 <= log_std <= 2.0:
            raise ValueError(f"log_std_start must be a number in [-5, 2] (sigma from 0.007 to 7.4), got {log_std!r}")
        return self


class GaussianActor(nn.Module):
    """The shared policy: an MLP from [o_{i,t}, one_hot(i)] ``(..., O + N)`` to the mean m_theta ``(..., A)``, and
    log sigma ``(A,)``, one learned number per action entry (the same for every agent and state)."""

    def __init__(self, in_dim: int, action_dim: int, hidden: int, log_std_start: float):
        super().__init__()
        self.mean = MLP(in_dim, action_dim, (hidden, hidden))
        self.log_std = nn.Parameter(torch.full((action_dim,), float(log_std_start)))

    def mean_of(self, x: torch.Tensor) -> torch.Tensor:
        """m_theta for any leading axes: x ``(..., O + N)`` -> ``(..., A)``."""
        return self.mean(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], -1)  # (..., A)

    def log_prob(self, x: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """log pi_theta(a | x) of a diagonal Gaussian, summed over the A entries: x ``(..., O + N)``, actions
        ``(..., A)`` -> ``(...)``.  log N(a; m, sigma) = -(a - m)^2 / (2 sigma^2) - log sigma - log(2 pi) / 2."""
        return gaussian_log_prob(self.mean_of(x), self.log_std, actions)  # (...)

    def entropy(self) -> torch.Tensor:
        """H of the Gaussian, sum over the A entries of log sigma + (1 + log(2 pi)) / 2: a 0-d tensor (the same for
        every agent and state, since sigma does not depend on them)."""
        return gaussian_entropy(self.log_std)  # ()


class ContinuousMAPPO:
    """MAPPO with forces: the shared Gaussian actor and a centralised value V(s_t) on the state, learned by PPO's
    clipped objective. Networks for N agents: 1 actor (shared, told the agent's one-hot id) and 1 critic: 2."""

    team_reward_only = True

    def __init__(self, n_agents: int, obs_dim: int, action_dim: int, config: ContinuousPPOConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        self.config = (config or ContinuousPPOConfig()).validate()
        n_agents, obs_dim, action_dim = learner_sizes(n_agents, obs_dim, action_dim, "action_dim")  # before building
        self.n_agents, self.obs_dim, self.action_dim = n_agents, obs_dim, action_dim
        self.n_actions = self.action_dim  # A: the name policy files and check_fits read, as continuous MADDPG's
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.generator = seeded_generator(seed, self.device)
        c = self.config
        if self.team_reward_only and not c.team_reward:
            raise ValueError(f"{type(self).__name__} learns the team reward only (team_reward=True): its one V(s) has "
                             f"no agent id to tell the agents' own returns apart")
        self.actor = GaussianActor(obs_dim + n_agents, action_dim, c.hidden, c.log_std_start).to(self.device)
        self.critic = self.build_critic().to(self.device)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=c.actor_lr)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=c.critic_lr)
        self.updates = 0

    def build_critic(self) -> nn.Module:
        """V(s_t): an MLP on the state, S = N*O -> 1."""
        return MLP(self.n_agents * self.obs_dim, 1, (self.config.hidden, self.config.hidden))

    def actor_input(self, obs: torch.Tensor) -> torch.Tensor:
        """[o_{i,t}, one_hot(i)] for every agent: obs ``(..., N, O)`` -> ``(..., N, O + N)``."""
        ids = one_hot(torch.arange(self.n_agents, device=obs.device), self.n_agents)  # (N, N)
        return torch.cat([obs, ids.expand(*obs.shape[:-1], self.n_agents)], dim=-1)  # (..., N, O + N)

    def values(self, obs: torch.Tensor) -> torch.Tensor:
        """V_{i,t} of every agent row: obs ``(B, T+1, N, O)`` -> ``(B, T+1, N)``. MAPPO: V(s_t) in every row."""
        B, T1, N, O = obs.shape
        v = self.critic(obs.reshape(B * T1, N * O)).reshape(B, T1, 1)  # (B, T+1, 1) V(s_t)
        return v.expand(B, T1, N)  # (B, T+1, N)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Sample every agent's force for K env copies: obs ``(K, N, O)`` -> a ``(K, N, A)`` float32, unclipped (the
        loop clips what the env receives, and stores the sample itself: its log-density is what the ratio needs)."""
        check_shape(obs, ("K", self.n_agents, self.obs_dim), "obs", dtype="float")
        with torch.no_grad():
            x = self.actor_input(torch.as_tensor(obs, dtype=torch.float32, device=self.device))  # (K, N, O + N)
            mean = self.actor.mean_of(x)  # (K, N, A)
            finite(mean, "the policy's mean")
            noise = torch.randn(mean.shape, generator=self.generator, device=self.device)  # (K, N, A)
            return (mean + self.actor.log_std.exp() * noise).cpu().numpy()  # (K, N, A)

    def greedy_policy(self):
        """The noise-free policy: obs ``(N, O)`` -> clip(m_theta(o_i, i), -1, 1) ``(N, A)``, for evaluation."""
        def policy(obs: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                x = self.actor_input(torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=self.device))
                return np.clip(self.actor.mean_of(x).cpu().numpy(), -1.0, 1.0)  # (N, A)
        return policy

    def sampled_actions(self, copies: int):
        """The policy itself, for the next episode of ``copies`` env copies: a function obs ``(copies, N, O)`` ->
        clip(a, -1, 1) ``(copies, N, A)`` with a ~ N(m_theta(o_i, i), diag(sigma^2)) drawn from the learner's
        generator (an evaluation puts one of its own there, ``evaluation.own_generator``), as the env receives it in
        training."""
        return lambda obs: np.clip(self.act(obs), -1.0, 1.0)  # (copies, N, A)

    @on_enclosing_threads
    def update(self, batch: dict) -> dict[str, float]:
        """One PPO update from a batch of whole episodes (``collect_force_episodes``'s, checked first by
        ``rollout.check_force_batch``: obs ``(B, T+1, N, O)``, actions ``(B, T, N, A)``, rewards ``(B, T, N)``, dones
        ``(B, T)``): discrete PPO's ``ppo_update`` with the Gaussian policy, log pi_theta(a_{i,t}) the log-density of
        the sample taken and H the Gaussian's, the same at every step. Every step of every agent counts in both losses
        (no padding, nobody home early)."""
        dims = check_force_batch(batch, self.n_agents, self.obs_dim, self.action_dim)  # ValueError naming an entry
        B, T = dims["B"], dims["T"]
        obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T, N, A)
        x = self.actor_input(obs[:, :T])  # (B, T, N, O + N)
        every_step = torch.ones(B, T, self.n_agents, device=self.device)  # (B, T, N)
        stats = ppo_update(self, lambda idx: (self.actor.log_prob(x[idx], actions[idx]), self.actor.entropy()),
                           lambda idx: self.values(obs[idx]), batch["rewards"], batch["dones"], every_step, every_step,
                           self.config.entropy_coef, density=True)  # log pi (b, T, N) and H (), V (b, T+1, N)
        return {**stats, "sigma": self.actor.log_std.exp().mean().item()}

    def state_dict(self) -> dict:
        return {"actor": self.actor.state_dict(), "critic": self.critic.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        for key in ("actor", "critic"):
            getattr(self, key).load_state_dict(state[key])


class ContinuousIPPO(ContinuousMAPPO):
    """Independent PPO with forces: ContinuousMAPPO with each agent's value on its own observation and id,
    V(o_{i,t}, i), one MLP shared by the agents (the actor's input, its own weights). Networks: 2."""

    team_reward_only = False  # its rows carry the agent's id: each may learn its own reward or the team's

    def build_critic(self) -> nn.Module:
        """V(o_{i,t}, i): an MLP on [o_{i,t}, one_hot(i)], O + N -> 1."""
        return MLP(self.obs_dim + self.n_agents, 1, (self.config.hidden, self.config.hidden))

    def values(self, obs: torch.Tensor) -> torch.Tensor:
        """V(o_{i,t}, i) of every agent row: obs ``(B, T+1, N, O)`` -> ``(B, T+1, N)``."""
        x = self.actor_input(obs)  # (B, T+1, N, O + N)
        return self.critic(x.reshape(-1, x.shape[-1])).reshape(x.shape[:-1])  # (B, T+1, N)
