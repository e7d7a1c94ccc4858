import torch

from marl_edu import checks
from marl_edu.checks import check_flatten_for_critic


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
    from marl_edu.maddpg import flatten_for_critic

    verdict, out = run(lambda o, a: flatten_for_critic(o, a).double(), capsys)
    assert verdict is False and "expected dtype torch.float32" in out and "got torch.float64" in out


def _run_td(fn, capsys):
    from marl_edu.checks import check_td_target

    assert check_td_target(fn) is None
    return capsys.readouterr().out


def test_td_check_reference_passes(capsys):
    from marl_edu.targets import td_target

    assert _run_td(td_target, capsys).startswith("PASSED")


def test_td_check_names_each_pitfall(capsys):
    assert "multiply gamma * q_next by (1 - dones)" in _run_td(lambda r, d, q, g: (r + g * q).detach(), capsys)
    assert "mask is flipped" in _run_td(lambda r, d, q, g: (r + g * d * q).detach(), capsys)
    assert "carries a gradient" in _run_td(lambda r, d, q, g: r + g * (1 - d) * q, capsys)
    assert "broadcast to (B, B)" in _run_td(lambda r, d, q, g: (r + g * (1 - d) * q.unsqueeze(-1)).detach(), capsys)
    assert _run_td(lambda r, d, q, g: (_ for _ in ()).throw(NotImplementedError), capsys).startswith("NOT DONE")


def test_td_lambda_check_passes_the_reference_and_names_the_mistakes(capsys):
    from marl_edu.checks import check_td_lambda_targets
    from marl_edu.targets import td_lambda_targets

    check_td_lambda_targets(td_lambda_targets)
    assert capsys.readouterr().out.startswith("PASSED")

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

    from marl_edu.checks import check_coma_advantage
    from marl_edu.coma import coma_advantage

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
    from marl_edu.checks import check_coma_advantage, check_td_lambda_targets, check_td_target
    from marl_edu.coma import coma_advantage
    from marl_edu.targets import td_lambda_targets, td_target

    answers = [
        (check_td_target, lambda r, d, q, g: td_target(r, d, q, g).double()),
        (check_td_lambda_targets, lambda r, d, v, g, lam: td_lambda_targets(r, d, v, g, lam).double()),
        (check_coma_advantage, lambda q, pi, actions: coma_advantage(q, pi, actions).double()),
        (check_coma_advantage, lambda q, pi, actions: coma_advantage(q, pi, actions).long()),
    ]
    for check, answer in answers:
        assert check(answer) is None
        out = capsys.readouterr().out
        assert out.startswith("FAILED on ") and "expected dtype torch.float32 (like the inputs), got torch." in out
        assert "Hint: keep the inputs' dtype" in out


# -- check_continuous_actor_loss: the deterministic policy gradient's actor loss (notebook 09) ------------------------

def _actor_loss(sign=-1.0, squash=True, recompute=True, detach=False, in_place=False):
    """A learner's answer with one knob per known mistake; the defaults are the right answer."""
    from marl_edu.maddpg import flatten_for_critic

    def fn(critic, actor, obs, actions, i):
        acts = actions if in_place else actions.clone()  # (B, N, A)
        if recompute:
            pre = actor(obs[:, i])  # (B, A)
            a_i = torch.tanh(pre) if squash else pre
            acts[:, i] = a_i.detach() if detach else a_i
        return sign * critic(flatten_for_critic(obs, acts)).mean()
    return fn


def _verdict(fn, capsys):
    from marl_edu.checks import check_continuous_actor_loss

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


# -- check_approximation_loss: the inferred policy's loss (notebook 10) -------------------------------------------

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
    from marl_edu.checks import check_approximation_loss

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


# -- check_subpolicy_actions: each agent's action from the sub-policy it plays (notebook 10) ------------------------

def _subpolicy_verdict(fn, capsys):
    from marl_edu.checks import check_subpolicy_actions

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


# -- check_team_rewards: each agent paid its own team's summed reward (notebook 11) ---------------------------------

def _team_verdict(fn, capsys):
    from marl_edu.checks import check_team_rewards

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
    assert "first at index (1, 2)" in out
    assert "expected [6.0, 7.0, 8.0]" in out and "got      [7.0, 7.0, 8.0]" in out


# -- check_qmix_mixer: QMIX's mixing network from its hypernetworks (notebook 12) -----------------------------------

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
    from marl_edu.checks import check_qmix_mixer

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
    from marl_edu.checks import _close

    assert _close(1.0, 2.0) == "1.0000, got 2.0000"
    assert _close(-0.34601, -0.34598) == "-0.34601, got -0.34598"  # at 4 places both read -0.3460
