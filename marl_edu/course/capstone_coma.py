"""The COMA capstone (notebook 23): checking a learner's own COMA, part by part, and training with it.

The learner writes five parts, each with the signature below (``agent`` is a ``coma.COMA``: its networks, optimisers,
config, ``updates`` counter and ``entropy_coef``; ``batch`` is ``rollout.collect_episodes``'s on-policy batch):

    coma_critic_rows(agent, obs (B, T+1, N, O), actions int (B, T+1, N))           -> rows (B*(T+1), N, D)
    coma_critic_targets(agent, rows, batch)                                         -> y (B, T, N), no gradient
    coma_batch_advantage(agent, rows, batch, pi (B, T, N, A))                        -> Adv (B, T, N), no gradient
    coma_replay_policy(agent, obs (B, T, N, O), actions int (B, T, N), epsilon)      -> probs (B, T, N, A)
    coma_update(agent, batch, critic_rows, critic_targets, advantage, replay_policy) -> None, in place

This module owns what checks them: ``REFERENCE`` (marl_edu's own version of each part, in the same signature) and
one ``check_<part>(fn)`` per part (one printed verdict, PASSED / FAILED with a hint / NOT DONE YET, in the style of
``marl_edu.course.checks``; never raises), which refuses an answer that calls the library's own implementation of its part
(``capstones.refuses_library_answers``, with the names it guards above each checker). Assembling, training and
drawing follow the API both capstones share (``marl_edu.course.capstones``): ``assemble(**mine)`` (the learner's parts
that PASSED, marl_edu's for the rest), ``whose``, ``train_yours(parts)`` (``loops.train`` of COMA on Switch2-v0 with the
learner's update), ``reference_run``, ``random_return`` and ``plot_against_reference``.

The checks build small fixed-seed cases: batches of whole episodes with padding after a terminal step, a time-limit
end and B = 1, and learners whose critic and target critic differ (so that using the wrong one shows). Where the
learner's output matches a known slip (computed here by running that slip on the same case), the hint names it.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from marl_edu.base.threads import on_one_thread
from marl_edu.course import capstones
from marl_edu.course.capstones import random_return  # noqa: F401  (part of the capstones' API: notebook 23 draws it)
from marl_edu.course.checks import call, named_mistake, output, values_differ
from marl_edu.learners.coma import COMA, COMAConfig
from marl_edu.learners.table import algo_name_of_class
from marl_edu.pieces.nets import gradient_step
from marl_edu.pieces.targets import hard_update
from marl_edu.training.loops import TrainResult, train

hint = capstones.hint  # the staged hints of every part, hint(name, stage): notebook 23 offers them
show_solution = capstones.show_solution  # the last resort after them, importing the answers only when called
PARTS = ("coma_critic_rows", "coma_critic_targets", "coma_batch_advantage", "coma_replay_policy", "coma_update")
ENV_ID = "Switch2-v0"  # COMA's task in this course: each agent sees its own position only
TOLERANCE = 1e-5         # values of the four tensor parts
UPDATE_TOLERANCE = 1e-4  # every parameter after a few updates (float32 sums in another order drift a little)


def _reference_update(agent: COMA, batch: dict, critic_rows: Callable, critic_targets: Callable,
                      advantage: Callable, replay_policy: Callable) -> None:
    """``COMA.update`` with its four parts passed in: the same steps in the same order (``_update`` below, without a
    slip). With marl_edu's parts it gives ``agent.update(batch)``'s parameters to the bit."""
    _update(agent, batch, critic_rows, critic_targets, advantage, replay_policy)


REFERENCE: dict[str, Callable] = {
    "coma_critic_rows": lambda agent, obs, actions: agent.critic_rows(obs, actions),
    "coma_critic_targets": lambda agent, rows, batch: agent.critic_targets(rows, batch),
    "coma_batch_advantage": lambda agent, rows, batch, pi: agent.advantage(rows, batch, pi.detach()),
    "coma_replay_policy": lambda agent, obs, actions, epsilon: agent.replay_policy(obs, actions, epsilon),
    "coma_update": _reference_update,
}


# ----------------------------------------------------------------------------------------------------------------
# Fixed-seed cases
# ----------------------------------------------------------------------------------------------------------------

def _agent(N: int = 2, O: int = 3, A: int = 4, seed: int = 0, perturb: bool = True, **config) -> COMA:
    """A small COMA learner; with ``perturb`` its critic is moved away from its target critic (a fresh learner's
    target is an exact copy, and a check could not tell which of the two a part used)."""
    agent = COMA(N, O, A, COMAConfig(hidden=16, **config), seed=seed)
    if perturb:
        generator = torch.Generator().manual_seed(seed + 100)
        with torch.no_grad():
            for p in agent.critic.parameters():
                p.add_(0.3 * torch.randn(p.shape, generator=generator))
    return agent


def _episode_batch(generator: torch.Generator, lengths: list[int], ends: list[str], N: int, O: int, A: int,
                   epsilon: float = 0.0) -> dict:
    """An on-policy batch shaped like ``collect_episodes``'s: episode b has ``lengths[b]`` real steps and ends
    ``"terminal"`` (d = 1 at its last step) or at the ``"time limit"`` (d = 0); index lengths[b] holds its end state
    and an action; after it, padding (zeros, d = 1, masks 0). In a terminal episode agent 0 arrives one step early
    (its agent_mask is 0 on the last step), so agent_mask differs from step_mask."""
    B, L = len(lengths), max(lengths)
    obs = torch.zeros(B, L + 1, N, O)
    actions = torch.zeros(B, L + 1, N, dtype=torch.int64)
    rewards = torch.zeros(B, L, N)
    dones = torch.ones(B, L)
    step_mask = torch.zeros(B, L)
    agent_mask = torch.zeros(B, L, N)
    for b, (length, end) in enumerate(zip(lengths, ends)):
        obs[b, :length + 1] = torch.rand(length + 1, N, O, generator=generator)
        actions[b, :length + 1] = torch.randint(0, A, (length + 1, N), generator=generator)
        rewards[b, :length] = torch.randn(length, N, generator=generator)
        dones[b, :length] = 0.0
        dones[b, length - 1] = 1.0 if end == "terminal" else 0.0
        step_mask[b, :length] = 1.0
        agent_mask[b, :length] = 1.0
        if end == "terminal" and length > 1:
            agent_mask[b, length - 1, 0] = 0.0
    return {"obs": obs, "actions": actions, "rewards": rewards, "dones": dones, "step_mask": step_mask,
            "agent_mask": agent_mask, "epsilon": float(epsilon)}


def _copy(batch: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


# (lengths, ends, N, O, A, gamma, lam): padding after terminal ends, a time-limit end, B = 1, N = 3
_BATCH_CASES = [
    ([4, 6, 3], ["terminal", "time limit", "terminal"], 2, 3, 4, 0.99, 0.8),
    ([5], ["time limit"], 2, 2, 5, 0.9, 0.5),
    ([2, 5], ["terminal", "terminal"], 3, 2, 3, 0.95, 0.0),
]


def _case_name(lengths, ends, N, O, A) -> str:
    return f"B={len(lengths)} episodes of {lengths} steps ({', '.join(ends)}), N={N}, O={O}, A={A}"


def _batch_cases():
    """(case name, agent, batch, reference rows) for each of ``_BATCH_CASES``."""
    generator = torch.Generator().manual_seed(0)
    for k, (lengths, ends, N, O, A, gamma, lam) in enumerate(_BATCH_CASES):
        agent = _agent(N, O, A, seed=k, gamma=gamma, lam=lam)
        batch = _episode_batch(generator, lengths, ends, N, O, A)
        rows = agent.critic_rows(batch["obs"], batch["actions"])
        yield _case_name(lengths, ends, N, O, A) + f", gamma={gamma}, lam={lam}", agent, batch, rows


def _no_gradient(out: torch.Tensor, case: str, what: str) -> bool:
    """Print FAILED and return True when ``out`` carries a gradient (a target or an advantage is a constant)."""
    if not out.requires_grad:
        return False
    print(f"FAILED on {case}: your {what} carries a gradient.\nHint: {what} is a constant for the loss that uses it: "
          f"compute it under torch.no_grad() (and pass pi.detach() where pi comes from the actor).")
    return True


# ----------------------------------------------------------------------------------------------------------------
# Part 1: the critic's rows
# ----------------------------------------------------------------------------------------------------------------

# the library's own rows (the check compares with them, so yours never calls them), and the baselines' rows
@capstones.refuses_library_answers("coma_critic_rows", "marl_edu.learners.coma:COMA.critic_rows",
                                   "marl_edu.learners.coma:build_critic_input", "marl_edu.learners.baselines:CentralV.critic_rows",
                                   "marl_edu.learners.baselines:IACV.critic_rows")
@on_one_thread
def check_coma_critic_rows(fn: Callable) -> None:
    """Check ``fn(agent, obs (B, T+1, N, O), actions int (B, T+1, N)) -> (B*(T+1), N, D)``, row (b, t, i) being
    ``[s_t, o_{i,t}, every one-hot action with agent i's block zeroed, one_hot(i)]`` with s_t the concatenated
    observations, against ``COMA.critic_rows``: B = 1 to 3, N = 2 and 3, O = A."""
    generator = torch.Generator().manual_seed(0)
    cases = [(3, 4, 2, 3, 4), (1, 3, 3, 2, 5), (2, 2, 2, 3, 3)]  # (B, T+1, N, O, A)
    for B, T1, N, O, A in cases:
        case = f"B={B}, T+1={T1}, N={N}, O={O}, A={A}"
        agent = _agent(N, O, A, perturb=False)
        obs = torch.rand(B, T1, N, O, generator=generator)
        actions = torch.randint(0, A, (B, T1, N), generator=generator)
        actions[0, 0] = torch.arange(N) % A  # the agents take different actions somewhere
        expected = agent.critic_rows(obs, actions)  # (B*T1, N, D)
        S, D = N * O, N * O + O + N * A + N

        def shape_hint(got):
            if got == (B * T1, N, D - N):
                return "each row ends with the one-hot id of its agent, torch.eye(N): the shared critic must know " \
                       "whose row it is computing."
            if got == (B * T1, N, D - S):
                return "each row starts with the state s_t, every agent's observation concatenated (N*O numbers)."
            if got == (B, T1, N, D):
                return "merge the batch and time axes: rows (B*(T+1), N, D), episode b's step t at index b*(T+1)+t."
            if got == (B * T1 * N, D):
                return "keep the agent axis: (B*(T+1), N, D), row i of each step is agent i's."
            return f"rows (B*(T+1), N, S+O+N*A+N) = {(B * T1, N, D)}: [s, o_i, a_-i one-hot (N*A), one-hot i]."

        out = output(fn, case, expected, (agent, obs.clone(), actions.clone()), shape_hint)
        if out is None:
            return
        if torch.allclose(out, expected, atol=1e-6):
            continue
        onehot = F.one_hot(actions, A).float().reshape(B * T1, N * A)  # (B*T1, N*A) the joint action
        flat_obs = obs.reshape(B * T1, N, O)
        ids = torch.eye(N).expand(B * T1, N, N)
        unmasked = torch.cat([flat_obs.reshape(B * T1, 1, S).expand(-1, N, -1), flat_obs,
                              onehot.unsqueeze(1).expand(-1, N, -1), ids], dim=-1)
        time_major = agent.critic_rows(obs.transpose(0, 1).contiguous(), actions.transpose(0, 1).contiguous())
        own_only = expected.clone()
        own_only[..., S + O:S + O + N * A] = unmasked[..., S + O:S + O + N * A] - expected[..., S + O:S + O + N * A]
        hint = named_mistake(out, [
            (unmasked, "agent i's own action is still in its row: the critic would see the answer. Row i outputs "
                       "Q(s, (a_-i, k)) for every k, so zero agent i's one-hot block in row i."),
            (own_only, "the mask is inverted: row i keeps only agent i's own action; it must keep every OTHER "
                       "agent's and zero agent i's."),
            (time_major, "the rows come out time-major (t*B + b): reshape (B, T+1, ...) straight to "
                         "(B*(T+1), ...), no transpose."),
        ], "compare your row's four blocks, one by one, with the part's table: their order, their widths (N*O, O, "
           "N*A, N) and what each holds for row i.", atol=1e-6)
        values_differ(case, expected, out, hint, shown=8)
        return
    print(f"PASSED: the critic's rows [s, o_i, a_-i, id] on all {len(cases)} cases (within 1e-6; B = 1 to 3, N = 2 "
          f"and 3, and O = A, where blocks in the wrong order would still have the right widths).")


# ----------------------------------------------------------------------------------------------------------------
# Part 2: TD(lambda) targets
# ----------------------------------------------------------------------------------------------------------------

def _taken(net, rows: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``net``'s Q of the taken joint action in every row: rows (B*(T+1), N, D), actions (B, T+1, N) -> (B, T+1, N)."""
    B, T1, N = actions.shape
    with torch.no_grad():
        q = net(rows.reshape(-1, rows.shape[-1])).reshape(B, T1, N, -1)
    return q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def _targets(agent: COMA, rows: torch.Tensor, batch: dict, slip: str | None = None) -> torch.Tensor:
    """The TD(lambda) targets (B, T, N), or what a named slip gives."""
    c = agent.config
    gamma, lam = c.gamma, c.lam
    actions, rewards, dones = batch["actions"], batch["rewards"], batch["dones"]
    B, T1, N = actions.shape
    T = T1 - 1
    r = (rewards if slip == "own reward" else rewards.mean(-1, keepdim=True).expand(B, T, N) if slip == "team mean"
         else rewards.sum(-1, keepdim=True).expand(B, T, N))  # (B, T, N)
    net = agent.critic if slip == "online critic" else agent.target_critic
    if slip == "max":
        with torch.no_grad():
            q_next = net(rows.reshape(-1, rows.shape[-1])).reshape(B, T1, N, -1).max(-1).values
    else:
        q_next = _taken(net, rows, actions)  # (B, T+1, N)
    values = q_next[:, :T] if slip == "same step" else q_next[:, 1:]  # (B, T, N)
    d = dones.unsqueeze(-1).expand(B, T, N).clone()
    if slip == "no dones":
        d.zero_()
    if slip == "every end terminal":  # d = 1 at each episode's last real step, a time-limit end included
        last = batch["step_mask"] - torch.cat([batch["step_mask"][:, 1:], torch.zeros(B, 1)], dim=1)  # (B, T)
        d = torch.maximum(d, last.unsqueeze(-1).expand(B, T, N))
    if slip == "lam swapped":
        lam = 1.0 - lam
    lam = {"lam ignored": 0.0, "lam one": 1.0}.get(slip, lam)
    gamma = 1.0 if slip == "no gamma" else gamma
    y = torch.zeros(B, T, N)
    g = torch.zeros(B, N) if slip == "started at zero" else values[:, -1]
    for t in reversed(range(T)):
        if slip == "gamma on V only":
            y[:, t] = r[:, t] + (1 - d[:, t]) * (gamma * (1 - lam) * values[:, t] + lam * g)
        elif slip == "dones on Q' only":
            y[:, t] = r[:, t] + gamma * ((1 - d[:, t]) * (1 - lam) * values[:, t] + lam * g)
        else:
            y[:, t] = r[:, t] + gamma * (1 - d[:, t]) * ((1 - lam) * values[:, t] + lam * g)
        g = y[:, t]
    return y


_TARGET_SLIPS = [
    ("own reward", "each row learned its own agent's reward: on Switch every row learns the team reward "
                   "r_t = sum_i r_{i,t}, rewards.sum(-1) in every row."),
    ("online critic", "the targets come from the critic being trained: bootstrap from the TARGET critic, "
                      "agent.target_critic, so the values the critic chases hold still between copies."),
    ("no dones", "nothing cuts the recursion after a terminal step, so padding leaks into the targets: multiply by "
                 "(1 - d_t), with d from batch['dones'] (1 at a real terminal step and on padding)."),
    ("every end terminal", "a time-limit end was treated as terminal: there d = 0, and its last step bootstraps from "
                           "Q' of the end state (index T of the episode) and the action stored there."),
    ("started at zero", "the recursion started from y_T = 0, so the last column only gets (1 - lam) Q'(s_T, a_T): "
                        "start it with the last column of Q'(s_{t+1}, a_{t+1})."),
    ("lam swapped", "lam and (1 - lam) are swapped: (1 - lam) weighs Q'(s_{t+1}, a_{t+1}), lam weighs y_{t+1}."),
    ("gamma on V only", "gamma discounts the whole bracket, (1 - lam) Q' + lam y_{t+1}, not only the Q' term."),
    ("same step", "the bootstrap is one step late: step t bootstraps from Q'(s_{t+1}, a_{t+1}), column t+1 of the "
                  "(B, T+1, N) values, i.e. values[:, 1:]."),
    ("max", "the target takes the max over own actions: COMA's critic is on-policy, it bootstraps from Q' of the "
            "joint action actually taken next, gathered with batch['actions']."),
    ("team mean", "each row learned the agents' MEAN reward: the team reward is their sum, r_t = sum_i r_{i,t}."),
    ("lam ignored", "these are one-step TD(0) targets, r_t + gamma (1 - d_t) Q'_{t+1}: they agree where lam = 0 "
                    "only. Mix in the return from the next step: (1 - lam) Q'_{t+1} + lam y_{t+1}."),
    ("lam one", "these are discounted returns to the end of the batch (lam = 1): weigh Q'_{t+1} by (1 - lam) and "
                "y_{t+1} by lam, with agent.config.lam."),
    ("no gamma", "nothing is discounted: gamma (agent.config.gamma) multiplies the bracket after r_t."),
    ("dones on Q' only", "(1 - d_t) multiplies only the Q' term, so after a terminal step lam y_{t+1} still brings "
                         "in the padding: it multiplies the whole bracket, gamma (1 - d_t) ((1 - lam) Q'_{t+1} + "
                         "lam y_{t+1})."),
]


# the library's own targets, its TD(lambda) recursion, its values of the taken actions and its row rewards
@capstones.refuses_library_answers("coma_critic_targets", "marl_edu.learners.coma:COMA.critic_targets",
                                   "marl_edu.pieces.targets:td_lambda_targets", "marl_edu.learners.coma:COMA.taken_values",
                                   "marl_edu.learners.coma:COMA.row_rewards", "marl_edu.pieces.targets:critic_rewards")
@on_one_thread
def check_coma_critic_targets(fn: Callable) -> None:
    """Check ``fn(agent, rows (B*(T+1), N, D), batch) -> y (B, T, N)``, TD(lambda) targets of the team reward from
    the target critic's Q' of the taken joint action, against ``COMA.critic_targets``: padding after terminal ends,
    a time-limit end, B = 1, N = 3, lam 0 to 0.8."""
    for case, agent, batch, rows in _batch_cases():
        expected = agent.critic_targets(rows, batch)  # (B, T, N)
        out = output(fn, case, expected, (agent, rows.clone(), _copy(batch)),
                      "one target per step and agent row: (B, T, N), T = batch['rewards'].shape[1] (the end-state "
                      "column T has no target).")
        if out is None or _no_gradient(out, case, "target"):
            return
        if torch.allclose(out, expected, atol=TOLERANCE):
            continue
        hint = named_mistake(out, [(_targets(agent, rows, batch, slip), text) for slip, text in _TARGET_SLIPS],
                              "go backwards from t = T-1: y_t = r_t + gamma (1 - d_t) ((1 - lam) Q'_{t+1} + lam "
                              "y_{t+1}), with y_T := Q'_T, Q' of the taken joint action from the target critic.")
        values_differ(case, expected, out, hint, shown=6)
        return
    print(f"PASSED: TD(lambda) targets of the team reward from the target critic on all {len(_BATCH_CASES)} cases "
          f"(within {TOLERANCE:g}; padding, a time-limit end, B = 1, N = 3, lam 0 to 0.8).")


# ----------------------------------------------------------------------------------------------------------------
# Part 3: the counterfactual baseline and advantage
# ----------------------------------------------------------------------------------------------------------------

def _advantage(agent: COMA, rows: torch.Tensor, batch: dict, pi: torch.Tensor, slip: str | None = None):
    actions = batch["actions"]
    B, T1, N = actions.shape
    net = agent.target_critic if slip == "target critic" else agent.critic
    with torch.no_grad():
        q = net(rows.reshape(-1, rows.shape[-1]))  # (B*(T+1)*N, A), rows episode-major
        q = (q.reshape(T1, B, N, -1).transpose(0, 1) if slip == "time-major"
             else q.reshape(B, T1, N, -1))  # (B, T+1, N, A)
        q = q[:, 1:] if slip == "next step" else q[:, :T1 - 1]  # (B, T, N, A)
        taken_actions = actions[:, 1:] if slip == "next actions" else actions[:, :T1 - 1]  # (B, T, N)
        taken = q.gather(-1, taken_actions.unsqueeze(-1)).squeeze(-1)  # (B, T, N)
        pi = pi.detach()
        if slip == "uniform":
            return taken - q.mean(-1)
        if slip == "max":
            return taken - q.max(-1).values
        if slip == "sign":
            return (pi * q).sum(-1) - taken
        return taken - (pi * q).sum(-1)


# the library's own advantage and baseline
@capstones.refuses_library_answers("coma_batch_advantage", "marl_edu.learners.coma:COMA.advantage",
                                   "marl_edu.learners.coma:coma_advantage", "marl_edu.learners.coma:counterfactual_baseline")
@on_one_thread
def check_coma_batch_advantage(fn: Callable) -> None:
    """Check ``fn(agent, rows, batch, pi (B, T, N, A)) -> Adv (B, T, N)``, ``Q(s_t, a_t) - sum_k pi(k) Q(s_t,
    (a_-i, k))`` from the critic (not its target), carrying no gradient, against ``COMA.advantage``."""
    generator = torch.Generator().manual_seed(1)
    for case, agent, batch, rows in _batch_cases():
        B, T1, N = batch["actions"].shape
        pi = torch.softmax(torch.randn(B, T1 - 1, N, agent.n_actions, generator=generator), -1).requires_grad_()
        expected = agent.advantage(rows, batch, pi.detach())
        out = output(fn, case, expected, (agent, rows.clone(), _copy(batch), pi), lambda got: (
            "pick Q of the action each agent took: q.gather(-1, actions.unsqueeze(-1)).squeeze(-1), (B, T, N)."
            if got == (B, T1 - 1, N, agent.n_actions) else
            "drop the end-state column: Q of steps 0..T-1 only, (B, T, N)." if got == (B, T1, N) else
            "one advantage per step and agent: (B, T, N)."))
        if out is None or _no_gradient(out, case, "advantage"):
            return
        if torch.allclose(out, expected, atol=TOLERANCE):
            continue
        hint = named_mistake(out, [
            (_advantage(agent, rows, batch, pi, "uniform"), "the baseline averaged Q uniformly over the actions; "
                                                            "weigh each action by the policy: sum_k pi(k) Q_k."),
            (_advantage(agent, rows, batch, pi, "target critic"), "the advantage uses the target critic: use the "
                                                                  "critic just trained, agent.critic."),
            (_advantage(agent, rows, batch, pi, "max"), "the baseline is the policy's expected Q, not the best Q."),
            (_advantage(agent, rows, batch, pi, "sign"), "the sign is flipped: Adv = Q(s, a) - baseline."),
            (_advantage(agent, rows, batch, pi, "next step"), "Q of step t is column t of (B, T+1, N, A): drop the "
                                                              "LAST column (the end state), not the first."),
            (_advantage(agent, rows, batch, pi, "next actions"),
             "the taken actions are read one step late: Q(s_t, a_t) picks the action of step t, actions[:, :T] (the "
             "last column is the end state's)."),
            (_advantage(agent, rows, batch, pi, "time-major"),
             "the critic's values are reshaped time-major: its rows are episode-major (row b*(T+1) + t), so its "
             "output reshapes to (B, T+1, N, A), not (T+1, B, N, A)."),
            (torch.zeros_like(out), "every advantage is 0: the baseline must not be Q of the taken action itself; "
                                    "it is the policy's expectation over agent i's OWN actions k, sum_k pi(k) Q_k."),
        ], "Adv_{i,t} = Q(s_t, a_t) minus the baseline sum_k pi(k | h_{i,t}, i) Q(s_t, (a_-i,t, k)), for every step "
           "and agent, from agent.critic's values of the rows (one value per own action k). hint('coma_batch_"
           "advantage', 1) gives the plan, 2 the shapes.")
        values_differ(case, expected, out, hint, shown=6)
        return
    print(f"PASSED: the counterfactual advantage on all {len(_BATCH_CASES)} cases (within {TOLERANCE:g}, from the "
          f"critic, no gradient; padding, B = 1, N = 3).")


# ----------------------------------------------------------------------------------------------------------------
# Part 4: replaying the GRU policy over whole episodes
# ----------------------------------------------------------------------------------------------------------------

def _replay(agent: COMA, obs: torch.Tensor, actions: torch.Tensor, epsilon: float, slip: str | None = None):
    """The behaviour policy step by step (B, T, N, A), or what a named slip gives."""
    B, T, N, O = obs.shape
    A = agent.n_actions
    ids = torch.eye(N).expand(B, N, N)
    h = agent.actor.initial_hidden(B * N)
    probs = []
    for t in range(T):
        if slip == "no last action":
            last = torch.zeros(B, N, A)
        elif slip == "same step":
            last = F.one_hot(actions[:, t], A).float()
        elif t == 0:
            last = F.one_hot(torch.zeros(B, N, dtype=torch.int64), A).float() if slip == "action 0 first" \
                else torch.zeros(B, N, A)
        else:
            last = F.one_hot(actions[:, t - 1], A).float()
        x = torch.cat([obs[:, t], last, ids], dim=-1).reshape(B * N, -1)
        if slip == "no carry":
            h = agent.actor.initial_hidden(B * N)
        logits, h = agent.actor(x, h)
        if slip == "logits":
            probs.append(logits.reshape(B, N, A))
            continue
        pi = torch.softmax(logits, -1).reshape(B, N, A)
        if slip == "eps not over A":
            probs.append((1 - epsilon) * pi + epsilon)
            continue
        probs.append(pi if slip == "no epsilon" else (1 - epsilon) * pi + epsilon / A)
    return torch.stack(probs, dim=1)


# the library's own replay, its step, its input and the fused unroll of the GRU over whole episodes
@capstones.refuses_library_answers("coma_replay_policy", "marl_edu.learners.coma:SharedActorLearner.replay_policy",
                                   "marl_edu.learners.coma:SharedActorLearner.policy_step",
                                   "marl_edu.learners.coma:SharedActorLearner.actor_input", "marl_edu.pieces.nets:shared_agent_input",
                                   "marl_edu.pieces.nets:RecurrentActor.unroll")
@on_one_thread
def check_coma_replay_policy(fn: Callable) -> None:
    """Check ``fn(agent, obs (B, T, N, O), actions int (B, T, N), epsilon) -> probs (B, T, N, A)``, the behaviour
    policy ``(1 - eps) softmax(logits) + eps / A`` replayed step by step with the GRU (input ``[o_{i,t},
    one_hot(a_{i,t-1}) (zeros at t = 0), one_hot(i)]``, hidden carried), against ``COMA.replay_policy``: values and
    the gradient reaching the actor, within 1e-5 (marl_edu's replay runs the GRU fused; a step-by-step loop agrees up
    to float32 rounding). Cases: B = 1 to 3, T = 1 to 6, N = 2 and 3, epsilon 0 to 0.5."""
    generator = torch.Generator().manual_seed(2)
    cases = [(3, 5, 2, 3, 4, 0.0), (1, 6, 3, 2, 5, 0.2), (2, 1, 2, 2, 3, 0.5)]  # (B, T, N, O, A, epsilon)
    for B, T, N, O, A, eps in cases:
        case = f"B={B}, T={T}, N={N}, O={O}, A={A}, epsilon={eps}"
        agent = _agent(N, O, A, seed=B + T, perturb=False)
        obs = torch.rand(B, T, N, O, generator=generator)
        actions = torch.randint(0, A, (B, T, N), generator=generator)
        weights = torch.rand(B, T, N, A, generator=generator)  # a fixed loss sum(weights * probs): its gradient
        expected = agent.replay_policy(obs, actions, eps)
        expected_grads = torch.autograd.grad((weights * expected).sum(), list(agent.actor.parameters()))
        out = output(fn, case, expected.detach(), (agent, obs.clone(), actions.clone(), eps),
                      "probabilities of every action, per episode, step and agent: (B, T, N, A); stack the steps "
                      "on dim=1.")
        if out is None:
            return
        if not torch.allclose(out, expected, atol=TOLERANCE):
            with torch.no_grad():
                mistakes = [(_replay(agent, obs, actions, eps, slip), text) for slip, text in [
                    ("no carry", "the hidden state is not carried: pass each step's new h to the next step "
                                 "(logits, h = agent.actor(x, h)); it starts at zeros once per replay."),
                    ("no last action", "the last-action block is always zero: step t's input holds one_hot(a_{i,t-1})"
                                       " (zeros only at t = 0), as when the agents acted."),
                    ("same step", "the input holds the action of the same step, a_{i,t}: the policy would see the "
                                  "action it is choosing. Use the previous one, a_{i,t-1}."),
                    ("action 0 first", "at t = 0 there is no previous action: an all-zero block, not one_hot(0)."),
                    ("no epsilon", "the epsilon mixing is missing: the batch was played with (1 - eps) pi + eps / A,"
                                   " and the loss replays that behaviour policy."),
                    ("eps not over A", "the uniform part is eps, not eps / A: a uniformly random action picks "
                                       "each of the A actions with probability 1 / A, so the mix is "
                                       "(1 - eps) pi + eps / A, and each step's probabilities sum to 1."),
                    ("logits", "these are logits: softmax them over the action axis."),
                ]]
            hint = named_mistake(out.detach(), mistakes, "step t's input is each agent's [o_{i,t}, its previous "
                                                          "action one-hot, its id one-hot], one row per (episode, "
                                                          "agent) in that order; the GRU's h carries from step to "
                                                          "step. hint('coma_replay_policy', 1) gives the plan.")
            values_differ(case, expected.detach(), out, hint, shown=6)
            return
        grads = (torch.autograd.grad((weights * out).sum(), list(agent.actor.parameters()), allow_unused=True)
                 if out.requires_grad else [None])
        if any(g is None for g in grads):
            print(f"FAILED on {case}: the values are right but no gradient reaches the actor.\nHint: the actor's loss "
                  f"differentiates these probabilities: no torch.no_grad(), .detach() or numpy on the way.")
            return
        if any(not torch.allclose(g, e, atol=1e-4) for g, e in zip(grads, expected_grads)):
            print(f"FAILED on {case}: the values are right but the actor's gradient is not (within 1e-4).\n"
                  f"Hint: the hidden state must carry the gradient from step to step (no h.detach()).")
            return
    print(f"PASSED: the behaviour policy replayed over whole episodes on all {len(cases)} cases (values within "
          f"{TOLERANCE:g}, the actor's gradient within 1e-4; T = 1 to 6, N = 2 and 3, epsilon 0 to 0.5).")


# ----------------------------------------------------------------------------------------------------------------
# Part 5: the whole update
# ----------------------------------------------------------------------------------------------------------------

def _update(agent: COMA, batch: dict, critic_rows: Callable, critic_targets: Callable, advantage: Callable,
            replay_policy: Callable, slip: str | None = None) -> None:
    """COMA's update with its parts passed in (as ``COMA.update``), or with a named slip."""
    c = agent.config
    if slip == "copy at the start":  # counted and copied before anything else: the copy is one update early
        agent.updates += 1
        if agent.updates % c.target_update_every == 0:
            hard_update(agent.target_critic, agent.critic)
    obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
    T = obs.shape[1] - 1
    rows = critic_rows(agent, obs, actions)  # (B*(T+1), N, D)
    targets = critic_targets(agent, rows, batch)  # (B, T, N)
    clip = 1e9 if slip == "no clipping" else c.grad_clip

    def critic_steps():
        for _ in range(1 if slip == "one critic step" else c.critic_steps):
            q = agent.critic(rows.reshape(-1, rows.shape[-1])).reshape(*actions.shape, -1)  # (B, T+1, N, A)
            q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)[:, :T]  # (B, T, N)
            mask = batch["step_mask"].unsqueeze(-1).expand_as(q_taken)  # (B, T, N)
            if slip == "critic not masked":
                mask = torch.ones_like(mask)
            divisor = {"critic divisor": mask.numel(), "critic per step": mask[..., 0].sum(),
                       "critic halved": 2 * mask.sum()}.get(slip, mask.sum())
            loss = (((q_taken - targets) ** 2) * mask).sum() / divisor
            gradient_step(agent.critic_optimizer, agent.critic, loss, clip, "critic loss", agent.updates + 1)

    def actor_step():
        pi = replay_policy(agent, obs[:, :T], actions[:, :T], float(batch["epsilon"]))  # (B, T, N, A)
        adv = advantage(agent, rows, batch, pi.detach())  # (B, T, N)
        log_pi = torch.log(pi.gather(-1, actions[:, :T].unsqueeze(-1)).squeeze(-1) + 1e-10)  # (B, T, N)
        entropy = -(pi * torch.log(pi + 1e-10)).sum(-1)  # (B, T, N)
        mask = batch["agent_mask"]  # (B, T, N)
        if slip == "no agent mask":
            mask = torch.ones_like(mask)
        elif slip == "step mask":
            mask = batch["step_mask"].unsqueeze(-1).expand_as(mask)
        beta = {"no entropy": 0.0, "entropy sign": -agent.entropy_coef}.get(slip, agent.entropy_coef)
        divisor = mask.numel() if slip == "actor divisor" else mask.sum().clamp(min=1.0)
        loss = -((adv * log_pi + beta * entropy) * mask).sum() / divisor
        gradient_step(agent.actor_optimizer, agent.actor, loss, clip, "actor loss", agent.updates + 1)

    if slip == "actor first":
        actor_step()
        critic_steps()
    else:
        critic_steps()
        actor_step()
    if slip == "copy before counting":  # the copy decided on the old count: after updates 1, C + 1, 2C + 1, ...
        if agent.updates % c.target_update_every == 0:
            hard_update(agent.target_critic, agent.critic)
        agent.updates += 1
    elif slip != "copy at the start":
        agent.updates += 1
        if slip == "copy every update" or (slip != "never copied" and agent.updates % c.target_update_every == 0):
            hard_update(agent.target_critic, agent.critic)


_UPDATE_SLIPS = [
    ("actor first", "the actor's step used the critic from before its steps: either the actor stepped first, or the "
                    "advantage was computed before the critic's steps. Make the critic's steps first, then compute the "
                    "advantage, so it comes from the critic that has just learned this batch's targets."),
    ("copy every update", "the target critic is copied at every update: copy it only when agent.updates (counted "
                          "after this update) is a multiple of agent.config.target_update_every."),
    ("copy before counting", "the target critic is copied one update off: you tested agent.updates % "
                             "target_update_every BEFORE agent.updates += 1, so the copies come after updates 1, "
                             "C + 1, 2C + 1, ... Count first, at the end of the update, then copy when the NEW count "
                             "is a multiple of C (after updates C, 2C, ...)."),
    ("copy at the start", "the target critic is copied at the START of the update (counted and copied before the "
                          "targets and the critic's steps), so it copies the critic of the update before: one update "
                          "early. Count and copy at the END, after the actor's step: agent.updates += 1, then the "
                          "copy when the new count is a multiple of target_update_every."),
    ("never copied", "the target critic is never copied: every agent.config.target_update_every updates, "
                     "agent.target_critic.load_state_dict(agent.critic.state_dict())."),
    ("no agent mask", "the actor's loss averages over every (b, t, i): weigh by batch['agent_mask'] and divide by "
                      "its sum, so padding and agents already home count for nothing."),
    ("step mask", "the actor's loss uses step_mask: an agent that is already home still has steps in the episode, "
                  "but no choice left; use batch['agent_mask'] (B, T, N)."),
    ("critic not masked", "the critic's loss counts padded steps: weigh by batch['step_mask'] and divide by "
                          "N * (number of real steps)."),
    ("critic divisor", "the critic's loss is divided by every entry of the padded (B, T, N) batch: divide by the "
                       "masked entries only, step_mask expanded to (B, T, N) and summed, so padding does not dilute "
                       "the loss (the scale changes from batch to batch with the episodes' lengths)."),
    ("critic per step", "the critic's loss is divided by the number of real steps (b, t), not by the (b, t, i) "
                        "entries it sums: N times too large. Expand step_mask to (B, T, N) before summing it for the "
                        "divisor."),
    ("critic halved", "the critic's loss has a 1/2 in front (as some textbooks write it): the course's is the plain "
                      "mean of the squared errors over the real (b, t, i)."),
    ("actor divisor", "the actor's loss is divided by every entry of agent_mask: divide by agent_mask.sum() (at "
                      "least 1), the (b, t, i) where agent i still acts."),
    ("one critic step", "the critic made one step: it makes agent.config.critic_steps passes over the batch."),
    ("no clipping", "the gradients are not clipped: pass agent.config.grad_clip to gradient_step(optimizer, net, "
                    "loss, grad_clip) for both networks (by hand: torch.nn.utils.clip_grad_norm_ between backward() "
                    "and step())."),
    ("no entropy", "the entropy bonus is missing: the loss subtracts agent.entropy_coef * H(pi), averaged with "
                   "the same agent_mask."),
    ("entropy sign", "the entropy bonus has the wrong sign: the loss SUBTRACTS beta * H(pi), so more entropy "
                     "lowers the loss."),
]

# (lengths of each update's batch, ends, N, O, A, config, entropy_coef, number of updates, optimiser). The last case
# swaps both of the learner's Adam optimisers for plain SGD: Adam's step m / (sqrt(v) + eps) is nearly the same for a
# loss scaled by any constant c > 0 (m scales by c, sqrt(v) by c), SGD's step lr * gradient scales by c, so a loss off
# by a constant factor (a 1/2 in front, a divisor without N) can pass the Adam cases but not this one.
_UPDATE_CASES = [
    (([4, 6, 3], ["terminal", "time limit", "terminal"]), 2, 3, 4,
     dict(critic_steps=3, target_update_every=2, grad_clip=10.0), 0.1, 3, "adam"),
    (([5], ["terminal"]), 2, 2, 5, dict(critic_steps=2, target_update_every=3, grad_clip=0.05), 0.05, 4, "adam"),
    (([3, 5], ["time limit", "terminal"]), 2, 3, 4,
     dict(critic_steps=2, target_update_every=2, grad_clip=100.0), 0.1, 3, "plain SGD"),
]
SGD_LR = 0.05  # the SGD case's learning rate, both networks: steps well above the tolerance, none that blow up


def _parameters(agent: COMA) -> list[torch.Tensor]:
    return [p.detach().clone() for net in (agent.actor, agent.critic, agent.target_critic) for p in net.parameters()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor], atol: float) -> bool:
    return all(x.shape == y.shape and torch.allclose(x, y, atol=atol) for x, y in zip(a, b))


def _run_updates(update: Callable, case_index: int, parts: tuple) -> tuple[COMA, str | None]:
    """A fresh learner of case ``case_index`` after its updates by ``update`` (each given ``parts``); (learner, error
    or None)."""
    (lengths, ends), N, O, A, config, beta, n_updates, optimiser = _UPDATE_CASES[case_index]
    agent = _agent(N, O, A, seed=case_index, perturb=False, **config)
    if optimiser == "plain SGD":
        agent.critic_optimizer = torch.optim.SGD(agent.critic.parameters(), lr=SGD_LR)
        agent.actor_optimizer = torch.optim.SGD(agent.actor.parameters(), lr=SGD_LR)
    generator = torch.Generator().manual_seed(10 + case_index)
    for k in range(n_updates):
        agent.entropy_coef = beta
        shorter = [max(1, length - k % 2) for length in lengths]  # every other batch one step shorter: the
        batch = _episode_batch(generator, shorter, ends, N, O, A,  # masked means' divisors change their ratio
                               epsilon=0.1 * (k % 2))             # to the padded sizes from batch to batch
        _, error = call(update, agent, batch, *parts)
        if error:
            return agent, error
    return agent, None


_GIVEN = ("critic_rows", "critic_targets", "advantage", "replay_policy")  # the update's arguments, parts 1 to 4
_LIBRARY_METHOD = {"coma_critic_rows": "critic_rows", "coma_critic_targets": "critic_targets",
                   "coma_batch_advantage": "advantage", "coma_replay_policy": "replay_policy"}  # COMA's own


# the library's own update, its two losses, and the capstone's reference update (the four parts it is given stay
# callable: the check passes the library's; so do the taught helpers nets.gradient_step and targets.hard_update)
@capstones.refuses_library_answers("coma_update", "marl_edu.learners.coma:COMA.update", "marl_edu.learners.coma:COMA.critic_loss",
                                   "marl_edu.learners.coma:COMA.update_steps", "marl_edu.learners.coma:COMA.actor_loss",
                                   "marl_edu.course.capstone_coma:_update",
                                   "marl_edu.course.capstone_coma:_reference_update")
@on_one_thread
def check_coma_update(fn: Callable) -> None:
    """Check ``fn(agent, batch, critic_rows, critic_targets, advantage, replay_policy)``, one COMA update in place
    (critic steps, then the actor's step with the entropy bonus over agent_mask, gradients clipped, the periodic
    hard copy into the target critic), called with marl_edu's four parts, against ``COMA.update``: every parameter of
    the actor, the critic and the target critic after a few updates, within 1e-4, and the updates counter. Cases:
    3 updates with the target copied every 2, B = 1 with gradient clipping that binds, and both optimisers swapped
    for plain SGD, whose step grows with the loss (Adam's barely does), so a loss off by a constant factor fails."""
    parts = tuple(REFERENCE[name] for name in PARTS[:4])
    for index, ((lengths, ends), N, O, A, config, beta, n_updates, optimiser) in enumerate(_UPDATE_CASES):
        case = (f"{n_updates} updates on batches of {lengths} steps ({', '.join(ends)}; every other batch one step "
                f"shorter), N={N}, A={A}, "
                f"critic_steps={config['critic_steps']}, target copied every {config['target_update_every']}, "
                f"grad_clip={config['grad_clip']}"
                + (f", both optimisers plain SGD (lr {SGD_LR})" if optimiser == "plain SGD" else ""))
        before = _parameters(_agent(N, O, A, seed=index, perturb=False, **config))
        reference, _ = _run_updates(lambda agent, batch, *_: agent.update(batch), index, parts)
        calls = {name: [] for name in PARTS[:4]}  # the arguments of every call of each part the learner is given
        learner, error = _run_updates(fn, index, tuple(capstones.spy(part, calls[name])
                                                       for name, part in zip(PARTS[:4], parts)))
        if error:
            print(error if error.startswith("NOT DONE") else f"FAILED on {case}: {error}")
            return
        after = _parameters(learner)
        if all(torch.equal(x, y) for x, y in zip(after, before)):
            print("NOT DONE YET: the function returned None and changed no parameter (a stub, or an update that "
                  "never steps an optimiser). Fill it in and run this cell again.")
            return
        for name, argument in zip(PARTS[:4], _GIVEN):
            if len(calls[name]) < n_updates:
                called = "never called" if not calls[name] else f"called {len(calls[name])} times"
                print(f"FAILED on {case}: the {argument} your update was given was {called} in {n_updates} "
                      f"updates, expected at least once in each.\nHint: call the argument, not marl_edu's own "
                      f"(agent.{_LIBRARY_METHOD[name]}(...)): the check hands your update the library's {argument} "
                      f"to test the update alone, and assemble hands it yours (part {PARTS.index(name) + 1}); an "
                      f"update that calls marl_edu's directly would train with it whatever yours does.")
                return
        expected = _parameters(reference)
        if learner.updates != reference.updates:  # (first: a wrong counter also moves the copies)
            print(f"FAILED on {case}: agent.updates is {learner.updates} after {n_updates} updates, expected "
                  f"{reference.updates}.\nHint: count each update, agent.updates += 1, before deciding whether to "
                  f"copy the target critic.")
            return
        if _same(after, expected, UPDATE_TOLERANCE):
            continue
        names = [f"{net}.{name}" for net in ("actor", "critic", "target_critic")
                 for name, _ in getattr(learner, net).named_parameters()]
        off = [n for n, x, y in zip(names, after, expected) if not torch.allclose(x, y, atol=UPDATE_TOLERANCE)]
        if any(n.startswith("critic.") for n in off):  # the critic went wrong first: the actor follows from it
            hint = ("the critic differs: its loss is the squared error of Q of the taken actions against the targets "
                    "over the real steps (step_mask, every agent's row), critic_steps steps, each with zero_grad, "
                    "backward, the clip and the step; the targets come before the first step.")
            if optimiser == "plain SGD":  # it passed the Adam cases: the loss's direction is right, its size not
                hint = ("the critic differs only with plain SGD, which steps by lr * gradient: your critic's loss is "
                        "likely off by a constant factor (Adam's step hardly changes when the loss is scaled, so the "
                        "cases before passed). The course's loss is the mean of (Q(s_t, a_t) - y_t)^2 over the real "
                        "(b, t, i): the masked sum divided by the number of those entries, nothing in front.")
            off.sort(key=lambda n: not n.startswith("critic."))
        elif any(n.startswith("actor.") for n in off):
            hint = ("the critic matches but the actor does not: the advantage from the critic just trained, log pi of "
                    "the taken actions from the replay with the batch's epsilon, the entropy bonus, all averaged over "
                    "agent_mask, one clipped step.")
            if optimiser == "plain SGD":
                hint += (" It differs only with plain SGD, which steps by lr * gradient: the actor's loss is likely "
                         "off by a constant factor (the masked sum divided by agent_mask's sum, nothing in front).")
        else:
            hint = "only the target critic differs: the hard copy every target_update_every updates, after counting."
        for slip, text in _UPDATE_SLIPS:
            wrong, _ = _run_updates(lambda agent, batch, *p: _update(agent, batch, *p, slip=slip), index, parts)
            if _same(after, _parameters(wrong), UPDATE_TOLERANCE):
                hint = text
                break
        print(f"FAILED on {case}: {len(off)} parameter tensors differ from marl_edu's by more than "
              f"{UPDATE_TOLERANCE:g} (first: {', '.join(off[:3])}).\nHint: {hint}")
        return
    print(f"PASSED: your update gives marl_edu's parameters (actor, critic, target critic, within "
          f"{UPDATE_TOLERANCE:g}) after the updates of all {len(_UPDATE_CASES)} cases (target copies, clipping "
          f"that binds, agent_mask, B = 1, and plain SGD, which sees a loss off by a constant factor).")


# ----------------------------------------------------------------------------------------------------------------
# Assembling and training
# ----------------------------------------------------------------------------------------------------------------

CHECKERS = {name: globals()[f"check_{name}"] for name in PARTS}


def assemble(**mine: Callable) -> dict[str, Callable]:
    """Check each of the learner's parts (keyword = part name), print one table (part | your verdict | training
    uses) and return the parts to train with: the learner's where its check PASSED, marl_edu's reference for the
    others (not given, NOT DONE YET or FAILED). ``capstones.assemble``."""
    return capstones.assemble(mine, CHECKERS, REFERENCE)


def whose(parts: dict[str, Callable]) -> str:
    """A legend label for a run trained with ``parts``: how many of them are the learner's (not ``REFERENCE``'s)."""
    return capstones.whose(parts, REFERENCE, "COMA")


@on_one_thread
def train_yours(parts: dict[str, Callable], env_id: str = ENV_ID, episodes: int = 6000, seed: int = 0,
                eval_every: int = 100, stop_at: float | None = 8.0, progress: bool = True) -> TrainResult:
    """COMA on ``env_id`` with ``parts`` (``assemble``'s): ``loops.train`` of COMA itself, with ``COMAConfig()``'s
    defaults (K = 16 episodes per batch, the entropy bonus decayed over ``episodes``), a greedy evaluation every
    ``eval_every`` episodes and a stop at the first greedy team return >= ``stop_at`` (None: the whole budget), and
    the learner's update passed in: ``parts["coma_update"]`` given the other four parts. With marl_edu's five parts
    it is ``loops.train``'s own COMA run, to the bit. Deterministic for a seed."""
    capstones.check_parts(parts, REFERENCE)
    update = capstones.learner_update(parts, REFERENCE, "coma_update", PARTS[:4])
    return train(COMA, env_id, episodes, COMAConfig(), seed, eval_every, progress, stop_at=stop_at, update=update)


def reference_run(env_id: str = ENV_ID) -> dict:
    """The committed reference run of COMA (``results/coma/<env_id>/run.json``): its ``evaluations`` and more."""
    return capstones.reference_run(algo_name_of_class(COMA), env_id)


def plot_against_reference(result: TrainResult, optimal: float | None = None, random: float | None = None,
                           env_id: str = ENV_ID, ax=None, label: str = "your COMA"):
    """Your run's greedy evaluations (legend ``label``: ``whose(parts)`` says whose parts trained it) against the
    committed reference run's, with the exact optimum and the random policy as horizontal lines. Returns the
    matplotlib axes."""
    return capstones.plot_against_reference(result, reference_run(env_id), "COMA", optimal, random, env_id, ax, label)
