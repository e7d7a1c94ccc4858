"""Policy ensembles (the MADDPG paper, section 4.3), for continuous actions.

In a competitive game each agent's policy is trained against its opponents' current policies, and can overfit to
them: a strategy that beats today's adversary may fail against tomorrow's. An ensemble makes agent i a mixture of M
sub-policies mu_i^(1), .., mu_i^(M): at the start of every episode agent i draws m uniformly and plays mu_i^(m) for the
whole episode, so its opponents must learn to do well against all M at once. The ensemble's objective

    J_e(mu_i) = E_{m ~ unif(1, M), s ~ p^mu, a ~ mu_i^(m)}[ R_i(s, a) ]

gives sub-policy m the deterministic policy gradient on the episodes it played, its own slice D_i^(m) of the replay:

    grad_theta_i^(m) J_e = 1/M E_{x, a ~ D_i^(m)}[ grad mu_i^(m)(o_i) grad_{a_i} Q_i(x, a_1, .., a_N) ]
                           with a_i = mu_i^(m)(o_i)

(the 1/M only rescales the step; Adam undoes it, so it is left out). Agent i's critic Q_i is one network shared by its
M sub-policies, learned from every transition, and its target plugs in, for every agent j, the target sub-policy j
played in that episode:

    y_i = r_i + gamma (1 - d_i) Q'_i(x', mu'_1^(m_1)(o'_1), .., mu'_N^(m_N)(o'_N)).

Networks for N agents: N*M actors and N critics, and their targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from marl_edu.base.shapes import check_shape
from marl_edu.base.threads import on_enclosing_threads
from marl_edu.base.validate import LIMITS, index_range, learner_sizes, non_negative_number, positive_int
from marl_edu.data.buffers import ReplayBuffer, check_replay_batch
from marl_edu.learners.continuous import ContinuousMADDPGConfig, deterministic_actor_loss
from marl_edu.learners.maddpg import flatten_for_critic, td_loss
from marl_edu.pieces.nets import Actor, Critic, check_policy_output, gradient_step
from marl_edu.pieces.policies import seeded_generator
from marl_edu.pieces.targets import make_target, update_target


class SubpolicyReplayBuffer(ReplayBuffer):
    """A ``ReplayBuffer`` whose transitions also record which sub-policy each agent played, int ``(capacity, N)``.

    The slice D_i^(m) is every transition in which agent i played sub-policy m; ``sample_slice(i, m, ...)`` draws from
    it alone. One ring buffer holds all the slices, so each keeps about capacity / M of the most recent transitions.
    """

    KEYS = ReplayBuffer.KEYS + ("subpolicies",)

    def __init__(self, capacity: int, n_agents: int, obs_dim: int, act_dim: int, n_subpolicies: int):
        super().__init__(capacity, n_agents, obs_dim, act_dim)
        self.n_subpolicies = positive_int(n_subpolicies, "n_subpolicies")
        self.subpolicies = np.zeros((self.capacity, self.n_agents), dtype=np.int64)  # (capacity, N)

    def add(self, obs, actions, rewards, next_obs, dones, subpolicies=None) -> None:
        """Store one joint transition (see ``ReplayBuffer.add``) and ``subpolicies`` int ``(N,)``, the sub-policy
        each agent played, in [0, M)."""
        if subpolicies is None:
            raise ValueError("SubpolicyReplayBuffer.add needs subpolicies, int (N,): the sub-policy each agent played")
        subpolicies = np.asarray(subpolicies)
        check_shape(subpolicies, (self.n_agents,), "subpolicies", dtype="int")
        index_range(subpolicies, self.n_subpolicies, "subpolicies")
        slot = self._next  # the slot super().add fills, once it has checked the transition
        super().add(obs, actions, rewards, next_obs, dones)
        self.subpolicies[slot] = subpolicies

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict:
        """What ``EnsembleMADDPG.update`` learns from: B transitions drawn from the whole buffer (``ReplayBuffer``'s
        arrays plus subpolicies ``(B, N)``), for the critics, and under ``"slices"`` a batch from every slice
        D_i^(m) (``sample_slices``), for the sub-policies."""
        batch = super().sample(batch_size, rng)
        batch["slices"] = self.sample_slices(batch_size, rng)
        return batch

    def sample_slice(self, i: int, m: int, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """B transitions drawn uniformly (with replacement) from D_i^(m), the ones where agent i played sub-policy
        m: ``ReplayBuffer.sample``'s arrays plus subpolicies ``(B, N)``."""
        if not (0 <= i < self.n_agents and 0 <= m < self.n_subpolicies):
            raise ValueError(f"agent i must be in [0, {self.n_agents - 1}] and sub-policy m in "
                             f"[0, {self.n_subpolicies - 1}], got i={i}, m={m}")
        in_slice = self._slice(i, m)
        if in_slice.size == 0:
            raise ValueError(f"agent {i} has not played sub-policy {m} yet: its slice is empty")
        return self._draw(in_slice, positive_int(batch_size, "batch_size"), rng)

    def sample_slices(self, batch_size: int, rng: np.random.Generator) -> list[list[dict[str, np.ndarray] | None]]:
        """``sample_slice(i, m)`` for every agent i and sub-policy m: N lists of M batches, None for an empty slice
        (each slice is found once: this runs every update)."""
        batch_size = positive_int(batch_size, "batch_size")
        slices = [[self._slice(i, m) for m in range(self.n_subpolicies)] for i in range(self.n_agents)]
        return [[self._draw(in_slice, batch_size, rng) if in_slice.size else None for in_slice in row]
                for row in slices]

    def _slice(self, i: int, m: int) -> np.ndarray:
        """The stored indices of D_i^(m), int ``(size of the slice,)``."""
        return np.flatnonzero(self.subpolicies[:len(self), i] == m)

    def _draw(self, in_slice: np.ndarray, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """B transitions drawn uniformly, with replacement, from the indices ``in_slice``."""
        return self.get(in_slice[rng.integers(0, in_slice.size, size=batch_size)])


@dataclass
class EnsembleConfig(ContinuousMADDPGConfig):
    """``ContinuousMADDPGConfig`` plus the number of sub-policies per agent, M (M = 1 is plain MADDPG)."""

    n_subpolicies: int = field(default=3, metadata={"option": "--subpolicies", "help": "sub-policies per agent, M"})

    def validate(self) -> EnsembleConfig:
        super().validate()
        # M sub-policies per agent
        self.n_subpolicies = positive_int(self.n_subpolicies, "n_subpolicies", LIMITS["n_subpolicies"])
        return self


class EnsembleMADDPG:
    """Continuous MADDPG where every agent is an ensemble of M tanh sub-policies; ``actors[i * M + m]`` is
    mu_i^(m). Acting and the critic targets take ``subpolicies`` int ``(B, N)``, the sub-policy each agent plays;
    while training, ``playing`` holds each env copy's current draw (``act`` draws it, ``end_episode`` renews it).
    A sibling of :class:`ContinuousMADDPG`: the critics, their loss (``maddpg.td_loss``) and the actor's loss
    (``continuous.deterministic_actor_loss``) are the same; only acting and the targets' next actions differ.

    Args: n_agents N, obs_dim O, action_dim A, config (an ``EnsembleConfig``), seed, device.
    """

    def __init__(self, n_agents: int, obs_dim: int, action_dim: int, config: EnsembleConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        if config is not None and not isinstance(config, EnsembleConfig):
            raise ValueError(f"EnsembleMADDPG needs an EnsembleConfig (ContinuousMADDPGConfig plus n_subpolicies), "
                             f"got {type(config).__name__}")
        self.config = (config or EnsembleConfig()).validate()
        n_agents, obs_dim, action_dim = learner_sizes(n_agents, obs_dim, action_dim, "action_dim")  # before building
        self.n_agents, self.obs_dim, self.action_dim = n_agents, obs_dim, action_dim
        self.n_actions = action_dim  # (the name policy files use for A)
        self.n_subpolicies = M = self.config.n_subpolicies
        self.device = torch.device(device)
        torch.manual_seed(seed)  # the networks' initial weights depend on the seed only
        self.generator = seeded_generator(seed, self.device)
        hidden = (self.config.hidden, self.config.hidden)
        self.actors = nn.ModuleList([Actor(obs_dim, action_dim, hidden)
                                     for _ in range(n_agents * M)]).to(self.device)  # N*M sub-policies
        self.critics = nn.ModuleList([Critic(n_agents * (obs_dim + action_dim), hidden)
                                      for _ in range(n_agents)]).to(self.device)  # N centralised critics
        self.target_actors = make_target(self.actors)
        self.target_critics = make_target(self.critics)
        self.actor_optimizers = [torch.optim.Adam(a.parameters(), lr=self.config.actor_lr) for a in self.actors]
        self.critic_optimizers = [torch.optim.Adam(c.parameters(), lr=self.config.critic_lr) for c in self.critics]
        self.playing: np.ndarray | None = None  # int (K, N): every agent's sub-policy in each env copy's episode
        self.updates = 0  # updates made so far (an error names the update it stopped at)

    def actor(self, i: int, m: int, target: bool = False) -> nn.Module:
        """mu_i^(m), agent i's sub-policy m (before its tanh), or its target."""
        return (self.target_actors if target else self.actors)[i * self.n_subpolicies + m]

    def draw_subpolicies(self, n: int) -> np.ndarray:
        """Every agent's sub-policy for ``n`` new episodes, uniform in [0, M) from the learner's generator:
        int ``(n, N)``."""
        draws = torch.randint(0, self.n_subpolicies, (n, self.n_agents), generator=self.generator,
                              device=self.device)  # (n, N)
        return draws.cpu().numpy()

    # -- acting ---------------------------------------------------------------------------------
    def ensemble_actions(self, obs: torch.Tensor, subpolicies: torch.Tensor, target: bool = False) -> torch.Tensor:
        """Every agent's action from the sub-policy it plays: obs ``(B, N, O)``, subpolicies int ``(B, N)`` ->
        ``(B, N, A)`` in [-1, 1], row b agent i = tanh(mu_i^(m)(o_i)) with m = subpolicies[b, i]."""
        return torch.tanh(self.ensemble_outputs(obs, subpolicies, target))  # (B, N, A)

    def ensemble_outputs(self, obs: torch.Tensor, subpolicies: torch.Tensor, target: bool = False) -> torch.Tensor:
        """``ensemble_actions`` before the tanh: obs ``(B, N, O)``, subpolicies int ``(B, N)`` -> ``(B, N, A)``, row b
        agent i = mu_i^(m)(o_i) with m = subpolicies[b, i]."""
        dims = check_shape(obs, ("B", self.n_agents, self.obs_dim), "obs", dtype="float")
        check_shape(subpolicies, (dims["B"], self.n_agents), "subpolicies", dtype="int")
        M = self.n_subpolicies
        per_agent = []
        for i in range(self.n_agents):
            every = torch.stack([self.actor(i, m, target)(obs[:, i]) for m in range(M)], dim=1)  # (B, M, A)
            pick = subpolicies[:, i].long().view(-1, 1, 1).expand(-1, 1, every.shape[-1])  # (B, 1, A)
            per_agent.append(every.gather(1, pick).squeeze(1))  # (B, A) the chosen sub-policy's output
        return torch.stack(per_agent, dim=1)  # (B, N, A)

    @torch.no_grad()
    def act(self, obs: np.ndarray, noise: float = 0.0, subpolicies: np.ndarray | None = None) -> np.ndarray:
        """Forces for K env copies: obs ``(K, N, O)``, subpolicies int ``(K, N)`` -> float32 ``(K, N, A)``,
        ``clip(mu_i^(m)(o_i) + noise * eps, -1, 1)`` (no draw when ``noise=0``, as ``ContinuousMADDPG.act``).

        Without ``subpolicies`` every agent plays its sub-policy of each copy's current episode, ``playing``: drawn
        for the K copies at the first such call, renewed for copy k by ``end_episode(k)`` (so a training loop calls
        ``act(obs, noise)`` as it would for ``ContinuousMADDPG``)."""
        if subpolicies is None:
            if self.playing is None:
                self.playing = self.draw_subpolicies(len(obs))  # (K, N) the first episode of every copy
            if len(self.playing) != len(obs):
                raise ValueError(f"the ensemble plays sub-policies for K={len(self.playing)} env copies, got obs for "
                                 f"{len(obs)}: pass subpolicies, int (K, N), to act on other copies")
            subpolicies = self.playing
        non_negative_number(noise, "noise")  # a standard deviation
        check_shape(np.asarray(subpolicies), (len(obs), self.n_agents), "subpolicies", dtype="int")
        index_range(np.asarray(subpolicies), self.n_subpolicies, "subpolicies")
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=self.device)  # (K, N, O)
        pre = self.ensemble_outputs(obs_t, torch.as_tensor(np.asarray(subpolicies), device=self.device))  # (K, N, A)
        check_policy_output(pre, obs_t, self.actors, "the actors' outputs")  # (a tanh would hide an infinity)
        mu = torch.tanh(pre)  # (K, N, A) in [-1, 1]
        if noise == 0:
            return mu.cpu().numpy()  # (K, N, A)
        eps = torch.randn(mu.shape, generator=self.generator, device=self.device)  # (K, N, A)
        return (mu + noise * eps).clamp(-1.0, 1.0).cpu().numpy()  # (K, N, A)

    def end_episode(self, k: int) -> None:
        """Env copy k's episode ended: every agent draws the sub-policy it plays in that copy's next one,
        ``playing[k]`` ``(N,)``, uniform in [0, M)."""
        self.playing[k] = self.draw_subpolicies(1)[0]  # (N,)

    def policy(self, subpolicies):
        """A policy for ``run_episode`` playing fixed sub-policies (int ``(N,)``), no noise: obs ``(N, O)`` ->
        ``(N, A)``."""
        subpolicies = np.asarray(subpolicies)
        check_shape(subpolicies, (self.n_agents,), "subpolicies", dtype="int")
        index_range(subpolicies, self.n_subpolicies, "subpolicies")
        return lambda obs: self.act(obs[None], 0.0, subpolicies[None])[0]

    def sampled_actions(self, copies: int):
        """The ensemble as it explores at the end of training, for the next episode of ``copies`` env copies (make one
        per episode: it draws the episode's sub-policies, int ``(copies, N)``, uniform in [0, M)): a function obs
        ``(copies, N, O)`` -> ``clip(mu_i^(m)(o_i) + noise_end * eps, -1, 1)`` ``(copies, N, A)``. Both draws come
        from the learner's generator (an evaluation puts one of its own there, ``evaluation.own_generator``)."""
        subpolicies = self.draw_subpolicies(copies)  # (copies, N) these episodes'
        return lambda obs: self.act(obs, self.config.noise_end, subpolicies)  # (copies, N, A)

    # -- the losses -----------------------------------------------------------------------------
    def critic_input(self, i: int, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """What every critic sees: ``x = [o_1..o_N, a_1..a_N]``, ``(B, N*(O+A))`` (``i`` is unused)."""
        return flatten_for_critic(obs, actions)  # (B, N*(O+A))

    def critic_loss(self, i: int, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Agent i's critic loss  L = mean_b (Q_i(x, a_1..a_N) - y_i)^2  (``td_loss``) with the sub-policies played
        in the target:

            y_i = r_i + gamma (1 - d_i) Q'_i(x', mu'_1^(m_1)(o'_1), .., mu'_N^(m_N)(o'_N))

        batch: obs, next_obs ``(B, N, O)``; actions ``(B, N, A)``; rewards, dones ``(B, N)``; subpolicies ``(B, N)``.
        """
        next_actions = self.ensemble_actions(batch["next_obs"], batch["subpolicies"], target=True)  # (B, N, A)
        return td_loss(self.critics[i], self.target_critics[i],
                       self.critic_input(i, batch["obs"], batch["actions"]),  # x: (B, D)
                       self.critic_input(i, batch["next_obs"], next_actions),  # x': (B, D)
                       batch["rewards"][:, i], batch["dones"][:, i], self.config.gamma)

    def subpolicy_loss(self, i: int, m: int, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Sub-policy m of agent i, on a batch from its slice D_i^(m): ``deterministic_actor_loss`` with mu_i^(m),

            L(theta_i^(m)) = -mean_b Q_i(x, a_1, .., a_i = mu_i^(m)(o_i), .., a_N) + action_reg * mean_{b,j} f(o_i)_j^2

        batch: obs ``(B, N, O)``; actions ``(B, N, A)``."""
        check_shape(batch["actions"], ("B", self.n_agents, self.action_dim), "batch['actions']", dtype="float")
        return deterministic_actor_loss(self.actor(i, m), self.critics[i], self.critic_input, i, batch,
                                        self.config.action_reg)

    @on_enclosing_threads
    def update(self, batch: dict) -> dict:
        """One gradient step on every critic (the batch's arrays, drawn from the whole buffer), then on every
        sub-policy m of every agent i (``batch["slices"][i][m]``, drawn from its slice D_i^(m); None skips a
        sub-policy whose slice is still empty), then a soft update of all targets. The batch is
        ``SubpolicyReplayBuffer.sample``'s: the same ``update(batch)`` as every other learner.

        Departures from the paper's section 4.3: the critic batch and the M slice batches are drawn afresh every
        update from one shared ring buffer (the paper keeps a replay buffer per sub-policy), the 1/M in the
        gradient is left out (Adam undoes a constant scale), and the rest are ``ContinuousMADDPG``'s."""
        if "slices" not in batch:
            raise ValueError("an ensemble's batch needs 'slices', a batch from every slice D_i^(m): "
                             "SubpolicyReplayBuffer.sample draws them")
        slices = batch["slices"]
        batch = {key: value for key, value in batch.items() if key != "slices"}
        if (not isinstance(slices, (list, tuple)) or len(slices) != self.n_agents
                or any(not isinstance(row, (list, tuple)) or len(row) != self.n_subpolicies for row in slices)):
            raise ValueError(f"slices must be N={self.n_agents} lists of M={self.n_subpolicies} batches (or None)")
        N, O, A, M = self.n_agents, self.obs_dim, self.action_dim, self.n_subpolicies
        check_replay_batch(batch, N, O, A, n_subpolicies=M)  # the critics' batch, then every slice's
        for i, row in enumerate(slices):
            for m, piece in enumerate(row):
                if piece is not None:
                    check_replay_batch(piece, N, O, A, n_subpolicies=M, name=f"batch['slices'][{i}][{m}]")

        def tensors(arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
            return {key: torch.as_tensor(value, device=self.device,
                                         dtype=torch.long if key == "subpolicies" else torch.float32)
                    for key, value in arrays.items()}

        b = tensors(batch)
        stats = {"critic_loss": 0.0, "actor_loss": 0.0}
        n = self.updates + 1  # this update's number, for an error's message
        for i in range(self.n_agents):
            loss = gradient_step(self.critic_optimizers[i], self.critics[i], self.critic_loss(i, b),
                                 self.config.grad_clip, f"agent {i}'s critic loss", n)
            stats["critic_loss"] += loss / self.n_agents
        stepped = 0
        for i in range(self.n_agents):
            for m in range(self.n_subpolicies):
                if slices[i][m] is None:
                    continue
                index = i * self.n_subpolicies + m
                stats["actor_loss"] += gradient_step(self.actor_optimizers[index], self.actors[index],
                                                     self.subpolicy_loss(i, m, tensors(slices[i][m])),
                                                     self.config.grad_clip, f"agent {i}'s sub-policy {m} loss", n)
                stepped += 1
        stats["actor_loss"] /= max(stepped, 1)
        update_target(self.target_actors, self.actors, n, tau=self.config.tau)  # soft, at every update
        update_target(self.target_critics, self.critics, n, tau=self.config.tau)
        self.updates += 1
        return stats
