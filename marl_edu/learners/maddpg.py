"""MADDPG for discrete actions: the critic's input, Gumbel-softmax, the two losses and the learner.

MADDPG's critic for agent i is Q_i(x_t, a_t): it sees the joint observation x_t = (o_{0,t}, ..., o_{N-1,t}) and
the joint action a_t = (a_{0,t}, ..., a_{N-1,t}). In a batch those live in ``(B, N, O)`` and ``(B, N, A)``; the
critic is an MLP that wants one flat row per transition (``flatten_for_critic``). Each actor mu_i sees only o_{i,t}.
Symbols as in the course's cheat sheet: agents i, j from 0, a prime only on target networks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from marl_edu.base.shapes import check_shape, flatten_for_critic  # the critic's input row (notebook 02 builds it)
from marl_edu.base.threads import on_enclosing_threads
from marl_edu.base.validate import (LIMITS, finite, learner_sizes, non_negative_int, non_negative_number,
                               positive_int, positive_number, unit_interval)
from marl_edu.data.buffers import check_replay_batch
from marl_edu.pieces.nets import Actor, Critic, check_policy_output, gradient_step
from marl_edu.pieces.policies import seeded_generator
from marl_edu.pieces.targets import make_target, td_target, update_target

MIN_TEMPERATURE = 1e-3  # the Gumbel-softmax's smallest kappa: far below it, (logits + g) / kappa overflows float32


def check_temperature(value, name: str = "temperature") -> float:
    """A Gumbel-softmax temperature kappa in [``MIN_TEMPERATURE``, ``LIMITS["temperature"]``]."""
    value = positive_number(value, name, LIMITS["temperature"])
    if value < MIN_TEMPERATURE:
        raise ValueError(f"{name} must be at least {MIN_TEMPERATURE:g} (far below it (logits + g) / kappa overflows "
                         f"float32), got {value!r}")
    return value


def _tensor(x):
    """A numpy array (a ``ReplayBuffer.sample`` batch's) as a tensor sharing its memory; anything else unchanged."""
    return torch.from_numpy(x) if isinstance(x, np.ndarray) else x


def own_critic_input(i: int, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """What an independent critic sees instead (independent DDPG, discrete or continuous): agent i's own
    observation and action only, obs float ``(B, N, O)``, actions float ``(B, N, A)`` (tensors, or a replay batch's
    numpy arrays) -> ``(B, O + A)``."""
    obs, actions = _tensor(obs), _tensor(actions)
    dims = check_shape(obs, ("B", "N", "O"), "obs", dtype="float")
    check_shape(actions, ("B", "N", "A"), "actions", dims, dtype="float")
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < dims["N"]:
        raise ValueError(f"i must be an agent in [0, {dims['N'] - 1}], got {i}")
    return torch.cat([obs[:, i], actions[:, i]], dim=-1)  # (B, O+A)


# ----------------------------------------------------------------------------------------------
# Gumbel-softmax: a differentiable stand-in for sampling a discrete action
# ----------------------------------------------------------------------------------------------

def gumbel_softmax(logits: torch.Tensor, temperature: float = 1.0, hard: bool = True,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """Sample actions from ``softmax(logits)`` in a way gradients can flow through.

        g_k ~ Gumbel(0, 1),      a_tilde = softmax((logits + g) / kappa)          (the soft sample)

    With ``hard=True`` the forward value is the one-hot of ``argmax(logits + g)`` (an exact sample of
    the categorical distribution) while the gradient is the soft sample's ("straight-through").

    Args:
        logits: float ``(..., A)``.  temperature: kappa > 0 (lower = closer to one-hot, noisier gradients).
    Returns:
        float ``(..., A)``: one-hot rows (hard) or probability rows (soft).
    """
    if not isinstance(logits, torch.Tensor) or not logits.dtype.is_floating_point or logits.dim() < 1:
        raise ValueError(f"logits must be a float tensor (..., A), got {getattr(logits, 'dtype', type(logits))}")
    if logits.shape[-1] < 1:
        raise ValueError(f"logits: expected at least one action, A >= 1, got shape {tuple(logits.shape)}")
    finite(logits, "logits")  # (NaN, or a row of -inf, has no distribution to sample)
    check_temperature(temperature)
    uniform = torch.rand(logits.shape, generator=generator, device=logits.device).clamp_(1e-10, 1.0 - 1e-10)
    gumbel = -torch.log(-torch.log(uniform))  # (..., A)
    soft = torch.softmax((logits + gumbel) / temperature, dim=-1)  # (..., A)
    if not hard:
        return soft
    one_hot = torch.zeros_like(soft).scatter_(-1, soft.argmax(dim=-1, keepdim=True), 1.0)  # (..., A)
    return one_hot - soft.detach() + soft  # forward: one_hot; backward: d soft


# ----------------------------------------------------------------------------------------------
# The critic's loss, shared by every MADDPG-family learner
# ----------------------------------------------------------------------------------------------

def td_loss(critic: nn.Module, target_critic: nn.Module, x: torch.Tensor, next_x: torch.Tensor,
            rewards: torch.Tensor, dones: torch.Tensor, discount: float) -> torch.Tensor:
    """One critic's loss  L(psi) = mean_b (Q(x) - y)^2  with the TD target  y = r + discount (1 - d) Q'(next_x),
    where x and next_x are critic input rows.

    Args:
        critic, target_critic: Q and its target Q', ``(B, D) -> (B,)``.
        x: ``(B, D)`` the critic's input with the actions taken; next_x: ``(B, D)`` the next observations with the
            actions the target policies choose there.
        rewards, dones: ``(B,)`` what this critic learns, and d: 1 where the next state is a real terminal state.
        discount: gamma, or gamma^n for n-step rewards.
    """
    q_next = target_critic(next_x)  # (B,)
    y = td_target(rewards, dones, q_next, discount)  # (B,) no gradient through Q'
    q = critic(x)  # (B,)
    return ((q - y) ** 2).mean()


# ----------------------------------------------------------------------------------------------
# The MADDPG learner (discrete actions)
# ----------------------------------------------------------------------------------------------

def check_replay_fills(config) -> None:
    """ValueError unless ``config.warmup_steps`` and ``config.batch_size`` are at most ``config.buffer_size``:
    updates start once the replay holds both, and it never holds more than its capacity (MADDPG's configs, discrete
    and continuous)."""
    for name in ("warmup_steps", "batch_size"):
        if getattr(config, name) > config.buffer_size:
            raise ValueError(f"{name} must be at most buffer_size ({config.buffer_size:,}), got "
                             f"{getattr(config, name):,}: the replay never holds more, so no update would start")


@dataclass
class MADDPGConfig:
    """Hyperparameters of MADDPG on a discrete-action task, grouped by what they shape. Every value is checked by
    ``validate``."""

    # the critic's target y_{i,t} = R^(n)_t + gamma^n (1 - d_{t+n-1}) Q'_i(x_{t+n}, mu'(x_{t+n}))
    gamma: float = field(default=0.95, metadata={"help": "discount in [0, 1]"})
    n_step: int = 3               # n-step returns R^(n)_t = r_t + gamma r_{t+1} + gamma^2 r_{t+2}, then gamma^3 Q'_i
    tau: float = 0.005            # tau, the soft target update's rate, per gradient step
    temperature: float = 1.0      # Gumbel-softmax temperature kappa (target actions; the "gumbel" actor update)

    # the gradient steps
    # both tuned on Switch2-v2 (benchmarks/TUNING.md, MADDPG)
    actor_lr: float = field(default=3e-3, metadata={"help": "actor learning rate"})
    critic_lr: float = field(default=2e-3, metadata={"help": "critic learning rate"})
    # "expected": exact E_{a_i ~ pi_i} Q_i over agent i's A actions; "gumbel": a straight-through (hard)
    # Gumbel-softmax sample of a_i
    actor_gradient: str = field(default="expected", metadata={
        "choices": ("expected", "gumbel"),
        "help": "the actor's gradient, exact over its own actions (expected) or a Gumbel-softmax sample (gumbel)"})
    logits_reg: float = 1e-3      # c_reg: + c_reg * mean(logits^2) in the actor loss, as in the reference
    grad_clip: float = 0.5        # max gradient norm, as in the reference implementation
    hidden: int = field(default=64, metadata={"help": "hidden units per layer"})  # of the networks' two

    # exploration: a uniformly random action with probability epsilon, decayed linearly from epsilon_start to
    # epsilon_end over the first `epsilon_fraction` of training
    epsilon_start: float = 0.5
    epsilon_end: float = field(default=0.02, metadata={
        "help": "the exploration's final epsilon, reached linearly early in training"})
    epsilon_fraction: float = 0.6

    # experience: collected from lock-step env copies, replayed in minibatches
    n_envs: int = field(default=16, metadata={
        "help": "environment copies stepped in lock-step; for the on-policy learners, episodes per update"})
    # the last 10,000 transitions (about the last 700 episodes once the agents get home): a replay that never fills
    # keeps the exploring start's returns as targets, and the greedy policy lost its solve late (benchmarks/TUNING.md,
    # MADDPG keeping what it learned)
    buffer_size: int = 10_000
    batch_size: int = field(default=512, metadata={"help": "transitions per update"})
    warmup_steps: int = field(default=1_000, metadata={"option": "--warmup",
                                                       "help": "env steps collected before the first update"})
    updates_per_step: int = 1     # gradient steps per lock-step of the n_envs copies

    def validate(self) -> MADDPGConfig:
        for name in ("actor_lr", "critic_lr"):
            setattr(self, name, positive_number(getattr(self, name), name, LIMITS["learning_rate"]))
        self.temperature = check_temperature(self.temperature)
        self.grad_clip = positive_number(self.grad_clip, "grad_clip", LIMITS["grad_clip"])
        for name in ("gamma", "tau", "epsilon_start", "epsilon_end", "epsilon_fraction"):
            setattr(self, name, unit_interval(getattr(self, name), name))
        for name in ("batch_size", "buffer_size", "hidden", "n_step", "n_envs", "updates_per_step"):
            setattr(self, name, positive_int(getattr(self, name), name, LIMITS[name]))
        self.warmup_steps = non_negative_int(self.warmup_steps, "warmup_steps", LIMITS["warmup_steps"])
        check_replay_fills(self)
        if self.actor_gradient not in ("expected", "gumbel"):
            raise ValueError(f"actor_gradient must be 'expected' or 'gumbel', got {self.actor_gradient!r}")
        self.logits_reg = non_negative_number(self.logits_reg, "logits_reg", LIMITS["coefficient"])
        return self


class MADDPG:
    """One actor mu_i(o_{i,t}) and one centralised critic Q_i(x_t, a_t) per agent i, plus targets.

    Networks for N agents: N actors, N critics, N target actors, N target critics (4N).
    """

    one_hot_actions = True  # the replay's actions are one-hot rows (ContinuousMADDPG's: forces)

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: MADDPGConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        self.config = (config or MADDPGConfig()).validate()
        n_agents, obs_dim, n_actions = learner_sizes(n_agents, obs_dim, n_actions,  # before anything is built
                                                     "n_actions" if self.one_hot_actions else "action_dim")
        self.n_agents, self.obs_dim, self.n_actions = n_agents, obs_dim, n_actions
        self.device = torch.device(device)
        torch.manual_seed(seed)  # the networks' initial weights depend on the seed only
        self.generator = seeded_generator(seed, self.device)
        hidden = (self.config.hidden, self.config.hidden)
        self.actors = nn.ModuleList([Actor(obs_dim, n_actions, hidden) for _ in range(n_agents)]).to(self.device)
        self.critics = nn.ModuleList([Critic(self.critic_input_dim, hidden)
                                      for _ in range(n_agents)]).to(self.device)
        self.target_actors = make_target(self.actors)
        self.target_critics = make_target(self.critics)
        self.actor_optimizers = [torch.optim.Adam(a.parameters(), lr=self.config.actor_lr) for a in self.actors]
        self.critic_optimizers = [torch.optim.Adam(c.parameters(), lr=self.config.critic_lr) for c in self.critics]
        self.updates = 0  # updates made so far (an error names the update it stopped at)

    # -- acting ---------------------------------------------------------------------------------
    def logits(self, obs: torch.Tensor, target: bool = False) -> torch.Tensor:
        """Every agent's action logits: obs ``(B, N, O)`` -> ``(B, N, A)``."""
        check_shape(obs, ("B", self.n_agents, self.obs_dim), "obs", dtype="float")
        actors = self.target_actors if target else self.actors
        return torch.stack([actors[i](obs[:, i]) for i in range(self.n_agents)], dim=1)  # (B, N, A)

    @torch.no_grad()
    def act(self, obs: np.ndarray, epsilon: float = 0.0, greedy: bool = False) -> np.ndarray:
        """Actions for K env copies: obs ``(K, N, O)`` -> int ``(K, N)``.

        greedy: argmax of the logits. Otherwise a sample of the actor's categorical distribution,
        replaced by a uniformly random action with probability ``epsilon``.
        """
        unit_interval(epsilon, "epsilon")  # a probability
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=self.device)  # (K, N, O)
        logits = self.logits(obs_t)  # (K, N, A)
        check_policy_output(logits, obs_t, self.actors, "the actors' logits")
        if greedy:
            return logits.argmax(dim=-1).cpu().numpy()  # (K, N)
        sampled = gumbel_softmax(logits, 1.0, hard=True, generator=self.generator).argmax(dim=-1)  # (K, N)
        explore = torch.rand(sampled.shape, generator=self.generator, device=self.device) < epsilon  # (K, N)
        uniform = torch.randint(0, self.n_actions, sampled.shape, generator=self.generator, device=self.device)
        return torch.where(explore, uniform, sampled).cpu().numpy()  # (K, N)

    def greedy_policy(self):
        """A policy for ``run_episode``: obs ``(N, O)`` -> every agent's argmax action ``(N,)``."""
        return lambda obs: self.act(obs[None], greedy=True)[0]

    def sampled_policy(self):
        """A policy for ``run_episode`` that samples from the actors (no epsilon)."""
        return lambda obs: self.act(obs[None])[0]

    def target_actions(self, next_obs: torch.Tensor, i: int) -> torch.Tensor:
        """mu'(x_{t+n}), the next actions critic i's target plugs in: every agent's from its target actor, a hard
        Gumbel-softmax sample (one-hot) of its categorical policy (the same for every i here; the ``inference``
        learner gives critic i its own guesses). next_obs ``(B, N, O)`` -> ``(B, N, A)``."""
        logits = self.logits(next_obs, target=True)  # (B, N, A)
        return gumbel_softmax(logits, self.config.temperature, hard=True, generator=self.generator)  # (B, N, A)

    # -- the two losses -------------------------------------------------------------------------
    @property
    def critic_input_dim(self) -> int:
        """The width D of a critic's input: N*(O+A) for the centralised critic."""
        return self.n_agents * (self.obs_dim + self.n_actions)  # N*(O+A)

    def critic_input(self, i: int, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """What agent i's critic sees: everything, ``[x_t, a_t] = [o_0..o_{N-1}, a_0..a_{N-1}]``, ``(B, N*(O+A))`` (the
        centralised critic; ``i`` is unused here, independent DDPG overrides this with agent i's own part)."""
        return flatten_for_critic(obs, actions)  # (B, N*(O+A))

    # ------------------------------------------------------------------------
    def critic_loss(self, i: int, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Agent i's critic loss  L(psi_i) = mean_b (Q_i(x_t, a_t) - y_{i,t})^2  with

            y_{i,t} = R^(n)_t + gamma^n (1 - d_{t+n-1}) Q'_i(x_{t+n}, mu'(x_{t+n})),
            mu'(x_{t+n}) = (mu'_0(o_{0,t+n}), ..., mu'_{N-1}(o_{N-1,t+n}))

        batch: obs, next_obs ``(B, N, O)``; actions ``(B, N, A)`` one-hot; rewards, dones ``(B, N)``.
        """
        c = self.config
        next_actions = self.target_actions(batch["next_obs"], i)  # (B, N, A) from the target actors
        return td_loss(self.critics[i], self.target_critics[i],
                       self.critic_input(i, batch["obs"], batch["actions"]),  # at t, the actions taken: (B, D)
                       self.critic_input(i, batch["next_obs"], next_actions),  # at t+n, the target actions: (B, D)
                       batch["rewards"][:, i], batch["dones"][:, i], c.gamma ** c.n_step)

    def actor_loss(self, i: int, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Agent i's actor loss L(theta_i): minus its critic's value of agent i's recomputed action, + a logits
        penalty c_reg * mean(logits^2) (c_reg = ``logits_reg``).

        The other agents' actions come from the batch; only agent i's action depends on theta_i.

        - ``actor_gradient="gumbel"`` (the paper relaxes discrete actions with Gumbel-softmax): a hard,
          straight-through sample ``a_i`` of pi_i(. | o_{i,t});  L = -mean_b Q_i(x_t, (a_{-i,t}, a_i)) + reg.
        - ``actor_gradient="expected"``: agent i has only A actions, so its critic is evaluated at every
          one of them and weighted by the policy: L = -mean_b sum_k pi_i(k | o_{i,t}) Q_i(x_t, (a_{-i,t}, k))
          + reg: an all-actions policy gradient through the centralised critic, with no sampling noise
          and no straight-through bias in agent i's own action.
        """
        c = self.config
        logits_i = self.actors[i](batch["obs"][:, i])  # (B, A)
        reg = c.logits_reg * (logits_i ** 2).mean()
        if c.actor_gradient == "gumbel":
            action_i = gumbel_softmax(logits_i, c.temperature, hard=True, generator=self.generator)  # (B, A)
            actions = batch["actions"].clone()  # (B, N, A)
            actions[:, i] = action_i  # only agent i's action carries a gradient
            q = self.critics[i](self.critic_input(i, batch["obs"], actions))  # (B,)
            return -q.mean() + reg
        q_all = self.q_of_every_own_action(i, batch)  # (B, A), a fixed judge: no gradient
        pi = torch.softmax(logits_i, dim=-1)  # (B, A)
        return -(pi * q_all).sum(dim=1).mean() + reg

    @torch.no_grad()
    def q_of_every_own_action(self, i: int, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """``Q_i(x_t, (a_{-i,t}, k))`` for every action k of agent i: ``(B, A)``.

        The batch is copied A times (copy k has agent i's action set to one_hot(k)) and the critic
        runs once on all ``B*A`` rows.
        """
        obs, actions = batch["obs"], batch["actions"]  # (B, N, O), (B, N, A)
        (B, N, O), A = obs.shape, self.n_actions
        candidates = actions.unsqueeze(1).repeat(1, A, 1, 1)  # (B, A, N, A): copy k of every row
        candidates[:, :, i] = torch.eye(A, device=actions.device)  # (B, A, A): copy k gets one_hot(k)
        obs_copies = obs.unsqueeze(1).expand(B, A, N, O)  # (B, A, N, O)
        x = self.critic_input(i, obs_copies.reshape(B * A, N, O), candidates.reshape(B * A, N, A))  # (B*A, D)
        return self.critics[i](x).reshape(B, A)  # (B, A)

    @on_enclosing_threads
    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """One gradient step on every critic, then every actor, then a soft update of all targets.

        batch: ``ReplayBuffer.sample``'s arrays, obs and next_obs ``(B, N, O)``, actions ``(B, N, A)``, rewards and
        dones ``(B, N)`` (numpy or torch), checked first by ``buffers.check_replay_batch``: a bad batch is a
        ValueError before any network moves; a non-finite loss is a ValueError before that loss's step (the steps
        taken before it in this update stay taken).

        Departures from the paper's algorithm (benchmarks/TUNING.md records the sweeps behind them):
        - one minibatch, one set of indices, serves every agent's critic and actor step (the paper samples a
          minibatch for each agent);
        - the actor's gradient is by default the exact expectation over agent i's own actions
          (``actor_gradient="expected"``; the paper's Gumbel-softmax sample is ``"gumbel"``);
        - the rewards may be n-step returns, the target then discounted by gamma^n (``n_step``, 3 by default;
          ``loops.train`` stores the team reward's, which every critic learns);
        - the actor's loss adds ``logits_reg * mean(logits^2)``, as the authors' code does.
        """
        return self.gradient_steps(self.checked_tensors(batch))

    def checked_tensors(self, batch: dict) -> dict[str, torch.Tensor]:
        """The replay batch checked (``buffers.check_replay_batch``: ValueError naming what is wrong) and as float32
        tensors on the learner's device."""
        check_replay_batch(batch, self.n_agents, self.obs_dim, self.n_actions, self.one_hot_actions)
        return {k: torch.as_tensor(v, dtype=torch.float32, device=self.device) for k, v in batch.items()}

    def gradient_steps(self, b: dict[str, torch.Tensor]) -> dict[str, float]:
        """``update``'s steps on a checked batch of tensors: every critic, then every actor, then the soft updates."""
        c = self.config
        stats = {"critic_loss": 0.0, "actor_loss": 0.0}
        n = self.updates + 1  # this update's number, for an error's message
        for i in range(self.n_agents):
            loss = gradient_step(self.critic_optimizers[i], self.critics[i], self.critic_loss(i, b), c.grad_clip,
                                 f"agent {i}'s critic loss", n)
            stats["critic_loss"] += loss / self.n_agents
        for i in range(self.n_agents):
            loss = gradient_step(self.actor_optimizers[i], self.actors[i], self.actor_loss(i, b), c.grad_clip,
                                 f"agent {i}'s actor loss", n)
            stats["actor_loss"] += loss / self.n_agents
        update_target(self.target_actors, self.actors, n, tau=c.tau)  # soft, at every update
        update_target(self.target_critics, self.critics, n, tau=c.tau)
        self.updates += 1
        return stats

    def state_dict(self) -> dict:
        return {"actors": self.actors.state_dict(), "critics": self.critics.state_dict(),
                "target_actors": self.target_actors.state_dict(), "target_critics": self.target_critics.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        for key in ("actors", "critics", "target_actors", "target_critics"):
            getattr(self, key).load_state_dict(state[key])
