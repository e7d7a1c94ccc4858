"""Exercise checkers: run a learner's function on several cases and say PASSED or exactly what is off.

Each ``check_<thing>(fn)`` prints one verdict, starting with PASSED, FAILED or NOT DONE YET, and
returns nothing (so a notebook cell shows the verdict only). It never raises, so a notebook whose
exercise is still a stub runs top to bottom and simply reports NOT DONE YET: a stub that raises
NotImplementedError and one that returns None (``pass``, or a forgotten ``return``) both count as
not done. The answer to exercise ``<thing>`` is ``marl_edu.course.solutions.<thing>``, shown on request.
Where a wrong answer matches a known mistake (agents mixed by a reshape, a missing axis), the hint
names that mistake.

The helpers every checker uses are public, for the capstones' checkers too (``capstone_maddpg``, ``capstone_coma``):
``call`` (the learner's function run, its error caught), ``output`` (its tensor, of the reference's dtype and shape),
``named_mistake`` (the hint of the known mistake it reproduces) and ``values_differ`` (the FAILED line).
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from marl_edu.base.validate import positive_int
from marl_edu.learners.coma import coma_advantage
from marl_edu.learners.maddpg import flatten_for_critic
from marl_edu.learners.value_decomposition import QMixer
from marl_edu.pieces.targets import td_lambda_targets


NOT_DONE_RAISES = "NOT DONE YET: the function still raises NotImplementedError. Fill it in and run this cell again."
NOT_DONE_NONE = ("NOT DONE YET: the function returned None (a stub, or a missing `return`). Fill it in and run this "
                 "cell again.")


def call(fn: Callable, *args):
    """``fn(*args)`` as ``(output, None)``, or ``(None, message)`` when the learner's function raised: the message is
    ``NOT_DONE_RAISES`` for NotImplementedError, else ``"your function raised <type>: <error>"``."""
    try:
        return fn(*args), None
    except NotImplementedError:
        return None, NOT_DONE_RAISES
    except Exception as error:  # the learner's bug, reported rather than raised
        return None, f"your function raised {type(error).__name__}: {error}"


def _close(expected: float, got: float) -> str:
    """"expected E, got G" with enough digits to tell them apart (-0.3460 and -0.3460 would read as the same)."""
    digits = 4
    while digits < 10 and f"{expected:.{digits}f}" == f"{got:.{digits}f}":
        digits += 1
    return f"{expected:.{digits}f}, got {got:.{digits}f}"


def _run_case(fn: Callable, case: str, *args) -> torch.Tensor | None:
    """The learner's output on one case, or None after printing why there is none to compare."""
    out, error = call(fn, *args)
    if error:
        print(error if error.startswith("NOT DONE") else f"FAILED on {case}: {error}")
        return None
    if out is None:  # an empty stub (``pass``) or a body that forgot its ``return``
        print(NOT_DONE_NONE)
        return None
    if not isinstance(out, torch.Tensor):
        print(f"FAILED on {case}: expected a torch.Tensor, got {type(out).__name__}")
        return None
    return out


def _wrong_dtype(out: torch.Tensor, expected: torch.Tensor, case: str) -> bool:
    """Print why and return True when ``out`` has another dtype than the reference (torch cannot compare them)."""
    if out.dtype == expected.dtype:
        return False
    print(f"FAILED on {case}: expected dtype {expected.dtype} (like the inputs), got {out.dtype}.\n"
          f"Hint: keep the inputs' dtype; no .double(), .long() or numpy round trip is needed.")
    return True


def output(fn: Callable, case: str, expected: torch.Tensor, args: tuple, shape_hint) -> torch.Tensor | None:
    """``fn(*args)``, the learner's output on one case, if it is a tensor of ``expected``'s dtype and shape, else None
    after printing why (NOT DONE YET or FAILED). ``shape_hint``: the hint for a wrong shape, or a function of the wrong
    shape (a tuple) that returns it."""
    out = _run_case(fn, case, *args)
    if out is None or _wrong_dtype(out, expected, case):
        return None
    if tuple(out.shape) != tuple(expected.shape):
        hint = shape_hint(tuple(out.shape)) if callable(shape_hint) else shape_hint
        print(f"FAILED on {case}: expected shape {tuple(expected.shape)}, got {tuple(out.shape)}.\nHint: {hint}")
        return None
    return out


def named_mistake(out: torch.Tensor, mistakes: list[tuple[torch.Tensor, str]], fallback: str,
                  atol: float = 1e-5) -> str:
    """The hint of the first known mistake whose output (of ``out``'s shape) ``out`` reproduces within ``atol``, else
    ``fallback``."""
    for wrong_output, hint in mistakes:
        if torch.allclose(out, wrong_output, atol=atol):
            return hint
    return fallback


def values_differ(case: str, expected: torch.Tensor, out: torch.Tensor, hint: str, shown: int) -> None:
    """Print FAILED with the expected and returned values (rounded) where they first differ, where they are, and the
    hint. A row (along the last axis) at least ``shown`` long: the values from the first difference to the end of its
    row, at most ``shown``, never into the next row, whose values would read as this one's. Shorter rows (COMA's
    ``(B, T, N)`` with N = 2): whole rows, nested, from the first difference's row, about ``shown`` values in all.
    ``expected`` and ``out``: tensors of one shape."""
    shown = positive_int(shown, "shown")
    want, got = expected.detach().flatten(), out.detach().flatten()  # (numel,)
    gap = (got - want).abs()  # (numel,)
    differ = gap > 1e-5
    if not differ.any():  # a caller with a finer tolerance failed: its first difference at all
        differ = gap > 0
    first = int(differ.nonzero()[0]) if differ.any() else 0
    row = expected.shape[-1] if expected.dim() else 1  # the length of the last axis: one row
    by_row = expected.dim() >= 2 and row < shown  # whole rows, nested
    if by_row:
        start = first - first % row
        end = min(start + (shown // row) * row, want.numel())  # flat indices shown: [start, end)
    else:
        start, end = first, min(first + shown, first - first % row + row)

    def index(flat: int) -> tuple[int, ...]:
        return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), expected.shape))

    def values(flat: torch.Tensor) -> list:
        rounded = [round(v, 3) for v in flat[start:end].tolist()]
        return [rounded[k:k + row] for k in range(0, len(rounded), row)] if by_row else rounded

    if not expected.dim():
        where = "first at index ()."
    elif end - start == 1:
        where = f"first at index {index(first)}; entry {index(start)}:"
    else:
        where = f"first at index {index(first)}; entries {index(start)} to {index(end - 1)}{', row by row' * by_row}:"
    print(f"FAILED on {case}: values differ, {where}\nexpected {values(want)}\ngot      {values(got)}\nHint: {hint}")


def _not_one_number(out: torch.Tensor, case: str, hint: str) -> bool:
    """Unless ``out`` is one number (a 0-d tensor): print FAILED with the hint and return True."""
    if out.dim() == 0:
        return False
    print(f"FAILED on {case}: expected one number (a 0-d tensor), got shape {tuple(out.shape)}.\nHint: {hint}")
    return True


def _shape_hint(got: tuple, B: int, N: int, O: int, A: int) -> str:
    if got == (B, N, O + A):
        return "you concatenated per agent but did not merge the agent axis into the feature axis."
    if got == (B * N, O + A):
        return "you merged the batch axis with the agent axis: each row should be one whole transition."
    if len(got) == 2 and got[0] == B:
        return f"one row per transition is right, but a row should have N*(O+A) = {N * (O + A)} features."
    return "the critic needs one row per transition with every agent's obs and action: (B, N*(O+A))."


def check_flatten_for_critic(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check ``fn(obs (B, N, O), actions (B, N, A)) -> (B, N*(O+A))`` against the reference
    ``[o_0, ..., o_{N-1}, a_0, ..., a_{N-1}]`` on several cases, including B = 1 and N = 3."""
    generator = torch.Generator().manual_seed(0)
    cases = [(4, 2, 2, 5), (1, 2, 2, 5), (3, 3, 4, 2), (5, 2, 3, 3)]  # (B, N, O, A); B = 1 and O = A are edge cases
    for B, N, O, A in cases:
        case = f"B={B}, N={N}, O={O}, A={A}"
        obs = torch.rand(B, N, O, generator=generator)  # (B, N, O)
        actions = torch.rand(B, N, A, generator=generator)  # (B, N, A)
        expected = flatten_for_critic(obs, actions)  # (B, N*(O+A))
        out = output(fn, case, expected, (obs.clone(), actions.clone()),
                      lambda shape: _shape_hint(shape, B, N, O, A))
        if out is None:
            return
        if torch.allclose(out, expected):
            continue
        interleaved = torch.cat([obs, actions], dim=2).reshape(B, N * (O + A))  # [o_0, a_0, o_1, a_1, ...]
        wrong_axis = torch.cat([obs.transpose(1, 2).reshape(B, N * O),
                                actions.transpose(1, 2).reshape(B, N * A)], dim=1)  # feature-major
        swapped = torch.cat([actions.reshape(B, N * A), obs.reshape(B, N * O)], dim=1)
        mixed = torch.cat([obs.transpose(0, 1).reshape(B, N * O),
                           actions.transpose(0, 1).reshape(B, N * A)], dim=1)  # rows from other transitions
        hint = named_mistake(out, [
            (interleaved, "you interleaved [o_0, a_0, o_1, a_1, ...]: a valid layout if the critic is trained and "
                          "queried with it everywhere, but this course's critic (and every function that builds its "
                          "rows) takes all observations first, then all actions: [o_0, ..., o_{N-1}, a_0, ..., "
                          "a_{N-1}]."),
            (swapped, "actions come after observations: [o_0, ..., o_{N-1}, a_0, ..., a_{N-1}]."),
            (wrong_axis, "you flattened feature-major (o_0[0], o_1[0], o_0[1], ...): transpose before reshape mixed "
                         "the agents' features. Reshape (B, N, O) straight to (B, N*O)."),
            (mixed, "a row holds observations from different transitions: the batch and agent axes were swapped "
                    "before flattening. Row b must be transition b only."),
        ], "compare your first row with torch.cat([obs[0].flatten(), actions[0].flatten()]).", atol=1e-8)
        print(f"FAILED on {case}: values differ from the reference.\n"
              f"expected row 0: {[round(v, 3) for v in expected[0].tolist()]}\n"
              f"got row 0:      {[round(v, 3) for v in out[0].tolist()]}\nHint: {hint}")
        return
    print(f"PASSED: flatten_for_critic gives (B, N*(O+A)) rows [o_0..o_{{N-1}}, a_0..a_{{N-1}}] "
          f"on all {len(cases)} cases.")


def check_td_target(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor]) -> None:
    """Check ``fn(rewards (B,), dones (B,), q_next (B,), gamma) -> y (B,)`` against
    ``y_t = r_t + gamma (1 - d_t) q_next`` (no gradient into q_next), on cases with terminal
    transitions, gamma = 0 and gamma = 1, B = 1, and per-agent ``(B, N)`` tensors."""
    generator = torch.Generator().manual_seed(0)
    cases = [((4,), 0.9), ((1,), 0.95), ((5,), 0.0), ((3,), 1.0), ((6, 2), 0.99)]  # (shape, gamma)
    for shape, gamma in cases:
        case = f"shape={shape}, gamma={gamma}"
        rewards = torch.randn(shape, generator=generator)
        dones = (torch.rand(shape, generator=generator) < 0.4).float()
        dones.view(-1)[0] = 1.0  # every case holds at least one terminal transition
        q_next = torch.randn(shape, generator=generator).requires_grad_(True)
        expected = rewards + gamma * (1 - dones) * q_next.detach()
        out = output(fn, case, expected, (rewards.clone(), dones.clone(), q_next, gamma), lambda shape: (
            "(B,) met (B, 1) somewhere and broadcast to (B, B): keep every tensor (B,)."
            if len(shape) == 2 and shape[0] == shape[1] else "y has the shape of rewards."))
        if out is None:
            return
        if out.requires_grad:
            print(f"FAILED on {case}: y carries a gradient back into q_next.\nHint: a target is a constant for the "
                  f"loss: compute it under torch.no_grad() or use q_next.detach().")
            return
        if torch.allclose(out, expected, atol=1e-6):
            continue
        with torch.no_grad():
            no_mask = rewards + gamma * q_next
            flipped = rewards + gamma * dones * q_next
        hint = named_mistake(out, [
            (no_mask, "you bootstrap after terminal transitions too: multiply gamma * q_next by (1 - dones)."),
            (flipped, "the mask is flipped: bootstrap where dones == 0, i.e. multiply by (1 - dones), not dones."),
        ], "y = rewards + gamma * (1 - dones) * q_next, element by element.", atol=1e-6)
        def first(values):  # the case's first 4 values, flattened and rounded: enough to redo a row by hand
            return [round(v, 4) for v in values.detach().flatten()[:4].tolist()]

        print(f"FAILED on {case}: values differ (the first 4, flattened; y = r + {gamma} (1 - d) q_next).\n"
              f"rewards  {first(rewards)}\ndones    {first(dones)}\nq_next   {first(q_next)}\n"
              f"expected {first(expected)}\ngot      {first(out)}\nHint: {hint}")
        return
    print(f"PASSED: y = r + gamma (1 - d) q_next, detached, on all {len(cases)} cases "
          f"(terminals, gamma 0 and 1, B = 1, per-agent (B, N)).")


def check_td_lambda_targets(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(rewards, dones, next_values, gamma, lam) -> y`` (all ``(..., T)``) against
    ``y_t = r_t + gamma (1 - d_t) ((1 - lam) Q'(s_{t+1}, a_{t+1}) + lam y_{t+1})``, with ``next_values[..., t]`` =
    Q'(s_{t+1}, a_{t+1}) and ``y_{T-1}`` bootstrapping from Q'(s_T, a_T), on lam 0, 0.5 and 1, a time-limit end,
    padding after a terminal step and a ``(B, N, T)`` batch."""
    generator = torch.Generator().manual_seed(0)
    cases = [((4,), 0.5, 0.0, "terminal", "lam 0"), ((4,), 0.5, 0.5, "terminal", "lam 0.5"),
             ((5,), 0.9, 1.0, "terminal", "lam 1"), ((6,), 0.9, 0.8, "time limit", "a time-limit end"),
             ((3, 2, 7), 0.99, 0.8, "mixed", "a (B, N, T) batch with padding after a terminal step")]
    # (shape, gamma, lam, ending, what the case tests: the PASSED line lists these, one per case)
    for shape, gamma, lam, ending, _ in cases:
        case = f"shape={shape}, gamma={gamma}, lam={lam}, {ending} end"
        rewards = torch.randn(shape, generator=generator)
        next_values = torch.randn(shape, generator=generator)
        dones = torch.zeros(shape)
        if ending == "terminal":
            dones[..., -1] = 1.0
        elif ending == "mixed":  # some rows end early (and are padded), some are cut by the time limit
            dones[0, :, 3:] = 1.0
        expected = td_lambda_targets(rewards, dones, next_values, gamma, lam)
        out = output(fn, case, expected, (rewards.clone(), dones.clone(), next_values.clone(), gamma, lam),
                      "y has the shape of rewards, (..., T); loop over the last axis only.")
        if out is None:
            return
        if torch.allclose(out, expected, atol=1e-5):
            continue
        no_bootstrap = next_values.clone()
        no_bootstrap[..., -1] = 0.0
        # starting with y_T = 0 leaves y_{T-1} = r + gamma (1 - d) (1 - lam) Q'(s_T, a_T): scaled by (1 - lam)
        started_at_zero = next_values.clone()
        started_at_zero[..., -1] *= 1.0 - lam
        swapped = td_lambda_targets(rewards, dones, next_values, gamma, 1.0 - lam)
        no_mask = td_lambda_targets(rewards, torch.zeros(shape), next_values, gamma, lam)
        mask_on_q_only, g_next = torch.empty_like(rewards), next_values[..., -1]  # (1 - d) on (1 - lam) Q' alone
        for t in reversed(range(shape[-1])):
            mask_on_q_only[..., t] = rewards[..., t] + gamma * (
                (1.0 - dones[..., t]) * (1.0 - lam) * next_values[..., t] + lam * g_next)
            g_next = mask_on_q_only[..., t]
        hint = named_mistake(out, [
            (td_lambda_targets(rewards, dones, no_bootstrap, gamma, lam),
             "the last step must bootstrap from Q'(s_T, a_T) = next_values[..., -1]: an episode cut by the time "
             "limit did not end (d = 0), it was stopped. Start the recursion with y_T := next_values[..., -1]."),
            (td_lambda_targets(rewards, dones, started_at_zero, gamma, lam),
             "the recursion started from y_T = 0, so the last step only gets (1 - lam) Q'(s_T, a_T): start it "
             "with y_T := next_values[..., -1], so that y_{T-1} = r + gamma (1 - d) Q'(s_T, a_T)."),
            (swapped, "lam and (1 - lam) are swapped: (1 - lam) weighs Q'(s_{t+1}, a_{t+1}) = next_values[..., t], "
                      "lam weighs y_{t+1}."),
            (no_mask, "you bootstrap past terminal steps: multiply the bracket by gamma * (1 - d_t)."),
            (mask_on_q_only, "(1 - d_t) multiplies the whole bracket, lam y_{t+1} too: on (1 - lam) Q'(s_{t+1}, "
                             "a_{t+1}) alone, a terminal step still passes lam y_{t+1} on, and what follows the end "
                             "(padding, or the next episode) leaks into its target."),
        ], "go backwards from t = T-1; keep y_{t+1} from the previous iteration.")
        values_differ(case, expected, out, hint, shown=5)
        return
    tested = [what for *_, what in cases]
    print(f"PASSED: TD(lambda) targets on all {len(cases)} cases ({', '.join(tested[:-1])} and {tested[-1]}).")


def check_coma_advantage(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(q (..., A), pi (..., A), actions (...)) -> advantage (...)`` against
    ``Adv = Q(s, a) - sum_k pi(k) Q(s, (a_{-i}, k))`` on single agents, batches ``(B, N)`` and ``(B, T, N)``."""
    generator = torch.Generator().manual_seed(0)
    cases = [(), (4,), (3, 2), (2, 5, 2)]  # leading shapes (...); the last axis is A = 5
    for lead in cases:
        case = f"q of shape {(*lead, 5)}"
        q = torch.randn(*lead, 5, generator=generator)
        pi = torch.softmax(torch.randn(*lead, 5, generator=generator), dim=-1)
        actions = torch.randint(0, 5, lead, generator=generator)
        expected = coma_advantage(q, pi, actions)
        broadcast = (*lead, lead[-1]) if lead else (1,)  # (B, 1) - (B,) -> (B, B); () -> (1,)
        out = output(fn, case, expected, (q.clone(), pi.clone(), actions.clone()), lambda shape: (
            "Q of the taken action came out with a trailing axis of 1 and broadcast against the baseline: squeeze "
            "it, q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)." if shape == broadcast else
            "one advantage per agent and step: sum over the action axis only, and pick Q of the taken action with "
            "gather on the last axis."))
        if out is None:
            return
        if torch.allclose(out, expected, atol=1e-5):
            continue
        q_taken = q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        hint = named_mistake(out, [
            (q_taken - q.mean(-1), "you averaged Q uniformly; the baseline weighs each action by the agent's policy: "
                                   "sum_k pi(k) Q_k."),
            (-expected, "the sign is flipped: advantage = Q(s, a) - baseline."),
            (q_taken - q.max(-1).values, "the baseline is the policy's expected Q, not the best Q."),
        ], "advantage = q[..., taken action] - (pi * q).sum(-1).")
        values_differ(case, expected, out, hint, shown=4)
        return
    print(f"PASSED: the counterfactual advantage on all {len(cases)} cases (one agent, (B,), (B, N), (B, T, N)).")


def check_continuous_actor_loss(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(critic, actor, obs (B, N, O), actions (B, N, A), i) -> loss`` (a scalar) against continuous MADDPG's
    actor loss without its regulariser, ``-mean_b Q_i(x_t, (a_{-i,t}, tanh(actor(o_{i,t}))))``: its value, its
    gradient on the actor's weights, and that the batch's actions are left untouched. Cases: B from 1 to 6, N = 2
    and 3, every agent i of each N.
    """
    from marl_edu.learners.continuous import ContinuousMADDPG, ContinuousMADDPGConfig

    generator = torch.Generator().manual_seed(0)
    cases = [(4, 2, 3, 2, 0), (4, 2, 3, 2, 1), (1, 3, 4, 2, 2), (6, 3, 2, 1, 1), (5, 3, 4, 2, 0)]  # (B, N, O, A, i)
    for B, N, O, A, i in cases:
        case = f"B={B}, N={N}, O={O}, A={A}, i={i}"
        agent = ContinuousMADDPG(N, O, A, ContinuousMADDPGConfig(hidden=8, action_reg=0.0), seed=B + N + i)
        obs = torch.randn(B, N, O, generator=generator)  # (B, N, O)
        actions = torch.rand(B, N, A, generator=generator) * 2 - 1  # (B, N, A) forces in [-1, 1]
        expected = agent.actor_loss(i, {"obs": obs, "actions": actions})  # the reference, action_reg = 0
        expected_grad = torch.autograd.grad(expected, list(agent.actors[i].parameters()))
        given = actions.clone()
        out = _run_case(fn, case, agent.critics[i], agent.actors[i], obs.clone(), given, i)
        if out is None or _not_one_number(out, case, "the loss is the mean over the batch: -q.mean()."):
            return
        if not torch.equal(given, actions):
            print(f"FAILED on {case}: your function changed the batch's actions in place.\n"
                  f"Hint: actions = actions.clone() before writing agent i's new action into it; the batch is "
                  f"shared with the critic's update and the other agents' actor updates.")
            return
        if not torch.allclose(out, expected, atol=1e-5):
            with torch.no_grad():
                raw = actions.clone()
                raw[:, i] = agent.actors[i](obs[:, i])  # the pre-activation, not squashed
                no_tanh = -agent.critics[i](agent.critic_input(i, obs, raw)).mean()
                from_batch = -agent.critics[i](agent.critic_input(i, obs, actions)).mean()
            hint = named_mistake(out.detach(), [
                (-expected.detach(), "the sign is flipped: the actor climbs Q, so its loss is -Q.mean()."),
                (no_tanh, "agent i's action is tanh(actor(o_i)): without the tanh it leaves [-1, 1]."),
                (from_batch, "this is the critic's value of the batch's actions: agent i's action must be "
                             "recomputed by its actor, a_i = tanh(actor(obs[:, i])), or no gradient reaches it."),
            ], "loss = -critic(flatten_for_critic(obs, actions with actions[:, i] = tanh(actor(obs[:, i])))).mean()")
            print(f"FAILED on {case}: expected {_close(expected.item(), out.item())}.\nHint: {hint}")
            return
        grads = (torch.autograd.grad(out, list(agent.actors[i].parameters()), allow_unused=True)
                 if out.requires_grad else [None])
        if all(g is None for g in grads):
            print(f"FAILED on {case}: the value is right but no gradient flows back to the actor.\n"
                  f"Hint: no .detach(), .item() or torch.no_grad() on agent i's action: the deterministic policy "
                  f"gradient is dQ/da_i times da_i/dtheta_i.")
            return
        if any(g is None or not torch.allclose(g, e, atol=1e-5) for g, e in zip(grads, expected_grad)):
            print(f"FAILED on {case}: the value is right but the actor's gradient is not.\n"
                  f"Hint: the gradient must reach the actor through a_i = tanh(actor(obs[:, i])) only.")
            return
    print(f"PASSED: the deterministic policy gradient's actor loss on all {len(cases)} cases (value, gradient on "
          f"the actor, the batch left untouched; B from 1 to 6, N = 2 and 3, every agent i of each N).")


def check_approximation_loss(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(mean (B, A), log_std (A,), actions (B, A), entropy_coef) -> loss`` (a scalar) against the
    inferred policy's loss, ``-mean_b log N(actions_b; mean_b, diag(exp(log_std)^2)) - beta H``, beta =
    ``entropy_coef``, with the log-density summed over the A action entries and H the Gaussian's entropy,
    ``sum_k (log_std_k + 1/2 log(2 pi e))``: its value and its gradients on the mean and on log_std. Cases: B from 1
    to 5, A = 1 to 3, entropy_coef 0, 0.01 and 0.5.
    """
    import math

    generator = torch.Generator().manual_seed(0)
    cases = [(4, 2, 0.0), (1, 2, 0.01), (5, 3, 0.5), (3, 1, 0.01)]  # (B, A, entropy_coef)
    for B, A, coef in cases:
        case = f"B={B}, A={A}, entropy_coef={coef}"
        mean = (torch.rand(B, A, generator=generator) * 2 - 1).requires_grad_()  # (B, A)
        log_std = (torch.rand(A, generator=generator) - 0.5).requires_grad_()  # (A,)
        actions = torch.rand(B, A, generator=generator) * 2 - 1  # (B, A)
        z = (actions - mean) / log_std.exp()  # (B, A)
        log_prob = (-0.5 * z ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(dim=1)  # (B,)
        entropy = (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum()
        expected = -log_prob.mean() - coef * entropy
        expected_grads = torch.autograd.grad(expected, [mean, log_std])
        out = _run_case(fn, case, mean, log_std, actions, coef)
        if out is None or _not_one_number(out, case, "sum the log-density over the A action entries, then average "
                                                     "over the batch."):
            return
        if not torch.allclose(out, expected, atol=1e-5):
            with torch.no_grad():
                per_entry = (-0.5 * z ** 2 - log_std - 0.5 * math.log(2 * math.pi)).mean()  # averaged over A too
                no_norm = (-0.5 * z ** 2).sum(dim=1).mean()  # only the squared error
                variance_as_std = (-0.5 * ((actions - mean) / log_std.exp().pow(2)) ** 2 - log_std
                                   - 0.5 * math.log(2 * math.pi)).sum(dim=1).mean()
            hint = named_mistake(out.detach(), [
                (-per_entry - coef * entropy.detach(), "the log-density of a vector is the SUM of its A entries' "
                                                       "log-densities (independent Gaussians); average over the "
                                                       "batch only: log_prob.sum(dim=1).mean()."),
                (-log_prob.detach().mean() + coef * entropy.detach(),
                 "the entropy term's sign: the loss SUBTRACTS entropy_coef * H (more entropy, lower loss), "
                 "which keeps the approximation from collapsing onto the actions it has seen."),
                (log_prob.detach().mean() - coef * entropy.detach(), "the sign of the likelihood: minimise MINUS "
                                                                    "the log-likelihood."),
                (-no_norm - coef * entropy.detach(), "the log-density also has -log_std - 1/2 log(2 pi) per entry: "
                                                    "without -log_std, nothing stops the std from growing forever."),
                (-variance_as_std - coef * entropy.detach(), "z = (a - mean) / std with std = exp(log_std), not "
                                                             "divided by the variance."),
            ], "loss = -(sum over A of [-z^2/2 - log_std - log(2 pi)/2]).mean() - entropy_coef * "
               "sum over A of [log_std + log(2 pi e)/2], with z = (actions - mean) / exp(log_std)")
            print(f"FAILED on {case}: expected {_close(expected.item(), out.item())}.\nHint: {hint}")
            return
        grads = torch.autograd.grad(out, [mean, log_std], allow_unused=True) if out.requires_grad else [None, None]
        for grad, wanted, name in zip(grads, expected_grads, ("mean", "log_std")):
            if grad is None or not torch.allclose(grad, wanted, atol=1e-5):
                print(f"FAILED on {case}: the value is right but the gradient on {name} is not.\n"
                      f"Hint: compute everything from the tensors given, with no .detach(), .item() or numpy.")
                return
    print(f"PASSED: the inferred policy's loss on all {len(cases)} cases (value and gradients on the mean and "
          f"log_std; B from 1 to 5, A = 1 to 3, entropy_coef 0 to 0.5).")


def check_subpolicy_actions(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check ``fn(every (B, N, M, A), subpolicies int (B, N)) -> (B, N, A)``, each agent's action from the sub-policy
    it plays: ``out[b, i] = every[b, i, subpolicies[b, i]]``. Cases: B from 1 to 5, N = 2 and 3, M = 2 to 4 (one
    case with N = M, where swapped axes keep the shape)."""
    generator = torch.Generator().manual_seed(0)
    cases = [(4, 2, 3, 2), (1, 3, 2, 2), (5, 3, 3, 1), (3, 2, 4, 2)]  # (B, N, M, A)
    for B, N, M, A in cases:
        case = f"B={B}, N={N}, M={M}, A={A}"
        every = torch.randn(B, N, M, A, generator=generator)  # (B, N, M, A)
        subpolicies = torch.randint(0, M, (B, N), generator=generator)  # (B, N)
        subpolicies[0] = torch.arange(N) % M  # row 0: the agents play different sub-policies
        expected = every.gather(2, subpolicies[:, :, None, None].expand(B, N, 1, A)).squeeze(2)  # (B, N, A)
        out = _run_case(fn, case, every.clone(), subpolicies.clone())
        if out is None:
            return
        if tuple(out.shape) != (B, N, A):
            print(f"FAILED on {case}: expected shape (B, N, A) = {(B, N, A)}, got {tuple(out.shape)}.\n"
                  f"Hint: every[:, :, subpolicies] indexes with the whole (B, N) table at once and builds "
                  f"(B, N, B, N, A); pick ONE sub-policy per (b, i): gather on the M axis with the index "
                  f"subpolicies[:, :, None, None].expand(B, N, 1, A), then squeeze the M axis.")
            return
        if _wrong_dtype(out, expected, case):
            return
        if not torch.allclose(out, expected):
            first = every[:, :, 0]  # (B, N, A) always sub-policy 0
            same_m = every.gather(2, subpolicies[:, :1, None, None].expand(B, N, 1, A)).squeeze(2)  # agent 0's m
            mistakes = [(first, "this is every agent's sub-policy 0: use subpolicies[b, i] for row b, agent i."),
                        (same_m, "every agent here plays agent 0's sub-policy: each agent i has its own "
                                 "subpolicies[:, i].")]
            if N == M:
                swapped = every.transpose(1, 2).gather(2, subpolicies[:, :, None, None].expand(B, N, 1, A))
                mistakes.append((swapped.squeeze(2), "the N and M axes are swapped: every is (B, N, M, A), agents "
                                                     "before sub-policies; gather on dim 2."))
            hint = named_mistake(out, mistakes, "out[b, i] must be every[b, i, subpolicies[b, i]] for every b, i.")
            print(f"FAILED on {case}: wrong values.\nHint: {hint}")
            return
    print(f"PASSED: each agent's action from the sub-policy it plays, on all {len(cases)} cases (B from 1 to 5, "
          f"N = 2 and 3, M = 2 to 4).")


def check_team_rewards(fn: Callable) -> None:
    """Check ``fn(rewards (K, N), teams list of N str) -> (K, N)``: every agent's entry is the sum of the rewards of
    the agents on its own team, ``out[k, i] = sum_{j: teams[j] == teams[i]} rewards[k, j]``. Cases: physical deception
    (one adversary, two good agents), cooperative navigation (one team: every entry the row's sum), a 3-against-1
    predator-prey layout, and a team listed out of order."""
    generator = torch.Generator().manual_seed(0)
    cases = [["adversary", "agent", "agent"], ["agent", "agent", "agent"], ["adversary"] * 3 + ["agent"],
             ["agent", "adversary", "agent", "adversary"]]
    for teams in cases:
        K, N = 3, len(teams)
        case = f"teams={teams}"
        rewards = torch.randn(K, N, generator=generator)  # (K, N)
        same = torch.tensor([[float(a == b) for b in teams] for a in teams])  # (N, N) 1 where i and j share a team
        expected = rewards @ same  # (K, N): out[k, i] = sum_j rewards[k, j] * same[j, i]
        out = _run_case(fn, case, rewards.clone(), list(teams))
        if out is None:
            return
        if tuple(out.shape) != (K, N):
            print(f"FAILED on {case}: expected shape (K, N) = {(K, N)}, got {tuple(out.shape)}.\n"
                  f"Hint: every agent keeps its own column; sum over the agents of its team, keepdim-style, "
                  f"then place the sum in each team member's column.")
            return
        if _wrong_dtype(out, expected, case):
            return
        if not torch.allclose(out, expected, atol=1e-6):
            everyone = rewards.sum(dim=1, keepdim=True).expand(K, N)  # the whole team's sum for everyone
            hint = named_mistake(out, [
                (rewards, "this is every agent's own reward: add up the rewards of its whole team."),
                (everyone, "this sums over ALL agents, opponents included: in a competitive game that pays each "
                           "side for the other's success. Sum over the agents with teams[j] == teams[i] only."),
            ], "out[k, i] = sum over j with teams[j] == teams[i] of rewards[k, j].")
            print(f"FAILED on {case}: wrong values.\nHint: {hint}")
            return
    print(f"PASSED: per-team reward sums on all {len(cases)} cases (deception, one cooperative team, 3 against 1, "
          f"teams out of order).")


class _MixerWithoutForward(QMixer):
    """A ``QMixer`` whose own forward refuses to run: the exercise is to write it from the hypernetworks."""

    def forward(self, q_taken, state):
        raise RuntimeError("the exercise is the mixer's forward pass: build it from mixer.hyper_w1(state), "
                           "mixer.hyper_b1(state), mixer.hyper_w2(state) and mixer.hyper_b2(state), not by calling "
                           "mixer(q_taken, state)")


def _mix_variant(mixer: QMixer, q_taken: torch.Tensor, state: torch.Tensor, abs_w1: bool = True, abs_w2: bool = True,
                 abs_biases: bool = False, layout: str = "NE", activation=F.elu, b1: bool = True,
                 b2: bool = True) -> torch.Tensor:
    """The mixer's forward with one thing changed, to recognise a learner's slip: ``(B, N)``, ``(B, S)`` -> ``(B,)``."""
    B, N, E = q_taken.shape[0], mixer.n_agents, mixer.embed
    w1 = mixer.hyper_w1(state)  # (B, N*E)
    w1 = (w1.view(B, N, E) if layout == "NE" else w1.view(B, E, N).transpose(1, 2))  # (B, N, E)
    w1 = torch.abs(w1) if abs_w1 else w1
    bias1 = mixer.hyper_b1(state).view(B, 1, E)  # (B, 1, E)
    bias1 = torch.abs(bias1) if abs_biases else bias1
    hidden = activation(torch.bmm(q_taken.view(B, 1, N), w1) + (bias1 if b1 else 0.0))  # (B, 1, E)
    w2 = mixer.hyper_w2(state).view(B, E, 1)  # (B, E, 1)
    w2 = torch.abs(w2) if abs_w2 else w2
    bias2 = mixer.hyper_b2(state).view(B, 1, 1)  # (B, 1, 1)
    bias2 = torch.abs(bias2) if abs_biases else bias2
    return (torch.bmm(hidden, w2) + (bias2 if b2 else 0.0)).view(B)  # (B,)


def check_qmix_mixer(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(mixer, q_taken (B, N), state (B, S)) -> Q_tot (B,)``, QMIX's mixing network
    ``Q_tot = w_2^T elu(W_1^T q + v_1) + v_2`` with W_1 = |hyper_w1(s)| viewed ``(B, N, E)``, v_1 = hyper_b1(s)
    ``(B, 1, E)``, w_2 = |hyper_w2(s)| ``(B, E, 1)`` and v_2 = hyper_b2(s) ``(B, 1, 1)`` (the biases: v in the cheat
    sheet, b in ``QMixer``'s names), against ``QMixer.forward``: its values and that the gradient reaches the
    utilities and the hypernetworks. Cases: B from 1 to 5, N = 2 and 3, E = 2 to 4 (one with N = E, where a
    transposed W_1 keeps its shape)."""
    cases = [(4, 2, 4, 3), (1, 2, 3, 2), (5, 3, 6, 4), (3, 3, 2, 3)]  # (B, N, S, E)
    for k, (B, N, S, E) in enumerate(cases):
        case = f"B={B}, N={N}, S={S}, E={E}"
        with torch.random.fork_rng(devices=[]):  # the notebook's own random state is left as it was
            torch.manual_seed(k)
            mixer = _MixerWithoutForward(N, S, embed=E, hyper_hidden=8)
        generator = torch.Generator().manual_seed(k)
        q_taken = 3.0 * torch.randn(B, N, generator=generator)  # (B, N) some hidden units below 0, where elu bends
        state = torch.randn(B, S, generator=generator)  # (B, S)
        expected = QMixer.forward(mixer, q_taken, state)  # (B,)
        given = q_taken.clone().requires_grad_(True)
        out = output(fn, case, expected, (mixer, given, state.clone()), lambda shape: (
            "Q_tot came out with the trailing axes of the last bmm, (B, 1, 1): .view(B) (or squeeze both)."
            if shape in ((B, 1, 1), (B, 1)) else
            "(B,) met (B, 1) somewhere and broadcast to (B, B): keep the bmm's (B, 1, 1) until the end, then .view(B)."
            if shape == (B, B) else "one Q_tot per row of the batch: (B,)."))
        if out is None:
            return
        if not torch.allclose(out, expected, atol=1e-5):
            with torch.no_grad():
                def variant(**changed):
                    return _mix_variant(mixer, q_taken, state, **changed)

                mistakes = [
                    (variant(abs_w1=False, abs_w2=False), "you forgot abs(): the hypernetworks' weights can be "
                                                          "negative, and then Q_tot is not monotonic in Q_i, so "
                                                          "an agent's own argmax need not be the team's. W_1 = "
                                                          "|hyper_w1(s)| and w_2 = |hyper_w2(s)|."),
                    (variant(abs_w1=False), "W_1 = |hyper_w1(s)|: you forgot abs() on the first layer's weights."),
                    (variant(abs_w2=False), "w_2 = |hyper_w2(s)|: you forgot abs() on the second layer's weights."),
                    (variant(abs_biases=True), "only the weights W_1 and w_2 go through abs(): the biases v_1 and v_2 "
                                               "may be negative (monotonicity does not depend on them)."),
                    (variant(layout="EN"), "hyper_w1(s)'s N*E outputs are laid out agent by agent: .view(B, N, E). "
                                           "Viewing them as (B, E, N) and transposing keeps the shape but mixes "
                                           "up which weight belongs to which agent."),
                    (variant(activation=F.relu), "the hidden layer is elu, not relu (QMIX's paper and QMixer)."),
                    (variant(activation=lambda x: x), "the hidden layer needs its elu: without it the mixer is "
                                                      "linear in q, VDN with state-dependent weights."),
                    (variant(b1=False), "you left out v_1 = hyper_b1(s), viewed (B, 1, E), added before the elu."),
                    (variant(b2=False), "you left out v_2 = hyper_b2(s), viewed (B, 1, 1), added at the end."),
                ]
            hint = named_mistake(out.detach(), mistakes, "Q_tot = bmm(elu(bmm(q (B, 1, N), W_1 (B, N, E)) + v_1), "
                                                          "w_2 (B, E, 1)) + v_2, then .view(B).")
            values_differ(case, expected, out, hint, shown=4)
            return
        learned = [given] + list(mixer.parameters())
        grads = (torch.autograd.grad(out.sum(), learned, allow_unused=True) if out.requires_grad
                 else [None] * len(learned))
        if grads[0] is None or all(g is None for g in grads[1:]):
            what = "the utilities q_taken" if grads[0] is None else "the hypernetworks"
            print(f"FAILED on {case}: the values are right but no gradient reaches {what}.\nHint: QMIX trains the "
                  f"agents and the mixer through Q_tot: no .detach(), .item(), numpy or torch.no_grad() inside.")
            return
    print(f"PASSED: QMIX's mixer on all {len(cases)} cases (values, and gradients into the utilities and the "
          f"hypernetworks; B from 1 to 5, N = 2 and 3, E = 2 to 4).")


# -- check_coma_actor_loss: COMA's masked policy-gradient loss (notebook 08) -------------------------------------------

def _coma_pg_slip(pi: torch.Tensor, advantage: torch.Tensor, actions: torch.Tensor, agent_mask: torch.Tensor,
                  slip: str) -> torch.Tensor:
    """COMA's policy-gradient loss with one named slip, to recognise a learner's: pi ``(B, T, N, A)``, advantage,
    actions int and agent_mask ``(B, T, N)`` -> a number (no gradient)."""
    with torch.no_grad():
        taken = actions.unsqueeze(-1)  # (B, T, N, 1)
        log_taken = torch.log(pi.gather(-1, taken).squeeze(-1) + 1e-10)  # (B, T, N) log pi(a_{i,t})
        if slip == "no log":
            log_taken = pi.gather(-1, taken).squeeze(-1)
        elif slip == "greedy action":
            log_taken = torch.log(pi.max(-1).values + 1e-10)
        elif slip == "every action":
            log_taken = torch.log(pi + 1e-10).sum(-1)
        elif slip == "log_softmax":
            log_taken = torch.log_softmax(pi, dim=-1).gather(-1, taken).squeeze(-1)
        mask = torch.ones_like(agent_mask) if slip == "no mask" else agent_mask  # (B, T, N)
        total = (advantage * log_taken * (1.0 if slip == "numerator unmasked" else mask)).sum()
        divisor = {"no mask": mask.numel(), "every entry": mask.numel(),
                   "episodes": mask.shape[0]}.get(slip, mask.sum().clamp(min=1.0))
        return (total if slip == "sign" else -total) / divisor


_COMA_PG_SLIPS = [
    ("numerator unmasked", "the sum in the numerator is not masked: padding and the steps after an agent is home "
                           "enter it, though no choice was made there (dividing by agent_mask.sum() alone does not "
                           "remove them). Multiply each term by agent_mask before summing."),
    ("no mask", "padding and the steps after an agent is home are not masked: their terms enter the loss, though "
                "no choice was made there. Multiply each term by agent_mask and divide by agent_mask.sum()."),
    ("every entry", "the masked sum is divided by every entry of the padded (B, T, N) batch: divide by "
                    "agent_mask.sum(), the number of (b, t, i) at which agent i still acts, so padding does not "
                    "dilute the loss."),
    ("episodes", "the masked sum is divided by the number of episodes B: divide by agent_mask.sum(), the number of "
                 "(b, t, i) at which agent i still acts."),
    ("sign", "the sign is flipped: gradient descent on +Adv log pi makes good actions rarer. The loss is MINUS the "
             "masked mean of Adv * log pi(a_{i,t})."),
    ("no log", "this weighs pi(a_{i,t}) itself: the policy gradient needs its log, torch.log(pi of the taken action)."),
    ("greedy action", "this is log pi of the most likely action: use the action each agent TOOK, "
                      "pi.gather(-1, actions.unsqueeze(-1)).squeeze(-1), then the log."),
    ("every action", "this sums log pi over all A actions: pick the action each agent took, "
                     "pi.gather(-1, actions.unsqueeze(-1)).squeeze(-1), then the log."),
    ("log_softmax", "pi holds probabilities already (a softmax was applied): take torch.log of them; log_softmax "
                    "would normalise them a second time."),
]


def check_coma_actor_loss(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(pi (B, T, N, A), advantage (B, T, N), actions int (B, T, N), agent_mask (B, T, N)) -> loss`` (a
    number), COMA's policy-gradient loss without the entropy bonus,
    ``-sum_{(b,t,i) valid} Adv_{i,t} log pi(a_{i,t} | h_{i,t}, i) / |valid|`` over the entries where agent_mask is 1,
    against ``COMA.actor_loss`` with ``entropy_coef=0``: its value, the gradient it sends into the policy, and that
    it sends none into the advantage (which arrives with a gradient, as if just computed by the critic). Cases:
    padding after short episodes, an agent home before the other, B = 1, N = A = 3."""
    from marl_edu.learners.coma import COMA

    generator = torch.Generator().manual_seed(0)
    # (B, T, N, A, each episode's real steps, (episode, agent, steps it acts) for agents home early)
    cases = [(3, 4, 2, 5, [4, 2, 3], [(0, 0, 3)]),
             (1, 5, 3, 3, [5], [(0, 2, 2)]),
             (2, 3, 2, 4, [3, 3], [(1, 1, 1)])]
    for B, T, N, A, lengths, early in cases:
        case = f"B={B}, T={T}, N={N}, A={A}, episodes of {lengths} steps"
        logits = torch.randn(B, T, N, A, generator=generator).requires_grad_()  # the actor's output, its parameters
        critic_out = (2.0 * torch.randn(B, T, N, generator=generator)).requires_grad_()  # the critic's advantage
        actions = torch.randint(0, A, (B, T, N), generator=generator)  # (B, T, N)
        agent_mask = torch.zeros(B, T, N)
        for b, length in enumerate(lengths):
            agent_mask[b, :length] = 1.0
            actions[b, length:] = 0  # padding holds action 0, as in collect_episodes' batches
        for b, i, acted in early:
            agent_mask[b, acted:, i] = 0.0  # agent i is home: no choice left
        pi = torch.softmax(logits, dim=-1)  # (B, T, N, A)
        expected, _ = COMA.actor_loss(pi, critic_out.detach(), actions, agent_mask, 0.0)  # the library's, beta = 0
        expected_grad, = torch.autograd.grad(expected, logits)
        out = output(fn, case, expected.detach(), (torch.softmax(logits, dim=-1), critic_out * 1.0, actions.clone(),
                                                   agent_mask.clone()), lambda shape: (
            "one term per (b, t, i) is right, but the loss is ONE number: sum the masked terms and divide by "
            "agent_mask.sum()." if shape == (B, T, N) else
            "log pi of the taken action is (B, T, N): gather on the action axis with actions.unsqueeze(-1), then "
            "squeeze(-1), and reduce everything to one number." if len(shape) == 4 else
            "the loss is one number (a 0-d tensor): .sum() / agent_mask.sum(), no keepdim."))
        if out is None:
            return
        if not torch.allclose(out.detach(), expected.detach(), atol=1e-5):
            pi_given = pi.detach()
            hint = named_mistake(out.detach(), [
                (_coma_pg_slip(pi_given, critic_out.detach(), actions, agent_mask, slip), text)
                for slip, text in _COMA_PG_SLIPS],
                "not a slip this check knows. Compare yours, piece by piece, with the formula above the cell: "
                "which action's log pi each term uses, what multiplies it, which entries the mask keeps, what the "
                "sum is divided by, and the sign.")
            print(f"FAILED on {case}: expected {_close(expected.item(), out.item())}.\nHint: {hint}")
            return
        try:
            grads = (torch.autograd.grad(out, [logits, critic_out], allow_unused=True) if out.requires_grad
                     else (None, None))
        except RuntimeError as error:  # e.g. pi changed in place, which autograd needs unchanged
            print(f"FAILED on {case}: the value is right but its gradient cannot be computed (torch: "
                  f"{str(error).split(':')[0]}).\nHint: do not change pi in place (no clamp_, log_, +=): autograd "
                  f"needs it as it was; build new tensors from it.")
            return
        to_actor, to_critic = grads
        if to_critic is not None and to_critic.abs().sum() > 0:
            print(f"FAILED on {case}: the value is right but the loss sends a gradient into the advantage, and so "
                  f"into the critic that computed it.\nHint: the advantage is a score, a constant for the actor's "
                  f"loss: use advantage.detach().")
            return
        if to_actor is None or to_actor.abs().sum() == 0:
            print(f"FAILED on {case}: the value is right but no gradient reaches the policy.\nHint: the actor learns "
                  f"through log pi(a_{{i,t}}): no .detach(), .item(), numpy or torch.no_grad() on pi.")
            return
        if not torch.allclose(to_actor, expected_grad, atol=1e-5):
            print(f"FAILED on {case}: the value is right but the gradient into the policy is not.\nHint: the "
                  f"gradient must flow through log pi of the taken action only, weighted by the (detached) "
                  f"advantage and agent_mask.")
            return
    print(f"PASSED: COMA's masked actor loss on all {len(cases)} cases (value within 1e-5, the gradient into the "
          f"policy, none into the advantage; padding, an agent home early, B = 1, N = A = 3).")


# -- check_expected_actor_loss: MADDPG's actor loss as the exact expectation over own actions (notebook 04) ----------

def _own_action_values(critic, obs: torch.Tensor, actions: torch.Tensor, i: int, slip: str = "") -> torch.Tensor:
    """``Q_i(x_t, (a_{-i,t}, k))`` for every action k of agent i, ``(B, A)``, no gradient; or the table a named slip
    builds: ``"two ones"`` (one_hot(k) added to agent i's block without emptying it first), ``"every agent"`` (every
    agent's block set to one_hot(k)), ``"agent 0"`` (agent 0's block replaced, whoever i is)."""
    A = actions.shape[2]
    columns = []
    with torch.no_grad():
        for k in range(A):
            joint = actions.clone()  # (B, N, A)
            who = slice(None) if slip == "every agent" else (0 if slip == "agent 0" else i)
            if slip != "two ones":
                joint[:, who] = 0.0
            joint[:, who, k] = 1.0
            columns.append(critic(flatten_for_critic(obs, joint)))  # (B,)
    return torch.stack(columns, dim=1)  # (B, A)


def check_expected_actor_loss(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(critic, actor, obs (B, N, O), actions (B, N, A) one-hot, i) -> loss`` (a number), MADDPG's discrete
    actor loss as the exact expectation over agent i's own actions, without the logits penalty:
    ``-1/B sum_b sum_k pi_i(k | o_{i,t}) Q_i(x_t, (a_{-i,t}, k))`` with ``pi_i = softmax(actor(o_{i,t}))``, the other
    agents' actions from the batch and the critic a fixed judge. It is compared with ``MADDPG.actor_loss``
    (``actor_gradient="expected"``, ``logits_reg=0``): its value, its gradient on the actor's weights, no gradient on
    the critic's, and the batch's actions left untouched. Cases: B from 1 to 6, N = 2 and 3, A = 2 to 5, agents 0 to 2.
    The caller's random state is left as it was, whatever the learner's function draws."""
    from marl_edu.learners.maddpg import MADDPG, MADDPGConfig

    cases = [(4, 2, 3, 5, 0), (4, 2, 3, 5, 1), (1, 3, 2, 4, 2), (6, 3, 4, 3, 1), (5, 2, 3, 2, 1)]  # (B, N, O, A, i)
    with torch.random.fork_rng(devices=[]):  # MADDPG seeds torch's global generator; a learner's code may draw
        for k, (B, N, O, A, i) in enumerate(cases):
            case = f"B={B}, N={N}, O={O}, A={A}, i={i}"
            agent = MADDPG(N, O, A, MADDPGConfig(hidden=8, logits_reg=0.0, actor_gradient="expected"), seed=k)
            critic, actor = agent.critics[i], agent.actors[i]
            generator = torch.Generator().manual_seed(k)
            with torch.no_grad():  # a policy far from uniform, and critic values far apart, so slips show
                actor.mlp.net[-1].bias.copy_(2.0 * torch.randn(A, generator=generator))
                critic.mlp.net[-1].weight.mul_(8.0)
            obs = torch.randn(B, N, O, generator=generator)  # (B, N, O)
            actions = F.one_hot(torch.randint(0, A, (B, N), generator=generator), A).float()  # (B, N, A) one-hot
            expected = agent.actor_loss(i, {"obs": obs, "actions": actions})  # the library's, logits_reg = 0
            expected_grads = torch.autograd.grad(expected, list(actor.parameters()))
            given = actions.clone()
            out = output(fn, case, expected.detach(), (critic, actor, obs.clone(), given, i), lambda shape: (
                "one loss per row of the batch: average the B rows' sums over k, .mean()." if shape == (B,) else
                "a (B, A) table of pi * Q: sum over the A actions (dim=1), then average over the B rows."
                if shape == (B, A) else "the loss is one number (a 0-d tensor): no keepdim, no trailing axis."))
            if out is None:
                return
            if not torch.equal(given, actions):
                print(f"FAILED on {case}: your function changed the batch's actions in place.\n"
                      f"Hint: put one_hot(k) into agent i's block of a copy, actions.clone(): the batch is shared with "
                      f"the critics' updates and the other agents' actor updates.")
                return
            if not torch.allclose(out.detach(), expected.detach(), atol=1e-5):
                again, _ = call(fn, critic, actor, obs.clone(), actions.clone(), i)
                if isinstance(again, torch.Tensor) and again.shape == out.shape and not torch.allclose(
                        again.detach(), out.detach(), atol=1e-6):
                    print(f"FAILED on {case}: your loss changes from one call to the next on the same batch.\n"
                          f"Hint: it samples agent i's action (a Gumbel-softmax sample?). The expected loss samples "
                          f"nothing: it weighs the critic's value of every action k by pi_i(k | o_i).")
                    return
                with torch.no_grad():
                    logits = actor(obs[:, i])  # (B, A)
                    pi = torch.softmax(logits, dim=1)  # (B, A)
                    q = _own_action_values(critic, obs, actions, i)  # (B, A)
                    q_batch = critic(flatten_for_critic(obs, actions))  # (B,) the batch's own joint action
                    taken = actions[:, i].argmax(dim=1, keepdim=True)  # (B, 1) agent i's action in the batch

                    def loss_of(table, weights=pi):
                        return -(weights * table).sum(dim=1).mean()

                    mistakes = [
                        (-expected.detach(), "the sign is flipped: the actor climbs its expected Q, so the loss is "
                                             "MINUS the mean of sum_k pi_i(k) Q_i(x, (a_-i, k))."),
                        (-q_batch.mean(), "this is the critic's value of the batch's own joint action: agent i's "
                                          "action must run over every k, weighted by pi_i(k | o_i); the batch's "
                                          "action gives the actor no gradient."),
                        (-(pi.gather(1, taken).squeeze(1) * q_batch).mean(),
                         "this weighs only the action agent i took in the batch: sum over EVERY action k, "
                         "pi_i(k | o_i) Q_i(x, (a_-i, k)), not just the stored one."),
                        (-q.mean(), "you averaged Q over the A actions uniformly: weigh each by agent i's policy, "
                                    "pi_i(k | o_i) = softmax(logits)[k], and sum over k."),
                        (loss_of(q, torch.ones_like(pi)), "you summed Q over the A actions unweighted: weigh each "
                                                          "by agent i's policy, pi_i(k | o_i) = softmax(logits)[k]."),
                        (-q.max(dim=1).values.mean(), "this is the best action's Q: the loss weighs every action's Q "
                                                      "by pi_i(k | o_i) (the max gives the actor no gradient)."),
                        (loss_of(q, logits), "the weights are the logits: pi_i = softmax(logits), over the A "
                                             "actions."),
                        (loss_of(q, torch.log_softmax(logits, dim=1)),
                         "the weights are log pi: the expectation weighs Q by the probabilities themselves, "
                         "pi_i = softmax(logits)."),
                        (loss_of(q, torch.softmax(logits, dim=0)), "the softmax ran over the batch axis: pi_i "
                                                                   "normalises over the A actions, dim=1 (or -1)."),
                        (-(pi * q).sum(), "the loss is summed over the B rows: average them, .mean()."),
                        (loss_of(_own_action_values(critic, obs, actions, i, "two ones")),
                         "agent i's block keeps the batch's one and gets a second: empty it (zeros) before you put "
                         "one_hot(k) there, so the critic sees exactly one action for agent i."),
                        (loss_of(_own_action_values(critic, obs, actions, i, "every agent")),
                         "every agent's action was set to k: only agent i's block changes, the others keep the "
                         "batch's actions (a_-i)."),
                    ]
                    if i != 0:
                        mistakes.append((loss_of(_own_action_values(critic, obs, actions, i, "agent 0")),
                                         "you replaced agent 0's action whoever i is: put one_hot(k) into agent i's "
                                         "block, actions[:, i]."))
                hint = named_mistake(out.detach(), mistakes,
                                     "Q_i for each k (agent i's block of a copy set to one_hot(k)) into a (B, A) "
                                     "table; weigh it by pi_i = softmax(actor(obs[:, i])), sum over k, average over "
                                     "the B rows, minus sign.")
                print(f"FAILED on {case}: expected {_close(expected.item(), out.item())}.\nHint: {hint}")
                return
            learned = list(actor.parameters()) + list(critic.parameters())
            try:
                grads = (torch.autograd.grad(out, learned, allow_unused=True) if out.requires_grad
                         else [None] * len(learned))
            except RuntimeError as error:  # e.g. a tensor autograd needs was changed in place
                print(f"FAILED on {case}: the value is right but its gradient cannot be computed (torch: "
                      f"{str(error).split(':')[0]}).\nHint: change no tensor in place that the loss was computed "
                      f"from (no mul_, clamp_, +=): build new tensors from them.")
                return
            to_actor, to_critic = grads[:len(expected_grads)], grads[len(expected_grads):]
            if all(g is None or not g.any() for g in to_actor):
                print(f"FAILED on {case}: the value is right but no gradient reaches the actor.\nHint: the actor "
                      f"learns through pi_i = softmax(actor(obs[:, i])): no .detach(), .item(), numpy or "
                      f"torch.no_grad() on the logits.")
                return
            if any(g is not None and g.any() for g in to_critic):
                print(f"FAILED on {case}: the value is right but the loss sends a gradient into the critic.\nHint: the "
                      f"critic is a fixed judge here: compute its (B, A) table of values under torch.no_grad() (or "
                      f".detach() it), so that only theta_i learns from this loss.")
                return
            if any(g is None or not torch.allclose(g, e, atol=1e-5) for g, e in zip(to_actor, expected_grads)):
                print(f"FAILED on {case}: the value is right but the actor's gradient is not.\nHint: the gradient "
                      f"must reach the actor through pi_i only, with the critic's values held constant.")
                return
    print(f"PASSED: the expected actor loss on all {len(cases)} cases (value, gradient on the actor and none on the "
          f"critic, the batch left untouched; B from 1 to 6, N = 2 and 3, A = 2 to 5, agents 0 to 2).")


# -- check_n_step_return: MADDPG's n-step return of the team reward (notebook 05) ------------------------------------

def _n_step_variants(rewards: torch.Tensor, gamma: float) -> dict[str, torch.Tensor]:
    """R^(n) of every row of ``rewards`` (B, n), and what three slips give instead: each (B,)."""
    k = torch.arange(rewards.shape[1], dtype=rewards.dtype)  # (n,) 0, 1, ..., n-1: steps after t
    n = rewards.shape[1]
    return {"right": (gamma ** k * rewards).sum(dim=1),  # (B,) r_t + gamma r_{t+1} + ... + gamma^{n-1} r_{t+n-1}
            "first discounted": (gamma ** (k + 1) * rewards).sum(dim=1),  # (B,) gamma r_t + ... + gamma^n r_{t+n-1}
            "reversed": (gamma ** (n - 1 - k) * rewards).sum(dim=1),  # (B,) the last reward undiscounted
            "undiscounted": rewards.sum(dim=1)}  # (B,)


def _n_step_shape_hint(shape: tuple, B: int, n: int) -> str:
    """The hint for an n-step return of the wrong shape ``shape``, rewards (B, n): the (B, 1) first, the commonest."""
    if shape == (B, 1):
        return ("R came out (B, 1): a keepdim=True, an unsqueeze, or a (B, 1) that met a (B,) (with B > 1 that "
                "broadcasts to (B, B)); R is (B,).")
    if shape == (B, B):
        return "(B,) met (B, 1) somewhere and broadcast to (B, B): keep R (B,)."
    if shape == (B, n):
        return "nothing was summed: one return per row is the sum over its n rewards, dim=1, (B, n) -> (B,)."
    if shape in ((n,), ()):
        return "the sum ran over the batch too: sum over each row's n rewards only, dim=1, (B, n) -> (B,)."
    return "one return per row: R is (B,)."


def check_n_step_return(fn: Callable[[torch.Tensor, float], torch.Tensor]) -> None:
    """Check ``fn(rewards (B, n), gamma) -> R (B,)`` against ``R^(n)_t = sum_{k=0}^{n-1} gamma^k r_{t+k}``, each row
    the next n team rewards of one stored transition. Cases: notebook 05's row t = 4 of the optimal plan (-0.2, -0.2,
    4.9 with gamma 0.95: -0.2 - 0.19 + 4.42225 = 4.03225), random rows with n from 1 to 5, gamma 0 and 1, B = 1."""
    generator = torch.Generator().manual_seed(5)
    cases = [(torch.tensor([[-0.2, -0.2, 4.9]]), 0.95, "notebook 05's row t = 4")]
    for B, n, gamma in ((4, 3, 0.95), (1, 1, 0.9), (5, 5, 0.5), (3, 2, 1.0), (2, 4, 0.0)):
        cases.append((torch.randn(B, n, generator=generator), gamma, f"B={B}, n={n}, gamma={gamma}"))
    for rewards, gamma, case in cases:
        variants = _n_step_variants(rewards, gamma)
        expected = variants["right"]
        out = output(fn, case, expected, (rewards.clone(), gamma),
                     lambda shape: _n_step_shape_hint(shape, *rewards.shape))
        if out is None:
            return
        if torch.allclose(out, expected, atol=1e-6):
            continue
        hint = named_mistake(out, [
            (variants["first discounted"], "the first reward is discounted too: r_t comes now, gamma^0 = 1; the "
                                           "k-th reward after it (k = 0, ..., n-1) gets gamma^k."),
            (variants["reversed"], "the discounts run backwards: the LATER a reward comes, the more it is discounted, "
                                   "r_t times 1, r_{t+1} times gamma, ..., r_{t+n-1} times gamma^(n-1)."),
            (variants["undiscounted"], "the rewards are summed without discounting: the k-th after t is worth "
                                       "gamma^k of itself."),
        ], "R = r_t + gamma r_{t+1} + ... + gamma^(n-1) r_{t+n-1}, one sum per row, over the n rewards.",
           atol=1e-6)
        values_differ(case, expected, out, hint, 4)
        return
    print(f"PASSED: R = sum_k gamma^k r_(t+k) on all {len(cases)} cases (notebook 05's row t = 4, n from 1 to 5, "
          f"gamma 0 and 1, B = 1).")


# -- 15: reading a comparison -----------------------------------------------------------------------------------------

def _seed_rows(greedy: list[float], episodes: list[int | None]) -> list[dict]:
    """One dict per seed, as ``results/compare/ENV/METHOD/seed<S>.json`` holds them (the two fields used here)."""
    return [{"greedy": g, "episodes_to_solve": e} for g, e in zip(greedy, episodes)]


# committed runs' final greedy returns and episodes to the first solve, seeds 0-4, of the GRU learners named on each
# env (results/compare/ENV/<name>-gru/seed<S>.json, the name lower-cased with "-" as "_"; tests/test_checks.py holds
# them to the files), with the env's optimum
SOLVE_COUNT_RUNS = {
    ("COMA", "Switch2-v0"): ([8.3, 8.2, 7.7, 8.2, 8.2], [3600, 3008, 4608, 3408, 2608], 8.3),
    ("IQL", "Switch2-v0"): ([5.6, 8.0, 7.5, 7.5, -0.8], [None, 1352, 1256, None, None], 8.3),
    ("central-QV", "Switch4-v0"): ([15.7, 15.9, -20.0, 16.0, 16.0], [None, 29600, 15600, 19808, 17408], 16.1),
}


def check_solve_counts(fn: Callable) -> None:
    """Check ``fn(rows, optimum) -> (solved at the end, solved at some point, median episodes to solve)`` against
    ``runs.solve_counts``, on per-seed rows: three of the committed runs' (``SOLVE_COUNT_RUNS``: COMA's and IQL's on
    Switch2-v0, central-QV's on Switch4-v0), seeds whose float32 return of 8.0 reads 7.99999997, and no seed solved."""
    from marl_edu.runs.seed import solve_counts

    cases = [(f"{name} on {env}", _seed_rows(greedy, episodes), optimum)
             for (name, env), (greedy, episodes, optimum) in SOLVE_COUNT_RUNS.items()]
    cases[2:2] = [("five seeds on Switch2-v0, one final of 8.0 summed in float32 (7.99999997)",
                   _seed_rows([8.3, 8.3, 8.1, 7.999999970197678, 8.2], [1152, 1056, 1504, 856, 856]), 8.3)]
    cases += [("no seed solved", _seed_rows([-0.6, -10.0, -0.7], [None, None, None]), 8.3)]
    for case, rows, optimum in cases:
        expected = solve_counts(rows, optimum)
        out, error = call(fn, [dict(row) for row in rows], optimum)
        if error:
            print(error if error.startswith("NOT DONE") else f"FAILED on {case}: {error}")
            return
        if out is None:
            print(NOT_DONE_NONE)
            return
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            print(f"FAILED on {case}: expected a tuple of three (solved at the end, solved at some point, median "
                  f"episodes to solve), got {out!r}")
            return
        at_end, ever, median = out
        greedy = [row["greedy"] for row in rows]
        solved = [row["episodes_to_solve"] for row in rows if row["episodes_to_solve"] is not None]
        if at_end != expected[0]:
            if at_end == ever == expected[1]:
                hint = ("that is the seeds that solved at some point; 'at the end' asks whether each seed's FINAL "
                        "greedy return is within 0.3 of the optimum (COMA's seed 2 on Switch2-v0 solved at episode "
                        "4608 and ended at 7.7).")
            elif at_end == sum(g >= optimum for g in greedy):
                hint = "solved means within 0.3 of the exact optimum (8.0 on Switch2, optimum 8.3), not at it."
            elif at_end == sum(g >= round(optimum - 0.3, 6) for g in greedy):
                hint = ("a return of 8.0 is a sum of float32 rewards and reads 7.99999997: compare with a small "
                        "tolerance, greedy >= optimum - 0.3 - 1e-6.")
            else:
                hint = "count the seeds whose final greedy return is at least optimum - 0.3."
            print(f"FAILED on {case}: solved at the end: expected {expected[0]}, got {at_end}.\nHint: {hint}")
            return
        if ever != expected[1]:
            print(f"FAILED on {case}: solved at some point: expected {expected[1]}, got {ever}.\nHint: a seed solved "
                  f"at some point when its episodes_to_solve is not None (None: it never did).")
            return
        if expected[2] is None:
            if median is not None:
                print(f"FAILED on {case}: median episodes to solve: expected None (no seed solved), got {median!r}."
                      f"\nHint: with no seed that solved there is nothing to take a median of: return None, not 0 or "
                      f"NaN, which would read as a number in the table.")
                return
            continue
        if median is None or not isinstance(median, (int, float)) or abs(median - expected[2]) > 1e-6:
            if isinstance(median, (int, float)) and solved and abs(median - sum(solved) / len(solved)) < 1e-6:
                hint = "that is the mean; the tables give the median, which one slow seed cannot drag."
            elif isinstance(median, (int, float)) and len(solved) < len(rows):
                hint = ("the median is over the seeds that got there only: a seed that never solved has no episode "
                        "to count (not 0, not the budget); the table says how many seeds that is.")
            else:
                hint = "take the median of episodes_to_solve over the seeds where it is not None."
            print(f"FAILED on {case}: median episodes to solve: expected {expected[2]}, got {median!r}.\nHint: {hint}")
            return
    print(f"PASSED: the table's three counts on all {len(cases)} cases (solved at the end, at some point, and the "
          f"median episodes over the seeds that got there).")


# -- 12: PPO's clipped surrogate with masks ----------------------------------------------------------------------------

def _surrogate_slip(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor, mask: torch.Tensor,
                    clip: float, slip: str) -> torch.Tensor:
    """The loss a known slip of the clipped surrogate gives (no gradient): the right one with ``slip=""``."""
    with torch.no_grad():
        ratio = {"no exp": log_prob - old_log_prob, "divided logs": log_prob / old_log_prob,
                 "inverted": torch.exp(old_log_prob - log_prob)}.get(slip, torch.exp(log_prob - old_log_prob))  # rho
        low, high = (-clip, clip) if slip == "clip around 0" else (1.0 - clip, 1.0 + clip)
        clipped = torch.clamp(ratio, low, high) * advantage  # (B, T, N)
        plain = ratio * advantage  # (B, T, N)
        surrogate = {"no min": plain, "clipped only": clipped, "max": torch.max(plain, clipped)}.get(
            slip, torch.min(plain, clipped))  # (B, T, N)
        sign = 1.0 if slip == "not negated" else -1.0
        if slip == "no ratio":  # COMA's policy-gradient loss, with the advantage given
            surrogate = log_prob * advantage  # (B, T, N)
        if slip == "padding included":
            return sign * surrogate.mean()
        divisor = {"every entry": float(mask.numel()), "sum": 1.0}.get(slip, mask.sum().clamp(min=1.0))
        return sign * (surrogate * mask).sum() / divisor


_SURROGATE_SLIPS = [
    ("no exp", "rho is a ratio of probabilities: rho = exp(log_prob - old_log_prob), not the difference of the logs."),
    ("divided logs", "rho = exp(log_prob - old_log_prob): dividing the log-probabilities is not dividing the "
                     "probabilities."),
    ("inverted", "rho = pi_theta / pi_old, the new policy over the old: exp(log_prob - old_log_prob), not its "
                 "inverse."),
    ("no ratio", "that is COMA's policy-gradient loss, -mean(Adv * log pi): PPO's surrogate uses the ratio rho = "
                 "exp(log_prob - old_log_prob) in place of log pi, clipped."),
    ("clip around 0", "the ratio is clipped to [1 - clip, 1 + clip] (around 1, where pi_theta = pi_old), not to "
                      "[-clip, clip]."),
    ("no min", "that is the plain surrogate rho * Adv: PPO takes the minimum of it and the clipped one, "
               "min(rho Adv, clip(rho, 1 - c, 1 + c) Adv), so a step can never gain from moving rho out of the range."),
    ("clipped only", "that is the clipped term alone: take the minimum of rho * Adv and clip(rho) * Adv (where the "
                     "plain term is smaller, rho outside the range makes things worse and must be felt)."),
    ("max", "PPO takes the minimum of the two terms, the pessimistic bound, not the maximum."),
    ("not negated", "the surrogate is to be maximised: the loss for gradient descent is its negation, -mean(...)."),
    ("padding included", "the mean ran over every entry, padding and agents already home included: multiply by "
                         "mask and divide by mask.sum()."),
    ("every entry", "the masked terms are right, but divide by mask.sum() (the steps agents act), not by every "
                    "entry B*T*N."),
    ("sum", "the masked terms are right, but the loss is their mean: divide the sum by mask.sum()."),
]


def check_clipped_surrogate_loss(fn: Callable[..., torch.Tensor]) -> None:
    """Check ``fn(log_prob (B, T, N), old_log_prob (B, T, N), advantage (B, T, N), mask (B, T, N), clip) -> loss`` (a
    number), PPO's actor loss ``-sum m min(rho Adv, clip(rho, 1 - c, 1 + c) Adv) / sum m`` with
    ``rho = exp(log_prob - old_log_prob)``, against ``ppo.clipped_surrogate_loss``: its value, the gradient into
    log_prob, none into old_log_prob or the advantage (which arrive with gradients, as if just computed). Cases: the
    by-hand one of notebook 12 (three steps of two agents), padding after a short episode, agents home early, B = 1,
    N = 3, clip ranges 0.1 to 0.3, ratios on both sides of the range."""
    from marl_edu.learners.ppo import clipped_surrogate_loss

    generator = torch.Generator().manual_seed(0)
    ratio = torch.tensor([[[1.5, 0.7], [0.5, 1.3], [1.1, 1.0]]])  # the by-hand case (notebook 12, section 2)
    cases = [("the by-hand case: B=1, T=3, N=2, clip 0.2", torch.log(torch.full((1, 3, 2), 0.4)) + torch.log(ratio),
              torch.log(torch.full((1, 3, 2), 0.4)), torch.tensor([[[2.0, -2.0], [1.0, -1.0], [-1.0, 3.0]]]),
              torch.tensor([[[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]]]), 0.2)]
    for B, T, N, clip, lengths, early in [(3, 4, 2, 0.2, [4, 2, 3], [(0, 1, 2)]), (1, 5, 3, 0.1, [5], [(0, 2, 3)]),
                                          (2, 3, 2, 0.3, [3, 3], [(1, 0, 1)])]:
        old = torch.log(torch.rand(B, T, N, generator=generator) * 0.8 + 0.1)  # log pi_old of the taken actions
        new = old + 0.5 * torch.randn(B, T, N, generator=generator)  # rho = exp(new - old), about 0.6 to 1.6
        mask = torch.zeros(B, T, N)
        for b, length in enumerate(lengths):
            mask[b, :length] = 1.0  # padding after the episode's end
        for b, i, acted in early:
            mask[b, acted:, i] = 0.0  # agent i is home: no choice left
        cases.append((f"B={B}, T={T}, N={N}, clip {clip}, episodes of {lengths} steps", new, old,
                      2.0 * torch.randn(B, T, N, generator=generator), mask, clip))
    empty = cases[1]  # every agent already home: nothing to average, the loss is 0 (not 0 / 0 = NaN)
    cases.append(("B=3, T=4, N=2, every agent already home (mask all 0)", *empty[1:4], torch.zeros_like(empty[4]),
                  empty[5]))
    for case, new, old, advantage, mask, clip in cases:
        log_prob = new.clone().requires_grad_()
        # (density=True: a case's log pi_theta = log pi_old + noise may exceed 0; the arithmetic is what is checked)
        expected = clipped_surrogate_loss(log_prob, old, advantage, mask, clip, density=True)
        expected_grad, = torch.autograd.grad(expected, log_prob)
        given = [new.clone().requires_grad_(), old.clone().requires_grad_(), advantage.clone().requires_grad_()]
        out = output(fn, case, expected.detach(), (given[0], given[1] * 1.0, given[2] * 1.0, mask.clone(), clip),
                     lambda shape: ("one term per (b, t, i) is right, but the loss is ONE number: sum the masked "
                                    "terms and divide by mask.sum()." if shape == tuple(new.shape) else
                                    "the loss is one number (a 0-d tensor): .sum() / mask.sum(), no keepdim."))
        if out is None:
            return
        if mask.sum() == 0 and not torch.isfinite(out).all():
            print(f"FAILED on {case}: expected 0, got {out.item()}.\nHint: with no step to average over, mask.sum() "
                  f"is 0: divide by mask.sum().clamp(min=1), so the loss is 0, not 0 / 0.")
            return
        if not torch.allclose(out.detach(), expected.detach(), atol=1e-5):
            hint = named_mistake(out.detach(), [(_surrogate_slip(new, old, advantage, mask, clip, slip), text)
                                                for slip, text in _SURROGATE_SLIPS],
                                 "per agent step, the smaller of rho * Adv and clip(rho, 1 - clip, 1 + clip) * Adv, "
                                 "with rho = pi_theta / pi_old from the log-probabilities; then the mean over the "
                                 "steps where mask is 1, negated.")
            print(f"FAILED on {case}: expected {_close(expected.item(), out.item())}.\nHint: {hint}")
            return
        if mask.sum() == 0:
            continue  # nothing is learned from an empty batch: its value (0) is all there is to check
        grads = (torch.autograd.grad(out, given, allow_unused=True) if out.requires_grad else (None, None, None))
        to_new, to_old, to_advantage = grads
        for grad, what, hint in ((to_old, "old_log_prob", "pi_old is what the batch was played with, fixed for every "
                                  "epoch: use old_log_prob.detach()."),
                                 (to_advantage, "the advantage", "the advantage is a score, a constant for the "
                                  "actor's loss: use advantage.detach().")):
            if grad is not None and grad.abs().sum() > 0:
                print(f"FAILED on {case}: the value is right but the loss sends a gradient into {what}.\nHint: {hint}")
                return
        if to_new is None or to_new.abs().sum() == 0:
            print(f"FAILED on {case}: the value is right but no gradient reaches log_prob.\nHint: the policy learns "
                  f"through rho = exp(log_prob - old_log_prob): no .detach(), .item(), numpy or torch.no_grad() on "
                  f"log_prob.")
            return
        if not torch.allclose(to_new, expected_grad, atol=1e-5):
            print(f"FAILED on {case}: the value is right but the gradient into log_prob is not.\nHint: where the "
                  f"clipped term is the minimum, clamp() passes no gradient: use torch.clamp and torch.min on the "
                  f"ratio itself, not a hand-made where() on detached values.")
            return
    print(f"PASSED: PPO's clipped surrogate on all {len(cases)} cases (value within 1e-5, the gradient into log_prob, "
          f"none into pi_old or the advantage; the by-hand case, padding, agents home early, B = 1, N = 3, an empty "
          f"mask).")


# -- 16: greedy against sampled, counted from the committed runs ------------------------------------------------------

# the committed PredatorPrey7x7-v0 runs' final greedy and sampled means per seed, to 0.1, and the standard error of
# each seed's gap, to 0.01, of the GRU learners named (results/compare/PredatorPrey7x7-v0/<name>-gru/seed<S>.json;
# tests/test_checks.py holds them to the files)
PREDATOR_PREY_FINALS = {
    "COMA": ([-8.4, 4.8, 3.0, 0.6, -4.0], [-3.6, 4.9, 3.5, 6.2, -2.9], [2.95, 1.9, 1.34, 2.97, 2.73]),
    "IQL": ([18.9, 14.1, 19.7, -2.3, 17.7], [19.8, 15.3, 21.8, -3.8, 18.3], [1.97, 2.79, 2.75, 0.81, 1.87]),
    "VDN": ([9.8, 13.4, 5.4, 19.2, 22.4], [9.8, 17.4, 14.6, 20.3, 20.0], [2.09, 2.86, 3.47, 1.54, 1.36]),
}


def check_sampled_beats_greedy(fn: Callable) -> None:
    """Check ``fn(rows) -> the number of seeds whose final sampled mean team return is above their greedy one by more
    than two standard errors of the gap`` (``sampled - greedy > 2 * sampled_gap_se``, strictly) on per-seed rows like
    the committed runs' (``results/compare/ENV/METHOD/seed<S>.json``: COMA's, IQL's and VDN's on PredatorPrey7x7-v0,
    ``PREDATOR_PREY_FINALS``; seven seeds with gains of exactly two, between 1.96 and two, between one and two and
    below one standard error and gaps beyond two either way; two losses beyond two; central-QV's seed with a standard
    error of 0.0; a single seed)."""
    from numbers import Integral

    def rows_of(greedy: list[float], sampled: list[float], se: list[float]) -> list[dict]:
        return [{"greedy": g, "sampled": s, "sampled_gap_se": e} for g, s, e in zip(greedy, sampled, se)]

    cases = [(f"{name} on PredatorPrey7x7-v0", rows_of(*finals)) for name, finals in PREDATOR_PREY_FINALS.items()]
    # made so that each slip below gives counts of its own: gaps (sampled - greedy) of exactly +2, -4, +3, -6, +0.5,
    # +1.5 and +1.98 standard errors; two losses beyond two; one gain beyond two; and central-QV's committed seed 1,
    # which played alike both ways (its -0.002 is the records' rounding, its standard error 0.0)
    cases += [("seven seeds: gains of exactly two, between 1.96 and two, between one and two and below one standard "
               "error, and beyond two either way", rows_of([1.0, 5.0, 5.0, 0.0, 4.0, 2.0, 0.0],
                                                           [2.0, 1.0, 8.0, -3.0, 4.25, 3.5, 1.98],
                                                           [0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0])),
              ("two seeds, both losses beyond two standard errors", rows_of([3.0, 6.0], [-1.0, 2.5], [1.0, 0.5])),
              ("central-QV's seed 1 on PredatorPrey7x7-v0, a standard error of 0.0",
               rows_of([-14.52], [-14.522], [0.0])),
              ("one seed", rows_of([2.6], [6.7], [1.5]))]

    def wins(rows: list[dict]) -> int:  # what the question asks: a gain beyond two standard errors, seed by seed
        return sum(row["sampled"] - row["greedy"] > 2 * row["sampled_gap_se"] for row in rows)

    beyond = "row['sampled'] - row['greedy'] > 2 * row['sampled_gap_se']"
    slips = [  # (what a slip counts, its hint), each named only when it gives fn's count on every case answered
        (lambda rows: sum(row["sampled"] > row["greedy"] for row in rows),
         f"that counts every seed where sampling scored higher, chance included; count only the gains more than "
         f"twice their standard error: {beyond}."),
        (lambda rows: sum(row["sampled"] - row["greedy"] > row["sampled_gap_se"] for row in rows),
         f"one standard error is not enough: chance alone puts a gain above one standard error about one time in "
         f"six, above two about one time in 44. Twice it: {beyond}."),
        (lambda rows: sum(abs(row["sampled"] - row["greedy"]) > 2 * row["sampled_gap_se"] for row in rows),
         f"that also counts the seeds where sampling did measurably WORSE; the question is where it beat greedy: "
         f"{beyond}, no absolute value."),
        (lambda rows: sum(row["greedy"] - row["sampled"] > 2 * row["sampled_gap_se"] for row in rows),
         f"that counts the seeds where GREEDY did measurably better; the question is where sampling beat greedy: "
         f"{beyond}."),
        (lambda rows: sum(row["sampled"] - row["greedy"] >= 2 * row["sampled_gap_se"] for row in rows),
         "more than two standard errors, strictly: a gap of exactly two is not counted."),
        (lambda rows: sum(row["sampled"] - row["greedy"] > 1.96 * row["sampled_gap_se"] for row in rows),
         f"the line here is two standard errors, not 1.96 (the two-sided 5% point: either is a convention, this "
         f"course uses 2): {beyond}."),
    ]

    def first_wrong(answers: list[tuple[str, list[dict], int]]) -> bool:
        """If a case of ``answers`` was answered wrong, print the verdict on the first such case, with the hint of the
        slip that gives every count of ``answers`` (one case alone can match a slip by coincidence), and return True."""
        wrong = [(case, rows, out) for case, rows, out in answers if out != wins(rows)]
        if not wrong:
            return False
        hint = next((hint for counts, hint in slips if all(out == counts(rows) for _, rows, out in answers)),
                    f"for each seed compare its gap with twice its standard error, {beyond}, and count the seeds.")
        case, rows, out = wrong[0]
        print(f"FAILED on {case}: expected {wins(rows)} of {len(rows)} seeds, got {out}.\nHint: {hint}")
        return True

    answers = []  # (case, rows, fn's count) of the cases answered with a count so far
    for case, rows in cases:
        expected = wins(rows)
        out, error = call(fn, [dict(row) for row in rows])
        bad_count = out is not None and (isinstance(out, bool) or not isinstance(out, Integral))
        if (error or out is None or bad_count) and first_wrong(answers):  # an earlier case's wrong count comes first
            return
        if error and error.startswith("your function raised ZeroDivisionError"):
            print(f"FAILED on {case}: {error}\nHint: a standard error can be 0.0 (a policy that plays alike both "
                  f"ways); compare, do not divide: {beyond}.")
            return
        if error:
            print(error if error.startswith("NOT DONE") else f"FAILED on {case}: {error}")
            return
        if out is None:
            print(NOT_DONE_NONE)
            return
        if bad_count:
            if isinstance(out, float) and len(rows) > 0 and abs(out - expected / len(rows)) < 1e-9:
                hint = ("return one whole number, the count of seeds: not a float, and not the share of the seeds "
                        "(a count, not a fraction).")  # (a share of no seeds is 0.0: the first case's is)
            else:
                hint = "return one whole number, the count of seeds (e.g. sum(... for row in rows))."
            print(f"FAILED on {case}: expected a count of seeds ({expected}), got {out!r}.\nHint: {hint}")
            return
        answers.append((case, rows, out))
    if first_wrong(answers):
        return
    print(f"PASSED: the count on all {len(cases)} cases (seed by seed, a gain of more than two standard errors of "
          f"its gap).")
