"""MADDPG with continuous actions: a tanh actor, Gaussian exploration noise, and the deterministic policy gradient
through the centralised critic (the MADDPG paper's particle environments; the seed notes' actions in [-1, 1]).

Everything the discrete learner does with a critic stays: Q_i(x, a_1, ..., a_N) sees every observation and every
action, its target is y_i = r_i + gamma (1 - d_i) Q'_i(x', mu'_1(o'_1), ..., mu'_N(o'_N)). What changes is the actor:

    mu_i(o_i) = tanh(f_i(o_i))                                     a force (x, y) in [-1, 1]^2, no sampling
    grad_theta_i J = E_batch[ grad_theta_i mu_i(o_i) * grad_a_i Q_i(x, a_1, .., a_i = mu_i(o_i), .., a_N) ]

and, since the policy is deterministic, exploration is noise added to the action while acting:
a_i = clip(mu_i(o_i) + sigma * eps, -1, 1), eps ~ N(0, I), sigma decayed linearly during training.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from marl_edu.base.schedules import linear
from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import (LIMITS, boolean, non_negative_int, non_negative_number,
                               positive_int, positive_number, unit_interval)
from marl_edu.learners.maddpg import MADDPG, check_replay_fills, own_critic_input
from marl_edu.pieces.nets import check_policy_output


@dataclass
class ContinuousMADDPGConfig:
    """Hyperparameters of MADDPG with continuous actions, grouped by what they shape (as ``MADDPGConfig``'s; a
    separate class, since the defaults differ). Every value is checked by ``validate``."""

    # the critic's target y_i = r_i + gamma (1 - d_i) Q'_i(x', mu'(o'))
    gamma: float = field(default=0.95, metadata={"help": "discount in [0, 1]"})
    n_step: int = 1               # one-step targets, as in the paper (the training loop stores one-step transitions)
    tau: float = 0.01             # soft target update per gradient step
    # every critic learns the team reward sum_j r_j instead of its own agent's r_i
    team_reward: bool = field(default=False, metadata={
        "switch": "--team-reward",
        "help": "every critic learns the team reward (the sum over agents) instead of its own agent's"})

    # the gradient steps
    actor_lr: float = field(default=1e-3, metadata={"help": "actor learning rate"})
    critic_lr: float = field(default=1e-3, metadata={"help": "critic learning rate"})
    action_reg: float = 1e-3      # + action_reg * mean(f_i(o_i)^2): keeps the tanh out of saturation
    grad_clip: float = 0.5        # max gradient norm, as in the reference implementation
    hidden: int = field(default=64, metadata={"help": "hidden units per layer"})  # of the networks' two

    # exploration: Gaussian noise of standard deviation sigma on every action entry, decayed linearly from
    # noise_start to noise_end over the first `noise_fraction` of training
    noise_start: float = field(default=0.5, metadata={"help": "the exploration noise's starting standard deviation"})
    noise_end: float = field(default=0.05, metadata={
        "help": "its final one, reached linearly over the first noise_fraction of the episodes"})
    noise_fraction: float = 0.7

    # experience: collected from lock-step env copies, replayed in minibatches
    n_envs: int = field(default=16, metadata={
        "help": "environment copies stepped in lock-step; for the on-policy learners, episodes per update"})
    buffer_size: int = 200_000
    batch_size: int = field(default=512, metadata={"help": "transitions per update"})
    # transitions collected (with noise_start) before the first update
    warmup_steps: int = field(default=2_000, metadata={"option": "--warmup",
                                                       "help": "env steps collected before the first update"})
    updates_per_step: int = 1     # gradient steps per lock-step of the n_envs copies

    def validate(self) -> ContinuousMADDPGConfig:
        for name in ("actor_lr", "critic_lr"):
            setattr(self, name, positive_number(getattr(self, name), name, LIMITS["learning_rate"]))
        self.grad_clip = positive_number(self.grad_clip, "grad_clip", LIMITS["grad_clip"])
        for name in ("gamma", "tau", "noise_fraction"):
            setattr(self, name, unit_interval(getattr(self, name), name))
        for name in ("noise_start", "noise_end"):
            setattr(self, name, non_negative_number(getattr(self, name), name, LIMITS["noise"]))
        self.action_reg = non_negative_number(self.action_reg, "action_reg", LIMITS["coefficient"])
        for name in ("batch_size", "buffer_size", "hidden", "n_step", "n_envs", "updates_per_step"):
            setattr(self, name, positive_int(getattr(self, name), name, LIMITS[name]))
        if self.n_step != 1:
            raise ValueError(f"n_step must be 1 for continuous MADDPG (one-step targets, as in the paper), "
                             f"got {self.n_step}")
        self.warmup_steps = non_negative_int(self.warmup_steps, "warmup_steps", LIMITS["warmup_steps"])
        check_replay_fills(self)
        self.team_reward = boolean(self.team_reward, "team_reward")
        return self

    def noise_at(self, fraction_done: float) -> float:
        """sigma after ``fraction_done`` (in [0, 1]) of training: linear from noise_start to noise_end."""
        return linear(self.noise_start, self.noise_end, fraction_done, self.noise_fraction)


class ContinuousMADDPG(MADDPG):
    """MADDPG for forces in [-1, 1]: N tanh actors mu_i(o_i), N centralised critics Q_i(o_1..o_N, a_1..a_N), and
    their targets (4N networks). The critic's loss and target are the discrete learner's (``MADDPG.critic_loss``);
    only how actions are made and the actor's loss differ.

    Args: n_agents N, obs_dim O, action_dim A (2 for the particle envs' forces), config, seed, device.
    """

    one_hot_actions = False  # the replay's actions are forces in [-1, 1], not one-hot rows

    def __init__(self, n_agents: int, obs_dim: int, action_dim: int, config: ContinuousMADDPGConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        super().__init__(n_agents, obs_dim, action_dim, config or ContinuousMADDPGConfig(), seed, device)
        self.action_dim = action_dim

    # -- acting ---------------------------------------------------------------------------------
    def actions(self, obs: torch.Tensor, target: bool = False) -> torch.Tensor:
        """mu(o): every agent's deterministic action, obs ``(B, N, O)`` -> ``(B, N, A)`` in [-1, 1]."""
        return torch.tanh(self.logits(obs, target))  # (B, N, A); logits() runs actor i on o_i for every i

    def target_actions(self, next_obs: torch.Tensor, i: int) -> torch.Tensor:
        """mu'(o'): every agent's next action from its target actor (deterministic, no noise), for any critic i.
        next_obs ``(B, N, O)`` -> ``(B, N, A)``."""
        return self.actions(next_obs, target=True)  # (B, N, A)

    @torch.no_grad()
    def act(self, obs: np.ndarray, noise: float = 0.0) -> np.ndarray:
        """Forces for K env copies: obs ``(K, N, O)`` -> float32 ``(K, N, A)``, ``clip(mu(o) + noise * eps, -1, 1)``
        with eps ~ N(0, I) from the learner's generator; ``noise=0`` is the trained policy itself, and draws nothing
        (so evaluating the policy never shifts the exploration noise of the training that follows)."""
        non_negative_number(noise, "noise")  # a standard deviation
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=self.device)  # (K, N, O)
        pre = self.logits(obs_t)  # (K, N, A) every actor's output before its tanh
        check_policy_output(pre, obs_t, self.actors, "the actors' outputs")  # (a tanh would hide an infinity)
        mu = torch.tanh(pre)  # (K, N, A) in [-1, 1]: self.actions(obs_t)
        if noise == 0:
            return mu.cpu().numpy()  # (K, N, A)
        eps = torch.randn(mu.shape, generator=self.generator, device=self.device)  # (K, N, A)
        return (mu + noise * eps).clamp(-1.0, 1.0).cpu().numpy()  # (K, N, A)

    def end_episode(self, k: int) -> None:
        """Env copy k's episode ended: nothing to renew (a policy ensemble draws its next sub-policies here)."""

    def greedy_policy(self):
        """A policy for ``run_episode``: obs ``(N, O)`` -> every agent's force mu_i(o_i), ``(N, A)``, no noise."""
        return lambda obs: self.act(obs[None])[0]

    def noisy_policy(self, noise: float):
        """A policy for ``run_episode`` that explores as in training with standard deviation ``noise``."""
        return lambda obs: self.act(obs[None], noise)[0]

    def sampled_actions(self, copies: int):
        """The policy as it explores at the end of training, for the next episode of ``copies`` env copies: a function
        obs ``(copies, N, O)`` -> ``clip(mu(o) + noise_end * eps, -1, 1)`` ``(copies, N, A)``, eps ~ N(0, I) from the
        learner's generator (an evaluation puts one of its own there, ``evaluation.own_generator``). A deterministic
        policy has nothing to sample, so its sampled evaluation plays the Gaussian exploration noise it trains with,
        at its last sigma."""
        return lambda obs: self.act(obs, self.config.noise_end)  # (copies, N, A)

    # -- the actor's loss -----------------------------------------------------------------------
    def actor_loss(self, i: int, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Agent i's actor loss, ``deterministic_actor_loss`` with its actor mu_i and critic Q_i.
        batch: obs ``(B, N, O)``; actions ``(B, N, A)``."""
        check_shape(batch["actions"], ("B", self.n_agents, self.action_dim), "batch['actions']", dtype="float")
        return deterministic_actor_loss(self.actors[i], self.critics[i], self.critic_input, i, batch,
                                        self.config.action_reg)


def deterministic_actor_loss(actor: nn.Module, critic: nn.Module, critic_input, i: int,
                             batch: dict[str, torch.Tensor], action_reg: float) -> torch.Tensor:
    """Agent i's actor loss with a tanh actor mu_i = tanh(f_i) and its critic Q_i:

        L(theta_i) = -mean_b Q_i(x, a_1, .., a_i = mu_i(o_i), .., a_N) + action_reg * mean_{b,k} f_i(o_i)_k^2

    (the penalty averages the squared pre-activations over the batch and the A action entries).

    The other agents' actions come from the batch; only agent i's action is recomputed, so the gradient reaches
    theta_i through a_i = tanh(f_i(o_i)) alone (the deterministic policy gradient).

    Args:
        actor: f_i, ``(B, O) -> (B, A)`` before the tanh; critic: Q_i, ``(B, D) -> (B,)``.
        critic_input: ``(i, obs, actions) -> (B, D)``, what critic i sees.
        batch: obs ``(B, N, O)``; actions ``(B, N, A)``.
    """
    pre_i = actor(batch["obs"][:, i])  # (B, A) before the tanh
    actions = batch["actions"].clone()  # (B, N, A)
    actions[:, i] = torch.tanh(pre_i)  # (B, A): only agent i's action carries a gradient
    q = critic(critic_input(i, batch["obs"], actions))  # (B,)
    return -q.mean() + action_reg * (pre_i ** 2).mean()


class ContinuousIDDPG(ContinuousMADDPG):
    """Independent DDPG with continuous actions: the same tanh actors, noise and update as :class:`ContinuousMADDPG`,
    but agent i's critic sees only its own ``[o_i, a_i]``, ``(B, O + A)``, as in the discrete ``IDDPG``. The
    actors start as ContinuousMADDPG's do for the same seed."""

    @property
    def critic_input_dim(self) -> int:
        """The width of a critic's input: O + A, agent i's own observation and action."""
        return self.obs_dim + self.n_actions  # O + A (n_actions: MADDPG's name for A, set before the critics)

    def critic_input(self, i: int, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Agent i's own observation and action: obs ``(B, N, O)``, actions ``(B, N, A)`` -> ``(B, O + A)``."""
        return own_critic_input(i, obs, actions)  # (B, O+A)
