import json

import pytest
import torch

from marl_edu.course import checks
from marl_edu.course.checks import check_flatten_for_critic


def run(fn, capsys):
    """The verdict is the first word(s) of what the check prints: PASSED, FAILED or NOT DONE YET."""
    assert check_flatten_for_critic(fn) is None  # nothing returned: a notebook cell shows only the print
    out = capsys.readouterr().out
    return out.startswith("PASSED"), out


def test_reference_passes(capsys):
    verdict, out = run(lambda o, a: torch.cat([o.flatten(1), a.flatten(1)], dim=1), capsys)
    assert verdict is True and out.startswith("PASSED")


def test_stub_is_reported_not_raised(capsys):
    def stub(obs, actions):
        raise NotImplementedError

    verdict, out = run(stub, capsys)
    assert verdict is False and out.startswith("NOT DONE YET")


def test_interleaving_gets_a_precise_hint(capsys):
    verdict, out = run(lambda o, a: torch.cat([o, a], dim=2).flatten(1), capsys)
    assert verdict is False and "FAILED on B=4, N=2, O=2, A=5" in out and "interleaved" in out


def test_feature_major_flatten_is_named(capsys):
    verdict, out = run(lambda o, a: torch.cat([o.transpose(1, 2).flatten(1), a.transpose(1, 2).flatten(1)], 1), capsys)
    assert verdict is False and "feature-major" in out


def test_batch_agent_mix_is_named(capsys):
    verdict, out = run(lambda o, a: torch.cat([o.transpose(0, 1).reshape(o.shape[0], -1),
                                               a.transpose(0, 1).reshape(a.shape[0], -1)], 1), capsys)
    assert verdict is False and "different transitions" in out


def test_wrong_shape_and_crash(capsys):
    verdict, out = run(lambda o, a: torch.cat([o, a], dim=2), capsys)
    assert verdict is False and "expected shape (4, 14), got (4, 2, 7)" in out and "did not merge" in out
    verdict, out = run(lambda o, a: o + a, capsys)
    assert verdict is False and "your function raised RuntimeError" in out
    verdict, out = run(lambda o, a: o.numpy(), capsys)
    assert verdict is False and "expected a torch.Tensor, got ndarray" in out


def test_a_stub_that_returns_none_is_not_done_yet(capsys):
    # an empty body (``pass``) or a forgotten ``return`` is an unfinished exercise, not a wrong answer
    def stub(obs, actions):
        pass

    verdict, out = run(stub, capsys)
    assert verdict is False and out.startswith("NOT DONE YET") and "returned None" in out and "FAILED" not in out


def test_wrong_dtype_is_reported_not_raised(capsys):
    from marl_edu.learners.maddpg import flatten_for_critic

    verdict, out = run(lambda o, a: flatten_for_critic(o, a).double(), capsys)
    assert verdict is False and "expected dtype torch.float32" in out and "got torch.float64" in out


def _run_td(fn, capsys):
    from marl_edu.course.checks import check_td_target

    assert check_td_target(fn) is None
    return capsys.readouterr().out


def test_td_check_reference_passes(capsys):
    from marl_edu.pieces.targets import td_target

    assert _run_td(td_target, capsys).startswith("PASSED")


def test_td_check_names_each_pitfall(capsys):
    assert "multiply gamma * q_next by (1 - dones)" in _run_td(lambda r, d, q, g: (r + g * q).detach(), capsys)
    assert "mask is flipped" in _run_td(lambda r, d, q, g: (r + g * d * q).detach(), capsys)
    assert "carries a gradient" in _run_td(lambda r, d, q, g: r + g * (1 - d) * q, capsys)
    assert "broadcast to (B, B)" in _run_td(lambda r, d, q, g: (r + g * (1 - d) * q.unsqueeze(-1)).detach(), capsys)
    assert _run_td(lambda r, d, q, g: (_ for _ in ()).throw(NotImplementedError), capsys).startswith("NOT DONE")


def _run_n_step(fn, capsys):
    from marl_edu.course.checks import check_n_step_return

    assert check_n_step_return(fn) is None
    return capsys.readouterr().out


def test_n_step_check_holds_notebook_05s_row_by_hand_and_names_each_slip(capsys):
    def written_out(rewards, gamma):  # a loop over the n rewards, as a learner may write it
        return sum(gamma ** k * rewards[:, k] for k in range(rewards.shape[1]))

    assert _run_n_step(written_out, capsys).startswith("PASSED")
    # the optimal plan's row t = 4 (notebook 05): -0.2 + 0.95 * -0.2 + 0.95^2 * 4.9 = -0.2 - 0.19 + 4.42225 = 4.03225
    assert torch.isclose(written_out(torch.tensor([[-0.2, -0.2, 4.9]]), 0.95), torch.tensor([4.03225])).all()
    # a return one part in 10^4 off fails on that row first, and the printout gives its expected value
    out = _run_n_step(lambda r, g: written_out(r, g) * 1.0001, capsys)
    assert out.startswith("FAILED on notebook 05's row t = 4") and "expected [4.032]" in out
    first = _run_n_step(lambda r, g: sum(g ** (k + 1) * r[:, k] for k in range(r.shape[1])), capsys)
    assert "the first reward is discounted too" in first
    backwards = _run_n_step(lambda r, g: sum(g ** (r.shape[1] - 1 - k) * r[:, k] for k in range(r.shape[1])), capsys)
    assert "the discounts run backwards" in backwards
    assert "without discounting" in _run_n_step(lambda r, g: r.sum(dim=1), capsys)
    # the shapes: the first case has B = 1, so (B, 1) and (B, B) are both (1, 1) there, and the hint names both
    keepdim = lambda r, g: (g ** torch.arange(r.shape[1]) * r).sum(dim=1, keepdim=True)  # noqa: E731 (B, 1)
    assert "R came out (B, 1): a keepdim=True" in _run_n_step(keepdim, capsys)
    column = lambda r, g: written_out(r, g).unsqueeze(-1) + written_out(r, g)  # noqa: E731 (B, 1) + (B,) -> (B, B)
    assert "with B > 1 that broadcasts to (B, B)" in _run_n_step(column, capsys)
    assert "nothing was summed" in _run_n_step(lambda r, g: g ** torch.arange(r.shape[1]) * r, capsys)  # (B, n)
    assert "over the batch too" in _run_n_step(lambda r, g: (g ** torch.arange(r.shape[1]) * r).sum(dim=0), capsys)
    assert "over the batch too" in _run_n_step(lambda r, g: (g ** torch.arange(r.shape[1]) * r).sum(), capsys)


def test_td_check_failure_prints_what_a_learner_needs_to_recompute_the_expected_row(capsys):
    # the failing case's rewards, dones and q_next, rounded to 4 decimals: enough to redo expected by hand
    import re

    out = _run_td(lambda r, d, q, g: (r + g * q).detach(), capsys)
    rows = {}
    for name in ("rewards", "dones", "q_next", "expected", "got"):
        line = next(line for line in out.splitlines() if line.startswith(name + " "))
        values = line[len(name):].strip().strip("[]").split(", ")
        assert all(len(v.split(".")[-1]) <= 4 for v in values), line  # rounded, not full float precision
        rows[name] = [float(v) for v in values]
    gamma = float(re.search(r"gamma=([0-9.]+)", out).group(1))
    for r, d, q, y in zip(rows["rewards"], rows["dones"], rows["q_next"], rows["expected"]):
        assert abs(r + gamma * (1 - d) * q - y) < 1e-3


def test_td_lambda_check_passes_the_reference_and_names_the_mistakes(capsys):
    from marl_edu.course.checks import check_td_lambda_targets
    from marl_edu.pieces.targets import td_lambda_targets

    check_td_lambda_targets(td_lambda_targets)
    out = capsys.readouterr().out
    assert out.startswith("PASSED")
    # the count agrees with the list of what the cases test: "on all 5 cases (a, b, c, d and e)."
    import re

    count, listed = re.search(r"on all (\d+) cases \((.*)\)\.$", out.strip()).groups()
    items = re.sub(r"\([^)]*\)", "", listed).replace(" and ", ", ").split(", ")  # "(B, N, T)" is one shape
    assert len(items) == int(count) == 5, out

    def no_bootstrap(rewards, dones, next_values, gamma, lam):  # treats the time limit as terminal
        cut = next_values.clone()
        cut[..., -1] = 0.0
        return td_lambda_targets(rewards, dones, cut, gamma, lam)

    check_td_lambda_targets(no_bootstrap)
    out = capsys.readouterr().out
    assert out.startswith("FAILED on shape=(6,)") and "must bootstrap from Q'(s_T, a_T)" in out

    def swapped(rewards, dones, next_values, gamma, lam):
        return td_lambda_targets(rewards, dones, next_values, gamma, 1.0 - lam)

    check_td_lambda_targets(swapped)
    assert "lam and (1 - lam) are swapped" in capsys.readouterr().out

    def started_at_zero(rewards, dones, next_values, gamma, lam):  # the likeliest slip: g_next = 0
        import torch

        targets, g_next = torch.zeros_like(rewards), torch.zeros_like(rewards[..., 0])
        for t in reversed(range(rewards.shape[-1])):
            bracket = (1 - lam) * next_values[..., t] + lam * g_next
            g_next = targets[..., t] = rewards[..., t] + gamma * (1 - dones[..., t]) * bracket
        return targets

    check_td_lambda_targets(started_at_zero)
    out = capsys.readouterr().out
    assert out.startswith("FAILED on shape=(6,)") and "started from y_T = 0" in out  # the time-limit case

    def mask_on_q_only(rewards, dones, next_values, gamma, lam):  # (1 - d) on the bootstrap term alone
        import torch

        targets, g_next = torch.zeros_like(rewards), next_values[..., -1]
        for t in reversed(range(rewards.shape[-1])):
            g_next = targets[..., t] = rewards[..., t] + gamma * (
                (1 - dones[..., t]) * (1 - lam) * next_values[..., t] + lam * g_next)
        return targets

    check_td_lambda_targets(mask_on_q_only)
    assert "(1 - d_t) multiplies the whole bracket, lam y_{t+1} too" in capsys.readouterr().out

    def stub(rewards, dones, next_values, gamma, lam):
        raise NotImplementedError

    check_td_lambda_targets(stub)
    assert capsys.readouterr().out.startswith("NOT DONE YET")


def test_coma_advantage_check(capsys):
    import torch

    from marl_edu.course.checks import check_coma_advantage
    from marl_edu.learners.coma import coma_advantage

    check_coma_advantage(coma_advantage)
    assert capsys.readouterr().out.startswith("PASSED")

    def uniform(q, pi, actions):
        return q.gather(-1, actions.unsqueeze(-1)).squeeze(-1) - q.mean(-1)

    check_coma_advantage(uniform)
    assert "weighs each action by the agent's policy" in capsys.readouterr().out

    def flipped(q, pi, actions):
        return -coma_advantage(q, pi, actions)

    check_coma_advantage(flipped)
    assert "the sign is flipped" in capsys.readouterr().out

    def flat(q, pi, actions):
        return torch.zeros(3)

    check_coma_advantage(flat)
    assert "expected shape ()" in capsys.readouterr().out

    def unsqueezed(q, pi, actions):  # the gathered axis kept: (..., 1) - (...) broadcasts
        return q.gather(-1, actions.unsqueeze(-1)) - (pi * q).sum(-1)

    check_coma_advantage(unsqueezed)
    assert "squeeze it" in capsys.readouterr().out


def test_every_checker_reports_a_wrong_dtype_instead_of_raising(capsys):
    # float64 or int64 answers used to reach torch.allclose against float32 and raise "Double did not match Float"
    from marl_edu.course.checks import check_coma_advantage, check_td_lambda_targets, check_td_target
    from marl_edu.learners.coma import coma_advantage
    from marl_edu.pieces.targets import td_lambda_targets, td_target

    answers = [
        (check_td_target, lambda r, d, q, g: td_target(r, d, q, g).double()),
        (check_td_lambda_targets, lambda r, d, v, g, lam: td_lambda_targets(r, d, v, g, lam).double()),
        (check_coma_advantage, lambda q, pi, actions: coma_advantage(q, pi, actions).double()),
        (check_coma_advantage, lambda q, pi, actions: coma_advantage(q, pi, actions).long()),
        (checks.check_coma_actor_loss, _pg_loss(dtype=torch.float64)),
        (checks.check_expected_actor_loss, _expected_loss(dtype=torch.float64)),
    ]
    for check, answer in answers:
        assert check(answer) is None
        out = capsys.readouterr().out
        assert out.startswith("FAILED on ") and "expected dtype torch.float32 (like the inputs), got torch." in out
        assert "Hint: keep the inputs' dtype" in out


# -- check_continuous_actor_loss: the deterministic policy gradient's actor loss (notebook 17) ------------------------

def _actor_loss(sign=-1.0, squash=True, recompute=True, detach=False, in_place=False):
    """A learner's answer with one knob per known mistake; the defaults are the right answer."""
    from marl_edu.learners.maddpg import flatten_for_critic

    def fn(critic, actor, obs, actions, i):
        acts = actions if in_place else actions.clone()  # (B, N, A)
        if recompute:
            pre = actor(obs[:, i])  # (B, A)
            a_i = torch.tanh(pre) if squash else pre
            acts[:, i] = a_i.detach() if detach else a_i
        return sign * critic(flatten_for_critic(obs, acts)).mean()
    return fn


def _verdict(fn, capsys):
    from marl_edu.course.checks import check_continuous_actor_loss

    assert check_continuous_actor_loss(fn) is None
    return capsys.readouterr().out


def test_continuous_actor_loss_reference_passes(capsys):
    assert _verdict(_actor_loss(), capsys).startswith("PASSED")


def test_continuous_actor_loss_mistakes_are_named(capsys):
    assert "the sign is flipped" in _verdict(_actor_loss(sign=1.0), capsys)
    assert "without the tanh" in _verdict(_actor_loss(squash=False), capsys)
    assert "must be recomputed by its actor" in _verdict(_actor_loss(recompute=False), capsys)
    assert "no gradient flows back to the actor" in _verdict(_actor_loss(detach=True), capsys)
    assert "changed the batch's actions in place" in _verdict(_actor_loss(in_place=True), capsys)


def test_continuous_actor_loss_stub_and_shape(capsys):
    def stub(critic, actor, obs, actions, i):
        raise NotImplementedError

    assert _verdict(stub, capsys).startswith("NOT DONE YET")
    out = _verdict(lambda critic, actor, obs, actions, i: -critic(torch.cat([obs.flatten(1), actions.flatten(1)], 1)),
                   capsys)
    assert out.startswith("FAILED") and "expected one number" in out


# -- check_approximation_loss: the inferred policy's loss (notebook 19) -------------------------------------------

def _approx_loss(sum_entries=True, entropy_sign=-1.0, nll_sign=-1.0, norm=True, detach=False):
    """A learner's answer with one knob per known mistake; the defaults are the right answer."""
    import math

    def fn(mean, log_std, actions, entropy_coef):
        z = (actions - (mean.detach() if detach else mean)) / log_std.exp()  # (B, A)
        per_entry = -0.5 * z ** 2 + ((-log_std - 0.5 * math.log(2 * math.pi)) if norm else 0.0)  # (B, A)
        log_prob = per_entry.sum(dim=1).mean() if sum_entries else per_entry.mean()
        entropy = (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum()
        return nll_sign * log_prob + entropy_sign * entropy_coef * entropy
    return fn


def _approx_verdict(fn, capsys):
    from marl_edu.course.checks import check_approximation_loss

    assert check_approximation_loss(fn) is None
    return capsys.readouterr().out


def test_approximation_loss_reference_passes(capsys):
    assert _approx_verdict(_approx_loss(), capsys).startswith("PASSED")


def test_approximation_loss_mistakes_are_named(capsys):
    named = {"the SUM of its A entries": _approx_loss(sum_entries=False),
             "the entropy term's sign": _approx_loss(entropy_sign=+1.0),
             "the sign of the likelihood": _approx_loss(nll_sign=+1.0),
             "without -log_std": _approx_loss(norm=False),
             "the gradient on mean is not": _approx_loss(detach=True)}
    for phrase, answer in named.items():
        out = _approx_verdict(answer, capsys)
        assert out.startswith("FAILED") and phrase in out, (phrase, out)


def test_approximation_loss_stub_and_shape(capsys):
    def stub(mean, log_std, actions, entropy_coef):
        raise NotImplementedError

    assert _approx_verdict(stub, capsys).startswith("NOT DONE YET")
    out = _approx_verdict(lambda mean, log_std, actions, c: -(actions - mean) ** 2, capsys)
    assert out.startswith("FAILED") and "expected one number" in out


# -- check_subpolicy_actions: each agent's action from the sub-policy it plays (notebook 21) ------------------------

def _subpolicy_verdict(fn, capsys):
    from marl_edu.course.checks import check_subpolicy_actions

    assert check_subpolicy_actions(fn) is None
    return capsys.readouterr().out


def test_subpolicy_actions_reference_passes(capsys):
    def gather(every, subpolicies):  # every (B, N, M, A), subpolicies (B, N)
        B, N, M, A = every.shape
        return every.gather(2, subpolicies[:, :, None, None].expand(B, N, 1, A)).squeeze(2)  # (B, N, A)

    def loops(every, subpolicies):
        return torch.stack([torch.stack([every[b, i, subpolicies[b, i]] for i in range(every.shape[1])])
                            for b in range(every.shape[0])])

    assert _subpolicy_verdict(gather, capsys).startswith("PASSED")
    assert _subpolicy_verdict(loops, capsys).startswith("PASSED")


def test_subpolicy_actions_mistakes_are_named(capsys):
    B_N_A = lambda every: every.shape[:2] + every.shape[3:]  # noqa: E731
    named = {
        "builds (B, N, B, N, A)": lambda every, m: every[:, :, m],
        "every agent's sub-policy 0": lambda every, m: every[:, :, 0],
        "agent 0's sub-policy": lambda every, m: every.gather(
            2, m[:, :1, None, None].expand(*B_N_A(every)[:2], 1, every.shape[3])).squeeze(2),
        "expected dtype": lambda every, m: every[:, :, 0].double(),
    }
    for phrase, answer in named.items():
        out = _subpolicy_verdict(answer, capsys)
        assert out.startswith("FAILED") and phrase in out, (phrase, out)
    swapped = lambda every, m: every.transpose(1, 2).gather(  # noqa: E731
        2, m[:, :, None, None].expand(m.shape[0], m.shape[1], 1, every.shape[3])).squeeze(2)
    out = _subpolicy_verdict(swapped, capsys)  # wrong shape where N != M; named where N == M
    assert out.startswith("FAILED")


# -- check_team_rewards: each agent paid its own team's summed reward (notebook 20) ---------------------------------

def _team_verdict(fn, capsys):
    from marl_edu.course.checks import check_team_rewards

    assert check_team_rewards(fn) is None
    return capsys.readouterr().out


def test_team_rewards_reference_passes(capsys):
    def by_loops(rewards, teams):  # (K, N), N names
        return torch.stack([sum(rewards[:, j] for j in range(len(teams)) if teams[j] == teams[i])
                            for i in range(len(teams))], dim=1)

    assert _team_verdict(by_loops, capsys).startswith("PASSED")
    # by hand, deception: rewards (-2, 1.5, 1.5) -> adversary alone -2; the good agents 1.5 + 1.5 = 3 each
    assert by_loops(torch.tensor([[-2.0, 1.5, 1.5]]), ["adversary", "agent", "agent"]).tolist() == [[-2.0, 3.0, 3.0]]


def test_team_rewards_mistakes_are_named(capsys):
    named = {"every agent's own reward": lambda rewards, teams: rewards,
             "sums over ALL agents": lambda rewards, teams: rewards.sum(dim=1, keepdim=True).expand_as(rewards),
             "expected shape (K, N)": lambda rewards, teams: rewards.sum(dim=1),
             "expected dtype": lambda rewards, teams: rewards.double()}
    for phrase, answer in named.items():
        out = _team_verdict(answer, capsys)
        assert out.startswith("FAILED") and phrase in out, (phrase, out)

    def stub(rewards, teams):
        raise NotImplementedError

    assert _team_verdict(stub, capsys).startswith("NOT DONE YET")


def test_a_failed_comparison_shows_the_first_values_that_differ(capsys):
    # the first 6 entries agree; row 1, column 2 (flat index 6) is the first that does not
    expected = torch.arange(12.0).reshape(3, 4)
    got = expected.clone()
    got[1, 2] += 1.0
    checks.values_differ("a case", expected, got, "a hint", shown=3)
    out = capsys.readouterr().out
    # from (1, 2) to the end of row 1: 2 values, not 3 (the third, 8.0, would be row 2's first, read as row 1's)
    assert "first at index (1, 2); entries (1, 2) to (1, 3):" in out
    assert "expected [6.0, 7.0]\n" in out and "got      [7.0, 7.0]\n" in out and out.endswith("Hint: a hint\n")


def test_a_failed_comparison_shows_at_most_the_values_asked_for_and_stays_in_one_row(capsys):
    expected = torch.arange(24.0).reshape(2, 3, 4)  # rows of 4 along the last axis
    got = expected.clone()
    got[1, 0, 1] = -1.0  # flat index 13: (1, 0, 1)
    checks.values_differ("a case", expected, got, "a hint", shown=2)
    out = capsys.readouterr().out
    assert "entries (1, 0, 1) to (1, 0, 2):" in out
    assert "expected [13.0, 14.0]" in out and "got      [-1.0, 14.0]" in out
    vector = torch.arange(10.0)  # a 1-d tensor is one row
    checks.values_differ("a case", vector, vector + (torch.arange(10) >= 8), "a hint", shown=4)
    out = capsys.readouterr().out
    assert "first at index (8,); entries (8,) to (9,):" in out and "expected [8.0, 9.0]" in out
    checks.values_differ("a case", vector, vector + (torch.arange(10) == 9), "a hint", shown=4)
    assert "first at index (9,); entry (9,):\nexpected [9.0]\ngot      [10.0]\n" in capsys.readouterr().out
    checks.values_differ("a case", torch.tensor(1.0), torch.tensor(2.0), "a hint", shown=4)  # one number
    out = capsys.readouterr().out
    assert "values differ, first at index ().\nexpected [1.0]\ngot      [2.0]\n" in out


def test_a_failed_comparison_of_short_rows_shows_whole_rows(capsys):
    # COMA's (B, T, N) targets with N = 2: a row of 2 is shorter than the 6 values asked for, so whole rows are shown,
    # nested, from the row of the first difference: flat 13 is (1, 2, 1), in row 6 (flat 12-13); 6 // 2 = 3 rows
    expected = torch.arange(24.0).reshape(3, 4, 2)
    got = expected.clone()
    got[1, 2, 1] += 0.5
    checks.values_differ("a case", expected, got, "a hint", shown=6)
    out = capsys.readouterr().out
    assert "first at index (1, 2, 1); entries (1, 2, 0) to (2, 0, 1), row by row:" in out
    assert "expected [[12.0, 13.0], [14.0, 15.0], [16.0, 17.0]]\n" in out
    assert "got      [[12.0, 13.5], [14.0, 15.0], [16.0, 17.0]]\n" in out
    column = torch.arange(8.0).reshape(8, 1)  # (B, 1): rows of one, at most to the end of the tensor (rows 5-7)
    checks.values_differ("a case", column, column + (torch.arange(8) == 5).reshape(8, 1), "a hint", shown=6)
    out = capsys.readouterr().out
    assert "entries (5, 0) to (7, 0), row by row:\n" in out
    assert "expected [[5.0], [6.0], [7.0]]\ngot      [[6.0], [6.0], [7.0]]" in out


def test_a_failed_comparison_finds_a_difference_finer_than_its_own_tolerance(capsys):
    # a caller that fails on a difference under 1e-5 (some compare at 1e-6) still gets the entry that differs
    expected = torch.ones(3, 2)
    got = expected.clone()
    got[2, 1] += 5e-6
    checks.values_differ("a case", expected, got, "a hint", shown=2)
    assert "first at index (2, 1); entry (2, 1):" in capsys.readouterr().out
    with pytest.raises(ValueError, match="shown must be a positive int, got 0"):
        checks.values_differ("a case", expected, got, "a hint", shown=0)


# -- check_qmix_mixer: QMIX's mixing network from its hypernetworks (notebook 10) -----------------------------------

def _mixer(abs_w1=True, abs_w2=True, abs_b=False, layout="NE", act=torch.nn.functional.elu, b1=True, b2=True,
           detach=False, end_shape="B"):
    """A learner's forward pass with one knob per known mistake, written out; the defaults are the right answer."""
    def fn(mixer, q_taken, state):
        B, N = q_taken.shape
        E = mixer.embed
        raw = mixer.hyper_w1(state)  # (B, N*E)
        w1 = raw.view(B, N, E) if layout == "NE" else raw.view(B, E, N).transpose(1, 2)
        w1 = w1.abs() if abs_w1 else w1
        bias1 = mixer.hyper_b1(state).view(B, 1, E)
        bias1 = bias1.abs() if abs_b else bias1
        q = q_taken.detach() if detach else q_taken
        hidden = act(torch.bmm(q.view(B, 1, N), w1) + (bias1 if b1 else 0))  # (B, 1, E)
        w2 = mixer.hyper_w2(state).view(B, E, 1)
        w2 = w2.abs() if abs_w2 else w2
        bias2 = mixer.hyper_b2(state).view(B, 1, 1)
        bias2 = bias2.abs() if abs_b else bias2
        out = torch.bmm(hidden, w2) + (bias2 if b2 else 0)  # (B, 1, 1)
        return {"B": out.view(B), "B11": out, "B1": out.view(B, 1)}[end_shape]
    return fn


def _mixer_verdict(fn, capsys):
    from marl_edu.course.checks import check_qmix_mixer

    assert check_qmix_mixer(fn) is None
    return capsys.readouterr().out


def test_qmix_mixer_reference_passes(capsys):
    out = _mixer_verdict(_mixer(), capsys)
    assert out.startswith("PASSED") and "FAILED" not in out


def test_qmix_mixer_mistakes_are_named(capsys):
    named = {
        "you forgot abs()": _mixer(abs_w1=False, abs_w2=False),
        "abs() on the first layer's weights": _mixer(abs_w1=False),
        "abs() on the second layer's weights": _mixer(abs_w2=False),
        "the biases v_1 and v_2 may be negative": _mixer(abs_b=True),
        ".view(B, N, E)": _mixer(layout="EN"),  # the (B, N, E) / (B, E, N) mix-up
        "elu, not relu": _mixer(act=torch.nn.functional.relu),
        "needs its elu": _mixer(act=lambda x: x),
        "you left out v_1": _mixer(b1=False),
        "you left out v_2": _mixer(b2=False),
        "no gradient reaches the utilities": _mixer(detach=True),
        "expected shape (4,), got (4, 1, 1)": _mixer(end_shape="B11"),
        "expected shape (4,), got (4, 1)": _mixer(end_shape="B1"),
    }
    for phrase, answer in named.items():
        out = _mixer_verdict(answer, capsys)
        assert out.startswith("FAILED") and phrase in out, (phrase, out)


def test_qmix_mixer_refuses_the_mixers_own_forward_and_reports_a_stub(capsys):
    out = _mixer_verdict(lambda mixer, q_taken, state: mixer(q_taken, state), capsys)
    assert out.startswith("FAILED") and "not by calling mixer(q_taken, state)" in out

    def stub(mixer, q_taken, state):
        raise NotImplementedError

    assert _mixer_verdict(stub, capsys).startswith("NOT DONE YET")


def test_qmix_mixer_check_leaves_the_callers_random_state_alone(capsys):
    torch.manual_seed(5)
    expected = torch.rand(2)
    torch.manual_seed(5)
    _mixer_verdict(_mixer(), capsys)
    assert torch.equal(torch.rand(2), expected)


def test_a_failed_value_is_printed_with_the_digits_that_tell_it_from_the_expected_one():
    from marl_edu.course.checks import _close

    assert _close(1.0, 2.0) == "1.0000, got 2.0000"
    assert _close(-0.34601, -0.34598) == "-0.34601, got -0.34598"  # at 4 places both read -0.3460


# -- check_coma_actor_loss: COMA's masked policy-gradient loss (notebook 08) ------------------------------------------

def _pg_loss(sign=-1.0, mask=True, divisor="valid", log_of="taken", detach_advantage=True, detach_pi=False,
             reduce=True, in_place=False, dtype=None):
    """A learner's answer with one knob per known mistake; the defaults are the right answer."""
    def fn(pi, advantage, actions, agent_mask):  # (B, T, N, A), (B, T, N), int (B, T, N), (B, T, N)
        adv = advantage.detach() if detach_advantage else advantage
        p = pi.detach() if detach_pi else pi
        if in_place:
            p.clamp_(min=1e-10)
        taken = p.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # (B, T, N)
        log_pi = {"taken": lambda: torch.log(taken), "nothing": lambda: taken,
                  "greedy": lambda: torch.log(p.max(-1).values), "every": lambda: torch.log(p).sum(-1),
                  "log_softmax": lambda: torch.log_softmax(p, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1),
                  }[log_of]()
        # mask="divisor only": agent_mask.sum() divides an unmasked sum
        m = agent_mask if mask else torch.ones_like(agent_mask)
        terms = adv * log_pi * (1.0 if mask == "divisor only" else m)  # (B, T, N)
        if not reduce:
            return sign * terms
        loss = sign * terms.sum() / {"valid": m.sum(), "every entry": m.numel(), "B": m.shape[0]}[divisor]
        return loss if dtype is None else loss.to(dtype)
    return fn


def _pg_verdict(fn, capsys):
    assert checks.check_coma_actor_loss(fn) is None
    return capsys.readouterr().out


def test_coma_actor_loss_by_hand():
    from marl_edu.learners.coma import COMA
    from marl_edu.course.solutions import coma_actor_loss

    # one episode (B = 1) of T = 2 steps, N = 1 agent, A = 2 actions:
    # step 0: pi = (0.5, 0.5), took action 0, Adv = 2;  step 1 (padding): pi = (0.25, 0.75), action 1, Adv = -4
    pi = torch.tensor([[[[0.5, 0.5]], [[0.25, 0.75]]]])  # (1, 2, 1, 2)
    advantage = torch.tensor([[[2.0], [-4.0]]])  # (1, 2, 1)
    actions = torch.tensor([[[0], [1]]])  # (1, 2, 1)
    only_step_0 = torch.tensor([[[1.0], [0.0]]])  # (1, 2, 1)
    # masked: -(2 log 0.5) / 1 = 2 log 2 = 1.386294
    for loss in (coma_actor_loss(pi, advantage, actions, only_step_0),
                 COMA.actor_loss(pi, advantage, actions, only_step_0, 0.0)[0],
                 _pg_loss()(pi, advantage, actions, only_step_0)):
        assert abs(loss.item() - 2 * 0.693147) < 1e-5
    # both steps valid: -(2 log 0.5 - 4 log 0.75) / 2 = -(-1.386294 + 1.150728) / 2 = 0.117783
    assert abs(coma_actor_loss(pi, advantage, actions, torch.ones(1, 2, 1)).item() - 0.117783) < 1e-5
    # padding unmasked gives that same 0.117783 where the masked loss is 1.386294: the checker's "no mask" hint
    assert abs(_pg_loss(mask=False)(pi, advantage, actions, only_step_0).item() - 0.117783) < 1e-5
    # no step valid: 0 / max(0, 1) = 0, not 0 / 0
    assert coma_actor_loss(pi, advantage, actions, torch.zeros(1, 2, 1)).item() == 0.0


def test_coma_actor_loss_reference_passes(capsys):
    from marl_edu.learners.coma import COMA

    assert _pg_verdict(_pg_loss(), capsys).startswith("PASSED")
    def library(pi, advantage, actions, agent_mask):  # COMA.actor_loss without its entropy bonus
        return COMA.actor_loss(pi, advantage.detach(), actions, agent_mask, 0.0)[0]

    assert _pg_verdict(library, capsys).startswith("PASSED")

    def categorical(pi, advantage, actions, agent_mask):  # another way to the same loss
        log_pi = torch.distributions.Categorical(probs=pi).log_prob(actions)  # (B, T, N)
        return -(advantage.detach() * log_pi * agent_mask).sum() / agent_mask.sum()

    assert _pg_verdict(categorical, capsys).startswith("PASSED")


def test_coma_actor_loss_stub_is_not_done_yet(capsys):
    def stub(pi, advantage, actions, agent_mask):
        raise NotImplementedError

    def empty(pi, advantage, actions, agent_mask):
        pass

    assert _pg_verdict(stub, capsys).startswith("NOT DONE YET: the function still raises NotImplementedError")
    assert _pg_verdict(empty, capsys).startswith("NOT DONE YET: the function returned None")


def test_coma_actor_loss_mistakes_are_named(capsys):
    named = {
        "are not masked": _pg_loss(mask=False),
        "the sum in the numerator is not masked": _pg_loss(mask="divisor only"),
        "divided by every entry of the padded (B, T, N) batch": _pg_loss(divisor="every entry"),
        "divided by the number of episodes B": _pg_loss(divisor="B"),
        "the sign is flipped": _pg_loss(sign=1.0),
        "the policy gradient needs its log": _pg_loss(log_of="nothing"),
        "log pi of the most likely action": _pg_loss(log_of="greedy"),
        "sums log pi over all A actions": _pg_loss(log_of="every"),
        "pi holds probabilities already": _pg_loss(log_of="log_softmax"),
        "sends a gradient into the advantage": _pg_loss(detach_advantage=False),
        "no gradient reaches the policy": _pg_loss(detach_pi=True),
        "do not change pi in place": _pg_loss(in_place=True),
    }
    for phrase, answer in named.items():
        out = _pg_verdict(answer, capsys)
        assert out.startswith("FAILED on B=3, T=4, N=2, A=5") and phrase in out, (phrase, out)
        assert out.count("FAILED") == 1 and "PASSED" not in out


def test_coma_actor_loss_unknown_mistake_gets_a_nudge_not_the_answer(capsys):
    out = _pg_verdict(lambda *args: 2.0 * _pg_loss()(*args), capsys)  # a slip the check does not know
    assert out.startswith("FAILED on B=3, T=4, N=2, A=5") and "Hint: not a slip this check knows" in out
    hint = out.split("Hint:", 1)[1]
    for answer in ("agent_mask).sum() / agent_mask.sum()", "loss =", "torch.log(pi.gather", ".gather("):
        assert answer not in hint, (answer, hint)


def test_coma_actor_loss_unmasked_numerator_is_named_as_such(capsys):
    out = _pg_verdict(_pg_loss(mask="divisor only"), capsys)
    hint = out.split("Hint:", 1)[1]
    assert "numerator is not masked" in hint and "Multiply each term by agent_mask" in hint
    assert "loss =" not in hint


def test_coma_actor_loss_wrong_shape_dtype_and_type_are_reported_not_raised(capsys):
    out = _pg_verdict(_pg_loss(reduce=False), capsys)
    assert "expected shape (), got (3, 4, 2)" in out and "the loss is ONE number" in out
    out = _pg_verdict(lambda *args: _pg_loss()(*args).reshape(1), capsys)
    assert "expected shape (), got (1,)" in out
    out = _pg_verdict(_pg_loss(dtype=torch.float64), capsys)
    assert "expected dtype torch.float32 (like the inputs), got torch.float64" in out
    out = _pg_verdict(lambda *args: (_pg_loss()(*args), 0.0), capsys)  # the library's (loss, entropy) pair
    assert out.startswith("FAILED") and "expected a torch.Tensor, got tuple" in out
    out = _pg_verdict(lambda pi, advantage, actions, agent_mask: pi.gather(-1, actions), capsys)  # no unsqueeze
    assert out.startswith("FAILED") and "your function raised RuntimeError" in out


def test_coma_actor_loss_check_leaves_the_callers_random_state_alone(capsys):
    torch.manual_seed(7)
    expected = torch.rand(2)
    torch.manual_seed(7)
    _pg_verdict(_pg_loss(), capsys)
    assert torch.equal(torch.rand(2), expected)


# -- check_expected_actor_loss: MADDPG's actor loss, the exact expectation over own actions (notebook 04) ------------

def _expected_loss(sign=-1.0, weights="pi", table="own", reduce="mean", in_place=False, fixed_critic=True,
                   detach_pi=False, sample=False, shape="()", dtype=None):
    """A learner's answer with one knob per known mistake; the defaults are the right answer."""
    from marl_edu.learners.maddpg import flatten_for_critic, gumbel_softmax

    def fn(critic, actor, obs, actions, i):  # (B, N*(O+A)) -> (B,), (B, O) -> (B, A), (B, N, O), (B, N, A), int
        A = actions.shape[2]
        logits = actor(obs[:, i])  # (B, A)
        logits = logits.detach() if detach_pi else logits
        columns = []
        with torch.no_grad() if fixed_critic else torch.enable_grad():
            for k in range(A):
                joint = actions if in_place else actions.clone()  # (B, N, A)
                who = {"own": i, "two ones": i, "every agent": slice(None), "agent 0": 0}[table]
                if table != "two ones":
                    joint[:, who] = 0.0
                joint[:, who, k] = 1.0
                columns.append(critic(flatten_for_critic(obs, joint)))  # (B,)
        q = torch.stack(columns, dim=1)  # (B, A)
        if sample:  # notebook 04's "gumbel" loss, without its generator: a new sample at every call
            w = gumbel_softmax(logits, 1.0, hard=True)
        else:
            w = {"pi": lambda: torch.softmax(logits, dim=1), "uniform": lambda: torch.full_like(logits, 1.0 / A),
                 "ones": lambda: torch.ones_like(logits), "logits": lambda: logits,
                 "log pi": lambda: torch.log_softmax(logits, dim=1), "batch axis": lambda: torch.softmax(logits, 0),
                 }[weights]()
        terms = sign * w * q  # (B, A)
        loss = {"()": lambda: terms.sum(1).mean() if reduce == "mean" else terms.sum(),
                "(B,)": lambda: terms.sum(1), "(B, A)": lambda: terms, "(1,)": lambda: terms.sum(1).mean().reshape(1),
                }[shape]()
        return loss if dtype is None else loss.to(dtype)
    return fn


def _expected_verdict(fn, capsys):
    assert checks.check_expected_actor_loss(fn) is None
    return capsys.readouterr().out


def _linear_critic_and_actor():
    """By hand: B = 1, N = 2, O = 1, A = 2. The critic is linear in its row [o_0, o_1, a_0 (2), a_1 (2)] with weights
    [0, 0, 1, 3, 0, 2]; the actor's logits are [0, log 3] whatever it sees, so pi_0 = [1/4, 3/4]."""
    import math

    critic_net = torch.nn.Linear(6, 1, bias=False)
    actor = torch.nn.Linear(1, 2)
    with torch.no_grad():
        critic_net.weight.copy_(torch.tensor([[0.0, 0.0, 1.0, 3.0, 0.0, 2.0]]))
        actor.weight.zero_()
        actor.bias.copy_(torch.tensor([0.0, math.log(3.0)]))

    class Critic(torch.nn.Module):  # (B, 6) -> (B,), like marl_edu.pieces.nets.Critic
        def __init__(self):
            super().__init__()
            self.net = critic_net

        def forward(self, x):
            return self.net(x).squeeze(1)

    obs = torch.zeros(1, 2, 1)  # (B, N, O)
    actions = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # (B, N, A): agent 0 took 0, agent 1 took 1
    return Critic(), actor, obs, actions


def test_expected_actor_loss_by_hand():
    from marl_edu.learners.maddpg import MADDPG, MADDPGConfig, flatten_for_critic
    from marl_edu.course.solutions import expected_actor_loss

    critic, actor, obs, actions = _linear_critic_and_actor()
    # agent 1's one-hot(1) adds 2 to every row. Q_0(x, (a_-0, 0)) = 1 + 2 = 3;  Q_0(x, (a_-0, 1)) = 3 + 2 = 5
    # loss = -(1/4 * 3 + 3/4 * 5) = -(0.75 + 3.75) = -4.5
    loss = expected_actor_loss(critic, actor, obs, actions, 0)
    assert abs(loss.item() - (-4.5)) < 1e-6
    loss.backward()
    # d loss / d logit_k = -pi_k (Q_k - 4.5): -1/4 * (3 - 4.5) = 0.375 and -3/4 * (5 - 4.5) = -0.375; the logits are
    # the actor's bias, so that is its gradient; the critic, a fixed judge, gets none
    assert torch.allclose(actor.bias.grad, torch.tensor([0.375, -0.375]))
    assert critic.net.weight.grad is None
    assert actions.tolist() == [[[1.0, 0.0], [0.0, 1.0]]]  # the batch is left as it was
    # the library's loss, with these two networks as agent 0's and no logits penalty, is the same -4.5
    agent = MADDPG(2, 1, 2, MADDPGConfig(hidden=4, logits_reg=0.0, actor_gradient="expected"))
    agent.critics[0], agent.actors[0] = critic, actor
    assert abs(agent.actor_loss(0, {"obs": obs, "actions": actions}).item() - (-4.5)) < 1e-6
    # the slips the checker names, by hand: the batch's own action k = 0 gives -3, a uniform mean -(3 + 5) / 2 = -4,
    # agent 0's block not emptied -(1/4 * 3 + 3/4 * (1 + 3 + 2)) = -5.25
    assert abs(-critic(flatten_for_critic(obs, actions)).mean().item() - (-3.0)) < 1e-6
    assert abs(_expected_loss(weights="uniform")(critic, actor, obs, actions, 0).item() - (-4.0)) < 1e-6
    assert abs(_expected_loss(table="two ones")(critic, actor, obs, actions, 0).item() - (-5.25)) < 1e-6


def test_expected_actor_loss_reference_passes(capsys):
    from marl_edu.learners.maddpg import MADDPG, MADDPGConfig, flatten_for_critic

    out = _expected_verdict(_expected_loss(), capsys)
    assert out.startswith("PASSED") and out.count("\n") == 1

    def vectorised(critic, actor, obs, actions, i):  # one critic call on B*A rows, as MADDPG.q_of_every_own_action
        (B, N, O), A = obs.shape, actions.shape[2]
        joint = actions.unsqueeze(1).repeat(1, A, 1, 1)  # (B, A, N, A)
        joint[:, :, i] = torch.eye(A)  # copy k: agent i plays one_hot(k)
        rows = flatten_for_critic(obs.unsqueeze(1).expand(B, A, N, O).reshape(B * A, N, O), joint.reshape(B * A, N, A))
        q = critic(rows).reshape(B, A).detach()  # (B, A)
        return -(torch.softmax(actor(obs[:, i]), dim=-1) * q).sum(-1).mean()

    assert _expected_verdict(vectorised, capsys).startswith("PASSED")

    def library(critic, actor, obs, actions, i):  # MADDPG.actor_loss itself, with these networks as agent i's
        N, O, A = obs.shape[1], obs.shape[2], actions.shape[2]
        agent = MADDPG(N, O, A, MADDPGConfig(hidden=4, logits_reg=0.0))
        agent.critics[i], agent.actors[i] = critic, actor
        return agent.actor_loss(i, {"obs": obs, "actions": actions})

    assert _expected_verdict(library, capsys).startswith("PASSED")


def test_expected_actor_loss_stub_is_not_done_yet(capsys):
    def stub(critic, actor, obs, actions, i):
        raise NotImplementedError

    def empty(critic, actor, obs, actions, i):
        pass

    assert _expected_verdict(stub, capsys).startswith("NOT DONE YET: the function still raises NotImplementedError")
    assert _expected_verdict(empty, capsys).startswith("NOT DONE YET: the function returned None")


def test_expected_actor_loss_mistakes_are_named(capsys):
    from marl_edu.learners.maddpg import flatten_for_critic

    first = "FAILED on B=4, N=2, O=3, A=5, i=0"
    named = {
        "the sign is flipped": _expected_loss(sign=1.0),
        "the batch's own joint action": lambda critic, actor, obs, actions, i: -critic(
            flatten_for_critic(obs, actions)).mean(),
        "you averaged Q over the A actions uniformly": _expected_loss(weights="uniform"),
        "you summed Q over the A actions unweighted": _expected_loss(weights="ones"),
        "the weights are the logits": _expected_loss(weights="logits"),
        "the weights are log pi": _expected_loss(weights="log pi"),
        "the softmax ran over the batch axis": _expected_loss(weights="batch axis"),
        "summed over the B rows": _expected_loss(reduce="sum"),
        "empty it (zeros) before you put one_hot(k) there": _expected_loss(table="two ones"),
        "every agent's action was set to k": _expected_loss(table="every agent"),
        "changed the batch's actions in place": _expected_loss(in_place=True),
        "sends a gradient into the critic": _expected_loss(fixed_critic=False),
        "no gradient reaches the actor": _expected_loss(detach_pi=True),
        "changes from one call to the next": _expected_loss(sample=True),
    }
    for phrase, answer in named.items():
        out = _expected_verdict(answer, capsys)
        assert out.startswith(first) and phrase in out, (phrase, out)
        assert out.count("FAILED") == 1 and "PASSED" not in out
    # agent 0's block replaced whoever i is: right for i = 0, named at the first case with i = 1
    out = _expected_verdict(_expected_loss(table="agent 0"), capsys)
    assert out.startswith("FAILED on B=4, N=2, O=3, A=5, i=1") and "you replaced agent 0's action" in out

    def taken_only(critic, actor, obs, actions, i):  # pi of the stored action times Q of the stored joint action
        q = critic(flatten_for_critic(obs, actions)).detach()  # (B,)
        return -((torch.softmax(actor(obs[:, i]), dim=1) * actions[:, i]).sum(1) * q).mean()

    assert "weighs only the action agent i took" in _expected_verdict(taken_only, capsys)

    def best(critic, actor, obs, actions, i):  # the best action's Q instead of the policy's average
        return -checks._own_action_values(critic, obs, actions, i).max(dim=1).values.mean()

    assert "this is the best action's Q" in _expected_verdict(best, capsys)

    def changes_pi_in_place(critic, actor, obs, actions, i):  # the right value, but autograd needs pi as it was
        q = checks._own_action_values(critic, obs, actions, i)  # (B, A)
        pi = torch.softmax(actor(obs[:, i]), dim=1)  # (B, A)
        loss = -(pi * q).sum(dim=1).mean()
        pi.clamp_(min=1e-8)
        return loss

    out = _expected_verdict(changes_pi_in_place, capsys)
    assert out.startswith(first) and "its gradient cannot be computed" in out and "in place" in out


def test_expected_actor_loss_wrong_shape_dtype_and_type_are_reported_not_raised(capsys):
    out = _expected_verdict(_expected_loss(shape="(B,)"), capsys)
    assert "expected shape (), got (4,)" in out and "one loss per row of the batch" in out
    out = _expected_verdict(_expected_loss(shape="(B, A)"), capsys)
    assert "expected shape (), got (4, 5)" in out and "sum over the A actions (dim=1)" in out
    out = _expected_verdict(_expected_loss(shape="(1,)"), capsys)
    assert "expected shape (), got (1,)" in out and "a 0-d tensor" in out
    out = _expected_verdict(_expected_loss(dtype=torch.float64), capsys)
    assert "expected dtype torch.float32 (like the inputs), got torch.float64" in out
    out = _expected_verdict(lambda *args: _expected_loss()(*args).item(), capsys)
    assert out.startswith("FAILED") and "expected a torch.Tensor, got float" in out
    out = _expected_verdict(lambda critic, actor, obs, actions, i: critic(obs), capsys)  # obs is not a critic row
    assert out.startswith("FAILED") and "your function raised ValueError: x: expected shape (B, 16)" in out


def test_expected_actor_loss_check_leaves_the_callers_random_state_alone(capsys):
    for answer in (_expected_loss(), _expected_loss(sample=True)):  # MADDPG seeds torch; a sampled answer draws too
        torch.manual_seed(11)
        expected = torch.rand(2)
        torch.manual_seed(11)
        _expected_verdict(answer, capsys)
        assert torch.equal(torch.rand(2), expected)


# -- 15: the table's counts from the committed runs ------------------------------------------------------------------

def test_solve_counts_by_hand():
    from marl_edu.runs.seed import solve_counts
    rows = [{"greedy": g, "episodes_to_solve": e} for g, e in
            [(5.6, None), (8.0, 1352), (7.5, 1256), (7.5, None), (-0.8, None)]]  # IQL's five seeds on Switch2-v0
    # at the end: only 8.0 >= 8.3 - 0.3 = 8.0 -> 1; at some point: 1352 and 1256 -> 2; median (1256 + 1352) / 2 = 1304
    assert solve_counts(rows, 8.3) == (1, 2, 1304.0)
    rows = [{"greedy": 7.999999970197678, "episodes_to_solve": 856}]  # 8.0 summed in float32 counts as solved
    assert solve_counts(rows, 8.3) == (1, 1, 856.0)
    assert solve_counts([{"greedy": -0.6, "episodes_to_solve": None}], 8.3) == (0, 0, None)
    with pytest.raises(ValueError, match="at least one seed"):
        solve_counts([], 8.3)


def test_late_solved_by_hand():
    from marl_edu.runs.seed import late_solved
    evaluations = [[50, 8.2], [100, 7.9], [150, 8.0], [200, 7.99999997], [250, 8.3]]
    # a budget of 300 episodes: late is after 2/3 of it, episode 200, so only [250, 8.3]; of 240, after 160: 200, 250
    assert late_solved(evaluations, 300, 8.0 - 1e-6) == [True]
    assert late_solved(evaluations, 240, 8.0 - 1e-6) == [True, True]  # 7.99999997: 8.0 summed in float32
    assert late_solved(evaluations, 240, 8.1) == [False, True]
    with pytest.raises(ValueError, match="no greedy evaluation after 0.67 of the budget of 600 episodes"):
        late_solved(evaluations, 600, 8.0)  # 2/3 of 600 = 400, after the last evaluation at 250


def test_median_or_never_by_hand():
    from marl_edu.runs.seed import median_or_never
    assert median_or_never([3.0, None, 1.0]) == 3.0  # (1, 3, never): the middle one is 3
    assert median_or_never([4.0, 2.0]) == 3.0  # (2 + 4) / 2
    assert median_or_never([4.0, None]) is None  # (4 + never) / 2 is never: half the seeds never solved
    assert median_or_never([None]) is None
    with pytest.raises(ValueError, match="at least one value"):
        median_or_never([])


def test_sampled_gaps_by_hand():
    from marl_edu.runs.seed import sampled_gaps
    rows = [{"team_return": -48.0, "sampled": -50.0}, {"team_return": -50.0, "sampled": -51.0},
            {"team_return": -49.0, "sampled": -49.0}]
    # gaps sampled - noise-free: -2, -1, 0; mean -1; lower on 2 seeds (-2 and -1; the 0 is a tie)
    gaps = sampled_gaps(rows)
    assert gaps.gaps.tolist() == [-2.0, -1.0, 0.0]
    assert (gaps.mean, gaps.lower) == (-1.0, 2)
    # a discrete run's record names its greedy figure "greedy": gaps 9.0 - 8.0 = 1.0 and 8.5 - 8.0 = 0.5, mean 0.75
    gaps = sampled_gaps([{"greedy": 8.0, "sampled": 9.0}, {"greedy": 8.0, "sampled": 8.5}], noise_free="greedy")
    assert (gaps.mean, gaps.lower) == (0.75, 0)
    with pytest.raises(ValueError, match="at least one seed"):
        sampled_gaps([])
    with pytest.raises(ValueError, match="row 1 has no 'sampled'"):
        sampled_gaps([rows[0], {"team_return": -1.0}])
    with pytest.raises(ValueError, match="row 0's 'team_return' is nan"):
        sampled_gaps([{"team_return": float("nan"), "sampled": -1.0}, rows[1]])
    with pytest.raises(ValueError, match="row 0's 'sampled' is None, expected a finite team return"):
        sampled_gaps([{"team_return": -1.0, "sampled": None}])
    with pytest.raises(ValueError, match="row 0's 'sampled' is True"):
        sampled_gaps([{"team_return": -1.0, "sampled": True}])
    assert gaps.se is None and gaps.higher_beyond is None and gaps.lower_beyond is None  # (no standard errors kept)


def test_sampled_gaps_with_their_standard_errors_by_hand():
    # records on the same episodes keep each gap's standard error: gaps -49 - (-50) = +1.0 (se 0.4), -50.5 - (-50) =
    # -0.5 (se 0.3) and -49.4 - (-48) = -1.4 (se 0.5); beyond two standard errors: +1.0 > 0.8 above, -1.4 < -1.0
    # below, -0.5 > -0.6 neither; mean (1.0 - 0.5 - 1.4) / 3 = -0.3
    from marl_edu.runs.seed import sampled_gaps
    rows = [{"team_return": -50.0, "sampled": -49.0, "sampled_gap_se": 0.4},
            {"team_return": -50.0, "sampled": -50.5, "sampled_gap_se": 0.3},
            {"team_return": -48.0, "sampled": -49.4, "sampled_gap_se": 0.5}]
    gaps = sampled_gaps(rows)
    assert gaps.gaps.tolist() == pytest.approx([1.0, -0.5, -1.4]) and gaps.se.tolist() == [0.4, 0.3, 0.5]
    assert (round(gaps.mean, 9), gaps.lower, gaps.higher_beyond, gaps.lower_beyond) == (-0.3, 2, 1, 1)
    # a record keeps the greedy figure to 0.01, the sampled one and the se to 0.001, so a gap less two se is known to
    # within 0.005 + 0.0005 + 2 x 0.0005 = 0.0065: central-QV's PredatorPrey seed 1 played alike both ways (se 0.0)
    # and records -14.52 and -14.522, a gap of -0.002 that is rounding, not a loss; a gap of 0.01 with se 0.0 is
    # beyond rounding; so is 0.05 against 2 x 0.02 = 0.04 (by 0.01), but not 0.045 (by 0.005)
    alike = sampled_gaps([{"greedy": -14.52, "sampled": -14.522, "sampled_gap_se": 0.0},
                          {"greedy": 2.0, "sampled": 2.01, "sampled_gap_se": 0.0},
                          {"greedy": 2.0, "sampled": 2.05, "sampled_gap_se": 0.02},
                          {"greedy": 2.0, "sampled": 2.045, "sampled_gap_se": 0.02}], noise_free="greedy")
    assert (alike.lower, alike.higher_beyond, alike.lower_beyond) == (0, 2, 0)
    # the margin follows the records' decimals: 0.005 + 0.0005 + 2 x 0.0005 for compare.py's and particle.py's
    # (runs.seed.DIGITS), 0.00005 + 0.00005 + 2 x 0.00005 = 0.0002 for foraging.py's four decimals
    from marl_edu.runs.seed import DIGITS, GAP_ROUNDING, gap_rounding
    assert GAP_ROUNDING == pytest.approx(0.0065, abs=1e-15) == gap_rounding(
        DIGITS["greedy"], DIGITS["sampled"], DIGITS["sampled_gap_se"]) == gap_rounding(
        DIGITS["team_return"], DIGITS["sampled"], DIGITS["sampled_gap_se"])
    assert gap_rounding(4, 4, 4) == pytest.approx(0.0002, abs=1e-15)
    # foraging.py's records keep four decimals: there a gap of -0.002 is a loss, if a small one
    exact = sampled_gaps([{"greedy": 0.9, "sampled": 0.898, "sampled_gap_se": 0.0005}], noise_free="greedy",
                         rounding=gap_rounding(4, 4, 4))
    assert (exact.lower, exact.lower_beyond) == (1, 1)
    for bad in (-0.1, 1.0, float("nan"), True, "0.01"):
        with pytest.raises(ValueError, match="rounding must be a number in \\[0, 1\\)"):
            sampled_gaps(rows, rounding=bad)
    with pytest.raises(ValueError, match="rows 0, 1 keep 'sampled_gap_se' and row 2 does not: records of two "
                                         "evaluation protocols"):
        sampled_gaps([*rows[:2], {"team_return": -48.0, "sampled": -49.4}])
    with pytest.raises(ValueError, match="row 1's 'sampled_gap_se' is -0.3, expected a standard error"):
        sampled_gaps([rows[0], {**rows[1], "sampled_gap_se": -0.3}, rows[2]])


def test_solve_count_cases_are_the_committed_runs():
    # the check's cases named after committed runs are those runs' final greedy returns and first solves: a re-run of
    # the table changes them here too
    from marl_edu.base.course_paths import results_dir
    from marl_edu.course.checks import SOLVE_COUNT_RUNS
    from marl_edu.runs.seed import known_optimum
    assert len(SOLVE_COUNT_RUNS) == 3
    assert list(SOLVE_COUNT_RUNS) == [("COMA", "Switch2-v0"), ("IQL", "Switch2-v0"), ("central-QV", "Switch4-v0")]
    for (name, env), (greedy, episodes, optimum) in SOLVE_COUNT_RUNS.items():
        folder = results_dir("compare", env, f"{name.lower().replace('-', '_')}-gru")
        runs = [json.loads((folder / f"seed{seed}.json").read_text()) for seed in range(5)]
        assert [run["greedy"] for run in runs] == greedy, (name, env)
        assert [run["episodes_to_solve"] for run in runs] == episodes, (name, env)
        assert known_optimum(env) == pytest.approx(optimum, abs=0.05), env


def test_solve_counts_check_names_each_slip(capsys):
    from marl_edu.course.checks import check_solve_counts
    from marl_edu.course.solutions import solve_counts as reference

    def verdict(fn):
        check_solve_counts(fn)
        return capsys.readouterr().out

    assert verdict(reference).startswith("PASSED")

    def ever_for_end(rows, optimum):  # counts the seeds that ever solved as solved at the end
        _, ever, median = reference(rows, optimum)
        return ever, ever, median

    def at_the_optimum(rows, optimum):  # solved only at the optimum itself
        _, ever, median = reference(rows, optimum)
        return sum(row["greedy"] >= optimum for row in rows), ever, median

    def no_tolerance(rows, optimum):  # 7.99999997 is not >= 8.0
        _, ever, median = reference(rows, optimum)
        return sum(row["greedy"] >= round(optimum - 0.3, 6) for row in rows), ever, median

    def mean(rows, optimum):
        at_end, ever, median = reference(rows, optimum)
        solved = [row["episodes_to_solve"] for row in rows if row["episodes_to_solve"] is not None]
        return at_end, ever, (sum(solved) / len(solved) if solved else None)

    def never_as_zero(rows, optimum):  # a seed that never solved counted as 0 episodes
        at_end, ever, _ = reference(rows, optimum)
        values = sorted(row["episodes_to_solve"] or 0 for row in rows)
        return at_end, ever, float(values[len(values) // 2]) if ever else None

    def zero_when_none(rows, optimum):
        at_end, ever, median = reference(rows, optimum)
        return at_end, ever, 0 if median is None else median

    for fn, named in [(ever_for_end, "FINAL greedy return"), (at_the_optimum, "within 0.3 of the exact optimum"),
                      (no_tolerance, "float32"), (mean, "that is the mean"),
                      (never_as_zero, "over the seeds that got there only"), (zero_when_none, "return None")]:
        out = verdict(fn)
        assert out.startswith("FAILED") and named in out, (fn.__name__, out)
    assert "expected a tuple of three" in verdict(lambda rows, optimum: 4)
    assert "your function raised KeyError" in verdict(lambda rows, optimum: rows[0]["solved"])


# -- check_clipped_surrogate_loss: PPO's clipped actor loss with masks (notebook 12) ----------------------------------

def _surrogate(ratio_of="exp", low_high="around 1", pick="min", sign=-1.0, reduce="masked mean",
               detach_old=True, detach_advantage=True, detach_new=False, shape="scalar"):
    """A learner's answer with one knob per known mistake, written out; the defaults are the right answer."""
    def fn(log_prob, old_log_prob, advantage, mask, clip):
        old = old_log_prob.detach() if detach_old else old_log_prob
        new = log_prob.detach() if detach_new else log_prob
        adv = advantage.detach() if detach_advantage else advantage
        ratio = {"exp": torch.exp(new - old), "difference": new - old, "quotient": new / old,
                 "inverted": torch.exp(old - new), "none": new}[ratio_of]
        low, high = (1 - clip, 1 + clip) if low_high == "around 1" else (-clip, clip)
        plain, clipped = ratio * adv, torch.clamp(ratio, low, high) * adv
        if ratio_of == "none":  # COMA's loss: log pi times the advantage, no ratio, no clip
            plain = clipped = ratio * adv
        surrogate = {"min": torch.min(plain, clipped), "max": torch.max(plain, clipped), "plain": plain,
                     "clipped": clipped}[pick]
        if shape == "per step":
            return sign * surrogate * mask
        return sign * {"masked mean": (surrogate * mask).sum() / mask.sum().clamp(min=1), "raw divisor":
                       (surrogate * mask).sum() / mask.sum(), "mean": surrogate.mean(),
                       "over every entry": (surrogate * mask).sum() / mask.numel(),
                       "sum": (surrogate * mask).sum()}[reduce]
    return fn


def _surrogate_verdict(fn, capsys):
    from marl_edu.course.checks import check_clipped_surrogate_loss

    assert check_clipped_surrogate_loss(fn) is None
    return capsys.readouterr().out


def test_clipped_surrogate_reference_passes(capsys):
    out = _surrogate_verdict(_surrogate(), capsys)
    assert out.startswith("PASSED") and "FAILED" not in out


def test_clipped_surrogate_mistakes_are_named(capsys):
    named = {
        "not the difference of the logs": _surrogate(ratio_of="difference"),
        "dividing the log-probabilities": _surrogate(ratio_of="quotient"),
        "not to [-clip, clip]": _surrogate(low_high="around 0"),
        "that is the plain surrogate": _surrogate(pick="plain"),
        "that is the clipped term alone": _surrogate(pick="clipped"),
        "not the maximum": _surrogate(pick="max"),
        "the loss for gradient descent is its negation": _surrogate(sign=1.0),
        "padding and agents already home included": _surrogate(reduce="mean"),
        "not by every entry B*T*N": _surrogate(reduce="over every entry"),
        "the loss is their mean": _surrogate(reduce="sum"),
        "sends a gradient into old_log_prob": _surrogate(detach_old=False),
        "sends a gradient into the advantage": _surrogate(detach_advantage=False),
        "no gradient reaches log_prob": _surrogate(detach_new=True),
        "not its inverse": _surrogate(ratio_of="inverted"),
        "that is COMA's policy-gradient loss": _surrogate(ratio_of="none"),
        "divide by mask.sum().clamp(min=1)": _surrogate(reduce="raw divisor"),
        "expected shape (), got (1, 3, 2)": _surrogate(shape="per step"),
    }
    for phrase, answer in named.items():
        out = _surrogate_verdict(answer, capsys)
        assert out.startswith("FAILED") and phrase in out, (phrase, out)


def test_clipped_surrogate_by_hand_case_is_the_first_and_a_stub_is_not_done(capsys):
    # the first case is notebook 12's by-hand one: the right loss there is 0.22 (tests/test_ppo.py shows the sum)
    out = _surrogate_verdict(_surrogate(sign=1.0), capsys)
    assert "on the by-hand case" in out and "expected 0.2200, got -0.2200" in out

    def stub(log_prob, old_log_prob, advantage, mask, clip):
        raise NotImplementedError

    assert _surrogate_verdict(stub, capsys).startswith("NOT DONE YET")
    assert _surrogate_verdict(lambda *args: None, capsys).startswith("NOT DONE YET")


def test_clipped_surrogate_check_leaves_the_callers_random_state_alone(capsys):
    torch.manual_seed(5)
    expected = torch.rand(2)
    torch.manual_seed(5)
    _surrogate_verdict(_surrogate(), capsys)
    assert torch.equal(torch.rand(2), expected)


# -- 16: on how many seeds sampling beat greedy beyond chance ----------------------------------------------------------

def test_sampled_beats_greedy_cases_are_the_committed_runs():
    # the check's PredatorPrey cases are the committed runs' final means (greedy and sampled on the same 100 episodes),
    # to 0.1, and their gaps' standard errors, to 0.01: a re-run of the table changes them here too
    from marl_edu.base.course_paths import results_dir
    from marl_edu.course.checks import PREDATOR_PREY_FINALS
    assert list(PREDATOR_PREY_FINALS) == ["COMA", "IQL", "VDN"]
    for name, finals in PREDATOR_PREY_FINALS.items():
        folder = results_dir("compare", "PredatorPrey7x7-v0", f"{name.lower()}-gru")
        runs = [json.loads((folder / f"seed{seed}.json").read_text()) for seed in range(5)]
        assert ([round(run["greedy"], 1) for run in runs], [round(run["sampled"], 1) for run in runs],
                [round(run["sampled_gap_se"], 2) for run in runs]) == finals, name
    # ... and its case with a standard error of 0.0 is central-QV's seed 1 as recorded
    alike = json.loads(results_dir("compare", "PredatorPrey7x7-v0", "central_qv-gru", "seed1.json").read_text())
    assert (alike["greedy"], alike["sampled"], alike["sampled_gap_se"]) == (-14.52, -14.522, 0.0)


def test_sampled_beats_greedy_check_names_each_slip(capsys):
    from marl_edu.course.checks import PREDATOR_PREY_FINALS, check_sampled_beats_greedy
    from marl_edu.course.solutions import sampled_beats_greedy as reference

    def verdict(fn):
        check_sampled_beats_greedy(fn)
        return capsys.readouterr().out

    def rows_of(greedy, sampled, se):
        return [{"greedy": g, "sampled": s, "sampled_gap_se": e} for g, s, e in zip(greedy, sampled, se)]

    # by hand, the check's seven seeds: gaps 2 - 1 = 1.0 (exactly 2 x 0.5: not counted), 1 - 5 = -4 (a loss beyond
    # 2 x 1), 8 - 5 = 3 > 2 x 1 (counted), -3 - 0 = -3 (a loss beyond 2 x 0.5), 4.25 - 4 = 0.25 (below one se, 0.5),
    # 3.5 - 2 = 1.5 (between one and two se of 1.0), 1.98 - 0 = 1.98 (between 1.96 and 2 se of 1.0) -> 1; two losses,
    # -4 (se 1) and -3.5 (se 0.5) -> 0; central-QV's seed 1, -14.522 - (-14.52) = -0.002, se 0.0 -> 0; one seed,
    # 6.7 - 2.6 = 4.1 > 2 x 1.5 = 3.0 -> 1
    seven = rows_of([1.0, 5.0, 5.0, 0.0, 4.0, 2.0, 0.0], [2.0, 1.0, 8.0, -3.0, 4.25, 3.5, 1.98],
                    [0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0])
    two_losses, alike, one = (rows_of([3.0, 6.0], [-1.0, 2.5], [1.0, 0.5]), rows_of([-14.52], [-14.522], [0.0]),
                              rows_of([2.6], [6.7], [1.5]))
    assert [reference(rows) for rows in (seven, two_losses, alike, one)] == [1, 0, 0, 1] and reference([]) == 0
    # the committed PredatorPrey cases: COMA's and IQL's gaps are all within two standard errors (COMA's largest,
    # 6.2 - 0.6 = 5.6 < 2 x 2.97 = 5.94); VDN's seed 2, 14.6 - 5.4 = 9.2 > 2 x 3.47 = 6.94, is beyond
    assert {name: reference(rows_of(*finals)) for name, finals in PREDATOR_PREY_FINALS.items()} == {
        "COMA": 0, "IQL": 0, "VDN": 1}
    assert verdict(reference).startswith("PASSED")
    import numpy as np
    assert verdict(lambda rows: np.sum([r["sampled"] - r["greedy"] > 2 * r["sampled_gap_se"] for r in rows])
                   ).startswith("PASSED")

    def any_gain(rows):  # every gain, chance included
        return sum(row["sampled"] > row["greedy"] for row in rows)

    def one_se(rows):
        return sum(row["sampled"] - row["greedy"] > row["sampled_gap_se"] for row in rows)

    def both_ways(rows):
        return sum(abs(row["sampled"] - row["greedy"]) > 2 * row["sampled_gap_se"] for row in rows)

    def reversed_count(rows):  # the seeds where greedy did measurably better
        return sum(row["greedy"] - row["sampled"] > 2 * row["sampled_gap_se"] for row in rows)

    def at_least(rows):
        return sum(row["sampled"] - row["greedy"] >= 2 * row["sampled_gap_se"] for row in rows)

    def share(rows):
        return reference(rows) / len(rows)

    def z_196(rows):
        return sum(row["sampled"] - row["greedy"] > 1.96 * row["sampled_gap_se"] for row in rows)

    # each slip counts differently on those four cases alone (seven, two losses, alike, one), so it is named whatever
    # the committed runs hold: of the seven seeds A-G, every gain (A, C, E, F, G), above one se (A, C, F, G), both ways
    # (B, C, D; both losses; alike's 0.002 > 0), greedy's (B, D; both losses; alike), at least two (A, C), above 1.96
    # (A, C, G)
    counts = [[fn(rows) for rows in (seven, two_losses, alike, one)]
              for fn in (reference, any_gain, one_se, both_ways, reversed_count, at_least, z_196)]
    assert counts == [[1, 0, 0, 1], [5, 0, 0, 1], [4, 0, 0, 1], [3, 2, 1, 1], [2, 2, 1, 0], [2, 0, 0, 1], [3, 0, 0, 1]]
    for fn, named in [(any_gain, "chance included"), (one_se, "one standard error is not enough"),
                      (both_ways, "measurably WORSE"), (reversed_count, "GREEDY did measurably better"),
                      (at_least, "a gap of exactly two is not counted"), (z_196, "two standard errors, not 1.96"),
                      (share, "a count, not a fraction"),
                      (lambda rows: [row["sampled"] > row["greedy"] for row in rows], "one whole number"),
                      (lambda rows: True, "one whole number"),
                      (lambda rows: reference(rows) + 1, "count the seeds")]:
        out = verdict(fn)
        assert out.startswith("FAILED") and named in out, (named, out)
    assert "your function raised KeyError" in verdict(lambda rows: rows[0]["sampled_return"])
    dividing = verdict(lambda rows: sum((r["sampled"] - r["greedy"]) / r["sampled_gap_se"] > 2 for r in rows))
    assert dividing.startswith("FAILED on central-QV's seed 1") and "compare, do not divide" in dividing
    # a wrong count on an early case is reported before a later case's error, None or fraction (the single seed last)
    coma = rows_of(*PREDATOR_PREY_FINALS["COMA"])
    for last in (lambda rows: rows[5], lambda rows: None, lambda rows: 0.5):
        out = verdict(lambda rows, last=last: last(rows) if len(rows) == 1 else reference(rows) + 1)
        assert out.startswith(f"FAILED on COMA on PredatorPrey7x7-v0: expected {reference(coma)} of 5 seeds, got "
                              f"{reference(coma) + 1}"), out

    def stub(rows):
        raise NotImplementedError
    assert verdict(stub).startswith("NOT DONE YET")
    assert verdict(lambda rows: None).startswith("NOT DONE YET")
