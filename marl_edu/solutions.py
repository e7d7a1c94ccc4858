"""Solutions to the notebooks' "Your turn" exercises, one function per exercise.

They live here, out of sight, so that a learner who scrolls down a notebook meets the exercise before its answer:
the stub in the notebook only raises NotImplementedError, and its check reports NOT DONE YET until the learner's own
code passes. A learner who is stuck asks for the answer by name, ``show_solution("td_target")``, which prints the
function's source. Each solution is written the way a learner would write it in the notebook (a few lines with
shape comments, the equation in the docstring), not as a call into the library's tested implementation, and
``tests/test_solutions.py`` runs every one through its checker: solution ``NAME`` is checked by
``marl_edu.checks.check_NAME``.
"""

from __future__ import annotations

import inspect
import math

import torch

# What a capstone's answer may call besides torch and math: building blocks that earlier notebooks taught and tested
# (the answers write each capstone part out, never call the library's own version of that part). Each capstone's
# section below imports its own and lists them in BUILDING_BLOCKS.
BUILDING_BLOCKS: dict[str, object] = {}



# -- 02 shape bookkeeping -------------------------------------------------------------------------------------------

def flatten_for_critic(obs, actions):
    """The centralised critic's input, one row per transition: x = [o_1, ..., o_N, a_1, ..., a_N].
    obs (B, N, O), actions (B, N, A) -> (B, N*(O+A))."""
    B = obs.shape[0]
    all_obs = obs.reshape(B, -1)                 # (B, N*O)  o_1 then o_2 ...: agent-major, never mixes rows
    all_actions = actions.reshape(B, -1)         # (B, N*A)
    return torch.cat([all_obs, all_actions], dim=1)   # (B, N*O + N*A)


# -- 03 MADDPG critic -----------------------------------------------------------------------------------------------

def td_target(rewards, dones, q_next, gamma):
    """The one-step TD target y = r + gamma (1 - d) Q'(x', a'), a constant for the loss (no gradient into q_next).
    rewards, dones, q_next: (B,) or (B, N), all the same shape -> y of that shape."""
    with torch.no_grad():
        return rewards + gamma * (1 - dones) * q_next   # (B,): element by element, no broadcasting


# -- 05 COMA critic -------------------------------------------------------------------------------------------------

def td_lambda_targets(rewards, dones, next_values, gamma, lam):
    """TD(lambda) targets by the backward recursion
    G_t = r_t + gamma (1 - d_t) ((1 - lam) V_{t+1} + lam G_{t+1}), starting from G_T = V_T.
    rewards, dones, next_values (V_{t+1} at index t): (..., T) -> G (..., T)."""
    targets = torch.zeros_like(rewards)          # (..., T)
    g_next = next_values[..., -1]                # (...,) G_T = V_T: a time-limit end bootstraps
    for t in reversed(range(rewards.shape[-1])):
        bracket = (1 - lam) * next_values[..., t] + lam * g_next                # (...,)
        targets[..., t] = rewards[..., t] + gamma * (1 - dones[..., t]) * bracket  # (...,) d_t = 1 cuts it
        g_next = targets[..., t]
    return targets


# -- 06 COMA advantage ----------------------------------------------------------------------------------------------

def coma_advantage(q, pi, actions):
    """COMA's counterfactual advantage A^a(s, u) = Q(s, u) - sum_k pi^a(k) Q(s, (u^{-a}, k)).
    q, pi: (..., A); actions: int (...), the action agent a took -> (...)."""
    q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)   # (...,) Q of the action taken
    baseline = (pi * q).sum(dim=-1)                             # (...,) the policy's expected Q
    return q_taken - baseline                                   # (...,)


# -- 09 continuous MADDPG -------------------------------------------------------------------------------------------

def continuous_actor_loss(critic, actor, obs, actions, i):
    """Agent i's actor loss, L(theta_i) = -1/B sum_b Q_i(x_b, a_1, ..., a_i = tanh(mu_i(o_i)), ..., a_N).
    critic: (B, N*(O+A)) -> (B,);  actor: (B, O) -> (B, A);  obs (B, N, O);  actions (B, N, A) -> a number."""
    actions = actions.clone()                    # (B, N, A) a copy: the batch is shared with other updates
    actions[:, i] = torch.tanh(actor(obs[:, i]))   # (B, A) only agent i's action is recomputed, with a gradient
    q = critic(flatten_for_critic(obs, actions))   # (B,)
    return -q.mean()                             # the actor climbs Q


# -- 10 ensembles and inferred policies ------------------------------------------------------------------------------

def approximation_loss(mean, log_std, actions, entropy_coef):
    """The inferred policy's loss, -1/B sum_b log N(a_b; mean_b, diag(exp(log_std)^2)) - lambda H, with
    H = sum_a (log_std_a + 1/2 log(2 pi e)). mean (B, A), log_std (A,), actions (B, A) -> a number."""
    z = (actions - mean) / log_std.exp()                                        # (B, A) standardised errors
    log_prob = (-0.5 * z ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(dim=1)   # (B,) summed over A
    entropy = (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum()            # a number
    return -log_prob.mean() - entropy_coef * entropy


def subpolicy_actions(every, subpolicies):
    """Each agent's action from the sub-policy it plays: out[b, i] = every[b, i, subpolicies[b, i]].
    every (B, N, M, A), subpolicies int (B, N) -> (B, N, A)."""
    B, N, M, A = every.shape
    index = subpolicies[:, :, None, None].expand(B, N, 1, A)   # (B, N, 1, A) the same m for all A entries
    return every.gather(2, index).squeeze(2)                   # (B, N, 1, A) -> (B, N, A)


# -- 11 competition -------------------------------------------------------------------------------------------------

def team_rewards(rewards, teams):
    """Per-team reward sums: out[k, i] = sum over j with teams[j] == teams[i] of rewards[k, j].
    rewards (K, N) float, teams: N names -> (K, N)."""
    same = torch.tensor([[float(a == b) for b in teams] for a in teams])   # (N, N) 1 where j and i share a team
    return rewards @ same                        # (K, N) out[k, i] = sum_j rewards[k, j] * same[j, i]


EXERCISES = ("flatten_for_critic", "td_target", "td_lambda_targets", "coma_advantage", "continuous_actor_loss",
             "approximation_loss", "subpolicy_actions", "team_rewards")  # in the order the notebooks meet them
MADDPG_CAPSTONE = ()  # 12_capstone_maddpg: checked by marl_edu.capstone_maddpg
COMA_CAPSTONE = ("coma_critic_rows", "coma_critic_targets", "coma_batch_advantage", "coma_replay_policy",
                 "coma_update")  # 13_capstone_coma: checked by marl_edu.capstone_coma
NAMES = EXERCISES + MADDPG_CAPSTONE + COMA_CAPSTONE
__all__ = ["NAMES", "show_solution", "checker_module", *NAMES]


def checker_module(name: str) -> str:
    """The module whose ``check_<name>`` checks solution ``name``: ``marl_edu.checks`` for the one-function
    exercises, the capstone's own module for a capstone's parts."""
    if name in MADDPG_CAPSTONE:
        return "marl_edu.capstone_maddpg"
    if name in COMA_CAPSTONE:
        return "marl_edu.capstone_coma"
    return "marl_edu.checks"


def show_solution(name: str) -> None:
    """Print the solution of exercise ``name`` (one of ``NAMES``) after a one-line header naming its checker.

    An unknown name is a ValueError listing the names there are."""
    if name not in NAMES:
        raise ValueError(f"no solution named {name!r}; the exercises are: {', '.join(NAMES)}")
    print(f"# solution to the {name!r} exercise (checked by {checker_module(name)}.check_{name}):")
    print(inspect.getsource(globals()[name]), end="")


# -- 13 COMA capstone -----------------------------------------------------------------------------------------------

def coma_critic_rows(agent, obs, actions):
    """The critic's input, one row per agent: row_{i,t} = [s_t, o_{i,t}, one-hot a_t with agent i's block zeroed,
    one_hot(i)], s_t = the observations concatenated. obs (B, T+1, N, O), actions int (B, T+1, N) -> (B*(T+1), N, D),
    D = N*O + O + N*A + N."""
    B, T1, N, O = obs.shape
    A = agent.n_actions
    obs = obs.reshape(B * T1, N, O)                                        # (B*(T+1), N, O) episode-major rows
    state = obs.reshape(B * T1, 1, N * O).expand(B * T1, N, N * O)          # (B*(T+1), N, S) the same s in each row
    onehot = torch.nn.functional.one_hot(actions.reshape(B * T1, N), A).float()   # (B*(T+1), N, A)
    others = onehot.unsqueeze(1).expand(B * T1, N, N, A)                    # (B*(T+1), N rows, N agents, A)
    others = others * (1 - torch.eye(N)).view(1, N, N, 1)                  # row i: agent i's own block zeroed
    ids = torch.eye(N).expand(B * T1, N, N)                                 # (B*(T+1), N, N) whose row it is
    return torch.cat([state, obs, others.reshape(B * T1, N, N * A), ids], dim=-1)


def coma_critic_targets(agent, rows, batch):
    """TD(lambda) targets of the team reward from the target critic, backwards over each episode:
    y_t = r_t + gamma (1 - d_t) ((1 - lam) Q'(s_{t+1}, a_{t+1}) + lam y_{t+1}), with y_T = Q'(s_T, a_T).
    rows (B*(T+1), N, D), batch (collect_episodes's) -> y (B, T, N), no gradient."""
    gamma, lam = agent.config.gamma, agent.config.lam
    actions = batch["actions"]                                          # (B, T+1, N)
    B, T1, N = actions.shape
    T = T1 - 1
    with torch.no_grad():
        q = agent.target_critic(rows.reshape(B * T1 * N, -1)).reshape(B, T1, N, -1)   # (B, T+1, N, A) Q'
        q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)       # (B, T+1, N) Q' of the joint action taken
        next_q = q_taken[:, 1:]                                         # (B, T, N) Q'(s_{t+1}, a_{t+1}) at index t
        r = batch["rewards"].sum(-1, keepdim=True).expand(B, T, N)      # (B, T, N) the team reward in every row
        not_done = 1 - batch["dones"].unsqueeze(-1)                     # (B, T, 1): 0 at a terminal step, padding
        y = torch.zeros(B, T, N)
        y_next = next_q[:, -1]                                          # (B, N) y_T = Q'_T: a time limit bootstraps
        for t in reversed(range(T)):
            y[:, t] = r[:, t] + gamma * not_done[:, t] * ((1 - lam) * next_q[:, t] + lam * y_next)
            y_next = y[:, t]
    return y


def coma_batch_advantage(agent, rows, batch, pi):
    """The counterfactual advantage Adv_{i,t} = Q(s_t, a_t) - sum_k pi(k | h_{i,t}, i) Q(s_t, (a_{-i,t}, k)), from
    the critic, no gradient. rows (B*(T+1), N, D), pi (B, T, N, A) -> (B, T, N)."""
    actions = batch["actions"][:, :-1]                                  # (B, T, N) the end state's action dropped
    B, T, N = actions.shape
    with torch.no_grad():
        q = agent.critic(rows.reshape(B * (T + 1) * N, -1)).reshape(B, T + 1, N, -1)[:, :T]   # (B, T, N, A)
        q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)       # (B, T, N) Q(s_t, a_t)
        baseline = (pi.detach() * q).sum(-1)                            # (B, T, N) Q-bar: Q averaged under pi
    return q_taken - baseline


def coma_replay_policy(agent, obs, actions, epsilon):
    """The behaviour policy (1 - eps) softmax(logits) + eps / A at every step, the GRU replayed from each
    episode's start on [o_{i,t}, one_hot(a_{i,t-1}) (zeros at t = 0), one_hot(i)], its hidden state carried.
    obs (B, T, N, O), actions int (B, T, N) -> probs (B, T, N, A), with a gradient into the actor."""
    B, T, N, O = obs.shape
    A = agent.n_actions
    ids = torch.eye(N).expand(B, N, N)                                  # (B, N, N)
    last = torch.zeros(B, N, A)                                         # (B, N, A) no action before step 0
    h = agent.actor.initial_hidden(B * N)                               # (B*N, H)
    probs = []
    for t in range(T):
        x = torch.cat([obs[:, t], last, ids], dim=-1).reshape(B * N, O + A + N)   # (B*N, O+A+N)
        logits, h = agent.actor(x, h)                                   # (B*N, A), (B*N, H) h carried on
        pi = torch.softmax(logits, dim=-1).reshape(B, N, A)             # (B, N, A)
        probs.append((1 - epsilon) * pi + epsilon / A)
        last = torch.nn.functional.one_hot(actions[:, t], A).float()    # (B, N, A) step t+1 sees a_t
    return torch.stack(probs, dim=1)                                    # (B, T, N, A)


def coma_update(agent, batch, critic_rows, critic_targets, advantage, replay_policy):
    """One COMA update in place -> None: critic_steps steps on the masked (Q(s_t, a_t) - y_t)^2, then one actor
    step on -sum(agent_mask * (Adv log pi(a) + beta H(pi))) / sum(agent_mask), gradient norms clipped, and
    psi' <- psi every target_update_every updates. The four parts are called as given."""
    c = agent.config
    obs, actions = batch["obs"], batch["actions"]                       # (B, T+1, N, O), (B, T+1, N)
    T = obs.shape[1] - 1

    def step(optimizer, net, loss):
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), c.grad_clip)
        optimizer.step()

    rows = critic_rows(agent, obs, actions)                             # (B*(T+1), N, D)
    y = critic_targets(agent, rows, batch)                              # (B, T, N) computed once, constant
    step_mask = batch["step_mask"].unsqueeze(-1).expand_as(y)           # (B, T, N) real steps
    for _ in range(c.critic_steps):                                     # the critic first
        q = agent.critic(rows.reshape(-1, rows.shape[-1])).reshape(*actions.shape, -1)   # (B, T+1, N, A)
        q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)[:, :T]                  # (B, T, N)
        step(agent.critic_optimizer, agent.critic, (((q_taken - y) ** 2) * step_mask).sum() / step_mask.sum())

    pi = replay_policy(agent, obs[:, :T], actions[:, :T], batch["epsilon"])   # (B, T, N, A) with a gradient
    adv = advantage(agent, rows, batch, pi.detach())                    # (B, T, N) from the critic just trained
    log_pi = torch.log(pi.gather(-1, actions[:, :T].unsqueeze(-1)).squeeze(-1) + 1e-10)   # (B, T, N)
    entropy = -(pi * torch.log(pi + 1e-10)).sum(-1)                     # (B, T, N)
    mask = batch["agent_mask"]                                          # (B, T, N) agent i still acts
    loss = -((adv * log_pi + agent.entropy_coef * entropy) * mask).sum() / mask.sum().clamp(min=1.0)
    step(agent.actor_optimizer, agent.actor, loss)

    agent.updates += 1
    if agent.updates % c.target_update_every == 0:                      # the periodic hard copy
        agent.target_critic.load_state_dict(agent.critic.state_dict())

