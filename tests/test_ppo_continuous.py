"""Continuous IPPO and MAPPO (marl_edu.learners.ppo_continuous, loops.train): the Gaussian policy's
log-density and entropy against values worked out by hand, clipped (not squashed) actions, the values each learner's
critic sees, bad inputs, the update's determinism, and the on-policy loop on the particle envs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from marl_edu.learners.ppo_continuous import ContinuousIPPO, ContinuousMAPPO, ContinuousPPOConfig, GaussianActor
from marl_edu.training.loops import train


def _zero_mean_actor(log_sigma: float) -> GaussianActor:
    actor = GaussianActor(in_dim=3, action_dim=2, hidden=8, log_std_start=log_sigma)
    with torch.no_grad():
        for p in actor.mean.parameters():
            p.zero_()  # m_theta(x) = 0 for every x
    return actor


def test_gaussian_log_density_by_hand():
    # m = (0, 0), sigma = 0.5 in both entries, a = (0.5, -1.0): z = (a - m) / sigma = (1, -2)
    # log p = sum over entries of -z^2 / 2 - log sigma - log(2 pi) / 2
    #       = -(1 + 4) / 2 - 2 log 0.5 - log(2 pi) = -2.5 + 1.386294 - 1.837877 = -2.951583
    actor = _zero_mean_actor(math.log(0.5))
    log_p = actor.log_prob(torch.zeros(1, 3), torch.tensor([[0.5, -1.0]]))
    assert log_p.shape == (1,) and log_p.item() == pytest.approx(-2.951583, abs=1e-5)


def test_gaussian_entropy_by_hand():
    # H = sum over the 2 entries of log sigma + (1 + log(2 pi)) / 2 = 2 (-0.693147 + 1.418939) = 1.451584
    assert _zero_mean_actor(math.log(0.5)).entropy().item() == pytest.approx(1.451584, abs=1e-5)


def test_actions_are_sampled_unclipped_and_played_clipped():
    # sigma = e^1 = 2.7: many samples leave [-1, 1]; the loop clips what the env gets, the noise-free policy too
    agent = ContinuousMAPPO(3, 4, 2, ContinuousPPOConfig(log_std_start=1.0), seed=0)
    obs = np.random.default_rng(0).normal(size=(8, 3, 4)).astype(np.float32)
    sampled = agent.act(obs)
    assert sampled.shape == (8, 3, 2) and np.abs(sampled).max() > 1.0
    played = agent.greedy_policy()(obs[0])
    assert played.shape == (3, 2) and np.abs(played).max() <= 1.0


def test_mappo_values_one_v_of_the_state_and_ippo_one_per_agent():
    obs = torch.randn(2, 5, 3, 4)  # (B, T+1, N, O)
    mappo, ippo = ContinuousMAPPO(3, 4, 2, seed=0), ContinuousIPPO(3, 4, 2, seed=0)
    v = mappo.values(obs)
    assert v.shape == (2, 5, 3) and torch.equal(v[..., 0], v[..., 1]) and torch.equal(v[..., 1], v[..., 2])
    w = ippo.values(obs)
    assert w.shape == (2, 5, 3) and not torch.equal(w[..., 0], w[..., 1])


def _batch(B=4, T=5, N=3, O=4, A=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randn(B, T + 1, N, O, generator=g), "actions": torch.randn(B, T, N, A, generator=g),
            "rewards": torch.randn(B, T, N, generator=g), "dones": torch.zeros(B, T)}


@pytest.mark.parametrize("learner", [ContinuousMAPPO, ContinuousIPPO])
def test_an_update_moves_every_network_and_is_the_same_for_a_seed(learner):
    config = ContinuousPPOConfig(epochs=2, minibatches=2)
    a, b = learner(3, 4, 2, config, seed=7), learner(3, 4, 2, config, seed=7)
    before = {k: v.clone() for k, v in a.actor.state_dict().items()}
    critic_before = {k: v.clone() for k, v in a.critic.state_dict().items()}
    figures = a.update(_batch())
    b.update(_batch())
    assert set(figures) == {"critic_loss", "actor_loss", "entropy", "actor_steps", "sigma"}
    assert not torch.equal(before["log_std"], a.actor.log_std.detach())
    assert any(not torch.equal(before[k], v) for k, v in a.actor.state_dict().items() if k != "log_std")
    assert any(not torch.equal(critic_before[k], v) for k, v in a.critic.state_dict().items())
    for x, y in zip([*a.actor.parameters(), *a.critic.parameters()], [*b.actor.parameters(), *b.critic.parameters()]):
        assert torch.equal(x, y)


@pytest.mark.parametrize("field, value", [("clip", 1.0), ("epochs", 0), ("minibatches", 17), ("gamma", 1.5),
                                          ("log_std_start", 3.0), ("log_std_start", math.nan), ("entropy_coef", -0.1),
                                          ("normalise_advantages", 1)])
def test_the_config_names_a_bad_value(field, value):
    with pytest.raises(ValueError, match=field):
        ContinuousPPOConfig(**{field: value}).validate()


def test_mappo_takes_the_team_reward_only_and_ippo_either():
    with pytest.raises(ValueError, match="learns the team reward only"):
        ContinuousMAPPO(3, 4, 2, ContinuousPPOConfig(team_reward=False))
    ContinuousIPPO(3, 4, 2, ContinuousPPOConfig(team_reward=False))


@pytest.mark.parametrize("change, message", [
    (lambda b: {**b, "actions": b["actions"][..., :1]}, "actions"),
    (lambda b: {**b, "rewards": b["rewards"].clone().fill_(math.nan)}, "rewards"),
    (lambda b: {**b, "dones": b["dones"] + 0.5}, "dones"),
    (lambda b: {**b, "obs": b["obs"][:, :-1]}, "actions"),  # T+1 observations needed for T steps
])
def test_a_bad_batch_is_named(change, message):
    with pytest.raises(ValueError, match=message):
        ContinuousMAPPO(3, 4, 2, seed=0).update(change(_batch()))


def test_the_loop_trains_whole_batches_and_is_the_same_for_a_seed():
    config = ContinuousPPOConfig(n_envs=4, epochs=1, minibatches=1)
    runs = [train("mappo_continuous", "simple_spread_v3", 8, config, seed=3, eval_every=4, eval_episodes=2, progress=False)
            for _ in range(2)]
    assert len(runs[0].episode_returns) == 8 and runs[0].updates == 2 and runs[0].env_steps == 8 * 25
    assert runs[0].evaluations == runs[1].evaluations and runs[0].episode_returns == runs[1].episode_returns


def test_the_loop_refuses_a_discrete_env():
    with pytest.raises(ValueError, match="acts with continuous forces on the particle envs"):
        train("mappo_continuous", "Switch2-v0", 8, progress=False)
