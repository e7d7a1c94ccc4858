"""Solutions to the notebooks' "Your turn" exercises, one function per exercise.

They live here, out of sight, so that a learner who scrolls down a notebook meets the exercise before its answer:
the stub in the notebook only raises NotImplementedError, and its check reports NOT DONE YET until the learner's own
code passes. A learner who is stuck asks for the answer by name, ``show_solution("td_target")``, which prints the
function's source. Each solution is written the way a learner would write it in the notebook (a few lines with
shape comments, the equation in the docstring), not as a call into the library's tested implementation, and
``tests/test_solutions.py`` runs every one through its checker: solution ``NAME`` is checked by
``marl_edu.course.checks.check_NAME``.
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
    """The centralised critic's input, one row per transition: [x_t, a_t] = [o_0, ..., o_{N-1}, a_0, ..., a_{N-1}].
    obs (B, N, O), actions (B, N, A) -> (B, N*(O+A))."""
    B = obs.shape[0]
    all_obs = obs.reshape(B, -1)                 # (B, N*O)  o_0 then o_1 ...: agent-major, never mixes rows
    all_actions = actions.reshape(B, -1)         # (B, N*A)
    return torch.cat([all_obs, all_actions], dim=1)   # (B, N*O + N*A)


# -- 03 MADDPG critic -----------------------------------------------------------------------------------------------

def td_target(rewards, dones, q_next, gamma):
    """The one-step TD target y_t = r_t + gamma (1 - d_t) Q'_i(x_{t+1}, mu'(x_{t+1})), a constant for the loss (no
    gradient into q_next, which holds the Q' values).
    rewards, dones, q_next: (B,) or (B, N), all the same shape -> y of that shape."""
    with torch.no_grad():
        return rewards + gamma * (1 - dones) * q_next   # (B,): element by element, no broadcasting


# -- 04 MADDPG actor ------------------------------------------------------------------------------------------------

def expected_actor_loss(critic, actor, obs, actions, i):
    """Agent i's actor loss as the exact expectation over its own A actions (the logits penalty left out):
    L(theta_i) = -1/B sum_b sum_k pi_i(k | o_{i,t}) Q_i(x_t, (a_{-i,t}, k)), pi_i = softmax(actor(o_{i,t})), the
    others' actions from the batch, the critic a fixed judge. critic: (B, N*(O+A)) -> (B,); actor: (B, O) -> (B, A)
    logits; obs (B, N, O); actions (B, N, A) one-hot; i: the agent -> a number."""
    A = actions.shape[2]
    with torch.no_grad():                                  # the critic judges; it gets no gradient from this loss
        q_every = []
        for k in range(A):
            joint = actions.clone()                        # (B, N, A) a copy: the batch is shared
            joint[:, i] = 0.0                              # agent i's block emptied ...
            joint[:, i, k] = 1.0                           # ... then one_hot(k); the others keep the batch's actions
            q_every.append(critic(flatten_for_critic(obs, joint)))   # (B,) Q_i(x_t, (a_{-i,t}, k))
        q_every = torch.stack(q_every, dim=1)              # (B, A)
    pi = torch.softmax(actor(obs[:, i]), dim=1)            # (B, A) pi_i(k | o_{i,t}), with a gradient into theta_i
    return -(pi * q_every).sum(dim=1).mean()               # sum over k, mean over the B rows


# -- 05 MADDPG training ---------------------------------------------------------------------------------------------

def n_step_return(rewards, gamma):
    """The n-step return of every stored row, R^(n)_t = r_t + gamma r_{t+1} + ... + gamma^(n-1) r_{t+n-1}.
    rewards (B, n): each row's next n team rewards -> R (B,)."""
    k = torch.arange(rewards.shape[1], dtype=rewards.dtype)   # (n,) 0, 1, ..., n-1: steps after t
    return (gamma ** k * rewards).sum(dim=1)                  # (n,) * (B, n) -> (B, n) -> (B,)


# -- 06 COMA critic -------------------------------------------------------------------------------------------------

def td_lambda_targets(rewards, dones, next_values, gamma, lam):
    """TD(lambda) targets by the backward recursion
    y_t = r_t + gamma (1 - d_t) ((1 - lam) Q'(s_{t+1}, a_{t+1}) + lam y_{t+1}), starting from y_T := Q'(s_T, a_T).
    rewards, dones, next_values (Q'(s_{t+1}, a_{t+1}) at index t): (..., T) -> y (..., T)."""
    targets = torch.zeros_like(rewards)          # (..., T)
    g_next = next_values[..., -1]                # (...,) y_T := Q'(s_T, a_T): a time-limit end bootstraps
    for t in reversed(range(rewards.shape[-1])):
        bracket = (1 - lam) * next_values[..., t] + lam * g_next                # (...,)
        targets[..., t] = rewards[..., t] + gamma * (1 - dones[..., t]) * bracket  # (...,) d_t = 1 cuts it
        g_next = targets[..., t]
    return targets


# -- 07 COMA advantage ----------------------------------------------------------------------------------------------

def coma_advantage(q, pi, actions):
    """COMA's counterfactual advantage Adv_{i,t} = Q(s_t, a_t) - sum_k pi(k | h_{i,t}, i) Q(s_t, (a_{-i,t}, k)).
    q, pi: (..., A); actions: int (...), the action agent i took -> (...)."""
    q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)   # (...,) Q of the action taken
    baseline = (pi * q).sum(dim=-1)                             # (...,) the policy's expected Q
    return q_taken - baseline                                   # (...,)


# -- 08 COMA training -----------------------------------------------------------------------------------------------

def coma_actor_loss(pi, advantage, actions, agent_mask):
    """COMA's policy-gradient loss over the valid (b, t, i), those where agent i still acts (agent_mask = 1):
    L(theta) = -1/|valid| sum_{(b,t,i) valid} Adv_{i,t} log pi(a_{i,t} | h_{i,t}, i), the advantage a constant.
    pi (B, T, N, A) probabilities; advantage (B, T, N); actions int (B, T, N); agent_mask (B, T, N) -> a number."""
    advantage = advantage.detach()                                     # (B, T, N) a score: no gradient to the critic
    pi_taken = pi.gather(-1, actions.unsqueeze(-1)).squeeze(-1)        # (B, T, N) pi(a_{i,t} | h_{i,t}, i)
    log_pi_taken = torch.log(pi_taken + 1e-10)                         # (B, T, N)
    n_valid = agent_mask.sum().clamp(min=1.0)                          # |valid|, at least 1
    return -(advantage * log_pi_taken * agent_mask).sum() / n_valid    # padding and agents home count for nothing


# -- 15 comparison -------------------------------------------------------------------------------------------------

def solve_counts(rows, optimum):
    """The table's three counts for one method: rows, one dict per seed with its final "greedy" team return and its
    "episodes_to_solve" (None: never solved) -> (seeds solved at the end, seeds solved at some point, the median
    episodes to solve over the seeds that got there, None if none did). Solved: within 0.3 of the optimum."""
    line = optimum - 0.3 - 1e-6                                          # a float32 return of 8.0 reads 7.99999997
    at_end = sum(row["greedy"] >= line for row in rows)
    episodes = sorted(row["episodes_to_solve"] for row in rows if row["episodes_to_solve"] is not None)
    if not episodes:
        return at_end, 0, None
    middle = len(episodes) // 2
    median = episodes[middle] if len(episodes) % 2 else (episodes[middle - 1] + episodes[middle]) / 2
    return at_end, len(episodes), median


# -- 17 continuous MADDPG -------------------------------------------------------------------------------------------

def continuous_actor_loss(critic, actor, obs, actions, i):
    """Agent i's actor loss, L(theta_i) = -1/B sum_b Q_i(x_t, (a_{-i,t}, mu_i(o_{i,t}))), mu_i = tanh(actor).
    critic: (B, N*(O+A)) -> (B,);  actor: (B, O) -> (B, A);  obs (B, N, O);  actions (B, N, A) -> a number."""
    actions = actions.clone()                    # (B, N, A) a copy: the batch is shared with other updates
    actions[:, i] = torch.tanh(actor(obs[:, i]))   # (B, A) only agent i's action is recomputed, with a gradient
    q = critic(flatten_for_critic(obs, actions))   # (B,)
    return -q.mean()                             # the actor climbs Q


# -- 19 inferring the other agents' policies ------------------------------------------------------------------------

def approximation_loss(mean, log_std, actions, entropy_coef):
    """The inferred policy's loss, -1/B sum_b log N(a_b; mean_b, diag(exp(log_std)^2)) - beta H, beta = entropy_coef,
    H = sum_k (log_std_k + 1/2 log(2 pi e)). mean (B, A), log_std (A,), actions (B, A) -> a number."""
    z = (actions - mean) / log_std.exp()                                        # (B, A) standardised errors
    log_prob = (-0.5 * z ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(dim=1)   # (B,) summed over A
    entropy = (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum()            # a number
    return -log_prob.mean() - entropy_coef * entropy


# -- 20-21 competition and ensembles -----------------------------------------------------------------------------------

def team_rewards(rewards, teams):
    """Per-team reward sums: out[k, i] = sum over j with teams[j] == teams[i] of rewards[k, j].
    rewards (K, N) float, teams: N names -> (K, N)."""
    same = torch.tensor([[float(a == b) for b in teams] for a in teams])   # (N, N) 1 where j and i share a team
    return rewards @ same                        # (K, N) out[k, i] = sum_j rewards[k, j] * same[j, i]


def subpolicy_actions(every, subpolicies):
    """Each agent's action from the sub-policy it plays: out[b, i] = every[b, i, subpolicies[b, i]].
    every (B, N, M, A), subpolicies int (B, N) -> (B, N, A)."""
    B, N, M, A = every.shape
    index = subpolicies[:, :, None, None].expand(B, N, 1, A)   # (B, N, 1, A) the same m for all A entries
    return every.gather(2, index).squeeze(2)                   # (B, N, 1, A) -> (B, N, A)


# -- 10 value decomposition ----------------------------------------------------------------------------------------

def qmix_mixer(mixer, q_taken, state):
    """QMIX's mixing network, Q_tot = w_2^T elu(W_1^T q + v_1) + v_2, its weights from hypernetworks on the state,
    made non-negative by abs() (so Q_tot is monotonic in every Q_i); the biases may be negative.
    mixer: a QMixer (hyper_w1, hyper_b1, hyper_w2, hyper_b2); q_taken (B, N), state (B, S) -> Q_tot (B,)."""
    B, N = q_taken.shape
    w1 = torch.abs(mixer.hyper_w1(state)).view(B, N, -1)         # (B, N, E) agent by agent, non-negative
    E = w1.shape[2]
    b1 = mixer.hyper_b1(state).view(B, 1, E)                     # (B, 1, E)
    hidden = torch.nn.functional.elu(torch.bmm(q_taken.view(B, 1, N), w1) + b1)   # (B, 1, N) @ (B, N, E) -> (B, 1, E)
    w2 = torch.abs(mixer.hyper_w2(state)).view(B, E, 1)          # (B, E, 1) non-negative
    b2 = mixer.hyper_b2(state).view(B, 1, 1)                     # (B, 1, 1)
    return (torch.bmm(hidden, w2) + b2).view(B)                  # (B, 1, 1) -> (B,)


# -- 22 MADDPG capstone: the whole algorithm ------------------------------------------------------------------------
# The building blocks it uses, each taught and tested in an earlier notebook (01 to 05, 08):
from collections import deque  # noqa: E402  (kept beside the section that uses them)

import numpy as np  # noqa: E402

from marl_edu.base.schedules import linear  # noqa: E402
from marl_edu.base.shapes import one_hot  # noqa: E402
from marl_edu.data.buffers import ReplayBuffer  # noqa: E402
from marl_edu.envs.make import make_vec_env
from marl_edu.learners.maddpg import MADDPG, gumbel_softmax  # noqa: E402
from marl_edu.learners.maddpg import flatten_for_critic as _flatten_for_critic  # noqa: E402
from marl_edu.training.evaluation import greedy_return  # noqa: E402

BUILDING_BLOCKS.update({"deque": deque, "np": np, "ReplayBuffer": ReplayBuffer, "make_vec_env": make_vec_env,
                        "MADDPG": MADDPG, "gumbel_softmax": gumbel_softmax, "flatten_for_critic": _flatten_for_critic,
                        "linear": linear, "one_hot": one_hot, "greedy_return": greedy_return})


def maddpg_critic_loss(agent, i, batch):
    """Agent i's critic loss L = mean_b (Q_i(x) - y_i)^2, y_i = r_i + gamma^n (1 - d_i) Q'_i(x', mu'_1(o'_1), ...).
    batch: obs, next_obs (B, N, O); actions (B, N, A) one-hot; rewards, dones (B, N) -> a 0-d loss."""
    c = agent.config
    with torch.no_grad():                         # the target is a constant
        next_logits = torch.stack([agent.target_actors[j](batch["next_obs"][:, j])
                                   for j in range(agent.n_agents)], dim=1)                      # (B, N, A)
        next_actions = gumbel_softmax(next_logits, c.temperature, hard=True, generator=agent.generator)  # (B, N, A)
        q_next = agent.target_critics[i](flatten_for_critic(batch["next_obs"], next_actions))  # (B,)
        y = batch["rewards"][:, i] + c.gamma ** c.n_step * (1 - batch["dones"][:, i]) * q_next  # (B,)
    q = agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"]))                  # (B,)
    return ((q - y) ** 2).mean()


def maddpg_actor_loss(agent, i, batch):
    """Agent i's actor loss: -mean_b sum_k pi_i(k | o_i) Q_i(x, a_1, .., a_i = k, .., a_N) + c_reg mean(logits_i^2),
    the others' actions from the batch. batch as in maddpg_critic_loss -> a 0-d loss."""
    obs, actions = batch["obs"], batch["actions"]                  # (B, N, O), (B, N, A)
    A = actions.shape[2]
    logits = agent.actors[i](obs[:, i])                           # (B, A)
    with torch.no_grad():                                          # the critic judges; it is not trained here
        q_every = []
        for k in range(A):
            joint = actions.clone()                               # (B, N, A)
            joint[:, i] = 0.0
            joint[:, i, k] = 1.0                                  # agent i plays k, the others what they played
            q_every.append(agent.critics[i](flatten_for_critic(obs, joint)))   # (B,)
        q_every = torch.stack(q_every, dim=1)                     # (B, A)
    pi = torch.softmax(logits, dim=1)                              # (B, A)
    return -(pi * q_every).sum(dim=1).mean() + agent.config.logits_reg * (logits ** 2).mean()


def soft_update(target, source, tau):
    """theta' <- tau theta + (1 - tau) theta', in place, parameter by parameter. target, source: networks of the same
    shape -> None."""
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters()):
            t.mul_(1 - tau).add_(tau * s)


def maddpg_update(agent, batch, critic_loss, actor_loss, soft_update):
    """One MADDPG update, in place: every critic's gradient step, then every actor's, then the soft updates of the
    targets. batch: ReplayBuffer.sample's numpy arrays (B, N, .) -> None."""
    c = agent.config
    b = {key: torch.as_tensor(value, dtype=torch.float32) for key, value in batch.items()}   # (B, N, .)
    steps = [(agent.critic_optimizers, agent.critics, critic_loss), (agent.actor_optimizers, agent.actors, actor_loss)]
    for optimizers, nets, loss_fn in steps:                       # critics first: the actors climb corrected critics
        for i in range(agent.n_agents):
            loss = loss_fn(agent, i, b)
            optimizers[i].zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(nets[i].parameters(), c.grad_clip)
            optimizers[i].step()
    soft_update(agent.target_actors, agent.actors, c.tau)
    soft_update(agent.target_critics, agent.critics, c.tau)


def n_step_window(pending, gamma, next_obs, terminal, flush):
    """The n-step transitions the newest step of one env copy completes. pending: deque(maxlen=n) of (obs (N, O),
    actions int (N,), reward), oldest first, the newest step already appended -> list of (obs, actions, R, next_obs,
    terminal); the emitted steps leave pending, and an episode's end (flush) empties it."""
    out = []
    n = pending.maxlen
    while pending and (len(pending) == n or (flush and terminal)):  # a full window, or a terminal end's tails
        ret = sum(gamma ** k * reward for k, (_, _, reward) in enumerate(pending))  # r_t + g r_{t+1} + ...
        out.append((pending[0][0], pending[0][1], ret, next_obs, terminal))
        pending.popleft()
        if not flush:
            break  # mid-episode: one transition per step
    if flush:
        pending.clear()  # a time-limit end drops its tails: they would need g^k, k < n, to bootstrap
    return out


# The loop stores what part 5's window hands out, and calls it by the name notebook 22 gives the learner's own
# window (the library's n_step_transitions is part 5's answer: the loop's check refuses it).
my_n_step_window = n_step_window
BUILDING_BLOCKS["my_n_step_window"] = my_n_step_window


def maddpg_training_loop(env_id, episodes, config, seed, update, eval_every):
    """MADDPG's loop on K lock-step env copies: collect, store n-step team transitions, sample one shared index set,
    update, evaluate. update(agent, batch) -> dict(agent, buffer, episode_returns, evaluations)."""
    rng = np.random.default_rng(seed)
    venv = make_vec_env(env_id, config.n_envs, seed)
    N, O, A, K = venv.n_agents, venv.obs_dim, venv.n_actions, venv.n_envs
    agent = MADDPG(N, O, A, config, seed=seed)
    buffer = ReplayBuffer(config.buffer_size, N, O, A)
    pending = [deque(maxlen=config.n_step) for _ in range(K)]      # each copy's steps not yet stored
    episode_returns, evaluations, next_eval = [], [], eval_every
    obs = venv.reset()                                             # (K, N, O)
    while len(episode_returns) < episodes:
        epsilon = linear(config.epsilon_start, config.epsilon_end, len(episode_returns),
                         config.epsilon_fraction * episodes)
        actions = agent.act(obs, epsilon)                          # (K, N)
        next_obs, rewards, dones, info = venv.step(actions)        # (K, N, O), (K, N), (K, N)
        team = rewards.sum(axis=1)                                 # (K,) the cooperative objective
        for k in range(K):
            pending[k].append((obs[k], actions[k], float(team[k])))
            done = bool(info["episode_done"][k])
            terminal = bool(info["terminated"][k].all())           # the team is done only when everyone arrived
            for o, a, ret, o2, d in my_n_step_window(pending[k], config.gamma, info["final_obs"][k], terminal, done):
                buffer.add(o, one_hot(a, A), np.full(N, ret, dtype=np.float32), o2, np.full(N, float(d)))
            if done:
                episode_returns.append(float(info["episode_team_return"][k]))
        obs = next_obs
        if len(buffer) >= max(config.warmup_steps, config.batch_size):
            for _ in range(config.updates_per_step):
                update(agent, buffer.sample(config.batch_size, rng))   # one index set for every agent
        if len(episode_returns) >= next_eval:
            next_eval += eval_every
            evaluations.append((len(episode_returns), greedy_return(agent, env_id).team_return))
    return {"agent": agent, "buffer": buffer, "episode_returns": episode_returns, "evaluations": evaluations}


# -- 12 PPO with many agents ---------------------------------------------------------------------------------------

def clipped_surrogate_loss(log_prob, old_log_prob, advantage, mask, clip):
    """PPO's actor loss, -sum m min(rho Adv, clip(rho, 1 - c, 1 + c) Adv) / sum m, rho = pi_theta / pi_old.
    log_prob, old_log_prob, advantage, mask (B, T, N); clip c in (0, 1) -> a 0-d tensor."""
    ratio = torch.exp(log_prob - old_log_prob.detach())          # (B, T, N) rho_{i,t}
    advantage = advantage.detach()                               # (B, T, N) a score, no path into the critic
    plain = ratio * advantage                                    # (B, T, N)
    clipped = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantage   # (B, T, N)
    surrogate = torch.min(plain, clipped)                        # (B, T, N) the pessimistic of the two
    return -(surrogate * mask).sum() / mask.sum().clamp(min=1.0)  # the mean over the steps agents act, negated

EXERCISES = ("flatten_for_critic", "td_target", "expected_actor_loss", "n_step_return",
             "td_lambda_targets", "coma_advantage", "coma_actor_loss", "solve_counts",
             "sampled_beats_greedy",
             "continuous_actor_loss", "approximation_loss", "subpolicy_actions", "team_rewards",
             "qmix_mixer", "clipped_surrogate_loss")  # in the notebooks' order
MADDPG_CAPSTONE = ("maddpg_critic_loss", "maddpg_actor_loss", "soft_update", "maddpg_update", "n_step_window",
                   "maddpg_training_loop")  # 22_capstone_maddpg: checked by marl_edu.course.capstone_maddpg
COMA_CAPSTONE = ("coma_critic_rows", "coma_critic_targets", "coma_batch_advantage", "coma_replay_policy",
                 "coma_update")  # 23_capstone_coma: checked by marl_edu.course.capstone_coma
NAMES = EXERCISES + MADDPG_CAPSTONE + COMA_CAPSTONE
__all__ = ["NAMES", "show_solution", "checker_module", *NAMES]


def checker_module(name: str) -> str:
    """The module whose ``check_<name>`` checks solution ``name``: ``marl_edu.course.checks`` for the one-function
    exercises, the capstone's own module for a capstone's parts."""
    if name in MADDPG_CAPSTONE:
        return "marl_edu.course.capstone_maddpg"
    if name in COMA_CAPSTONE:
        return "marl_edu.course.capstone_coma"
    return "marl_edu.course.checks"


def show_solution(name: str) -> None:
    """Print the solution of exercise ``name`` (one of ``NAMES``) after a one-line header naming its checker and
    saying that this is the last resort: after the check's own hint and, in a capstone, ``hint(name, 1)`` to 3.

    An unknown name is a ValueError listing the names there are."""
    if name not in NAMES:
        raise ValueError(f"no solution named {name!r}; the exercises are: {', '.join(NAMES)}")
    before = f"hint({name!r}, 1), 2 and 3" if name in MADDPG_CAPSTONE + COMA_CAPSTONE else "the check's hint"
    print(f"# the last resort, after {before}: the solution to the {name!r} exercise (checked by "
          f"{checker_module(name)}.check_{name}):")
    print(inspect.getsource(globals()[name]), end="")


# -- 23 COMA capstone -----------------------------------------------------------------------------------------------

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



# -- 16 more agents and harder tasks ---------------------------------------------------------------------------------

def sampled_beats_greedy(rows):
    """On how many seeds a method's sampled evaluation beat its greedy one beyond chance: rows, one dict per seed with
    its final "greedy" and "sampled" mean team returns over the same episodes and "sampled_gap_se", the standard
    error of their gap -> the number of seeds whose gap is more than twice its standard error."""
    return sum(row["sampled"] - row["greedy"] > 2 * row["sampled_gap_se"] for row in rows)   # True counts 1
