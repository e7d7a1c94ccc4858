"""Value decomposition: independent Q-learning (IQL), VDN and QMIX, recurrent agents learning from replayed episodes.

Each agent i has a utility Q_i(h_{i,t}, a), computed by one GRU network shared by all agents (with the agent's one-hot
id and its last action in the input, as COMA's actor), and acts greedily on it. The three learners differ only in
what they regress onto the TD target of the team reward r_t = sum_i r_{i,t}:

    IQL:   each Q_i(h_{i,t}, a_{i,t}) on its own       y_{i,t} = r_t + gamma (1 - d_t) Q'_i(h_{i,t+1}, a*_{i,t+1})
    VDN:   Q_tot = sum_i Q_i(h_{i,t}, a_{i,t})          y_t = r_t + gamma (1 - d_t) sum_i Q'_i(h_{i,t+1}, a*_{i,t+1})
    QMIX:  Q_tot = f(Q_1, ..., Q_N; s_t), df/dQ_i >= 0  y_t = r_t + gamma (1 - d_t) f'(Q'_1, ..., Q'_N; s_{t+1})

with double Q-learning's a*_{i,t+1} = argmax_a Q_i(h_{i,t+1}, a) from the online network, valued by the target one
(primes). With ``lam`` > 0 the one-step target becomes COMA's TD(lambda) recursion over the replayed episode
(``td_targets``). Because Q_tot grows with every Q_i (a sum does; QMIX's mixer f keeps its weights non-negative),
each agent's greedy action maximises Q_tot too: the individual-global-max principle, which lets every agent act on
its own Q_i while learning from the team's. IQL has no Q_tot: each agent treats the others as part of the environment.

s_t is the state the mixer sees: Switch and Level-Based Foraging give none, so s_t = [o_{0,t}, ..., o_{N-1,t}], the
concatenated observations (S = N*O), as EPyMARL does on tasks without a state. Symbols as in the cheat sheet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from marl_edu.base.shapes import check_shape
from marl_edu.base.threads import on_enclosing_threads
from marl_edu.base.validate import (LIMITS, boolean, finite, learner_sizes, positive_int, positive_number,
                                    unit_interval)
from marl_edu.data.rollout import check_episode_batch
from marl_edu.pieces.masked import masked_mean
from marl_edu.pieces.nets import MLP, RecurrentActor, check_policy_output, gradient_step, linear, shared_agent_input
from marl_edu.pieces.policies import sample_categorical, seeded_generator
from marl_edu.pieces.recurrent import episode_policy, replay_episodes
from marl_edu.pieces.targets import make_target, td_lambda_targets, update_target


def vdn_mix(q_taken: torch.Tensor) -> torch.Tensor:
    """VDN's Q_tot: the sum of the agents' chosen utilities, q_taken float ``(..., N)``, finite -> ``(...)``."""
    if not isinstance(q_taken, torch.Tensor) or not q_taken.dtype.is_floating_point or q_taken.dim() < 1:
        raise ValueError(f"q_taken must be a float tensor (..., N), got {getattr(q_taken, 'dtype', type(q_taken))}")
    finite(q_taken, "q_taken")
    return q_taken.sum(dim=-1)  # (...)


class QMixer(nn.Module):
    """QMIX's mixing network: the agents' chosen utilities ``(B, N)`` and the state ``(B, S)`` -> Q_tot ``(B,)``, one
    row per step (``QMIX.mix`` passes the B*T steps of an episode batch as its B rows).

        Q_tot = w_2(s)^T elu(W_1(s)^T q + v_1(s)) + v_2(s)

    The weights W_1 ``(N, E)`` and w_2 ``(E,)`` are outputs of hypernetworks on the state, passed through abs(), so
    Q_tot is monotonic in every Q_i (dQ_tot/dQ_i >= 0) whatever the state; the biases v_1 ``(E,)`` and v_2 (a scalar;
    ``b1`` and ``b2`` in the code) may be negative and carry what the state alone says about the team's value. E is
    ``embed``; the hypernetworks of the weights have one hidden layer of ``hyper_hidden`` units, v_2's one of E, as in
    the QMIX paper. N, E and the hidden units are bounded by ``validate.LIMITS`` (and every layer by its
    ``layer_weights``: S is N*O) before anything is built; the inputs must be finite and of the weights' dtype.
    """

    def __init__(self, n_agents: int, state_dim: int, embed: int = 32, hyper_hidden: int = 64):
        super().__init__()
        self.n_agents = positive_int(n_agents, "n_agents", LIMITS["n_agents"])
        self.state_dim = positive_int(state_dim, "state_dim")
        self.embed = positive_int(embed, "embed", LIMITS["hidden"])
        hyper_hidden = positive_int(hyper_hidden, "hyper_hidden", LIMITS["hidden"])
        self.hyper_w1 = MLP(state_dim, n_agents * embed, (hyper_hidden,))  # s -> W_1, (N*E)
        self.hyper_b1 = linear(state_dim, embed)  # s -> v_1, (E)
        self.hyper_w2 = MLP(state_dim, embed, (hyper_hidden,))  # s -> w_2, (E)
        self.hyper_b2 = MLP(state_dim, 1, (embed,))  # s -> v_2, (1)

    def forward(self, q_taken: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        dims = check_shape(q_taken, ("B", self.n_agents), "q_taken", dtype="float")
        check_shape(state, (dims["B"], self.state_dim), "state", dtype="float")
        for tensor, name in ((q_taken, "q_taken"), (state, "state")):
            if tensor.dtype != self.hyper_b1.weight.dtype:
                raise ValueError(f"{name}: expected {self.hyper_b1.weight.dtype} elements (the mixer's weights'), got "
                                 f"{tensor.dtype}")
            finite(tensor, name)
        B, N, E = dims["B"], self.n_agents, self.embed
        w1 = torch.abs(self.hyper_w1(state)).view(B, N, E)  # (B, N, E) non-negative
        b1 = self.hyper_b1(state).view(B, 1, E)  # (B, 1, E)
        hidden = F.elu(torch.bmm(q_taken.view(B, 1, N), w1) + b1)  # (B, 1, E)
        w2 = torch.abs(self.hyper_w2(state)).view(B, E, 1)  # (B, E, 1) non-negative
        b2 = self.hyper_b2(state).view(B, 1, 1)  # (B, 1, 1)
        return (torch.bmm(hidden, w2) + b2).view(B)  # (B,) Q_tot


@dataclass
class ValueDecompositionConfig:
    """Hyperparameters of IQL, VDN and QMIX. Every value is checked by ``validate``. The defaults were chosen for VDN on
    Switch2-v0 on seeds 100-105 (never the tables' seeds), by the episode at which a greedy evaluation first reached
    8.0 in a 3,000-episode budget: with one-step targets (lam = 0) and one update per collection VDN stayed at greedy
    -10 after 2,000 episodes; lam = 0.6, 4 updates per collection from 32 episodes and a target copy every 100 updates
    solved 0 of 3 in 1,500 episodes; exploring down to epsilon 0.01 instead of 0.05 with 8 updates per collection
    solved 6 of 6 (800-2,352 episodes, median 856); 16 replayed episodes per update instead of 32 and lr 2e-3 kept 5 of
    5 (752-2,256, median 904) at about two thirds of the cost per update (``benchmarks/sweep.py``; benchmarks/TUNING.md).
    A replay of the last 1,000 episodes instead of 5,000 (issue 48, ``benchmarks/keep.py``) kept VDN's greedy policy
    solved in 93% of the last third's evaluations instead of 78% on seeds 100-104, and 94% instead of 64% on seeds
    105-109: the TD(lambda) targets of old, exploring episodes left a TD loss (0.06-0.09 at the end, against
    0.003-0.03) that flipped the greedy policy between near-equal paths. On their tuning seeds IQL and QMIX did no
    worse with it (IQL 2 of 5 ended solved on Switch2 either way, QMIX 4 of 5 against 3 of 5), so the three learners
    share it and IQL -> VDN -> QMIX stay one change apart (benchmarks/TUNING.md)."""

    # Adam, for the agent network and the mixer together
    lr: float = field(default=2e-3, metadata={"help": "learning rate of the agent network and the mixer"})
    gamma: float = field(default=0.99, metadata={"help": "discount in [0, 1]"})
    hidden: int = field(default=64, metadata={"help": "hidden units per layer"})  # the agent network's GRU width
    # GRU agents over [o_{i,t}, a_{i,t-1}, id]; False: feed-forward on [o_{i,t}, id]
    recurrent: bool = field(default=True, metadata={
        "switch": "--feed-forward",
        "help": "a feed-forward actor (agent network) on [o_t, id] instead of the GRU over the history"})
    # episodes played in lock-step per collection, each stored in the replay
    n_envs: int = field(default=8, metadata={
        "help": "environment copies stepped in lock-step; for the on-policy learners, episodes per update"})
    buffer_episodes: int = 1000    # the episode replay's capacity: the last 1,000 episodes
    batch_episodes: int = field(default=16, metadata={"help": "replayed episodes per update"})  # B
    updates_per_collection: int = 8  # updates after each collection of n_envs episodes
    target_update_every: int = 100  # updates between hard copies into the target network (and target mixer)
    # a*_{t+1} from the online network, valued by the target (False: max of the target)
    double_q: bool = field(default=True, metadata={
        "switch": "--single-q", "help": "the target's own max at the next step instead of double Q's online argmax"})
    # TD(lambda) of the targets over the replayed episode; 0: the one-step target
    lam: float = field(default=0.6, metadata={"help": "TD(lambda) of the targets"})
    epsilon_start: float = 1.0     # epsilon-greedy exploration, decayed linearly
    epsilon_end: float = field(default=0.01, metadata={
        "help": "the exploration's final epsilon, reached linearly early in training"})
    epsilon_fraction: float = 0.3  # ... over this fraction of the training episodes
    mixer_embed: int = 32          # QMIX: E, the mixing network's width
    hyper_hidden: int = 64         # QMIX: the hypernetworks' hidden units
    grad_clip: float = 10.0

    def validate(self) -> ValueDecompositionConfig:
        self.lr = positive_number(self.lr, "lr", LIMITS["learning_rate"])
        self.grad_clip = positive_number(self.grad_clip, "grad_clip", LIMITS["grad_clip"])
        for name in ("gamma", "lam", "epsilon_start", "epsilon_end", "epsilon_fraction"):
            setattr(self, name, unit_interval(getattr(self, name), name))
        for name, limit in (("hidden", "hidden"), ("n_envs", "n_envs"), ("buffer_episodes", "buffer_size"),
                            ("batch_episodes", "batch_size"), ("updates_per_collection", "updates_per_step"),
                            ("target_update_every", "target_update_every"), ("mixer_embed", "hidden"),
                            ("hyper_hidden", "hidden")):
            setattr(self, name, positive_int(getattr(self, name), name, LIMITS[limit]))
        for name in ("recurrent", "double_q"):
            setattr(self, name, boolean(getattr(self, name), name))
        if self.batch_episodes > self.buffer_episodes:
            raise ValueError(f"batch_episodes must be at most buffer_episodes ({self.buffer_episodes}), got "
                             f"{self.batch_episodes}: a batch draws from the episodes the replay holds")
        return self


class IQL:
    """Independent recurrent Q-learning with one shared agent network Q_i(h_{i,t}, .) and its target network.

    Networks for N agents: 1 agent network (shared, with the agent's one-hot id in its input) and 1 target: 2,
    whatever N is. VDN and QMIX (below) are the same learner with a mixer between the Q_i and the TD target.
    """

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: ValueDecompositionConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        self.config = (config or ValueDecompositionConfig()).validate()
        n_agents, obs_dim, n_actions = learner_sizes(n_agents, obs_dim, n_actions)  # before anything is built
        self.n_agents, self.obs_dim, self.n_actions = n_agents, obs_dim, n_actions
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.generator = seeded_generator(seed, self.device)
        c = self.config
        self.last_action_dim = n_actions if c.recurrent else 0  # a GRU agent also gets its last action (history)
        self.q_net = RecurrentActor(obs_dim + self.last_action_dim + n_agents, n_actions, c.hidden,
                                    c.recurrent).to(self.device)
        self.target_q_net = make_target(self.q_net)
        self.mixer, self.target_mixer = self.build_mixer()
        learned = list(self.q_net.parameters()) + (list(self.mixer.parameters()) if self.mixer is not None else [])
        self.optimizer = torch.optim.Adam(learned, lr=c.lr)
        self.updates = 0

    def build_mixer(self) -> tuple[nn.Module | None, nn.Module | None]:
        """The mixer and its target: none for IQL (and VDN, whose sum has no weights)."""
        return None, None

    @property
    def state_dim(self) -> int:
        """S: the mixer's state is the concatenated observations, S = N*O."""
        return self.n_agents * self.obs_dim

    # -- acting ---------------------------------------------------------------------------------
    def initial_hidden(self, batch: int) -> torch.Tensor:
        """The agent network's hidden state before an episode's first step, zeros ``(batch, H)``."""
        return self.q_net.initial_hidden(batch, self.device)  # (batch, H)

    def agent_input(self, obs: torch.Tensor, last_actions: torch.Tensor) -> torch.Tensor:
        """``[o_{i,t}, one_hot(a_{i,t-1}), one_hot(i)]`` for every agent, as COMA's actor's
        (``nets.shared_agent_input``): obs ``(B, N, O)``, last actions int ``(B, N)`` (-1 before the first step: an
        all-zero block) -> ``(B*N, O + A + N)`` (feed-forward: ``(B*N, O + N)``)."""
        return shared_agent_input(obs, last_actions, self.n_actions, bool(self.last_action_dim))  # (B*N, O+A+N)

    def policy_step(self, obs: torch.Tensor, last_actions: torch.Tensor, h: torch.Tensor,
                    epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of the epsilon-greedy policy: obs ``(B, N, O)``, last actions int ``(B, N)``, hidden ``(B*N, H)``
        -> probabilities ``(B, N, A)``, (1 - eps) on argmax_a Q_i(h_{i,t}, a) plus eps / A on every action, and the
        new hidden state."""
        q, h = self.q_net(self.agent_input(obs, last_actions), h)  # (B*N, A), (B*N, H)
        q = q.reshape(obs.shape[0], self.n_agents, self.n_actions)  # (B, N, A)
        check_policy_output(q, obs, self.q_net, "the agents' Q-values")
        greedy = F.one_hot(q.argmax(dim=-1), self.n_actions).float()  # (B, N, A)
        return (1.0 - epsilon) * greedy + epsilon / self.n_actions, h  # (B, N, A), (B*N, H)

    def sample(self, probs: torch.Tensor) -> torch.Tensor:
        """Sample actions from probabilities ``(B, N, A)`` -> int ``(B, N)``, with the learner's own generator; NaN or
        negative entries are a ValueError (``policies.sample_categorical``, as COMA's)."""
        return sample_categorical(probs, self.generator)  # (B, N)

    def greedy_policy(self):
        """A fresh policy for ``run_episode``: obs ``(N, O)`` -> argmax_a Q_i actions ``(N,)``, carrying its hidden
        state from step to step (make a new one for every episode)."""
        return self._episode_policy(0.0)

    def sampled_policy(self, epsilon: float | None = None):
        """Like ``greedy_policy`` but epsilon-greedy: with ``epsilon`` (a probability), or None for the schedule's
        final ``epsilon_end``, what the learner played at the end of training (``training.evaluation`` evaluates
        with the MARL textbook's 0.05)."""
        return self._episode_policy(self.config.epsilon_end if epsilon is None else unit_interval(epsilon, "epsilon"))

    def _episode_policy(self, epsilon: float):
        """obs ``(N, O)`` -> actions ``(N,)`` of the epsilon-greedy policy, the hidden state kept between calls."""
        step = lambda obs, last, h: self.policy_step(obs, last, h, epsilon)  # noqa: E731
        pick = (lambda probs: probs.argmax(dim=-1)) if epsilon == 0.0 else self.sample
        return episode_policy(step, self.initial_hidden(self.n_agents), self.n_agents, pick)

    # -- learning -------------------------------------------------------------------------------
    def q_values(self, obs: torch.Tensor, actions: torch.Tensor, target: bool = False) -> torch.Tensor:
        """Q_i(h_{i,t}, .) of every agent at every index of whole episodes, replayed from their start: obs
        ``(B, T+1, N, O)`` and the actions taken int ``(B, T+1, N)`` (step t sees a_{i,t-1}) -> ``(B, T+1, N, A)``,
        from the agent network or (``target=True``) its target. One fused GRU unroll over all steps."""
        net = self.target_q_net if target else self.q_net
        return replay_episodes(net, obs, actions, self.n_actions, bool(self.last_action_dim))  # (B, T+1, N, A)

    def mix(self, q_taken: torch.Tensor, state: torch.Tensor, target: bool = False) -> torch.Tensor:
        """What the TD target is regressed on: IQL keeps each agent's own, ``(B, T, N)`` -> ``(B, T, N)``."""
        return q_taken

    def td_targets(self, batch: dict[str, torch.Tensor], q: torch.Tensor) -> torch.Tensor:
        """``y_t = r_t + gamma (1 - d_t) ((1 - lam) Q'_tot,t+1 + lam y_{t+1})`` with
        ``Q'_tot,t+1 = mix'(Q'_1(h_{1,t+1}, a*_{1,t+1}), ...; s_{t+1})``: the TD(lambda) recursion of COMA's critic
        (``targets.td_lambda_targets``) on the mixed target values, no gradient. lam = 0 is the one-step target
        r_t + gamma (1 - d_t) Q'_tot,t+1 of the papers; lam > 0 also uses the rewards the replayed episode went on to
        get (Peng's Q(lambda), as PyMARL2 does for QMIX: biased towards the policy that played it, faster to carry
        a late reward back). batch as in ``update``, q ``(B, T+1, N, A)`` the online network's values (they choose
        a*, double Q). Returns ``(B, T)`` (VDN, QMIX) or ``(B, T, N)`` (IQL, one target per agent)."""
        c = self.config
        obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
        B, T1, N, O = obs.shape
        with torch.no_grad():
            q_target = self.q_values(obs, actions, target=True)[:, 1:]  # (B, T, N, A): Q'_i(h_{i,t+1}, .)
            if c.double_q:
                best = q[:, 1:].detach().argmax(dim=-1, keepdim=True)  # (B, T, N, 1) a*_{i,t+1} from the online net
                next_q = q_target.gather(-1, best).squeeze(-1)  # (B, T, N)
            else:
                next_q = q_target.max(dim=-1).values  # (B, T, N)
            next_state = obs[:, 1:].reshape(B, T1 - 1, N * O)  # (B, T, S) s_{t+1}
            next_value = self.mix(next_q, next_state, target=True)  # (B, T) or (B, T, N)
            team = batch["rewards"].sum(dim=-1)  # (B, T) r_t = sum_i r_{i,t}
            dones = batch["dones"]  # (B, T)
            if next_value.dim() == 2:  # VDN, QMIX: one target per step
                return td_lambda_targets(team, dones, next_value, c.gamma, c.lam)  # (B, T)
            # IQL: every agent's target from the same team reward, time last for the recursion: (B, N, T)
            team, dones = team.unsqueeze(1).expand(B, N, T1 - 1), dones.unsqueeze(1).expand(B, N, T1 - 1)
            return td_lambda_targets(team, dones, next_value.transpose(1, 2), c.gamma, c.lam).transpose(1, 2)

    @staticmethod
    def td_loss(q_tot: torch.Tensor, targets: torch.Tensor, step_mask: torch.Tensor) -> torch.Tensor:
        """The mean squared TD error over real steps: q_tot and targets ``(B, T)`` (or ``(B, T, N)``, IQL: every
        agent's), step_mask ``(B, T)``: ``sum m (Q_tot - y)^2 / sum m``, padding left out. targets must have q_tot's
        shape exactly ((B, T) against (B, 1) would broadcast into a wrong loss), step_mask a 1 somewhere."""
        dims = check_shape(q_tot, ("B", "T", "N")[:max(q_tot.dim(), 2)] if q_tot.dim() in (2, 3) else ("B", "T"),
                           "q_tot", dtype="float")
        check_shape(targets, tuple(q_tot.shape), "targets", dtype="float")
        check_shape(step_mask, ("B", "T"), "step_mask", dims, dtype="float")
        mask = step_mask if q_tot.dim() == 2 else step_mask.unsqueeze(-1).expand_as(q_tot)  # as q_tot's shape
        return masked_mean((q_tot - targets) ** 2, mask, name="squared TD error")

    @on_enclosing_threads
    def update(self, batch: dict) -> dict[str, float]:
        """One gradient step on a batch of B whole episodes (``buffers.EpisodeReplay.sample``'s): obs
        ``(B, T+1, N, O)`` (the last valid index of each episode is the state it ended in), actions int
        ``(B, T+1, N)``, per-agent rewards ``(B, T, N)``, dones ``(B, T)`` (1 at a real terminal step and on padding:
        a time-limit end bootstraps), step_mask ``(B, T)`` and agent_mask ``(B, T, N)``. Every ``target_update_every``
        updates the target network (and target mixer) becomes a copy of the online one."""
        c = self.config
        check_episode_batch(batch, self.n_agents, self.obs_dim, self.n_actions, behaviour=False)
        obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
        B, T1, N, O = obs.shape
        q = self.q_values(obs, actions)  # (B, T+1, N, A) Q_i(h_{i,t}, .)
        q_taken = q[:, :-1].gather(-1, actions[:, :-1].unsqueeze(-1)).squeeze(-1)  # (B, T, N) Q_i(h_{i,t}, a_{i,t})
        state = obs[:, :-1].reshape(B, T1 - 1, N * O)  # (B, T, S) s_t
        q_tot = self.mix(q_taken, state)  # (B, T) Q_tot (IQL: (B, T, N))
        targets = self.td_targets(batch, q)  # (B, T) y_t (IQL: (B, T, N))
        loss = self.td_loss(q_tot, targets, batch["step_mask"])
        learned = nn.ModuleList([self.q_net] + ([self.mixer] if self.mixer is not None else []))
        gradient_step(self.optimizer, learned, loss, c.grad_clip, "TD loss", self.updates + 1)
        self.updates += 1
        update_target(self.target_q_net, self.q_net, self.updates, every=c.target_update_every)
        if self.mixer is not None:
            update_target(self.target_mixer, self.mixer, self.updates, every=c.target_update_every)
        return {"td_loss": loss.item(), "q_taken": (q_taken.detach().mean()).item()}

    def state_dict(self) -> dict:
        state = {"q_net": self.q_net.state_dict(), "target_q_net": self.target_q_net.state_dict()}
        if self.mixer is not None:
            state.update(mixer=self.mixer.state_dict(), target_mixer=self.target_mixer.state_dict())
        return state

    def load_state_dict(self, state: dict) -> None:
        for key in self.state_dict():
            getattr(self, key).load_state_dict(state[key])


class VDN(IQL):
    """Value decomposition networks: Q_tot(h_t, a_t) = sum_i Q_i(h_{i,t}, a_{i,t}), learned from the team reward."""

    def mix(self, q_taken: torch.Tensor, state: torch.Tensor, target: bool = False) -> torch.Tensor:
        """Q_tot = sum_i Q_i: ``(B, T, N)`` -> ``(B, T)`` (the state is not used)."""
        return vdn_mix(q_taken)  # (B, T)


class QMIX(IQL):
    """QMIX: Q_tot = f(Q_1, ..., Q_N; s_t) with a monotonic mixing network whose weights come from hypernetworks on
    the state (``QMixer``), and its target mixer f'. Networks: the agent network, the mixer and their targets: 4."""

    def build_mixer(self) -> tuple[nn.Module, nn.Module]:
        mixer = QMixer(self.n_agents, self.state_dim, self.config.mixer_embed, self.config.hyper_hidden)
        mixer = mixer.to(self.device)
        return mixer, make_target(mixer)

    def mix(self, q_taken: torch.Tensor, state: torch.Tensor, target: bool = False) -> torch.Tensor:
        """Q_tot = f(q; s): q_taken ``(B, T, N)``, state ``(B, T, S)`` -> ``(B, T)``, by the mixer or its target."""
        B, T, N = q_taken.shape
        mixer = self.target_mixer if target else self.mixer
        return mixer(q_taken.reshape(B * T, N), state.reshape(B * T, -1)).reshape(B, T)  # (B, T)
