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
COMA_CAPSTONE = ()    # 13_capstone_coma: checked by marl_edu.capstone_coma
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
