"""The MADDPG capstone's checkers: each known slip, written the way a learner would make it, is FAILED with the hint
that names it; garbage never raises; assemble uses only what passed; the answers train to a solve.

(Every answer's PASSED, the untouched stubs' NOT DONE YET and show_solution are tested for every capstone in
tests/test_solutions.py.)
"""

import contextlib

import numpy as np
import pytest
import torch

from marl_edu.course import capstone_maddpg as capstone
from marl_edu.course import solutions
from marl_edu.envs.planning import optimal_team_return
from marl_edu.learners.maddpg import flatten_for_critic, gumbel_softmax
from slips import with_source_changed


def verdict(check, fn, capsys) -> str:
    assert check(fn) is None
    return capsys.readouterr().out


@contextlib.contextmanager
def swapped(agent, first: str, second: str):
    """agent.<first> and agent.<second> exchanged for the duration (a slip that uses the wrong network)."""
    a, b = getattr(agent, first), getattr(agent, second)
    setattr(agent, first, b)
    setattr(agent, second, a)
    try:
        yield
    finally:
        setattr(agent, first, a)
        setattr(agent, second, b)


@contextlib.contextmanager
def config_changed(agent, **values):
    old = {key: getattr(agent.config, key) for key in values}
    for key, value in values.items():
        setattr(agent.config, key, value)
    try:
        yield
    finally:
        for key, value in old.items():
            setattr(agent.config, key, value)


# -- part 1: the critic's loss ---------------------------------------------------------------------------------------

def critic_no_not_done(agent, i, batch):
    return solutions.maddpg_critic_loss(agent, i, {**batch, "dones": torch.zeros_like(batch["dones"])})


def critic_gamma_not_gamma_n(agent, i, batch):
    with config_changed(agent, n_step=1):
        return solutions.maddpg_critic_loss(agent, i, batch)


def critic_online_actors(agent, i, batch):
    with swapped(agent, "actors", "target_actors"):
        return solutions.maddpg_critic_loss(agent, i, batch)


def critic_online_next_critic(agent, i, batch):
    c = agent.config
    with torch.no_grad():
        logits = torch.stack([agent.target_actors[j](batch["next_obs"][:, j]) for j in range(agent.n_agents)], 1)
        next_actions = gumbel_softmax(logits, c.temperature, hard=True, generator=agent.generator)
        q_next = agent.critics[i](flatten_for_critic(batch["next_obs"], next_actions))  # the slip: not the target
        y = batch["rewards"][:, i] + c.gamma ** c.n_step * (1 - batch["dones"][:, i]) * q_next
    return ((agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"])) - y) ** 2).mean()


def critic_batch_actions_at_next(agent, i, batch):
    c = agent.config
    with torch.no_grad():
        q_next = agent.target_critics[i](flatten_for_critic(batch["next_obs"], batch["actions"]))
        y = batch["rewards"][:, i] + c.gamma ** c.n_step * (1 - batch["dones"][:, i]) * q_next
    return ((agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"])) - y) ** 2).mean()


def critic_gumbel_per_agent(agent, i, batch):
    c = agent.config
    with torch.no_grad():
        next_actions = torch.stack([gumbel_softmax(agent.target_actors[j](batch["next_obs"][:, j]), c.temperature,
                                                   hard=True, generator=agent.generator)
                                    for j in range(agent.n_agents)], dim=1)
        q_next = agent.target_critics[i](flatten_for_critic(batch["next_obs"], next_actions))
        y = batch["rewards"][:, i] + c.gamma ** c.n_step * (1 - batch["dones"][:, i]) * q_next
    return ((agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"])) - y) ** 2).mean()


def critic_soft_next_actions(agent, i, batch):
    c = agent.config
    with torch.no_grad():
        logits = torch.stack([agent.target_actors[j](batch["next_obs"][:, j]) for j in range(agent.n_agents)], 1)
        next_actions = gumbel_softmax(logits, c.temperature, hard=False, generator=agent.generator)  # the slip
        q_next = agent.target_critics[i](flatten_for_critic(batch["next_obs"], next_actions))
        y = batch["rewards"][:, i] + c.gamma ** c.n_step * (1 - batch["dones"][:, i]) * q_next
    return ((agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"])) - y) ** 2).mean()


def critic_all_under_no_grad(agent, i, batch):
    with torch.no_grad():
        return solutions.maddpg_critic_loss(agent, i, batch)


@pytest.mark.parametrize("slip, hint", [
    (critic_no_not_done, "multiply gamma^n Q'_i(x') by (1 - d_i)"),
    (critic_gamma_not_gamma_n, "discounted by gamma^n"),
    (critic_online_actors, "TARGET actors"),
    (critic_online_next_critic, "TARGET critic's value"),
    (critic_batch_actions_at_next, "not the batch's actions"),
    (critic_gumbel_per_agent, "ONE gumbel_softmax call"),
    (critic_soft_next_actions, "HARD one-hot samples (hard=True)"),
    (critic_all_under_no_grad, "your loss has no gradient"),
])
def test_critic_loss_slips_are_named(slip, hint, capsys):
    out = verdict(capstone.check_maddpg_critic_loss, slip, capsys)
    assert out.startswith("FAILED") and hint in out, out


@pytest.mark.parametrize("old, new, hint", [
    ("flatten_for_critic(batch[\"next_obs\"], next_actions))  # (B,)",
     "flatten_for_critic(batch[\"next_obs\"], next_actions)).unsqueeze(1)", "your Q'_i(x') has shape (B, 1)"),
    ("batch[\"next_obs\"]", "batch[\"obs\"]", "the target bootstraps from x_t"),  # every use of x_{t+n}
])
def test_the_critic_losss_slips_a_cold_reading_tried_are_named(old, new, hint, capsys):
    slip = with_source_changed(solutions.maddpg_critic_loss, old, new)
    out = verdict(capstone.check_maddpg_critic_loss, slip, capsys)
    assert out.startswith("FAILED") and hint in out, out


@pytest.mark.parametrize("new", ['batch["rewards"][:, 0]', 'batch["rewards"].mean(1)', 'batch["rewards"][:, -1]'])
def test_a_critic_loss_that_does_not_read_agent_is_own_reward_column_fails_on_the_own_rewards_case(new, capsys):
    # every column of the first two cases holds the team's return, so these pass there (as they would train on
    # Switch2); the third case's rewards differ by agent, as own rewards do
    slip = with_source_changed(solutions.maddpg_critic_loss, 'batch["rewards"][:, i]', new)
    out = verdict(capstone.check_maddpg_critic_loss, slip, capsys)
    assert out.startswith("FAILED on N=3, B=16, own rewards, agent i="), out
    assert "column i of batch['rewards']" in out, out


def test_the_own_rewards_case_gives_every_agent_its_own_column():
    batch = capstone._batch(16, 3, 4, 3, seed=16, own_rewards=True)
    rewards = batch["rewards"]  # (16, 3)
    assert all(not torch.equal(rewards[:, i], rewards[:, j]) for i, j in ((0, 1), (1, 2), (0, 2)))
    team = capstone._batch(16, 3, 4, 3, seed=16)  # everything else the same as the team case
    assert all(torch.equal(batch[k], team[k]) for k in ("obs", "actions", "next_obs", "dones"))


# -- part 2: the actor's loss ----------------------------------------------------------------------------------------

def actor_no_penalty(agent, i, batch):
    with config_changed(agent, logits_reg=0.0):
        return solutions.maddpg_actor_loss(agent, i, batch)


def actor_wrong_sign(agent, i, batch):
    loss = solutions.maddpg_actor_loss(agent, i, batch)
    logits = agent.actors[i](batch["obs"][:, i])
    penalty = agent.config.logits_reg * (logits ** 2).mean()
    return -(loss - penalty) + penalty


def actor_mean_over_actions(agent, i, batch):
    loss = solutions.maddpg_actor_loss(agent, i, batch)
    logits = agent.actors[i](batch["obs"][:, i])
    penalty = agent.config.logits_reg * (logits ** 2).mean()
    return (loss - penalty) / agent.n_actions + penalty


def actor_taken_action_only(agent, i, batch):
    obs, actions = batch["obs"], batch["actions"]
    logits = agent.actors[i](obs[:, i])
    with torch.no_grad():
        q = agent.critics[i](flatten_for_critic(obs, actions))  # (B,) only at the action in the batch
    pi_taken = (torch.softmax(logits, 1) * actions[:, i]).sum(1)
    return -(pi_taken * q).mean() + agent.config.logits_reg * (logits ** 2).mean()


def actor_gradient_into_the_critic(agent, i, batch):
    obs, actions = batch["obs"], batch["actions"]
    logits = agent.actors[i](obs[:, i])  # (B, A)
    q = []
    for k in range(agent.n_actions):  # Q_i at every own action k, WITH the critic's graph (the slip)
        joint = actions.clone()
        joint[:, i] = torch.nn.functional.one_hot(torch.full((len(obs),), k), agent.n_actions).float()
        q.append(agent.critics[i](flatten_for_critic(obs, joint)))
    expected = (torch.softmax(logits, 1) * torch.stack(q, 1)).sum(1)  # (B,)
    return -expected.mean() + agent.config.logits_reg * (logits ** 2).mean()


def actor_sampled_own_action(agent, i, batch):  # DDPG's habit: Q at a sample of the own action, not the expectation
    obs, actions = batch["obs"], batch["actions"]
    logits = agent.actors[i](obs[:, i])  # (B, A)
    joint = actions.clone()
    joint[:, i] = gumbel_softmax(logits, agent.config.temperature, hard=True, generator=agent.generator)
    q = agent.critics[i](flatten_for_critic(obs, joint))  # (B,)
    return -q.mean() + agent.config.logits_reg * (logits ** 2).mean()


def actor_detached_policy(agent, i, batch):
    with torch.no_grad():
        return solutions.maddpg_actor_loss(agent, i, batch)


@pytest.mark.parametrize("slip, hint", [
    (actor_no_penalty, "logits penalty"),
    (actor_wrong_sign, "MINIMISES"),
    (actor_mean_over_actions, "a SUM over k"),
    (actor_taken_action_only, "EVERY own action"),
    (actor_detached_policy, "your loss has no gradient"),
    (actor_gradient_into_the_critic, "also sends a gradient into the critics"),
    (actor_sampled_own_action, "this part asks for the EXACT expectation instead"),
])
def test_actor_loss_slips_are_named(slip, hint, capsys):
    out = verdict(capstone.check_maddpg_actor_loss, slip, capsys)
    assert out.startswith("FAILED") and hint in out, out


# -- part 3: the soft update -----------------------------------------------------------------------------------------

def soft_swapped(target, source, tau):
    solutions.soft_update(target, source, 1 - tau)


def soft_hard_copy(target, source, tau):
    solutions.soft_update(target, source, 1.0)


def soft_not_in_place(target, source, tau):
    return [tau * s + (1 - tau) * t for t, s in zip(target.parameters(), source.parameters())]


def soft_without_no_grad(target, source, tau):
    for t, s in zip(target.parameters(), source.parameters()):
        s.mul_(1.0)  # in place on a leaf that requires grad: torch refuses outside no_grad


def soft_moves_the_source(target, source, tau):
    solutions.soft_update(target, source, tau)
    solutions.soft_update(source, target, tau)


@pytest.mark.parametrize("slip, hint", [
    (soft_swapped, "swapped"),
    (soft_hard_copy, "hard copy"),
    (soft_not_in_place, "in place"),
    (soft_without_no_grad, "torch.no_grad()"),
    (soft_moves_the_source, "SOURCE network changed"),
])
def test_soft_update_slips_are_named(slip, hint, capsys):
    out = verdict(capstone.check_soft_update, slip, capsys)
    assert out.startswith("FAILED") and hint in out, out


# -- part 4: one update ----------------------------------------------------------------------------------------------

def update_with(order: str = "critics first", soft_per_agent: bool = False, soft: str = "soft", clip=True,
                zero_grad: bool = True):
    """maddpg_update as a learner might get it wrong in one place."""

    def update(agent, batch, critic_loss, actor_loss, soft_update):
        c = agent.config
        b = {key: torch.as_tensor(value) for key, value in batch.items()}
        kinds = [(agent.critic_optimizers, agent.critics, critic_loss), (agent.actor_optimizers, agent.actors,
                                                                         actor_loss)]
        if order == "actors first":
            kinds.reverse()
        for optimizers, nets, loss_fn in kinds:
            for i in range(agent.n_agents):
                loss = loss_fn(agent, i, b)
                if zero_grad:
                    optimizers[i].zero_grad()
                loss.backward()
                if clip == "value":
                    torch.nn.utils.clip_grad_value_(nets[i].parameters(), c.grad_clip)
                elif clip:
                    torch.nn.utils.clip_grad_norm_(nets[i].parameters(), c.grad_clip)
                optimizers[i].step()
                if soft_per_agent and nets is agent.actors:
                    soft_update(agent.target_actors, agent.actors, c.tau)
                    soft_update(agent.target_critics, agent.critics, c.tau)
        if soft == "soft" and not soft_per_agent:
            soft_update(agent.target_actors, agent.actors, c.tau)
            soft_update(agent.target_critics, agent.critics, c.tau)
        elif soft == "hard":
            soft_update(agent.target_actors, agent.actors, 1.0)
            soft_update(agent.target_critics, agent.critics, 1.0)
        elif soft == "swapped":  # 1 - tau where tau was meant
            soft_update(agent.target_actors, agent.actors, 1 - c.tau)
            soft_update(agent.target_critics, agent.critics, 1 - c.tau)

    return update


def test_the_slip_helper_is_right_when_nothing_is_slipped(capsys):
    assert verdict(capstone.check_maddpg_update, update_with(), capsys).startswith("PASSED")


@pytest.mark.parametrize("slip, hint", [
    (update_with(order="actors first"), "step the critics BEFORE the actors"),
    (update_with(soft="none"), "end the update with the soft updates"),
    (update_with(soft="hard"), "not by copying"),
    (update_with(soft="swapped"), "the targets moved by 1 - tau"),
    (update_with(clip=False), "clip each network's gradient norm"),
    (update_with(clip="value"), "not each gradient entry's value (clip_grad_value_)"),
    (update_with(zero_grad=False), "zero each optimiser's gradients"),
])
def test_update_slips_are_named(slip, hint, capsys):
    out = verdict(capstone.check_maddpg_update, slip, capsys)
    assert out.startswith("FAILED") and hint in out, out


def update_agent_by_agent(agent, batch, critic_loss, actor_loss, soft_update):
    """Agent i's critic step, actor step and soft updates, then agent i + 1's: the cold read's slip, which at tau =
    0.005 differs from MADDPG.update by less than the tolerance after 3 updates."""
    c = agent.config
    b = {key: torch.as_tensor(value) for key, value in batch.items()}
    for i in range(agent.n_agents):
        for optimizer, net, loss_fn in ((agent.critic_optimizers[i], agent.critics[i], critic_loss),
                                        (agent.actor_optimizers[i], agent.actors[i], actor_loss)):
            loss = loss_fn(agent, i, b)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), c.grad_clip)
            optimizer.step()
        soft_update(agent.target_actors[i], agent.actors[i], c.tau)
        soft_update(agent.target_critics[i], agent.critics[i], c.tau)


def test_an_update_agent_by_agent_fails_at_the_large_tau(capsys):
    out = verdict(capstone.check_maddpg_update, update_agent_by_agent, capsys)
    assert out.startswith("FAILED on N=3, B=8, tau=0.5") and "every critic's step first" in out, out


def test_update_that_soft_updates_after_every_agent_fails(capsys):
    # (the checker's own slip soft-updates after every agent's actor step too, so the hint names it)
    out = verdict(capstone.check_maddpg_update, update_with(soft_per_agent=True), capsys)
    assert out.startswith("FAILED") and "once per update" in out, out


# -- part 5: the n-step window -----------------------------------------------------------------------------------------

def window_with(discount=lambda gamma, k: gamma ** k, pop: bool = True, time_limit_tails: bool = False,
                terminal_tails: bool = True, clear: bool = True):
    """The course's answer with one slip a learner makes."""
    def window(pending, gamma, next_obs, terminal, flush):
        out, n = [], pending.maxlen
        tails = terminal_tails if terminal else time_limit_tails
        while pending and (len(pending) == n or (flush and tails)):
            ret = sum(discount(gamma, k) * step[2] for k, step in enumerate(pending))
            out.append((pending[0][0], pending[0][1], ret, next_obs, terminal))
            if not pop:
                break
            pending.popleft()
            if not flush:
                break
        if flush and clear:
            pending.clear()
        return out
    return window


@pytest.mark.parametrize("slip, hint", [
    (window_with(discount=lambda gamma, k: gamma ** (k + 1)), "gamma^0 = 1"),
    (window_with(discount=lambda gamma, k: 1.0), "not the plain sum"),
    (window_with(pop=False), "pending.popleft()"),
    (window_with(time_limit_tails=True), "a time-limit end keeps no shorter tail"),
    (window_with(terminal_tails=False), "at a terminal end every step left in the window becomes a transition"),
    (window_with(clear=False), "the window is emptied"),
    (lambda pending, gamma, next_obs, terminal, flush: [(1, 2)], "a list of (obs, actions, R, next_obs, terminal)"),
])
def test_n_step_window_slips_are_named(slip, hint, capsys):
    out = verdict(capstone.check_n_step_window, slip, capsys)
    assert out.startswith("FAILED") and hint in out, out


def test_a_window_with_the_right_returns_but_wrong_flags_shows_the_flags(capsys):
    # every transition stored as terminal: the returns agree with the reference's, only d differs, so the verdict
    # shows the flags (it once printed two equal lists of returns)
    def always_terminal(pending, gamma, next_obs, terminal, flush):
        return [(o, a, r, n, True) for o, a, r, n, _ in solutions.n_step_window(pending, gamma, next_obs, terminal,
                                                                                flush)]
    out = verdict(capstone.check_n_step_window, always_terminal, capsys)
    assert out.startswith("FAILED") and "(d = [0] expected, got [1])" in out, out


def test_the_n_step_window_solution_is_the_library_step_for_step(capsys):
    assert verdict(capstone.check_n_step_window, solutions.n_step_window, capsys).startswith("PASSED")


# -- part 6: the training loop ---------------------------------------------------------------------------------------

def loop_with(next_obs_after_end: bool = False, time_limit_terminal: bool = False):
    """maddpg_training_loop with a classic vectorised-env slip: the reset observation stored as an episode's last
    next observation, or a time-limit end stored as terminal."""

    def loop(env_id, episodes, config, seed, update, eval_every):
        step = capstone_env_step(next_obs_after_end, time_limit_terminal)
        original = solutions.make_vec_env

        def patched(*args, **kwargs):
            venv = original(*args, **kwargs)
            venv.step = step(venv.step)
            return venv

        solutions.BUILDING_BLOCKS["make_vec_env"] = patched
        globals_ = solutions.maddpg_training_loop.__globals__
        globals_["make_vec_env"] = patched
        try:
            return solutions.maddpg_training_loop(env_id, episodes, config, seed, update, eval_every)
        finally:
            globals_["make_vec_env"] = original
            solutions.BUILDING_BLOCKS["make_vec_env"] = original

    return loop


def capstone_env_step(next_obs_after_end: bool, time_limit_terminal: bool):
    def wrap(step):
        def stepped(actions):
            next_obs, rewards, dones, info = step(actions)
            info = dict(info)
            if next_obs_after_end:
                info["final_obs"] = next_obs  # the slip: the new episode's first observation
            if time_limit_terminal:
                info["terminated"] = info["terminated"] | info["episode_done"][:, None]
            return next_obs, rewards, dones, info
        return stepped
    return wrap


@pytest.mark.parametrize("slip, hint", [
    (loop_with(next_obs_after_end=True), "info['final_obs'][k]"),
    (loop_with(time_limit_terminal=True), "a time-limit end is not terminal"),
])
def test_training_loop_slips_are_named(slip, hint, capsys):
    out = verdict(capstone.check_maddpg_training_loop, slip, capsys)
    assert out.startswith("FAILED") and hint in out, out


# -- garbage never raises --------------------------------------------------------------------------------------------

GARBAGE = [lambda *args: "a string", lambda *args: torch.zeros(3), lambda *args: torch.tensor(float("nan")),
           lambda *args: 1 / 0, lambda *args: {"agent": None}, lambda *args: np.zeros(2)]


@pytest.mark.parametrize("part", capstone.PARTS)
@pytest.mark.parametrize("garbage", range(len(GARBAGE)))
def test_garbage_is_a_verdict_never_an_exception(part, garbage, capsys):
    if part == "maddpg_training_loop" and garbage in (2, 5):
        pytest.skip("(the loop's garbage cases are covered by the others)")
    out = verdict(getattr(capstone, f"check_{part}"), GARBAGE[garbage], capsys)
    assert out.startswith(("FAILED", "NOT DONE YET")), out
    assert "PASSED" not in out


# -- assembling and training -----------------------------------------------------------------------------------------

def test_assemble_uses_only_what_passed(capsys):
    parts = capstone.assemble(maddpg_critic_loss=solutions.maddpg_critic_loss, maddpg_actor_loss=actor_no_penalty,
                              soft_update=lambda target, source, tau: None)
    printed = capsys.readouterr().out
    assert parts["maddpg_critic_loss"] is solutions.maddpg_critic_loss
    assert parts["maddpg_actor_loss"] is capstone.REFERENCE["maddpg_actor_loss"]  # FAILED: never trained with
    assert parts["soft_update"] is capstone.REFERENCE["soft_update"]  # NOT DONE YET
    assert parts["maddpg_update"] is capstone.REFERENCE["maddpg_update"]  # not given
    lines = printed.splitlines()  # the table both capstones print (capstones.assemble): a header, a rule, the parts
    assert len(lines) == 2 + len(capstone.PARTS)
    assert "PASSED" in lines[2] and lines[2].endswith("yours")
    assert "FAILED" in lines[3] and "marl_edu's reference" in lines[3]
    assert "NOT DONE YET" in lines[4] and "not given" in lines[5] and "not given" in lines[6]


def test_assemble_refuses_an_unknown_part():
    with pytest.raises(ValueError, match="critic_los"):
        capstone.assemble(critic_los=solutions.maddpg_critic_loss)


def test_the_update_with_the_parts_passed_in_is_maddpgs_own_to_the_bit():
    # the reference update part (the slips' _update without a slip) is MADDPG.update itself, counter included
    reference, yours = capstone._agent(3, 2, 4, seed=1), capstone._agent(3, 2, 4, seed=1)
    parts = [capstone.REFERENCE[name] for name in capstone.PARTS[:3]]
    for k in range(3):
        batch = capstone._batch(16, 3, 2, 4, seed=k, as_tensors=False)
        reference.update(batch)
        capstone._reference_update(yours, batch, *parts)
    mine, theirs = capstone._parameters(yours), capstone._parameters(reference)
    assert all(torch.equal(mine[key], theirs[key]) for key in theirs)
    assert yours.updates == reference.updates == 3
    assert torch.equal(yours.generator.get_state(), reference.generator.get_state())


SMALL = dict(episodes=48, seed=1, eval_every=16, progress=False)


def test_with_the_references_train_yours_is_train_maddpg():
    from marl_edu.learners.maddpg import MADDPGConfig
    from marl_edu.training.loops import TrainResult, train

    ours = capstone.train_yours(dict(capstone.REFERENCE), **SMALL)
    theirs = train("maddpg", capstone.ENV_ID, config=MADDPGConfig(), **SMALL)
    assert isinstance(ours, TrainResult) and ours.updates == theirs.updates > 0
    assert ours.episode_returns == theirs.episode_returns and ours.evaluations == theirs.evaluations
    mine, reference = capstone._parameters(ours.agent), capstone._parameters(theirs.agent)
    assert all(torch.equal(mine[key], reference[key]) for key in reference)


def test_your_loop_trains_with_your_update_and_gives_a_train_result():
    from marl_edu.learners.maddpg import MADDPGConfig
    from marl_edu.training.loops import TrainResult, train

    calls = []

    def counted_update(agent, batch, critic_loss, actor_loss, soft_update):
        calls.append(critic_loss)
        solutions.maddpg_update(agent, batch, critic_loss, actor_loss, soft_update)

    parts = {**capstone.REFERENCE, "maddpg_update": counted_update,
             "maddpg_training_loop": solutions.maddpg_training_loop}
    ours = capstone.train_yours(parts, **SMALL)
    theirs = train("maddpg", capstone.ENV_ID, config=MADDPGConfig(), **SMALL)
    assert isinstance(ours, TrainResult) and ours.buffer is not None
    assert len(calls) == theirs.updates > 0 and calls[0] is capstone.REFERENCE["maddpg_critic_loss"]
    assert ours.episode_returns == theirs.episode_returns  # the same loop; the updates agree within 1e-5
    assert [e for e, _ in ours.evaluations] == [e for e, _ in theirs.evaluations]
    with pytest.raises(ValueError, match="no stop"):
        capstone.train_yours(parts, stop_at=8.0, **SMALL)


def test_the_answers_assembled_solve_switch2_v2(capsys):
    # the notebook's run (seed 0, the default config, a budget of 1,500 episodes) with the answers' update parts,
    # stopped at the first greedy evaluation that solves (8.0, optimum 8.3), as capstone COMA's test does. The answers'
    # own loop has no stop (it runs the whole budget, 115 s), so the loop here is loops.train's, which
    # check_maddpg_training_loop holds the answers' loop to (every stored transition, return and weight) and
    # test_your_loop_trains_with_your_update_and_gives_a_train_result trains. The answers match the reference within
    # 1e-5 per update, not to the bit, so the run is not the reference's (whose first 8.0 is at episode 501). Measured
    # with the answers' loop and the whole budget: final greedy 8.2, 8.2 and 8.1 for seeds 0, 1 and 2
    parts = capstone.assemble(**{name: getattr(solutions, name) for name in capstone.PARTS})
    assert all(parts[name] is getattr(solutions, name) for name in capstone.PARTS), capsys.readouterr().out
    run = capstone.train_yours({**parts, "maddpg_training_loop": capstone.REFERENCE["maddpg_training_loop"]},
                               episodes=1500, seed=0, progress=False, stop_at=8.0)
    assert run.evaluations[-1][1] >= 8.0 - 1e-6
    assert run.evaluations[-1][0] < 1500  # solved before the budget's end
    assert all(greedy < 8.0 - 1e-6 for _, greedy in run.evaluations[:-1])  # it stopped at the first solve
    assert optimal_team_return(capstone.ENV_ID) == pytest.approx(8.3, abs=1e-6)


def test_the_plot_draws_both_runs_and_the_lines_and_whose_says_whose_parts():
    import matplotlib
    matplotlib.use("Agg")
    from marl_edu.training.loops import TrainResult
    result = TrainResult(agent=None, evaluations=[(50, -10.0), (100, 8.1)])
    ax = capstone.plot_against_reference(result, optimal=8.3, random=-9.3, label=capstone.whose(capstone.REFERENCE))
    labels = [line.get_label() for line in ax.get_lines()]
    assert "marl_edu's parts (your stubs are empty)" in labels and any("committed" in label for label in labels)
    assert any("optimum" in label for label in labels) and any("random" in label for label in labels)
    assert capstone.reference_run()["evaluations"][-1][0] == 1500
    assert capstone.whose({name: getattr(solutions, name) for name in capstone.PARTS}) == "your MADDPG"


def test_a_loop_that_waits_for_the_warm_up_alone_is_named(capsys):
    # the check's batch (64) is larger than its warm-up (32): updating from the 32nd transition changes the policy, and
    # the first difference, an action, is named with what decides the policy (the cold read found this slip passing)
    import inspect

    source = inspect.getsource(solutions.maddpg_training_loop)
    assert "max(config.warmup_steps, config.batch_size)" in source
    namespace = dict(solutions.maddpg_training_loop.__globals__)
    exec(source.replace("max(config.warmup_steps, config.batch_size)", "config.warmup_steps"), namespace)
    out = verdict(capstone.check_maddpg_training_loop, namespace["maddpg_training_loop"], capsys)
    assert out.startswith("FAILED") and "the buffer's actions differ" in out and "max(warmup_steps, batch_size)" in out


def test_a_loop_that_skips_evaluation_points_is_named(capsys):
    # eval_every (3) < K (4): a lock-step can pass two evaluation points; the reference moves the next point up once
    import inspect

    source = inspect.getsource(solutions.maddpg_training_loop)
    namespace = dict(solutions.maddpg_training_loop.__globals__)
    exec(source.replace("            next_eval += eval_every",
                        "            next_eval = (len(episode_returns) // eval_every + 1) * eval_every"), namespace)
    out = verdict(capstone.check_maddpg_training_loop, namespace["maddpg_training_loop"], capsys)
    assert out.startswith("FAILED") and "evaluations differ" in out and "move next_eval up by eval_every once" in out


# -- the parts a part is GIVEN must be the ones it calls (the cold reads found these passing) ------------------------

def update_calling_the_librarys_soft_update(agent, batch, critic_loss, actor_loss, soft_update):
    from marl_edu.pieces import targets
    solutions.maddpg_update(agent, batch, critic_loss, actor_loss, targets.soft_update)  # not the argument


def update_with_the_librarys_losses(agent, batch, critic_loss, actor_loss, soft_update):
    solutions.maddpg_update(agent, batch, lambda ag, i, t: ag.critic_loss(i, t), lambda ag, i, t: ag.actor_loss(i, t),
                            soft_update)


def update_with_the_librarys_actor_loss(agent, batch, critic_loss, actor_loss, soft_update):
    solutions.maddpg_update(agent, batch, critic_loss, lambda ag, i, t: ag.actor_loss(i, t), soft_update)


def update_soft_updating_only_the_actors_through_the_argument(agent, batch, critic_loss, actor_loss, soft_update):
    from marl_edu.pieces import targets
    solutions.maddpg_update(agent, batch, critic_loss, actor_loss,
                            lambda t, s, tau: (soft_update if t is agent.target_actors else targets.soft_update)(t, s,
                                                                                                                tau))


@pytest.mark.parametrize("slip, hint", [
    (update_calling_the_librarys_soft_update, "the soft_update your update was given was never called"),
    (update_with_the_librarys_losses, "the critic_loss your update was given was never called"),
    (update_with_the_librarys_actor_loss, "the actor_loss your update was given was never called"),
    (update_soft_updating_only_the_actors_through_the_argument, "not called on every target network"),
])
def test_an_update_that_does_not_call_the_parts_it_is_given_fails(slip, hint, capsys):
    # these gave MADDPG.update's parameters, so they PASSED, and assemble then trained with the library's parts
    out = verdict(capstone.check_maddpg_update, slip, capsys)
    assert out.startswith("FAILED on N=2, B=32, tau=0.005, 3 updates: ") and hint in out, out
    assert "call the argument, not marl_edu's own" in out


def _loop_with_source_changed(old: str, new: str):
    """solutions.maddpg_training_loop with one line of its source replaced."""
    return with_source_changed(solutions.maddpg_training_loop, old, new)


def test_a_loop_that_calls_agent_update_instead_of_its_argument_fails(capsys):
    loop = _loop_with_source_changed("update(agent, buffer.sample(config.batch_size, rng))",
                                     "agent.update(buffer.sample(config.batch_size, rng))")
    out = verdict(capstone.check_maddpg_training_loop, loop, capsys)
    assert out.startswith("FAILED on Switch2-v2, 4 env copies, 24 episodes, seed 3: your loop called the update it "
                          "was given 0 times, expected 566"), out  # 283 lock-steps after the warm-up, 2 updates each
    assert "a loop that calls agent.update(batch) would train with marl_edu's update" in out


def test_a_loop_with_another_replay_capacity_or_one_update_per_lock_step_fails_with_a_hint_that_covers_it(capsys):
    # a replay of 100,000 where the config asks for 5,000: the case never fills either, so only the capacity tells
    loop = _loop_with_source_changed("ReplayBuffer(config.buffer_size, N, O, A)", "ReplayBuffer(100_000, N, O, A)")
    out = verdict(capstone.check_maddpg_training_loop, loop, capsys)
    assert out.startswith("FAILED on Switch2-v2, 4 env copies, 24 episodes, seed 3: your buffer keeps 100000 "
                          "transitions, the config asks for 5000"), out
    assert "ReplayBuffer(config.buffer_size, N, O, A)" in out
    # one update per lock-step where the config asks for 2: the policy that acts differs first, and the hint says so
    loop = _loop_with_source_changed("range(config.updates_per_step)", "range(1)")
    out = verdict(capstone.check_maddpg_training_loop, loop, capsys)
    assert "the buffer's actions differ" in out and "config.updates_per_step updates after each lock-step" in out, out


def test_assemble_no_longer_calls_a_loop_that_ignores_its_update_yours(capsys):
    loop = _loop_with_source_changed("update(agent, buffer.sample(config.batch_size, rng))",
                                     "agent.update(buffer.sample(config.batch_size, rng))")
    parts = capstone.assemble(maddpg_training_loop=loop)
    assert parts["maddpg_training_loop"] is capstone.REFERENCE["maddpg_training_loop"]
    assert "maddpg_training_loop | FAILED" in capsys.readouterr().out


def test_the_loop_checks_second_case_has_both_kinds_of_episode_end():
    # random play, no update: among its 24 ends at least one where every agent arrived (terminal) and one cut by the
    # time limit after some agent arrived (not terminal): the two ends a terminal-flag slip gets wrong
    import marl_edu.training.loops as train

    _, arguments, config = capstone.LOOP_CASES[1]
    ends, original = [], train.make_vec_env

    def counting(*args, **kwargs):
        venv = original(*args, **kwargs)
        step = venv.step

        def stepped(actions):
            out = step(actions)
            info = out[3]
            for k in np.flatnonzero(info["episode_done"]):
                arrived = info["terminated"][k]
                ends.append("all" if arrived.all() else "some" if arrived.any() else "none")
            return out

        venv.step = stepped
        return venv

    train.make_vec_env = counting
    try:
        result = train.train("maddpg", config=capstone.MADDPGConfig(**config), progress=False, **arguments)
    finally:
        train.make_vec_env = original
    assert len(ends) == len(result.episode_returns) >= arguments["episodes"] and result.agent.updates == 0
    assert ends.count("all") >= 1 and ends.count("some") >= 1, ends
    assert capstone.LOOP_CASES[0][2]["warmup_steps"] < capstone.LOOP_CASES[0][2]["batch_size"]


@pytest.mark.parametrize("flag, case", [
    ("False", "24 episodes of random play"),  # the first case has no end where every agent arrived
    ('bool(info["terminated"][k].any())', "24 episodes, seed 3"),  # ... but a time-limit end after one had
])
def test_a_loop_with_the_wrong_terminal_flag_fails(flag, case, capsys):
    # such a loop never solves in training
    loop = _loop_with_source_changed('terminal = bool(info["terminated"][k].all())', f"terminal = {flag}")
    out = verdict(capstone.check_maddpg_training_loop, loop, capsys)
    assert out.startswith(f"FAILED on Switch2-v2, 4 env copies, {case}"), out
    assert "the buffer's dones differ" in out and "d = 1 only when every agent of that copy arrived" in out, out


def critic_target_as_a_column(agent, i, batch):
    c = agent.config
    with torch.no_grad():
        logits = torch.stack([agent.target_actors[j](batch["next_obs"][:, j]) for j in range(agent.n_agents)], 1)
        next_actions = gumbel_softmax(logits, c.temperature, hard=True, generator=agent.generator)
        q_next = agent.target_critics[i](flatten_for_critic(batch["next_obs"], next_actions))  # (B,)
        y = batch["rewards"][:, i:i + 1] + c.gamma ** c.n_step * (1 - batch["dones"][:, i:i + 1]) * q_next[:, None]
    q = agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"]))  # (B,) - (B, 1): (B, B)
    return ((q - y) ** 2).mean()


def critic_with_torchs_gumbel_softmax(agent, i, batch):
    c = agent.config
    with torch.no_grad():
        logits = torch.stack([agent.target_actors[j](batch["next_obs"][:, j]) for j in range(agent.n_agents)], 1)
        next_actions = torch.nn.functional.gumbel_softmax(logits, tau=c.temperature, hard=True)  # the global RNG
        q_next = agent.target_critics[i](flatten_for_critic(batch["next_obs"], next_actions))
        y = batch["rewards"][:, i] + c.gamma ** c.n_step * (1 - batch["dones"][:, i]) * q_next
    return ((agent.critics[i](flatten_for_critic(batch["obs"], batch["actions"])) - y) ** 2).mean()


@pytest.mark.parametrize("slip, hint", [
    (critic_target_as_a_column, "your target y_i has shape (B, 1)"),
    (critic_with_torchs_gumbel_softmax, "torch.nn.functional.gumbel_softmax draws from torch's global random numbers"),
])
def test_the_critic_losss_broadcast_and_global_gumbel_slips_are_named(slip, hint, capsys):
    out = verdict(capstone.check_maddpg_critic_loss, slip, capsys)
    assert out.startswith("FAILED on N=2, B=8") and hint in out, out


def soft_rebinding_the_loop_variable(target, source, tau):
    for tp, sp in zip(target.parameters(), source.parameters()):
        tp = tau * sp + (1 - tau) * tp  # noqa: F841,PLW2901  (the slip: a new tensor, the target untouched)


def test_a_soft_update_that_rebinds_its_loop_variable_is_told_nothing_changed_in_place(capsys):
    out = verdict(capstone.check_soft_update, soft_rebinding_the_loop_variable, capsys)
    assert out.startswith("FAILED on tau=0.01: no parameter of the target changed in place"), out
    assert "copy_" in out and "mul_" in out and ".data" in out and "rebinds the loop's name" in out
    assert "NOT DONE" not in out
    # (an empty body, `pass`, is still an untouched stub: tests/test_solutions.py holds every check to that)


def actor_summed_over_the_batch(agent, i, batch):
    loss = solutions.maddpg_actor_loss(agent, i, batch)
    logits = agent.actors[i](batch["obs"][:, i])
    penalty = agent.config.logits_reg * (logits ** 2).mean()
    return (loss - penalty) * len(batch["obs"]) + penalty  # -sum_b sum_k pi Q + the penalty


@pytest.mark.parametrize("old, new, hint", [
    ("(logits ** 2).mean()", "(logits ** 2).sum()", "MEAN of logits_i^2 over all B * A entries"),
    ("torch.softmax(logits, dim=1)", "torch.softmax(logits, dim=0)", "softmax over the BATCH axis"),
    ("agent.critics[i](flatten_for_critic(obs, joint))", "agent.target_critics[i](flatten_for_critic(obs, joint))",
     "reads the TARGET critic"),
    ("            joint[:, i] = 0.0\n", "", "clear it first"),  # the batch's own action kept beside k
    ("            joint[:, i] = 0.0\n            joint[:, i, k] = 1.0", "            joint[:, i, k] += 1.0",
     "not added to"),
])
def test_the_actor_losss_slips_a_cold_reading_tried_are_named(old, new, hint, capsys):
    out = verdict(capstone.check_maddpg_actor_loss, with_source_changed(solutions.maddpg_actor_loss, old, new), capsys)
    assert out.startswith("FAILED") and hint in out and "Gumbel" not in out, out


def test_an_actor_loss_summed_over_the_batch_is_named(capsys):
    out = verdict(capstone.check_maddpg_actor_loss, actor_summed_over_the_batch, capsys)
    assert out.startswith("FAILED on N=2, B=8") and "SUMMED over the batch, B times too large" in out, out
    assert "Gumbel" not in out
