"""The COMA capstone's checkers (marl_edu.course.capstone_coma): the answers pass, each named slip fails with its own hint,
garbage never raises, the assembled parts never include a failed one, and the answers train to the solve."""

import functools

import numpy as np
import pytest
import torch

from marl_edu.course import capstone_coma as cc
from marl_edu.course import solutions
from marl_edu.data.rollout import collect_episodes
from marl_edu.envs.make import make_vec_env
from marl_edu.learners.coma import COMA, COMAConfig
from marl_edu.training.loops import train
from slips import with_source_changed

CHECKS = {name: getattr(cc, f"check_{name}") for name in cc.PARTS}


@pytest.fixture(autouse=True)
def one_thread():
    # tiny networks: on a busy 2-core machine two threads make a GRU's backward pass take seconds (as train_yours
    # and the checkers do themselves)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _verdict(check, fn, capsys) -> str:
    assert check(fn) is None
    out = capsys.readouterr().out
    assert out.startswith(("PASSED", "FAILED", "NOT DONE YET")), out
    return out


@pytest.mark.parametrize("name", cc.PARTS)
def test_the_solutions_pass_and_the_references_are_refused(name, capsys):
    assert _verdict(CHECKS[name], getattr(solutions, name), capsys).startswith("PASSED")
    # the reference is the library's own part: what the check compares with, so an answer may not call it
    assert _verdict(CHECKS[name], cc.REFERENCE[name], capsys).startswith(
        f"FAILED: your {name} calls " + ("marl_edu." if name == "coma_update" else "agent."))


def _rows_slip(kind):
    def rows(agent, obs, actions):
        out = solutions.coma_critic_rows(agent, obs, actions)
        B, T1, N, O = obs.shape
        A = agent.n_actions
        S = N * O
        if kind == "unmasked":
            out[..., S + O:S + O + N * A] = torch.nn.functional.one_hot(actions.reshape(B * T1, 1, N), A).float() \
                .expand(B * T1, N, N, A).reshape(B * T1, N, N * A)
        elif kind == "time major":
            out = solutions.coma_critic_rows(agent, obs.transpose(0, 1), actions.transpose(0, 1))
        elif kind == "no id":
            out = out[..., :-N]
        return out
    return rows


@pytest.mark.parametrize("kind, words", [("unmasked", "the critic would see the answer"),
                                         ("time major", "time-major"), ("no id", "one-hot id")])
def test_critic_rows_slips_are_named(kind, words, capsys):
    out = _verdict(cc.check_coma_critic_rows, _rows_slip(kind), capsys)
    assert out.startswith("FAILED") and words in out, out


@pytest.mark.parametrize("slip, hint", cc._TARGET_SLIPS)
def test_critic_target_slips_are_named(slip, hint, capsys):
    out = _verdict(cc.check_coma_critic_targets, lambda agent, rows, batch: cc._targets(agent, rows, batch, slip),
                   capsys)
    assert out.startswith("FAILED") and hint in out, out


def test_targets_with_a_gradient_fail(capsys):
    def with_grad(agent, rows, batch):
        return solutions.coma_critic_targets(agent, rows, batch) + 0 * agent.critic(rows[0, :1]).sum()
    out = _verdict(cc.check_coma_critic_targets, with_grad, capsys)
    assert out.startswith("FAILED") and "carries a gradient" in out


@pytest.mark.parametrize("slip, words", [("uniform", "uniformly"), ("target critic", "target critic"),
                                         ("max", "not the best Q"), ("sign", "sign is flipped"),
                                         ("next step", "LAST column"), ("next actions", "one step late"),
                                         ("time-major", "reshaped time-major")])
def test_advantage_slips_are_named(slip, words, capsys):
    out = _verdict(cc.check_coma_batch_advantage,
                   lambda agent, rows, batch, pi: cc._advantage(agent, rows, batch, pi, slip), capsys)
    assert out.startswith("FAILED") and words in out, out


def test_an_advantage_that_keeps_pis_gradient_fails(capsys):
    def keeps(agent, rows, batch, pi):
        B, T1, N = batch["actions"].shape
        q = agent.critic(rows.reshape(B * T1 * N, -1)).reshape(B, T1, N, -1)[:, :-1].detach()
        return q.gather(-1, batch["actions"][:, :-1].unsqueeze(-1)).squeeze(-1) - (pi * q).sum(-1)
    out = _verdict(cc.check_coma_batch_advantage, keeps, capsys)
    assert out.startswith("FAILED") and "carries a gradient" in out


@pytest.mark.parametrize("slip, words", [("no carry", "hidden state is not carried"),
                                         ("no last action", "last-action block"), ("same step", "same step"),
                                         ("action 0 first", "not one_hot(0)"), ("no epsilon", "epsilon mixing"),
                                         ("eps not over A", "not eps / A"),
                                         ("logits", "logits")])
def test_replay_slips_are_named(slip, words, capsys):
    out = _verdict(cc.check_coma_replay_policy, lambda agent, obs, actions, eps: cc._replay(agent, obs, actions, eps,
                                                                                             slip), capsys)
    assert out.startswith("FAILED") and words in out, out


def test_a_detached_replay_fails(capsys):
    out = _verdict(cc.check_coma_replay_policy, lambda *args: solutions.coma_replay_policy(*args).detach(), capsys)
    assert out.startswith("FAILED") and "no gradient reaches the actor" in out


def test_the_step_by_step_replay_matches_the_fused_one_and_the_unfused_one():
    generator = torch.Generator().manual_seed(0)
    obs, actions = torch.rand(4, 9, 2, 2, generator=generator), torch.randint(0, 5, (4, 9, 2), generator=generator)
    for fused in (True, False):
        agent = COMA(2, 2, 5, COMAConfig(fused_unroll=fused), seed=3)
        expected = agent.replay_policy(obs, actions, 0.1)
        assert torch.allclose(solutions.coma_replay_policy(agent, obs, actions, 0.1), expected, atol=1e-6)


@pytest.mark.parametrize("slip, hint", cc._UPDATE_SLIPS)
def test_update_slips_are_named(slip, hint, capsys):
    # (the slip runs through a partial made here: the check refuses a learner's call of cc._update by name)
    out = _verdict(cc.check_coma_update, functools.partial(cc._update, slip=slip), capsys)
    assert out.startswith("FAILED") and hint in out, out


def test_an_update_that_forgets_the_counter_fails(capsys):
    def no_count(agent, batch, *parts):
        solutions.coma_update(agent, batch, *parts)
        agent.updates -= 1
    out = _verdict(cc.check_coma_update, no_count, capsys)
    assert out.startswith("FAILED"), out


def test_the_update_with_the_parts_passed_in_is_comas_own_to_the_bit():
    venv = make_vec_env("Switch2-v0", 4, 0)
    agents = [COMA(2, 2, 5, COMAConfig(target_update_every=2), seed=1) for _ in range(2)]
    parts = tuple(cc.REFERENCE[name] for name in cc.PARTS[:4])
    for _ in range(3):
        batch, _, _ = collect_episodes(agents[0], venv, 0.1)
        agents[0].update(batch)
        cc._reference_update(agents[1], batch, *parts)
    for a, b in zip(cc._parameters(agents[0]), cc._parameters(agents[1])):
        assert torch.equal(a, b)


def test_the_solutions_give_the_references_parameters_after_a_few_updates():
    venv = make_vec_env("Switch2-v0", 4, 0)
    agents = [COMA(2, 2, 5, COMAConfig(target_update_every=2), seed=1) for _ in range(2)]
    mine = tuple(getattr(solutions, name) for name in cc.PARTS[:4])
    for _ in range(3):
        batch, _, _ = collect_episodes(agents[0], venv, 0.0)
        agents[0].update(batch)
        solutions.coma_update(agents[1], batch, *mine)
    for a, b in zip(cc._parameters(agents[0]), cc._parameters(agents[1])):
        assert torch.allclose(a, b, atol=1e-4)


def _garbage():
    nan = float("nan")
    return [lambda *a: torch.full((2, 3), nan), lambda *a: "rows", lambda *a: np.zeros(3), lambda *a: 1 / 0,
            lambda *a: torch.zeros(1, dtype=torch.int64), lambda *a: torch.tensor(nan), lambda: None]


@pytest.mark.parametrize("name", cc.PARTS)
def test_garbage_never_raises_and_never_passes(name, capsys):
    for fn in _garbage():
        out = _verdict(CHECKS[name], fn, capsys)
        assert not out.startswith("PASSED"), out


def test_an_update_that_writes_nan_fails(capsys):
    def nan_update(agent, *args):
        with torch.no_grad():
            next(agent.actor.parameters()).fill_(float("nan"))
    out = _verdict(cc.check_coma_update, nan_update, capsys)
    assert out.startswith("FAILED"), out


def test_assemble_uses_only_parts_that_passed(capsys):
    def raises(*args):
        raise NotImplementedError

    wrong_rows = _rows_slip("unmasked")
    parts = cc.assemble(coma_critic_rows=wrong_rows, coma_critic_targets=solutions.coma_critic_targets,
                        coma_batch_advantage=raises)
    out = capsys.readouterr().out
    assert parts["coma_critic_rows"] is cc.REFERENCE["coma_critic_rows"]  # FAILED: never used
    assert parts["coma_critic_targets"] is solutions.coma_critic_targets
    assert parts["coma_batch_advantage"] is cc.REFERENCE["coma_batch_advantage"]
    assert parts["coma_replay_policy"] is cc.REFERENCE["coma_replay_policy"]  # not given
    lines = out.splitlines()
    assert len(lines) == 2 + len(cc.PARTS)
    assert "FAILED" in lines[2] and "marl_edu's reference" in lines[2]
    assert "PASSED" in lines[3] and lines[3].endswith("yours")
    assert "NOT DONE YET" in lines[4] and "not given" in lines[5]
    with pytest.raises(ValueError, match="unknown parts"):
        cc.assemble(coma_critic_row=wrong_rows)


def test_with_the_references_train_yours_is_train_coma():
    parts = dict(cc.REFERENCE)
    ours = cc.train_yours(parts, episodes=64, eval_every=32, stop_at=None, progress=False)
    theirs = train("coma", "Switch2-v0", episodes=64, eval_every=32, progress=False)
    assert ours.episode_returns == theirs.episode_returns
    assert ours.evaluations == theirs.evaluations
    for a, b in zip(cc._parameters(ours.agent), cc._parameters(theirs.agent)):
        assert torch.equal(a, b)


def test_the_solutions_train_to_the_solve():
    parts = {name: getattr(solutions, name) for name in cc.PARTS}
    result = cc.train_yours(parts, seed=0, stop_at=8.0, progress=False)
    assert result.evaluations[-1][1] >= 8.0 - 1e-6
    assert len(result.episode_returns) < 6000


def test_the_plot_draws_both_runs_and_the_lines():
    import matplotlib
    matplotlib.use("Agg")
    from marl_edu.training.loops import TrainResult
    result = TrainResult(agent=None, evaluations=[(100, -10.0), (200, 8.1)])
    ax = cc.plot_against_reference(result, optimal=8.3, random=-9.3)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "your COMA" in labels and any("committed" in label for label in labels)
    assert any("optimum" in label for label in labels) and any("random" in label for label in labels)
    assert cc.reference_run()["evaluations"]


def test_whose_says_whose_parts_trained():
    assert cc.whose(dict(cc.REFERENCE)) == "marl_edu's parts (your stubs are empty)"
    assert cc.whose({name: getattr(solutions, name) for name in cc.PARTS}) == "your COMA"
    assert cc.whose({**cc.REFERENCE, "coma_update": solutions.coma_update}) == "your COMA (1 of 5 parts yours)"


def _update_with_source_changed(old: str, new: str):
    """solutions.coma_update with one line of its source replaced: a slip the check has no variant of."""
    return with_source_changed(solutions.coma_update, old, new)


@pytest.mark.parametrize("old, new, words", [
    ("* step_mask).sum() / step_mask.sum())",  # the critic's loss over agent_mask: the critic goes wrong first
     '* batch["agent_mask"]).sum() / batch["agent_mask"].sum())', "the critic differs"),
    ("* mask).sum() / mask.sum().clamp(min=1.0)",  # the entropy bonus over padding too: only the actor differs
     "* mask).sum() / mask.sum().clamp(min=1.0) - agent.entropy_coef * (entropy * (1 - mask)).sum() / mask.sum()",
     "the critic matches but the actor does not"),
])
def test_an_update_slip_without_a_variant_is_diagnosed_by_network(old, new, words, capsys):
    out = _verdict(cc.check_coma_update, _update_with_source_changed(old, new), capsys)
    assert out.startswith("FAILED") and words in out, out


@pytest.mark.parametrize("old, new, words", [
    # The critic's mean squared error with a 1/2 in front. Adam's step m / (sqrt(v) + eps) is nearly the same for a
    # loss scaled by any c > 0 (m scales by c, sqrt(v) by c), so only the case with plain SGD can see it: there the
    # step is lr * gradient, half as long.
    ("* step_mask).sum() / step_mask.sum())", "* step_mask).sum() / (2 * step_mask.sum()))",
     "a 1/2 in front"),
    # Divided by the real steps (B, T) instead of the (B, T, N) entries: N = 2 times the loss, twice the step.
    ("* step_mask).sum() / step_mask.sum())", '* step_mask).sum() / batch["step_mask"].sum())',
     "divided by the number of real steps"),
    # Any other constant factor (3 here) has no variant: the diagnosis by network names the scale.
    ("* step_mask).sum() / step_mask.sum())", "* step_mask).sum() * 3 / step_mask.sum())",
     "a constant factor"),
])
def test_a_critic_loss_off_by_a_constant_factor_fails_on_the_sgd_case(old, new, words, capsys):
    out = _verdict(cc.check_coma_update, _update_with_source_changed(old, new), capsys)
    assert out.startswith("FAILED") and "plain SGD" in out and words in out, out


def test_an_actor_loss_off_by_a_constant_factor_fails(capsys):
    # Twice the actor's loss: Adam's first step is lr * sign(g) only where |g| >> eps; the GRU's small gradients are
    # not, so the Adam cases already see it (and the SGD case would: twice the step).
    twice = _update_with_source_changed("* mask).sum() / mask.sum().clamp(min=1.0)",
                                        "* mask).sum() * 2 / mask.sum().clamp(min=1.0)")
    out = _verdict(cc.check_coma_update, twice, capsys)
    assert out.startswith("FAILED") and "the critic matches but the actor does not" in out, out


def test_on_the_sgd_case_alone_an_actor_loss_off_by_a_factor_is_named(capsys, monkeypatch):
    # The SGD case's own diagnosis for the actor (the Adam cases catch twice the actor's loss first, above): with only
    # that case left, the hint says the actor's loss is off by a constant factor.
    monkeypatch.setattr(cc, "_UPDATE_CASES", [case for case in cc._UPDATE_CASES if case[-1] == "plain SGD"])
    twice = _update_with_source_changed("* mask).sum() / mask.sum().clamp(min=1.0)",
                                        "* mask).sum() * 2 / mask.sum().clamp(min=1.0)")
    out = _verdict(cc.check_coma_update, twice, capsys)
    assert out.startswith("FAILED") and "plain SGD" in out, out
    assert "the actor's loss is likely off by a constant factor" in out, out


def test_a_wrong_counter_is_reported_before_the_parameters(capsys):
    def counts_twice(agent, batch, *parts):  # also copies the target at the wrong updates: parameters differ too
        solutions.coma_update(agent, batch, *parts)
        agent.updates += 1
    out = _verdict(cc.check_coma_update, counts_twice, capsys)
    assert out.startswith("FAILED") and "agent.updates is" in out, out


def test_an_advantage_of_zeros_is_named(capsys):
    out = _verdict(cc.check_coma_batch_advantage, lambda agent, rows, batch, pi: torch.zeros(pi.shape[:-1]), capsys)
    assert out.startswith("FAILED") and "every advantage is 0" in out, out


# -- the target copy one update off, written as a learner would (it got a hint about the critic's loss) -------------

_COUNT_AND_COPY = ("    agent.updates += 1\n"
                   "    if agent.updates % c.target_update_every == 0:                      # the periodic hard copy\n"
                   "        agent.target_critic.load_state_dict(agent.critic.state_dict())\n")


def test_a_copy_decided_before_counting_is_named(capsys):
    update = _update_with_source_changed(_COUNT_AND_COPY, (
        "    if agent.updates % c.target_update_every == 0:\n"
        "        agent.target_critic.load_state_dict(agent.critic.state_dict())\n"
        "    agent.updates += 1\n"))
    out = _verdict(cc.check_coma_update, update, capsys)
    assert out.startswith("FAILED") and "BEFORE agent.updates += 1" in out, out


def test_a_copy_at_the_start_of_the_update_is_named(capsys):
    import inspect

    first = "    rows = critic_rows(agent, obs, actions)"  # the count and the copy moved before it
    source = inspect.getsource(solutions.coma_update).replace(_COUNT_AND_COPY, "").replace(first,
                                                                                          _COUNT_AND_COPY + first)
    namespace = dict(solutions.coma_update.__globals__)
    exec(source, namespace)
    out = _verdict(cc.check_coma_update, namespace["coma_update"], capsys)
    assert out.startswith("FAILED") and "copied at the START of the update" in out, out


# -- the update must call the four parts it is given (the cold reads found the library's methods passing) ----------

@pytest.mark.parametrize("position, library_call, argument", [
    (0, lambda agent, obs, actions: agent.critic_rows(obs, actions), "critic_rows"),
    (1, lambda agent, rows, batch: agent.critic_targets(rows, batch), "critic_targets"),
    (2, lambda agent, rows, batch, pi: agent.advantage(rows, batch, pi), "advantage"),
    (3, lambda agent, obs, actions, epsilon: agent.replay_policy(obs, actions, epsilon), "replay_policy"),
])
def test_an_update_that_calls_the_librarys_part_instead_of_its_argument_fails(position, library_call, argument,
                                                                             capsys):
    def update(agent, batch, *given):
        parts = list(given)
        parts[position] = library_call  # the library's method, not the part handed in
        solutions.coma_update(agent, batch, *parts)

    out = _verdict(cc.check_coma_update, update, capsys)
    assert out.startswith("FAILED on 3 updates") and f"the {argument} your update was given was never called" in out
    assert f"agent.{cc._LIBRARY_METHOD[cc.PARTS[position]]}(...)" in out, out
