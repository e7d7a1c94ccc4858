"""Policy ensembles (MADDPG paper, section 4.3): M sub-policies per agent, one per episode, each learning from its
own slice of the replay. Expected values by hand."""

import math

import numpy as np
import pytest
import torch

from marl_edu.learners.ensembles import EnsembleConfig, EnsembleMADDPG, SubpolicyReplayBuffer
from marl_edu.training.checkpoints import load_policy, save_policy
from marl_edu.training.loops import train


def _fixed_ensemble(gamma=0.9) -> EnsembleMADDPG:
    """N=2, O=1, A=1, M=2, one hidden unit everywhere, biases 0. Critics and their targets: every weight 1, so
    Q(x) = sum of the inputs when they are >= 0. Sub-policy m of agent i (and its target): every weight w = m + 1, so
    its pre-activation is w^3 o_i (three layers) for o_i >= 0: m=0 -> o_i, m=1 -> 8 o_i."""
    agent = EnsembleMADDPG(2, 1, 1, EnsembleConfig(hidden=1, gamma=gamma, n_subpolicies=2, action_reg=1e-3), seed=0)
    with torch.no_grad():
        for module in (agent.critics, agent.target_critics):
            for name, p in module.named_parameters():
                p.fill_(1.0 if name.endswith("weight") else 0.0)
        for i in range(2):
            for m in range(2):
                for target in (False, True):
                    for name, p in agent.actor(i, m, target).named_parameters():
                        p.fill_(float(m + 1) if name.endswith("weight") else 0.0)
    return agent


def _batch(subpolicies) -> dict[str, torch.Tensor]:
    B = len(subpolicies)
    return {
        "obs": torch.tensor([[[0.5], [0.25]]]).repeat(B, 1, 1),  # (B, N=2, O=1)
        "actions": torch.tensor([[[0.3], [0.2]]]).repeat(B, 1, 1),  # (B, 2, A=1)
        "rewards": torch.tensor([[1.0, 2.0]]).repeat(B, 1),  # (B, 2)
        "next_obs": torch.tensor([[[0.1], [0.1]]]).repeat(B, 1, 1),  # (B, 2, 1)
        "dones": torch.zeros(B, 2),  # (B, 2)
        "subpolicies": torch.tensor(subpolicies),  # (B, 2) what each agent played
    }


def test_each_agent_acts_with_the_sub_policy_it_plays():
    agent = _fixed_ensemble()
    obs = np.full((3, 2, 1), 0.1, dtype=np.float32)  # (K=3, N=2, O=1)
    playing = np.array([[0, 0], [1, 0], [1, 1]])  # (K, N)
    # sub-policy 0: tanh(0.1) = 0.099668;  sub-policy 1: tanh(8 * 0.1) = tanh(0.8) = 0.664037
    expected = [[0.099668, 0.099668], [0.664037, 0.099668], [0.664037, 0.664037]]
    np.testing.assert_allclose(agent.act(obs, 0.0, playing)[..., 0], expected, atol=1e-5)
    np.testing.assert_allclose(agent.policy([1, 0])(obs[0])[:, 0], expected[1], atol=1e-5)


def test_critic_target_uses_the_target_sub_policies_that_were_played():
    agent = _fixed_ensemble(gamma=0.9)
    # Q_0(x) = 0.5 + 0.25 + 0.3 + 0.2 = 1.25
    # played (0, 1): mu'(o') = [tanh(0.1), tanh(0.8)] = [0.099668, 0.664037]
    #   Q'_0(x') = 0.1 + 0.1 + 0.099668 + 0.664037 = 0.963705;  y_0 = 1 + 0.9 * 0.963705 = 1.867335
    #   loss = (1.25 - 1.867335)^2 = 0.381102
    assert agent.critic_loss(0, _batch([[0, 1]])).item() == pytest.approx(0.381102, abs=1e-5)
    # played (1, 0): the same two actions swapped, the same sum: the same loss for critic 0 ...
    assert agent.critic_loss(0, _batch([[1, 0]])).item() == pytest.approx(0.381102, abs=1e-5)
    # ... played (1, 1): Q'_0 = 0.2 + 2 * 0.664037 = 1.528074; y_0 = 1 + 0.9 * 1.528074 = 2.375267
    #   loss = (1.25 - 2.375267)^2 = 1.266226; the batch of both rows averages (0.381102 + 1.266226) / 2 = 0.823664
    assert agent.critic_loss(0, _batch([[1, 1]])).item() == pytest.approx(1.266226, abs=1e-5)
    assert agent.critic_loss(0, _batch([[0, 1], [1, 1]])).item() == pytest.approx(0.823664, abs=1e-5)


def test_sub_policy_loss_and_its_gradient_by_hand():
    agent = _fixed_ensemble()
    # sub-policy 1 of agent 0: pre = 8 * 0.5 = 4, a_0 = tanh(4) = 0.999329; agent 1's action stays the batch's 0.2
    # Q_0 = 0.5 + 0.25 + 0.999329 + 0.2 = 1.949329;  L = -1.949329 + 1e-3 * 4^2 = -1.933329
    loss = agent.subpolicy_loss(0, 1, _batch([[1, 0]]))
    assert loss.item() == pytest.approx(-1.933329, abs=1e-5)
    loss.backward()
    # dL/d(last bias) = -(1 - tanh(4)^2) + 2e-3 * 4 = -(1 - 0.998659) + 0.008 = -0.001341 + 0.008 = 0.006659
    assert agent.actor(0, 1).mlp.net[-1].bias.grad.item() == pytest.approx(0.006659, abs=1e-5)
    others = [agent.actor(i, m) for i, m in ((0, 0), (1, 0), (1, 1))]
    assert all(p.grad is None for actor in others for p in actor.parameters())  # only mu_0^(1) moves


def test_update_steps_only_the_sub_policies_with_a_batch():
    agent = _fixed_ensemble()
    batch = {key: value.numpy() for key, value in _batch([[0, 1], [1, 0]]).items()}
    before = [[p.clone() for p in agent.actors[index].parameters()] for index in range(4)]
    agent.update(batch | {"slices": [[batch, None], [None, batch]]})  # mu_0^(0), mu_1^(1) have data, not the others
    moved = [any(not torch.equal(a, b) for a, b in zip(before[index], agent.actors[index].parameters()))
             for index in range(4)]  # actors[i * M + m]
    assert moved == [True, False, False, True]
    for slices in ([[batch, None]], None, [batch, batch]):  # one row; nothing; rows that are batches, not lists
        with pytest.raises(ValueError, match="N=2 lists of M=2"):
            agent.update(batch | {"slices": slices})
    with pytest.raises(ValueError, match="needs 'slices'"):
        agent.update(batch)


def test_slices_hold_only_the_episodes_a_sub_policy_played():
    buffer = SubpolicyReplayBuffer(capacity=10, n_agents=2, obs_dim=1, act_dim=1, n_subpolicies=3)
    zeros = np.zeros((2, 1), dtype=np.float32)
    for t, playing in enumerate([[0, 2], [1, 2], [0, 0], [2, 1]]):
        buffer.add(zeros, zeros, np.full(2, float(t), dtype=np.float32), zeros, np.zeros(2), subpolicies=playing)
    rng = np.random.default_rng(0)
    # agent 0 played sub-policy 0 at t = 0 and 2; agent 1 played sub-policy 2 at t = 0 and 1
    assert set(buffer.sample_slice(0, 0, 50, rng)["rewards"][:, 0]) == {0.0, 2.0}
    assert set(buffer.sample_slice(1, 2, 50, rng)["rewards"][:, 0]) == {0.0, 1.0}
    sample = buffer.sample_slice(0, 2, 5, rng)
    assert sample["rewards"][:, 0].tolist() == [3.0] * 5 and sample["subpolicies"].tolist() == [[2, 1]] * 5
    slices = buffer.sample_slices(4, rng)  # N=2 lists of M=3
    assert [[s is None for s in row] for row in slices] == [[False, False, False], [False, False, False]]
    batch = buffer.sample(6, rng)  # the whole buffer's B = 6 for the critics, and every slice for the sub-policies
    assert batch["rewards"].shape == (6, 2) and batch["subpolicies"].shape == (6, 2)
    assert len(batch["slices"]) == 2 and all(len(row) == 3 for row in batch["slices"])
    assert batch["slices"][0][0]["rewards"].shape == (6, 2)
    with pytest.raises(ValueError, match="needs subpolicies"):
        buffer.add(zeros, zeros, np.zeros(2), zeros, np.zeros(2))
    with pytest.raises(ValueError, match=r"subpolicies must be in \[0, 2\]"):
        buffer.add(zeros, zeros, np.zeros(2), zeros, np.zeros(2), subpolicies=[0, 3])
    with pytest.raises(ValueError, match="dtype"):
        buffer.add(zeros, zeros, np.zeros(2), zeros, np.zeros(2), subpolicies=[0.0, 1.0])
    with pytest.raises(ValueError, match=r"subpolicies: expected shape \(2,\)"):
        buffer.add(zeros, zeros, np.zeros(2), zeros, np.zeros(2), subpolicies=[0, 1, 2])
    empty = SubpolicyReplayBuffer(capacity=10, n_agents=2, obs_dim=1, act_dim=1, n_subpolicies=2)
    empty.add(zeros, zeros, np.zeros(2), zeros, np.zeros(2), subpolicies=[0, 0])
    with pytest.raises(ValueError, match="agent 1 has not played sub-policy 1 yet"):
        empty.sample_slice(1, 1, 4, rng)
    assert empty.sample_slices(4, rng)[1][1] is None


def test_draws_are_uniform_and_seeded():
    agent = EnsembleMADDPG(3, 4, 2, EnsembleConfig(n_subpolicies=3), seed=5)
    draws = agent.draw_subpolicies(3000)  # (3000, N=3)
    assert draws.shape == (3000, 3) and set(np.unique(draws)) == {0, 1, 2}
    # each of 3 values in 9000 draws: 3000 expected, standard deviation sqrt(9000 * 1/3 * 2/3) = 44.7
    assert np.abs(np.bincount(draws.ravel()) - 3000).max() < 5 * 44.7
    again = EnsembleMADDPG(3, 4, 2, EnsembleConfig(n_subpolicies=3), seed=5)
    np.testing.assert_array_equal(again.draw_subpolicies(3000), draws)
    assert len(agent.actors) == 3 * 3 and len(agent.critics) == 3  # N*M actors, one critic per agent


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3"])
def test_bad_ensemble_sizes_raise(value):
    with pytest.raises(ValueError, match="n_subpolicies must be a positive int"):
        EnsembleConfig(n_subpolicies=value).validate()


def test_an_ensemble_plays_each_copys_draw_until_that_copys_episode_ends():
    agent, again = _fixed_ensemble(), _fixed_ensemble()  # the same seed: the same draws
    obs = np.full((3, 2, 1), 0.1, dtype=np.float32)  # (K=3, N=2, O=1)
    first = again.draw_subpolicies(3)  # (K, N) what act draws for the 3 copies' first episodes
    renewed = again.draw_subpolicies(1)[0]  # (N,) then what end_episode(1) draws for copy 1
    # sub-policy 0: tanh(0.1) = 0.099668;  sub-policy 1: tanh(8 * 0.1) = tanh(0.8) = 0.664037
    force = np.array([0.099668, 0.664037])
    np.testing.assert_allclose(agent.act(obs, 0.0)[..., 0], force[first], atol=1e-5)
    np.testing.assert_array_equal(agent.playing, first)
    agent.end_episode(1)
    np.testing.assert_array_equal(agent.playing, [first[0], renewed, first[2]])  # only copy 1 drew again
    np.testing.assert_allclose(agent.act(obs, 0.0)[1, :, 0], force[renewed], atol=1e-5)
    with pytest.raises(ValueError, match="plays sub-policies for K=3 env copies, got obs for 1"):
        agent.act(obs[:1], 0.0)  # another number of copies needs its own subpolicies


def test_bad_sub_policies_raise():
    agent = _fixed_ensemble()
    obs = np.zeros((1, 2, 1), dtype=np.float32)
    with pytest.raises(ValueError, match=r"subpolicies must be in \[0, 1\]"):
        agent.policy([0, 2])
    with pytest.raises(ValueError, match="EnsembleConfig"):
        EnsembleMADDPG(2, 1, 1, config=object())
    assert math.isclose(agent.act(obs, 0.0, np.array([[1, 1]]))[0, 0, 0], 0.0)  # tanh(8 * 0) = 0


def test_training_an_ensemble_is_deterministic_and_saves_every_sub_policy(tmp_path):
    config = EnsembleConfig(n_envs=4, warmup_steps=100, batch_size=32, n_subpolicies=2)

    def run():
        return train("maddpg_ensemble", "simple_adversary_v3", 12, config, seed=1, eval_every=12, eval_episodes=1,
                                progress=False)

    first, second = run(), run()
    assert first.updates > 0 and first.episode_returns == second.episode_returns
    assert first.evaluations == second.evaluations
    # the run's replay comes back with the draw stored beside every transition (notebook 21 counts its slices):
    # 12 episodes of 25 steps, each agent on sub-policy 0 or 1, every transition in exactly one slice per agent
    played = first.buffer.subpolicies[:len(first.buffer)]  # (300, N)
    assert len(first.buffer) == first.env_steps == 12 * 25 and played.shape == (300, 3)
    assert set(np.unique(played).tolist()) <= {0, 1} and np.array_equal(played, second.buffer.subpolicies[:300])
    path = save_policy(first.agent, "simple_adversary_v3", tmp_path / "ensemble.pt")
    loaded = load_policy(path, algo="maddpg_ensemble")
    obs = np.random.default_rng(0).normal(size=(2, 3, 10)).astype(np.float32)  # (K, N, O)
    playing = np.array([[0, 1, 1], [1, 0, 1]])
    np.testing.assert_array_equal(loaded.act(obs, 0.0, playing), first.agent.act(obs, 0.0, playing))


def test_update_checks_the_critics_batch_and_every_slice_before_any_step():
    agent = _fixed_ensemble()
    batch = {key: value.numpy() for key, value in _batch([[0, 1], [1, 0]]).items()}
    before = [p.clone() for p in agent.critics.parameters()]
    nan_obs = batch | {"obs": np.where(np.arange(4).reshape(2, 2, 1) == 3, np.nan, batch["obs"])}  # (1, 1, 0) NaN
    bad_slice = batch | {"subpolicies": np.array([[0, 2], [1, 0]])}  # M = 2: sub-policy 2 does not exist
    cases = [
        (batch | {"slices": [[batch, None], [None, nan_obs]]},
         r"^batch\['slices'\]\[1\]\[1\]\['obs'\] must be finite, got 1 NaN and 0 infinite of 4 entries, the first at "
         r"index \(1, 1, 0\)$"),
        (batch | {"slices": [[bad_slice, None], [None, batch]]},
         r"^batch\['slices'\]\[0\]\[0\]\['subpolicies'\] must be in \[0, 1\], got \[\[0, 2\], \[1, 0\]\]$"),
        ({k: v for k, v in batch.items() if k != "subpolicies"} | {"slices": [[batch, None], [None, batch]]},
         r"^batch is missing \['subpolicies'\]"),
        (nan_obs | {"slices": [[batch, None], [None, batch]]}, r"^batch\['obs'\] must be finite"),
        (batch | {"rewards": batch["rewards"][:, :1], "slices": [[batch, None], [None, batch]]},
         r"^batch\['rewards'\]: expected shape \(B=2, N=2\), got \(2, 1\)"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            agent.update(bad)
    assert agent.updates == 0 and all(torch.equal(a, b) for a, b in zip(before, agent.critics.parameters()))


def test_a_refused_transition_leaves_the_sub_policy_record_of_the_oldest_one():
    buffer = SubpolicyReplayBuffer(capacity=2, n_agents=2, obs_dim=1, act_dim=1, n_subpolicies=2)
    zeros = np.zeros((2, 1), dtype=np.float32)
    for _ in range(2):  # full: the next transition would overwrite slot 0
        buffer.add(zeros, zeros, np.zeros(2), zeros, np.zeros(2), subpolicies=[0, 0])
    nan_obs = np.array([[0.0], [np.nan]], dtype=np.float32)
    with pytest.raises(ValueError, match=r"^obs must be finite, got 1 NaN and 0 infinite of 2 entries, the first at "
                                         r"index \(1, 0\)$"):
        buffer.add(nan_obs, zeros, np.zeros(2), zeros, np.zeros(2), subpolicies=[1, 1])
    with pytest.raises(ValueError, match=r"^rewards must be finite"):
        buffer.add(zeros, zeros, np.array([np.inf, 0.0]), zeros, np.zeros(2), subpolicies=[1, 1])
    assert buffer.subpolicies.tolist() == [[0, 0], [0, 0]] and len(buffer) == 2  # slot 0 still says (0, 0)
    assert np.isfinite(buffer.obs).all() and np.isfinite(buffer.rewards).all()


def test_a_sub_policy_with_an_infinite_weight_cannot_act():
    agent = _fixed_ensemble()
    with torch.no_grad():
        agent.actor(1, 0).mlp.net[0].weight.fill_(np.inf)  # tanh(inf) = 1 would look like a force: checked before
    obs = np.full((1, 2, 1), 0.1, dtype=np.float32)
    agent.act(obs, 0.0, np.array([[0, 1]]))  # agent 1 plays sub-policy 1: still finite
    with pytest.raises(ValueError, match=r"^the actors' outputs are not finite although the observations are: the "
                                         r"weights \['2.mlp.net.0.weight'\] hold NaN or infinity"):
        agent.act(obs, 0.0, np.array([[0, 0]]))  # actors[i * M + m] = actors[2]
