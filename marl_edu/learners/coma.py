"""COMA: the centralised Q critic's input, the counterfactual baseline and the advantage.

COMA's critic answers, for agent i at step t: "what is the team's return if every other agent does what it
did, a_{-i,t}, and agent i does action k?", for every k at once: Q(s_t, (a_{-i,t}, k)), a row of A numbers. The
counterfactual baseline Qbar_{i,t} averages that row over agent i's own policy, so the advantage

    Adv_{i,t} = Q(s_t, a_t) - Qbar_{i,t},    Qbar_{i,t} = sum_k pi(k | h_{i,t}, i) Q(s_t, (a_{-i,t}, k))

credits agent i only with what its own choice changed. Symbols as in the course's cheat sheet: agents i from 0,
a_t the joint action, a_{-i,t} every action but agent i's, h_{i,t} agent i's own history, s_t the state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from marl_edu.base.shapes import check_shape
from marl_edu.base.threads import on_enclosing_threads
from marl_edu.base.validate import (LIMITS, boolean, finite, index_range, learner_sizes, non_negative_number,
                               positive_int, positive_number, unit_interval, zero_one)
from marl_edu.data.rollout import check_episode_batch
from marl_edu.pieces.masked import masked_mean
from marl_edu.pieces.nets import MLP, RecurrentActor, check_policy_output, gradient_step, shared_agent_input
from marl_edu.pieces.policies import categorical_entropy, categorical_log_prob, sample_categorical, seeded_generator
from marl_edu.pieces.recurrent import episode_policy, previous_actions, replay_episodes
from marl_edu.pieces.targets import critic_rewards, make_target, td_lambda_targets, update_target


def build_critic_input(state: torch.Tensor, obs: torch.Tensor, actions_onehot: torch.Tensor) -> torch.Tensor:
    """One critic row per agent i: ``[state, obs[i], all one-hot actions with agent i's block zeroed, one_hot(i)]``.

    Args (tensors, or numpy arrays):
        state: float ``(B, S)``. Switch has no global state: pass the concatenated observations.
        obs: float ``(B, N, O)``.
        actions_onehot: float ``(B, N, A)``, the joint action a_t.

    Returns:
        float ``(B, N, S + O + N*A + N)``. Row i does not depend on agent i's own action: the critic
        outputs Q(s_t, (a_{-i,t}, k)) for every k of agent i, so agent i's action must not already be in its input.
    """
    state, obs, actions_onehot = (torch.from_numpy(x) if isinstance(x, np.ndarray) else x
                                  for x in (state, obs, actions_onehot))
    dims = check_shape(state, ("B", "S"), "state", dtype="float")
    check_shape(obs, ("B", "N", "O"), "obs", dims, dtype="float")
    check_shape(actions_onehot, ("B", "N", "A"), "actions_onehot", dims, dtype="float")
    for tensor, name in ((state, "state"), (obs, "obs"), (actions_onehot, "actions_onehot")):
        finite(tensor, name)
    zero_one(actions_onehot, "actions_onehot")
    if not (actions_onehot.sum(dim=-1) == 1).all():  # (B, N): exactly one 1 per agent
        raise ValueError("actions_onehot: expected one 1 per agent (a one-hot row of A), got rows summing to "
                         f"{sorted(set(actions_onehot.sum(dim=-1).flatten().tolist()))[:4]}; integer actions? "
                         "one_hot(actions, A)")
    B, N, A = dims["B"], dims["N"], dims["A"]
    eye = torch.eye(N, device=obs.device, dtype=obs.dtype)  # (N, N)
    state_rows = state.unsqueeze(1).expand(B, N, dims["S"])  # (B, N, S) the same state for every row
    others = actions_onehot.unsqueeze(1).expand(B, N, N, A)  # (B, N rows, N agents, A)
    others = others * (1.0 - eye).view(1, N, N, 1)  # (B, N, N, A): row i has agent i's block zeroed
    ids = eye.unsqueeze(0).expand(B, N, N)  # (B, N, N) one-hot agent id per row
    return torch.cat([state_rows, obs, others.reshape(B, N, N * A), ids], dim=-1)  # (B, N, S+O+N*A+N)


def _check_policy(q: torch.Tensor, pi: torch.Tensor) -> None:
    if not isinstance(q, torch.Tensor) or not q.dtype.is_floating_point or q.dim() < 1:
        raise ValueError(f"q must be a float tensor (..., A), got {getattr(q, 'dtype', type(q))}")
    if not isinstance(pi, torch.Tensor) or pi.shape != q.shape:
        raise ValueError(f"pi must have q's shape {tuple(q.shape)} (..., A), got {tuple(getattr(pi, 'shape', ()))}")
    finite(q, "q")
    finite(pi, "pi")
    if (pi < 0).any() or not torch.allclose(pi.sum(-1), torch.ones((), dtype=pi.dtype), atol=1e-4):
        raise ValueError("pi must be probabilities over the last axis (non-negative, summing to 1); "
                         "pass softmax(logits), not the logits")


def counterfactual_baseline(q: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """The counterfactual baseline ``Qbar = sum_k pi(k) Q(s, (a_{-i}, k))``: q and pi ``(..., A)`` -> ``(...)``."""
    _check_policy(q, pi)
    return (pi * q).sum(dim=-1)  # (...)


def coma_advantage(q: torch.Tensor, pi: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``Adv = Q(s, a) - Qbar``: q and pi ``(..., A)``, actions int ``(...)`` (agent i's action taken) -> ``(...)``."""
    _check_policy(q, pi)
    if not isinstance(actions, torch.Tensor) or actions.dtype.is_floating_point or actions.shape != q.shape[:-1]:
        raise ValueError(f"actions must be an int tensor of shape {tuple(q.shape[:-1])}, got "
                         f"{getattr(actions, 'dtype', type(actions))} {tuple(getattr(actions, 'shape', ()))}")
    index_range(actions, q.shape[-1], "actions")  # A = q.shape[-1] actions
    q_taken = q.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)  # (...)
    return q_taken - counterfactual_baseline(q, pi)  # (...)


# ----------------------------------------------------------------------------------------------
# The COMA learner
# ----------------------------------------------------------------------------------------------

@dataclass
class COMAConfig:
    """Hyperparameters of COMA on a discrete-action task. Every value is checked by ``validate``."""

    actor_lr: float = field(default=2e-3, metadata={"help": "actor learning rate"})
    # a critic that keeps up with the actor: benchmarks/TUNING.md, COMA, says why
    critic_lr: float = field(default=3e-3, metadata={"help": "critic learning rate"})
    gamma: float = field(default=0.99, metadata={"help": "discount in [0, 1]"})
    lam: float = field(default=0.8, metadata={"help": "TD(lambda) of the targets"})  # the critic's targets
    hidden: int = field(default=64, metadata={"help": "hidden units per layer"})
    # GRU actors over [o_{i,t}, a_{i,t-1}, id]; False: feed-forward on [o_{i,t}, id]
    recurrent: bool = field(default=True, metadata={
        "switch": "--feed-forward",
        "help": "a feed-forward actor (agent network) on [o_t, id] instead of the GRU over the history"})
    # episodes per batch, in lock-step
    n_envs: int = field(default=16, metadata={
        "help": "environment copies stepped in lock-step; for the on-policy learners, episodes per update"})
    critic_steps: int = 8          # critic gradient steps per batch (before the actor's one)
    target_update_every: int = 10  # batches between hard copies of the critic into the target critic
    # entropy bonus, decayed linearly to zero over `anneal_fraction`
    entropy_start: float = field(default=0.2, metadata={"option": "--entropy",
                                                        "help": "starting entropy bonus, decayed to 0"})
    anneal_fraction: float = 0.6   # of the training episodes
    epsilon_start: float = 0.0     # the paper's exploration: act with (1 - eps) pi + eps / A, eps decayed
    # linearly over the same fraction; off by default (why: benchmarks/TUNING.md)
    epsilon_end: float = field(default=0.0, metadata={
        "help": "the exploration's final epsilon, reached linearly early in training"})
    # the largest gradient norm of either network's step; 1 bounds the oversized updates that walked solved policies
    # off their path (benchmarks/TUNING.md, COMA's misses on Switch2-v0)
    grad_clip: float = 1.0
    # every critic row learns the team reward; False: row i learns agent i's own reward (the seed design, for the
    # experiment of notebook 09)
    team_reward: bool = field(default=True, metadata={
        "switch": "--per-agent-reward", "help": "critic row i learns agent i's own reward, not the team reward"})
    fused_unroll: bool = True      # the update replays the actor over whole episodes in one call; False: step by
                                   # step, as acting does (the same values up to float32 rounding)

    def validate(self) -> COMAConfig:
        for name in ("actor_lr", "critic_lr"):
            setattr(self, name, positive_number(getattr(self, name), name, LIMITS["learning_rate"]))
        self.grad_clip = positive_number(self.grad_clip, "grad_clip", LIMITS["grad_clip"])
        for name in ("gamma", "lam", "epsilon_start", "epsilon_end", "anneal_fraction"):
            setattr(self, name, unit_interval(getattr(self, name), name))
        for name in ("hidden", "n_envs", "critic_steps", "target_update_every"):
            setattr(self, name, positive_int(getattr(self, name), name, LIMITS[name]))
        self.entropy_start = non_negative_number(self.entropy_start, "entropy_start", LIMITS["coefficient"])
        for name in ("recurrent", "team_reward", "fused_unroll"):
            setattr(self, name, boolean(getattr(self, name), name))
        return self


class SharedActorLearner:
    """How every learner with COMA's shared actor acts: one GRU policy pi(a_{i,t} | h_{i,t}, i) for all agents, with
    the agent's one-hot id and its last action in the input. A subclass builds ``self.actor`` (a ``RecurrentActor``),
    ``self.generator`` and ``self.last_action_dim`` and sets ``n_agents``, ``n_actions``, ``device`` and ``config``
    (whose ``fused_unroll`` says how ``replay_policy`` replays): COMA, its baselines and the PPO learners.
    """

    team_reward_only = False  # True where one V(s) has no agent id to learn each agent's own reward apart (the
    # command line refuses --per-agent-reward for these)

    # -- acting ---------------------------------------------------------------------------------
    def actor_input(self, obs: torch.Tensor, last_actions: torch.Tensor) -> torch.Tensor:
        """``[o_{i,t}, one_hot(a_{i,t-1}), one_hot(i)]`` for every agent i, as in the COMA paper: obs ``(B, N, O)``
        and last actions int ``(B, N)`` (-1 before the first step: an all-zero block) -> ``(B*N, O + A + N)``.
        Feed-forward actors get ``[o_{i,t}, one_hot(i)]``, ``(B*N, O + N)`` (``nets.shared_agent_input``)."""
        return shared_agent_input(obs, last_actions, self.n_actions, bool(self.last_action_dim))  # (B*N, O+A+N)

    def initial_hidden(self, batch: int) -> torch.Tensor:
        """The actor's hidden state before an episode's first step, zeros ``(batch, H)`` (batch = episodes * N)."""
        return self.actor.initial_hidden(batch, self.device)  # (batch, H)

    def policy_step(self, obs: torch.Tensor, last_actions: torch.Tensor, h: torch.Tensor,
                    epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of every agent's policy: obs ``(B, N, O)``, last actions int ``(B, N)``, hidden
        ``(B*N, H)`` -> probabilities ``(B, N, A)`` of the behaviour policy (1 - eps) softmax + eps / A, new hidden.
        Non-finite probabilities (NaN observations or weights) are a ValueError that says which."""
        logits, h = self.actor(self.actor_input(obs, last_actions), h)  # (B*N, A), (B*N, H)
        pi = torch.softmax(logits, dim=-1).reshape(obs.shape[0], self.n_agents, self.n_actions)  # (B, N, A)
        probs = (1.0 - epsilon) * pi + epsilon / self.n_actions  # (B, N, A)
        check_policy_output(probs, obs, self.actor, "the policy's probabilities")
        return probs, h

    def replay_policy(self, obs: torch.Tensor, actions: torch.Tensor, epsilon: float) -> torch.Tensor:
        """The behaviour policy at every step of a batch of episodes, replayed from each episode's start: obs
        ``(B, T, N, O)`` and the actions taken, int ``(B, T, N)`` -> probabilities ``(B, T, N, A)`` (step t sees
        a_{i,t-1}, nothing at t = 0). Step by step with ``policy_step``, or, with ``config.fused_unroll``, all steps in
        one ``RecurrentActor.unroll`` call (``recurrent.replay_episodes``; the same values up to float32 rounding)."""
        B, T, N, O = obs.shape
        if self.config.fused_unroll:
            logits = replay_episodes(self.actor, obs, actions, self.n_actions, bool(self.last_action_dim))  # (B,T,N,A)
            return (1.0 - epsilon) * torch.softmax(logits, dim=-1) + epsilon / self.n_actions  # (B, T, N, A)
        last_actions = previous_actions(actions)  # (B, T, N): a_{t-1}, none at t=0
        h = self.actor.initial_hidden(B * N, self.device)  # (B*N, H)
        probs = []
        for t in range(T):
            p_t, h = self.policy_step(obs[:, t], last_actions[:, t], h, epsilon)  # (B, N, A)
            probs.append(p_t)
        return torch.stack(probs, dim=1)  # (B, T, N, A)

    def sample(self, probs: torch.Tensor) -> torch.Tensor:
        """Sample actions with the learner's generator: probabilities ``(B, N, A)`` -> int ``(B, N)``; NaN or negative
        entries are a ValueError (``policies.sample_categorical``)."""
        return sample_categorical(probs, self.generator)  # (B, N)

    def greedy_policy(self):
        """A fresh policy for ``run_episode``: obs ``(N, O)`` -> argmax actions ``(N,)``, carrying its own
        GRU hidden state from step to step (so make a new one for every episode)."""
        return self._episode_policy(lambda probs: probs.argmax(dim=-1))

    def sampled_policy(self):
        """Like ``greedy_policy`` but sampling from pi (no epsilon)."""
        return self._episode_policy(self.sample)

    def _episode_policy(self, pick):
        """obs ``(N, O)`` -> ``pick(probs (1, N, A))[0]``, with the hidden state kept between calls."""
        step = lambda obs, last, h: self.policy_step(obs, last, h, epsilon=0.0)  # noqa: E731
        return episode_policy(step, self.initial_hidden(self.n_agents), self.n_agents, pick)


class COMA(SharedActorLearner):
    """Shared actor pi(a_{i,t} | h_{i,t}, i) and one centralised critic Q(s_t, (a_{-i,t}, .)) with its target.

    Networks for N agents: 1 actor (shared, with the agent's one-hot id in its input), 1 critic
    (one row per agent, see ``build_critic_input``), 1 target critic: 3, whatever N is.
    """

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: COMAConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        self.config = (config or COMAConfig()).validate()
        n_agents, obs_dim, n_actions = learner_sizes(n_agents, obs_dim, n_actions)  # before anything is built
        self.n_agents, self.obs_dim, self.n_actions = n_agents, obs_dim, n_actions
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.generator = seeded_generator(seed, self.device)
        c = self.config
        # a GRU actor reads the history h_{i,t} = (o_{i,0}, a_{i,0}, o_{i,1}, ...), so it gets its last action too;
        # a feed-forward actor sees o_{i,t} only (the position-only policies of notebook 09)
        self.last_action_dim = n_actions if c.recurrent else 0
        self.actor = RecurrentActor(obs_dim + self.last_action_dim + n_agents, n_actions, c.hidden,
                                    c.recurrent).to(self.device)
        self.critic = MLP(self.critic_dim, self.critic_outputs, (c.hidden, c.hidden)).to(self.device)
        self.target_critic = make_target(self.critic)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=c.actor_lr)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=c.critic_lr)
        self.updates = 0
        self.entropy_coef = c.entropy_start  # beta, the entropy bonus's weight now: the training loop decays it

    @property
    def critic_dim(self) -> int:
        """The width of one critic row (``build_critic_input``): S + O + N*A + N, where Switch has no global
        state and s = [o_0, ..., o_{N-1}], S = N*O."""
        return self.n_agents * self.obs_dim + self.obs_dim + self.n_agents * self.n_actions + self.n_agents

    @property
    def critic_outputs(self) -> int:
        """Q(s_t, (a_{-i,t}, .)) has one output per own action: A."""
        return self.n_actions

    # -- learning -------------------------------------------------------------------------------
    def critic_rows(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Critic inputs of whole episodes: obs ``(B, T, N, O)``, actions int ``(B, T, N)`` ->
        ``(B*T, N, S + O + N*A + N)`` with s = the concatenated observations."""
        B, T, N, O = obs.shape
        flat_obs = obs.reshape(B * T, N, O)  # (B*T, N, O)
        state = flat_obs.reshape(B * T, N * O)  # (B*T, S = N*O)
        onehot = F.one_hot(actions.reshape(B * T, N), self.n_actions).float()  # (B*T, N, A)
        return build_critic_input(state, flat_obs, onehot)  # (B*T, N, D)

    @torch.no_grad()
    def critic_targets(self, rows: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """TD(lambda) targets y_t ``(B, T, N)`` for Q(s_t, a_t) of every agent row, from the target critic Q':
        rows ``(B*(T+1), N, D)`` from ``critic_rows``, batch as in ``update``. Row i learns the team reward r_t,
        or agent i's own r_{i,t} with ``team_reward=False``."""
        c = self.config
        B, T1, N = batch["actions"].shape
        T = T1 - 1
        rewards = self.row_rewards(batch).permute(0, 2, 1)  # (B, N, T)
        dones = batch["dones"].unsqueeze(1).expand(B, N, T)  # (B, N, T)
        q_target_taken = self.taken_values(rows, batch, target=True)  # (B, T+1, N): Q'(s_t, a_t)
        next_values = q_target_taken[:, 1:].permute(0, 2, 1)  # (B, N, T): Q'(s_{t+1}, a_{t+1})
        return td_lambda_targets(rewards, dones, next_values, c.gamma, c.lam).permute(0, 2, 1)  # (B, T, N)

    def taken_values(self, rows: torch.Tensor, batch: dict[str, torch.Tensor], target: bool = False) -> torch.Tensor:
        """``Q(s_t, a_t)`` of every agent row at every index of the batch, ``(B, T+1, N)``, from the critic or
        (``target=True``) the target critic: the Q-value of the joint action actually taken."""
        actions = batch["actions"]  # (B, T+1, N)
        B, T1, N = actions.shape
        net = self.target_critic if target else self.critic
        q = net(rows.reshape(-1, rows.shape[-1])).reshape(B, T1, N, -1)  # (B, T+1, N, A)
        return q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # (B, T+1, N)

    def row_rewards(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The reward each critic row learns, ``(B, T, N)``: the team reward r_t = sum_i r_{i,t} in every row
        (Switch is cooperative), or agent i's own reward r_{i,t} in row i with ``team_reward=False``."""
        return critic_rewards(batch["rewards"], self.config.team_reward)  # (B, T, N) from each agent's own

    def critic_loss(self, rows: torch.Tensor, batch: dict[str, torch.Tensor], targets: torch.Tensor) -> torch.Tensor:
        """Mean over real steps and agent rows of (Q(s_t, a_t) - y_t)^2: rows ``(B*(T+1), N, D)`` from
        ``critic_rows``, targets ``(B, T, N)`` from ``critic_targets``."""
        q_taken = self.taken_values(rows, batch)[:, :-1]  # (B, T, N): the end state's column has no target
        step_mask = batch["step_mask"].unsqueeze(-1).expand_as(q_taken)  # (B, T, N)
        return masked_mean((q_taken - targets) ** 2, step_mask, name="squared TD error")  # padding left out

    @staticmethod
    def actor_loss(pi: torch.Tensor, advantage: torch.Tensor, actions: torch.Tensor, agent_mask: torch.Tensor,
                   entropy_coef: float) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy-gradient loss ``-sum_{b,t,i} omega_{i,t} (Adv_{i,t} log pi(a_{i,t} | h_{i,t}) + beta H(pi_{i,t}))
        / sum omega`` over the steps at which agent i acts (``omega``: agent_mask), and the mean entropy it rewards (a
        figure to log). pi ``(B, T, N, A)`` the behaviour policy (with its gradient), advantage ``(B, T, N)`` (no
        gradient), actions int ``(B, T, N)`` the actions taken, agent_mask ``(B, T, N)``, entropy_coef beta."""
        log_pi_taken = categorical_log_prob(pi, actions)  # (B, T, N) log pi(a_{i,t} | h_{i,t}, i)
        entropy = categorical_entropy(pi)  # (B, T, N) H(pi_{i,t})
        loss = -masked_mean(advantage * log_pi_taken + entropy_coef * entropy, agent_mask, allow_empty=True,
                            name="policy-gradient term")  # a batch in which no agent acts: 0
        return loss, masked_mean(entropy, agent_mask, allow_empty=True, name="entropy").detach()

    @torch.no_grad()
    def advantage(self, rows: torch.Tensor, batch: dict[str, torch.Tensor], pi: torch.Tensor) -> torch.Tensor:
        """The counterfactual advantage ``Adv_{i,t} = Q(s_t, a_t) - sum_k pi(k | h_{i,t}, i) Q(s_t, (a_{-i,t}, k))``
        of every agent's taken action, ``(B, T, N)``: rows ``(B*(T+1), N, D)`` from ``critic_rows``, pi
        ``(B, T, N, A)`` the behaviour policy."""
        actions = batch["actions"]  # (B, T+1, N)
        B, T1, N = actions.shape
        q = self.critic(rows.reshape(-1, rows.shape[-1])).reshape(B, T1, N, -1)[:, :T1 - 1]  # (B, T, N, A)
        return coma_advantage(q, pi, actions[:, :T1 - 1])  # (B, T, N)

    @on_enclosing_threads
    def update(self, batch: dict) -> dict[str, float]:
        """One COMA update from a batch of whole episodes (``rollout.collect_episodes``'s).

        batch: obs ``(B, T+1, N, O)`` (index t = the observation before step t; the last valid index
        is the state the episode ended in), actions int ``(B, T+1, N)`` (at the end state: an action
        sampled from the policy, used only to bootstrap a time-limit end), per-agent rewards ``(B, T, N)``,
        dones ``(B, T)`` (1 at a real terminal step and on padding), step_mask ``(B, T)`` (real steps),
        agent_mask ``(B, T, N)`` (steps at which agent i still acts), and epsilon (a float: the behaviour
        policy (1 - eps) pi + eps / A the episodes were played with, which the actor's loss replays).

        Departures from the paper's algorithm: the critic makes ``critic_steps`` passes over the whole batch
        before the actor's one step (the paper steps the critic along the episode, one time step at a time); the
        target critic is copied every ``target_update_every`` batches (counted in updates, not env steps); every
        critic row learns the team reward (``team_reward``); and the actor's loss adds an entropy bonus
        beta * H(pi) weighted by ``self.entropy_coef``, which the training loop decays (the paper explores with
        epsilon alone; benchmarks/TUNING.md says why).
        """
        check_episode_batch(batch, self.n_agents, self.obs_dim, self.n_actions)  # ValueError naming a bad entry
        return self.update_steps(batch)

    def update_steps(self, batch: dict) -> dict[str, float]:
        """``update``'s steps on a batch already checked (``check_episode_batch``, once: central-QV's ``update``
        checks it, takes its own steps, then these)."""
        c = self.config
        epsilon, entropy_coef = float(batch["epsilon"]), self.entropy_coef
        obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
        B, T1, N, _ = obs.shape
        T = T1 - 1
        rows = self.critic_rows(obs, actions)  # (B*(T+1), N, D)

        # critic: Q(s_t, a_t) of the taken joint action regresses onto TD(lambda) targets y_t
        targets = self.critic_targets(rows, batch)  # (B, T, N)
        for _ in range(c.critic_steps):
            critic_loss = self.critic_loss(rows, batch, targets)
            gradient_step(self.critic_optimizer, self.critic, critic_loss, c.grad_clip, "critic loss", self.updates + 1)

        # actor: the counterfactual advantage of each agent's own action, under the behaviour policy
        pi = self.replay_policy(obs[:, :T], actions[:, :T], epsilon)  # (B, T, N, A)
        advantage = self.advantage(rows, batch, pi.detach())  # (B, T, N)
        actor_loss, entropy = self.actor_loss(pi, advantage, actions[:, :T], batch["agent_mask"], entropy_coef)
        gradient_step(self.actor_optimizer, self.actor, actor_loss, c.grad_clip, "actor loss", self.updates + 1)

        self.updates += 1
        update_target(self.target_critic, self.critic, self.updates, every=c.target_update_every)  # a copy every C
        return {"critic_loss": critic_loss.item(), "actor_loss": actor_loss.item(), "entropy": entropy.item()}

    def state_dict(self) -> dict:
        return {"actor": self.actor.state_dict(), "critic": self.critic.state_dict(),
                "target_critic": self.target_critic.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        for key in ("actor", "critic", "target_critic"):
            getattr(self, key).load_state_dict(state[key])
