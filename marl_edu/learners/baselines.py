"""The baselines of notebook 14: COMA and MADDPG with their key idea taken away, one piece at a time.

Each baseline keeps its main method's actors, optimiser, budget and training loop, and changes only the
critic, so a difference in the results is a difference the critic made:

| learner  | critic sees                 | the actor is pushed by                                                   |
|----------|-----------------------------|--------------------------------------------------------------------------|
| COMA     | s_t and the others' actions | Adv_{i,t} = Q(s_t, a_t) - sum_k pi(k | h_{i,t}, i) Q(s_t, (a_{-i,t}, k)) |
| CentralQV| COMA's Q, and V(s_t)        | Adv_{i,t} = Q(s_t, a_t) - V(s_t): a learned baseline of the state only   |
| CentralV | s_t (every observation)     | delta_t = r_t + gamma V(s_{t+1}) - V(s_t), the same for every agent      |
| IACV     | o_{i,t} only (and its id)   | delta_{i,t} = r_t + gamma V(o_{i,t+1}) - V(o_{i,t})                      |
| MADDPG   | o_0..o_{N-1}, a_0..a_{N-1}  | grad of sum_k pi_i(k | o_{i,t}) Q_i(x_t, (a_{-i,t}, k))                  |
| IDDPG    | o_{i,t} and a_{i,t} only    | grad of sum_k pi_i(k | o_{i,t}) Q_i(o_{i,t}, k)                          |

All of them learn the team reward (Switch is cooperative). CentralV, IACV and CentralQV follow the COMA paper's
"central-V", "IAC-V" and "central-QV" baselines (Foerster et al. 2018, section 6): the same shared actor as COMA, a
critic trained on the same TD(lambda) targets; central-V and IAC-V push the actor with the one-step TD error (our
IAC-V critic is feed-forward, see ``IACV``), central-QV with COMA's Q less a learned V: the ablation that changes
COMA's counterfactual baseline and nothing else.
IDDPG is MADDPG without the centralised critic: each agent learns as if the others were part of the
environment.
"""

from __future__ import annotations

import torch

from marl_edu.base.threads import on_enclosing_threads
from marl_edu.data.rollout import check_episode_batch
from marl_edu.learners.coma import COMA, COMAConfig
from marl_edu.learners.maddpg import MADDPG, own_critic_input
from marl_edu.pieces.masked import masked_mean
from marl_edu.pieces.nets import MLP, gradient_step
from marl_edu.pieces.targets import make_target, td_lambda_targets, update_target


class _ValueActorCritic(COMA):
    """COMA's shared actor and update with a state-value critic V in place of Q(s_t, (a_{-i,t}, .)).

    Subclasses say what V sees (``critic_rows``, one row per agent). The update is COMA's (``COMA.update``):
    TD(lambda) targets from the target critic, ``critic_steps`` critic steps, one actor step. COMA's targets
    and loss regress ``taken_values``, which is V here instead of Q(s_t, a_t); the advantage is the TD error of
    the online critic, ``delta_t = r_t + gamma (1 - d_t) V(s_{t+1}) - V(s_t)`` (IAC-V: V of o_{i,t} instead of s_t).
    """

    @property
    def critic_outputs(self) -> int:
        """V has one output: (B, D) -> (B, 1). (COMA's constructor draws the actor first, then this critic, so the
        actor starts as COMA's does for the same seed.)"""
        return 1

    def taken_values(self, rows: torch.Tensor, batch: dict[str, torch.Tensor], target: bool = False) -> torch.Tensor:
        """What COMA's critic targets and loss regress: here V of every row at every index, ``(B, T+1, N)``, from
        the critic or the target critic (a state value does not depend on the action taken)."""
        net = self.target_critic if target else self.critic
        return net(rows.reshape(-1, rows.shape[-1])).reshape(batch["actions"].shape)  # (B, T+1, N)

    @torch.no_grad()
    def advantage(self, rows: torch.Tensor, batch: dict[str, torch.Tensor], pi: torch.Tensor) -> torch.Tensor:
        """The TD error ``delta_t = r_t + gamma (1 - d_t) V(s_{t+1}) - V(s_t)`` of every row, ``(B, T, N)`` (IAC-V's
        row i: ``delta_{i,t}``, with V(o_{i,t+1}) and V(o_{i,t})).
        It does not look at which action the agent took, so it cannot tell one agent's choice from the
        others' (``pi`` is unused)."""
        v = self.taken_values(rows, batch)  # (B, T+1, N)
        rewards = self.row_rewards(batch)  # (B, T, N)
        not_done = 1.0 - batch["dones"].unsqueeze(-1)  # (B, T, 1)
        return rewards + self.config.gamma * not_done * v[:, 1:] - v[:, :-1]  # (B, T, N)


class CentralV(_ValueActorCritic):
    """Central-V: one centralised V(s_t) with s_t = [o_{0,t}, ..., o_{N-1,t}]; every agent gets the same TD error.
    Team reward only: its rows carry no agent id, so one V(s) cannot learn N different own returns."""

    team_reward_only = True

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: COMAConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        if config is not None and not config.team_reward:
            raise ValueError("central-V learns the team reward only (team_reward=True): its one V(s) has no agent "
                             "id to tell the agents' own returns apart")
        super().__init__(n_agents, obs_dim, n_actions, config, seed, device)

    @property
    def critic_dim(self) -> int:
        return self.n_agents * self.obs_dim  # S = N*O

    def critic_rows(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """obs ``(B, T, N, O)`` -> ``(B*T, N, S)``: the state, once per agent row (actions unused)."""
        B, T, N, O = obs.shape
        state = obs.reshape(B * T, 1, N * O)  # (B*T, 1, S)
        return state.expand(B * T, N, N * O)  # (B*T, N, S)


class IACV(_ValueActorCritic):
    """IAC-V: independent actor-critic, each agent's V(o_{i,t}, one_hot(i)) on its own current observation and id
    (one network with the id in its input, like the shared actor: N critics in one). The COMA paper's IAC
    critics read the agent's own history instead; this one is central-V's feed-forward critic with a
    decentralised input, so that the two differ in what the critic sees and nothing else."""

    @property
    def critic_dim(self) -> int:
        return self.obs_dim + self.n_agents  # O + N

    def critic_rows(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """obs ``(B, T, N, O)`` -> ``(B*T, N, O + N)``: row i is ``[o_{i,t}, one_hot(i)]`` (actions unused)."""
        B, T, N, O = obs.shape
        ids = torch.eye(N, device=obs.device).expand(B * T, N, N)  # (B*T, N, N)
        return torch.cat([obs.reshape(B * T, N, O), ids], dim=-1)  # (B*T, N, O+N)


class CentralQV(COMA):
    """Central-QV, the COMA paper's ablation that isolates the counterfactual baseline: COMA's actor and its critic
    Q(s_t, (a_{-i,t}, .)), plus a second centralised critic V(s_t) on the state alone; the actor is pushed by

        Adv_{i,t} = Q(s_t, a_t) - V(s_t)

    instead of COMA's Q(s_t, a_t) - sum_k pi(k | h_{i,t}, i) Q(s_t, (a_{-i,t}, k)). Both baselines depend on
    nothing agent i chose, so both leave the policy gradient unbiased; V(s_t) averages over what every agent might
    have done, COMA's over agent i's own choice only. V learns the same team reward with TD(lambda) targets from its
    own target network, the same number of steps per batch and the same hard-copy schedule as Q.

    Networks: 1 actor (shared), 2 critics (Q and V), 2 target critics: 5, whatever N is.
    """

    team_reward_only = True

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: COMAConfig | None = None,
                 seed: int = 0, device: str | torch.device = "cpu"):
        if config is not None and not config.team_reward:
            raise ValueError("central-QV learns the team reward only (team_reward=True): its V(s) has no agent id to "
                             "tell the agents' own returns apart")
        super().__init__(n_agents, obs_dim, n_actions, config, seed, device)  # actor and Q drawn as COMA's
        c = self.config
        self.value_critic = MLP(n_agents * obs_dim, 1, (c.hidden, c.hidden)).to(self.device)  # V(s), S = N*O
        self.target_value_critic = make_target(self.value_critic)
        self.value_optimizer = torch.optim.Adam(self.value_critic.parameters(), lr=c.critic_lr)

    def state_values(self, obs: torch.Tensor, target: bool = False) -> torch.Tensor:
        """V(s_t) (or V'(s_t)) at every index of a batch, repeated in every agent's column: obs ``(B, T+1, N, O)`` ->
        ``(B, T+1, N)``, s_t = [o_{0,t}, ..., o_{N-1,t}]."""
        B, T1, N, O = obs.shape
        net = self.target_value_critic if target else self.value_critic
        v = net(obs.reshape(B * T1, N * O)).reshape(B, T1, 1)  # (B, T+1, 1)
        return v.expand(B, T1, N)  # (B, T+1, N)

    @on_enclosing_threads
    def update(self, batch: dict) -> dict[str, float]:
        """V's steps on this batch, then COMA's update (Q's steps and the actor's step, whose advantage is
        ``advantage`` below), then V's hard copy on Q's schedule. batch: ``rollout.collect_episodes``'s."""
        c = self.config
        check_episode_batch(batch, self.n_agents, self.obs_dim, self.n_actions)
        obs = batch["obs"]  # (B, T+1, N, O)
        with torch.no_grad():  # TD(lambda) targets y_t for V(s_t), from V'(s_{t+1})
            rewards = self.row_rewards(batch).permute(0, 2, 1)  # (B, N, T) the team reward in every row
            dones = batch["dones"].unsqueeze(1).expand_as(rewards)  # (B, N, T)
            next_values = self.state_values(obs, target=True)[:, 1:].permute(0, 2, 1)  # (B, N, T) V'(s_{t+1})
            targets = td_lambda_targets(rewards, dones, next_values, c.gamma, c.lam).permute(0, 2, 1)  # (B, T, N)
        step_mask = batch["step_mask"].unsqueeze(-1).expand_as(targets)  # (B, T, N)
        for _ in range(c.critic_steps):
            v = self.state_values(obs)[:, :-1]  # (B, T, N) V(s_t)
            value_loss = masked_mean((v - targets) ** 2, step_mask, name="squared TD error")
            gradient_step(self.value_optimizer, self.value_critic, value_loss, c.grad_clip, "value loss",
                          self.updates + 1)
        stats = self.update_steps(batch)  # COMA's: Q's steps, the actor's step with Adv = Q - V, updates += 1, Q's copy
        update_target(self.target_value_critic, self.value_critic, self.updates, every=c.target_update_every)
        return {**stats, "value_loss": value_loss.item()}

    @torch.no_grad()
    def advantage(self, rows: torch.Tensor, batch: dict[str, torch.Tensor], pi: torch.Tensor) -> torch.Tensor:
        """``Adv_{i,t} = Q(s_t, a_t) - V(s_t)``, ``(B, T, N)``: the Q-value of the joint action taken, less the
        learned state value (``pi`` is unused: the baseline does not look at agent i's policy)."""
        q_taken = self.taken_values(rows, batch)[:, :-1]  # (B, T, N) Q(s_t, a_t)
        return q_taken - self.state_values(batch["obs"])[:, :-1]  # (B, T, N)

    def state_dict(self) -> dict:
        return {**super().state_dict(), "value_critic": self.value_critic.state_dict(),
                "target_value_critic": self.target_value_critic.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        for key in ("value_critic", "target_value_critic"):
            getattr(self, key).load_state_dict(state[key])


class IDDPG(MADDPG):
    """Independent DDPG: MADDPG's actors and update, but agent i's critic sees only ``[o_i, a_i]``. The actors are
    drawn first from the seed's random stream, so they start exactly as MADDPG's do for the same seed."""

    @property
    def critic_input_dim(self) -> int:
        """The width of a critic's input: O + A, agent i's own observation and action."""
        return self.obs_dim + self.n_actions  # O + A

    def critic_input(self, i: int, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Agent i's own observation and action: obs ``(B, N, O)``, actions ``(B, N, A)`` -> ``(B, O + A)``."""
        return own_critic_input(i, obs, actions)  # (B, O+A)
