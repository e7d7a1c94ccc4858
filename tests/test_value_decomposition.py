"""IQL, VDN and QMIX: mixers and TD targets by hand, monotonicity, the episode replay, checks, determinism, resume."""

import math

import numpy as np
import pytest
import torch

from marl_edu.data.buffers import EpisodeReplay
from marl_edu.data.rollout import collect_episodes
from marl_edu.envs.make import make_vec_env
from marl_edu.learners.value_decomposition import IQL, QMIX, VDN, QMixer, ValueDecompositionConfig, vdn_mix
from marl_edu.training.checkpoints import load_policy, save_policy
from marl_edu.training.loops import train
from marl_edu.training.resume import RunCheckpoint, TrainingInterrupted, load_run_state
from batches import entry_set, episode_batch, replaced
from test_resume import StopAt, assert_same_run

SMALL = ValueDecompositionConfig(n_envs=4, hidden=16, batch_episodes=4, target_update_every=3, mixer_embed=8,
                                 hyper_hidden=8)


def hand_mixer() -> QMixer:
    """A QMixer for N=2 agents, S=2, E=1 whose hypernetworks ignore the state (every weight 0) and output their biases:
    W_1 = |[-2, 3]| = [2, 3], b_1 = 0.5, w_2 = |-1| = 1, b_2 = 0.25 (each hidden layer of one unit: relu(0 + 1) = 1)."""
    mixer = QMixer(n_agents=2, state_dim=2, embed=1, hyper_hidden=1)
    with torch.no_grad():
        for p in mixer.parameters():
            p.zero_()
        for net, out in ((mixer.hyper_w1, [-2.0, 3.0]), (mixer.hyper_w2, [-1.0]), (mixer.hyper_b2, [0.25])):
            net.net[0].bias.fill_(1.0)  # hidden unit relu(0 * s + 1) = 1
            net.net[2].weight.fill_(0.0)
            net.net[2].bias.copy_(torch.tensor(out))  # so the output is the bias
        mixer.hyper_b1.bias.fill_(0.5)
    return mixer


def test_vdn_sums_the_chosen_utilities():
    q = torch.tensor([[1.0, 2.5], [-0.5, 0.25]])  # (B=2, N=2)
    assert vdn_mix(q).tolist() == [3.5, -0.25]  # 1 + 2.5, -0.5 + 0.25
    with pytest.raises(ValueError, match="q_taken must be a float tensor"):
        vdn_mix(torch.tensor([1, 2]))


def test_qmix_by_hand():
    mixer, state = hand_mixer(), torch.zeros(2, 2)
    q = torch.tensor([[1.0, 1.0], [-2.0, 0.0]])  # (B=2, N=2)
    # row 0: elu(2 * 1 + 3 * 1 + 0.5) = 5.5; Q_tot = 1 * 5.5 + 0.25 = 5.75
    # row 1: elu(2 * -2 + 3 * 0 + 0.5) = elu(-3.5) = exp(-3.5) - 1 = -0.969803; Q_tot = -0.969803 + 0.25 = -0.719803
    assert mixer(q, state).tolist() == pytest.approx([5.75, math.exp(-3.5) - 1 + 0.25], abs=1e-6)


def test_qmix_is_monotonic_in_every_agents_utility_for_any_state():
    torch.manual_seed(0)
    mixer = QMixer(n_agents=3, state_dim=6, embed=8, hyper_hidden=16)
    q = (torch.randn(256, 3) * 5).requires_grad_()  # (B, N)
    state = torch.randn(256, 6) * 3  # (B, S)
    grad, = torch.autograd.grad(mixer(q, state).sum(), q)  # (B, N): dQ_tot/dQ_i, row b only depends on its own q
    assert (grad >= 0).all() and (grad > 0).any()


def test_qmix_checks_its_inputs():
    mixer = QMixer(n_agents=2, state_dim=2, embed=1, hyper_hidden=1)
    with pytest.raises(ValueError, match="q_taken"):
        mixer(torch.zeros(4, 3), torch.zeros(4, 2))  # 3 agents for a mixer of 2
    with pytest.raises(ValueError, match="state"):
        mixer(torch.zeros(4, 2), torch.zeros(5, 2))  # B = 5 states for 4 rows


# One episode of T=2 steps, N=2 agents, A=2 actions, O=1 (so S=2), gamma = 0.9. The online network's values at t+1
# choose a*, the target network's value them (double Q):
#   t+1 = 1: online agent 0 [1, 3] -> a* = 1, agent 1 [2, 0] -> a* = 0; target agent 0 [10, 20], agent 1 [7, 9]
#            double Q: Q'_0(a*=1) = 20, Q'_1(a*=0) = 7; max of the target: 20 and 9
#   step 1 is terminal (d = 1): its target is its reward alone.
# team rewards: step 0: -0.1 + -0.1 = -0.2; step 1: 5 + -0.1 = 4.9
ONLINE = torch.tensor([[[[0.0, 0.0], [0.0, 0.0]], [[1.0, 3.0], [2.0, 0.0]], [[0.0, 1.0], [5.0, 4.0]]]])  # (1, 3, 2, 2)
TARGET = torch.tensor([[[[0.0, 0.0], [0.0, 0.0]], [[10.0, 20.0], [7.0, 9.0]], [[8.0, 8.0], [8.0, 8.0]]]])
BATCH = {"obs": torch.zeros(1, 3, 2, 1), "actions": torch.zeros(1, 3, 2, dtype=torch.int64),
         "rewards": torch.tensor([[[-0.1, -0.1], [5.0, -0.1]]]), "dones": torch.tensor([[0.0, 1.0]]),
         "step_mask": torch.ones(1, 2), "agent_mask": torch.ones(1, 2, 2)}


def targets_of(learner, double_q=True):
    agent = learner(2, 1, 2, ValueDecompositionConfig(gamma=0.9, double_q=double_q, lam=0.0))  # one-step targets
    if isinstance(agent, QMIX):
        agent.target_mixer = hand_mixer()
    agent.q_values = lambda obs, actions, target=False: TARGET if target else ONLINE  # the values above
    return agent.td_targets(BATCH, ONLINE)


def test_vdn_td_target_by_hand():
    # y_0 = -0.2 + 0.9 * (20 + 7) = 24.1;  y_1 = 4.9 (terminal)
    assert targets_of(VDN).flatten().tolist() == pytest.approx([24.1, 4.9])
    # without double Q, the target's own max: y_0 = -0.2 + 0.9 * (20 + 9) = 25.9
    assert targets_of(VDN, double_q=False).flatten().tolist() == pytest.approx([25.9, 4.9])


def test_td_lambda_target_by_hand():
    # lam = 0.5: the step-1 target (terminal) is 4.9 as before, and step 0 mixes the next value with it:
    # y_0 = -0.2 + 0.9 * ((1 - 0.5) * 27 + 0.5 * 4.9) = -0.2 + 0.9 * 15.95 = 14.155
    agent = VDN(2, 1, 2, ValueDecompositionConfig(gamma=0.9, lam=0.5))
    agent.q_values = lambda obs, actions, target=False: TARGET if target else ONLINE
    assert agent.td_targets(BATCH, ONLINE).flatten().tolist() == pytest.approx([14.155, 4.9])


def test_iql_td_targets_by_hand_one_per_agent():
    # every agent learns the team reward: y_0 = [-0.2 + 0.9 * 20, -0.2 + 0.9 * 7] = [17.8, 6.1], y_1 = [4.9, 4.9]
    assert targets_of(IQL).shape == (1, 2, 2)
    assert targets_of(IQL).flatten().tolist() == pytest.approx([17.8, 6.1, 4.9, 4.9])


def test_qmix_td_target_by_hand():
    # f'([20, 7]) = elu(2 * 20 + 3 * 7 + 0.5) + 0.25 = 61.5 + 0.25 = 61.75;  y_0 = -0.2 + 0.9 * 61.75 = 55.375
    assert targets_of(QMIX).flatten().tolist() == pytest.approx([55.375, 4.9])


def test_td_loss_leaves_padding_out():
    # (1 - 0)^2 and (2 - 0)^2 on the real steps, the padded 99 left out: (1 + 4) / 2 = 2.5
    q_tot, targets, mask = torch.tensor([[1.0, 2.0, 99.0]]), torch.zeros(1, 3), torch.tensor([[1.0, 1.0, 0.0]])
    assert VDN.td_loss(q_tot, targets, mask).item() == pytest.approx(2.5)
    # IQL's (B, T, N): the step mask covers every agent: ((1 + 9) + (4 + 0)) / 4 = 3.5
    q = torch.tensor([[[1.0, 3.0], [2.0, 0.0], [7.0, 7.0]]])
    assert IQL.td_loss(q, torch.zeros(1, 3, 2), mask).item() == pytest.approx(3.5)


def test_epsilon_greedy_probabilities():
    agent = VDN(2, 3, 4, SMALL)
    obs, last = torch.rand(5, 2, 3), torch.full((5, 2), -1)
    probs, h = agent.policy_step(obs, last, agent.initial_hidden(10), epsilon=0.2)
    assert probs.shape == (5, 2, 4) and h.shape == (10, 16)
    assert probs.sum(-1).flatten().tolist() == pytest.approx([1.0] * 10)
    # the greedy action gets 1 - 0.2 + 0.2 / 4 = 0.85, the other three 0.2 / 4 = 0.05 each
    assert sorted(probs[0, 0].tolist()) == pytest.approx([0.05, 0.05, 0.05, 0.85])


def test_update_checks_the_batch_and_names_the_entry():
    agent = VDN(2, 2, 5, SMALL)
    good = {key: value for key, value in episode_batch().items() if key != "epsilon"}
    agent.update(good)
    for change, match in [(replaced("rewards", torch.zeros(2, 3)), "batch\\['rewards'\\]"),
                          (entry_set("obs", (0, 1, 0, 0), float("nan")), "batch\\['obs'\\]"),
                          (entry_set("actions", (1, 0, 1), 5), "batch\\['actions'\\]"),
                          (lambda b: {k: v for k, v in b.items() if k != "dones"}, "missing \\['dones'\\]")]:
        before = [p.clone() for p in agent.q_net.parameters()]
        with pytest.raises(ValueError, match=match):
            agent.update(change(good))
        assert all(torch.equal(a, b) for a, b in zip(before, agent.q_net.parameters()))  # nothing learned


def test_config_names_a_bad_value():
    for field, value, match in [("lr", -1.0, "lr"), ("gamma", 1.5, "gamma"), ("batch_episodes", 0, "batch_episodes"),
                                ("epsilon_end", float("nan"), "epsilon_end"), ("double_q", 1, "double_q"),
                                ("mixer_embed", 10_000, "mixer_embed")]:
        with pytest.raises(ValueError, match=match):
            ValueDecompositionConfig(**{field: value}).validate()


def test_episode_replay_pads_stores_and_samples_whole_episodes():
    replay = EpisodeReplay(capacity=3, max_steps=5, n_agents=2, obs_dim=2, n_actions=5)
    batch = episode_batch(B=2, T=3)
    batch["step_mask"][1, 2] = 0.0  # episode 1 ended after 2 steps: its step 2 is padding
    batch["agent_mask"][1, 2] = 0.0  # (no agent acts on padding)
    batch["dones"][1, 1:] = 1.0
    replay.add(batch)
    assert len(replay) == 2 and replay.lengths[:2].tolist() == [3, 2]
    assert replay.dones[0].tolist() == [0, 0, 0, 1, 1]  # steps 3 and 4 padded as done
    assert torch.equal(torch.from_numpy(replay.obs[0, :4]), batch["obs"][0])
    sample = replay.sample(4, np.random.default_rng(0))
    assert sample["obs"].shape[1] - 1 == sample["rewards"].shape[1] == max(replay.lengths[:2])  # cut to the longest
    replay.add(episode_batch(B=2, T=1))  # two more: the ring overwrites the oldest
    assert len(replay) == 3 and replay.lengths.tolist() == [1, 2, 1]


def test_episode_replay_refuses_bad_batches_and_stores_nothing():
    replay = EpisodeReplay(capacity=4, max_steps=2, n_agents=2, obs_dim=2, n_actions=5)
    with pytest.raises(ValueError, match="episodes of up to T=2 steps fit, got 3"):
        replay.add(episode_batch(T=3))
    with pytest.raises(ValueError, match="batch\\['obs'\\]"):
        replay.add(episode_batch(O=3))
    assert len(replay) == 0
    with pytest.raises(ValueError, match="empty EpisodeReplay"):
        replay.sample(2, np.random.default_rng(0))


def test_collected_episodes_go_through_the_replay_into_an_update():
    venv = make_vec_env("Switch2-v0", 4, seed=0)
    agent = QMIX(venv.n_agents, venv.obs_dim, venv.n_actions, SMALL)
    batch, returns, steps = collect_episodes(agent, venv, epsilon=1.0)
    replay = EpisodeReplay(8, venv.max_steps, venv.n_agents, venv.obs_dim, venv.n_actions)
    replay.add(batch)
    before = [p.clone() for p in agent.mixer.parameters()]
    out = agent.update(replay.sample(4, np.random.default_rng(0)))
    assert math.isfinite(out["td_loss"]) and len(returns) == 4 and steps == int(batch["step_mask"].sum())
    assert not all(torch.equal(a, b) for a, b in zip(before, agent.mixer.parameters()))  # the mixer learns too


@pytest.mark.parametrize("learner", [IQL, VDN, QMIX])
def test_training_is_deterministic_for_a_seed_and_the_policy_file_round_trips(learner, tmp_path):
    runs = [train(learner, "Switch2-v0", 16, SMALL, seed=2, eval_every=8, progress=False)
            for _ in range(2)]
    assert_same_run(*runs)
    path = save_policy(runs[0].agent, "Switch2-v0", tmp_path / "policy.pt")
    loaded = load_policy(path, env_id="Switch2-v0")
    assert type(loaded) is learner
    for a, b in zip(runs[0].agent.q_net.parameters(), loaded.q_net.parameters()):
        assert torch.equal(a, b)


def test_an_interrupted_run_resumes_to_the_same_bits(tmp_path):
    kwargs = dict(env_id="Switch2-v0", episodes=24, config=SMALL, eval_every=8, seed=4, progress=False, learner=QMIX)
    whole = train(**kwargs)
    path = tmp_path / "run.pt"
    with pytest.raises(TrainingInterrupted):
        train(**kwargs, checkpoint=StopAt(path, 12))
    resumed = train(**kwargs, checkpoint=RunCheckpoint(path, math.inf, resume=load_run_state(path)[1]))
    assert_same_run(whole, resumed)
    assert np.array_equal(whole.buffer.obs, resumed.buffer.obs)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_vdn_and_qmix_refuse_non_finite_utilities_and_states(value):
    q = torch.tensor([[1.0, value]])  # (B=1, N=2)
    with pytest.raises(ValueError, match=r"^q_taken must be finite, got"):
        vdn_mix(q)
    mixer = QMixer(n_agents=2, state_dim=2, embed=4, hyper_hidden=4)
    with pytest.raises(ValueError, match=r"^q_taken must be finite, got"):
        mixer(q, torch.zeros(1, 2))
    with pytest.raises(ValueError, match=r"^state must be finite, got"):
        mixer(torch.ones(1, 2), torch.tensor([[0.0, value]]))


def test_qmix_names_a_dtype_other_than_its_weights_and_sizes_beyond_the_limits():
    mixer = QMixer(n_agents=2, state_dim=2, embed=4, hyper_hidden=4)
    with pytest.raises(ValueError, match=r"^q_taken: expected torch.float32 elements \(the mixer's weights'\), got "
                                         r"torch.float64"):
        mixer(torch.ones(1, 2, dtype=torch.float64), torch.zeros(1, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"^state: expected torch.float32 elements"):
        mixer(torch.ones(1, 2), torch.zeros(1, 2, dtype=torch.float64))
    for kwargs, message in [({"hyper_hidden": 10**7}, r"^hyper_hidden must be a positive int at most 4,096"),
                            ({"embed": 10**6}, r"^embed must be a positive int at most 4,096"),
                            ({"n_agents": 10**5}, r"^n_agents must be a positive int at most 64"),
                            ({"state_dim": 0}, r"^state_dim must be a positive int, got 0")]:
        with pytest.raises(ValueError, match=message):
            QMixer(**({"n_agents": 2, "state_dim": 2} | kwargs))


def test_td_loss_names_an_empty_mask_and_a_broadcast():
    with pytest.raises(ValueError, match=r"mask is all zero"):
        IQL.td_loss(torch.ones(2, 3), torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"^targets: expected shape \(2, 3\), got \(2, 1\)"):
        IQL.td_loss(torch.ones(2, 3), torch.zeros(2, 1), torch.ones(2, 3))  # (B, T) against (B, 1): no broadcast
    with pytest.raises(ValueError, match=r"^step_mask: expected shape \(B=2, T=3\)"):
        IQL.td_loss(torch.ones(2, 3, 2), torch.zeros(2, 3, 2), torch.ones(2, 3, 2))  # IQL's mask is per step


def test_config_names_a_batch_larger_than_the_replay():
    with pytest.raises(ValueError, match=r"^batch_episodes must be at most buffer_episodes \(8\), got 64"):
        ValueDecompositionConfig(batch_episodes=64, buffer_episodes=8).validate()


def test_qmixs_mixer_cannot_fit_a_monotonic_table_that_takes_a_bonus_away():
    # notebook 10 section 1: "pay 1 unless both play 1", [[1, 1], [1, 0]], ranks each agent's actions the same way
    # whatever the other plays (a monotonic mix can fit it: fits_exactly "monotonic"), but QMIX's mixer has increasing
    # differences: each hidden unit is the convex, increasing elu of a non-negative mix of the utilities, so
    # d^2 Q_tot / dq_0 dq_1 >= 0 and Q(hi, hi) + Q(lo, lo) >= Q(hi, lo) + Q(lo, hi): here 1 + 0 against 1 + 1, short by
    # 1. With each agent's utilities ranked as the table ranks its actions, the closest fit moves each of the 4 entries
    # by 1/4 (the least squares way to close a gap of 1 along coefficients +-1), a mean squared error of
    # 4 * (1/4)^2 / 4 = 1/16; ranked the other way for one agent or both, monotonicity itself is broken and the best
    # errors are larger (1/8, 1/6). So no fit gets below 1/16, and gradient descent gets to it from this start
    from marl_edu.learners.matrix_game import fits_exactly

    table = torch.tensor([[1.0, 1.0], [1.0, 0.0]])  # (A, A) rows: agent 0's action, columns: agent 1's
    assert fits_exactly(table, "monotonic") and not fits_exactly(table, "sum")
    torch.manual_seed(0)
    mixer = QMixer(n_agents=2, state_dim=3)
    utilities = torch.nn.Parameter(torch.randn(2, 2))  # (N, A) q_i(a_i)
    optimizer = torch.optim.Adam([*mixer.parameters(), utilities], lr=1e-2)
    joint = [(a_0, a_1) for a_0 in range(2) for a_1 in range(2)]
    for _ in range(1500):
        q = torch.stack([torch.stack([utilities[0, a_0], utilities[1, a_1]]) for a_0, a_1 in joint])  # (4, N)
        q_tot = mixer(q, torch.zeros(4, 3))  # (4,) one state
        loss = ((q_tot - table.flatten()) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert 1 / 16 - 1e-4 <= loss.item() <= 1 / 16 + 1e-3  # at the bound, not below it
