"""Inferring the other agents' policies (MADDPG paper, section 4.2), by hand."""

import math

import numpy as np
import pytest
import torch

from marl_edu.learners.inference import GaussianPolicy, InferenceConfig, InferringMADDPG, approximation_loss


def _zero_policy(log_std: float = 0.0) -> GaussianPolicy:
    """O=3, A=2, every weight and bias 0: the mean is tanh(0) = 0 whatever the observation."""
    policy = GaussianPolicy(obs_dim=3, action_dim=2, hidden=(4,), log_std=log_std)
    with torch.no_grad():
        for p in policy.mlp.parameters():
            p.zero_()
    return policy


def test_log_prob_and_entropy_by_hand():
    policy = _zero_policy(log_std=0.0)  # N(0, 1) on each of the 2 entries
    obs = torch.zeros(2, 3)  # (B, O)
    actions = torch.tensor([[1.0, 0.5], [0.0, 0.0]])  # (B, A)
    # log N(a; 0, 1) summed over 2 entries = -0.5 * (a_1^2 + a_2^2) - 2 * 0.5 * log(2 pi)
    #   row 0: -0.5 * (1 + 0.25) - 1.837877 = -2.462877;   row 1: -1.837877
    np.testing.assert_allclose(policy.log_prob(obs, actions).detach().numpy(), [-2.462877, -1.837877], atol=1e-5)
    # H = 2 * 0.5 * log(2 pi e) = 2.837877
    assert policy.entropy().item() == pytest.approx(2.837877, abs=1e-5)
    # loss = -mean(log p) - 0.1 * H = -(-2.462877 - 1.837877) / 2 - 0.2837877 = 2.150377 - 0.283788 = 1.866589
    assert approximation_loss(policy, obs, actions, 0.1).item() == pytest.approx(1.866589, abs=1e-5)


def test_log_prob_with_a_smaller_std_by_hand():
    policy = _zero_policy(log_std=math.log(0.5))  # std 0.5
    # a = (0.5, 0): z = (1, 0); log p = -0.5 * 1 - 2 * log(0.5) - 2 * 0.918939 = -0.5 + 1.386294 - 1.837877 = -0.951583
    value = policy.log_prob(torch.zeros(1, 3), torch.tensor([[0.5, 0.0]])).item()
    assert value == pytest.approx(-0.951583, abs=1e-5)


def test_log_prob_checks_shapes_and_dtypes():
    policy = _zero_policy()
    with pytest.raises(ValueError, match=r"actions: expected shape \(2, 2\)"):
        policy.log_prob(torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="dtype"):
        policy.log_prob(torch.zeros(2, 3), torch.zeros(2, 2, dtype=torch.long))


def test_fitting_recovers_a_policy_and_its_noise():
    # agent j plays a = tanh(0.5 * o) + 0.3 * eps: the approximation's mean should learn tanh(0.5 o), its std 0.3
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    policy = GaussianPolicy(obs_dim=1, action_dim=1, hidden=(16,))
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    for _ in range(1500):
        obs = torch.rand(256, 1, generator=generator) * 4 - 2  # (B, 1) in [-2, 2]
        actions = torch.tanh(0.5 * obs) + 0.3 * torch.randn(256, 1, generator=generator)  # (B, 1)
        optimizer.zero_grad()
        approximation_loss(policy, obs, actions, entropy_coef=0.0).backward()
        optimizer.step()
    grid = torch.linspace(-2, 2, 9).unsqueeze(1)  # (9, 1)
    assert (policy(grid) - torch.tanh(0.5 * grid)).abs().max().item() < 0.05
    assert policy.log_std.exp().item() == pytest.approx(0.3, abs=0.03)


def _learner() -> InferringMADDPG:
    return InferringMADDPG(3, 4, 2, InferenceConfig(hidden=8, batch_size=16), seed=0)


def test_critic_target_uses_agent_is_own_approximations():
    agent = _learner()
    next_obs = torch.randn(5, 3, 4, generator=torch.Generator().manual_seed(1))  # (B, N, O)
    with torch.no_grad():
        for i in range(3):
            actions = agent.target_actions(next_obs, i)  # (B, N, A)
            assert actions.shape == (5, 3, 2)
            assert torch.allclose(actions[:, i], torch.tanh(agent.target_actors[i](next_obs[:, i])))  # its own actor
            for j in range(3):
                if j != i:  # agent i's guess of j, not j's true target policy
                    assert torch.allclose(actions[:, j], agent.target_approx[agent.key(i, j)](next_obs[:, j]))
                    assert not torch.allclose(actions[:, j], torch.tanh(agent.target_actors[j](next_obs[:, j])))
    assert len(agent.approx) == 3 * 2  # N (N - 1) approximations


def test_update_fits_the_approximations_and_soft_updates_their_targets():
    agent = _learner()
    rng = np.random.default_rng(0)
    batch = {"obs": rng.normal(size=(16, 3, 4)).astype(np.float32), "next_obs": rng.normal(size=(16, 3, 4)).astype(
        np.float32), "actions": rng.uniform(-1, 1, size=(16, 3, 2)).astype(np.float32),
             "rewards": rng.normal(size=(16, 3)).astype(np.float32), "dones": np.zeros((16, 3), dtype=np.float32)}
    before = {k: p.clone() for k, p in agent.approx.state_dict().items()}
    target_before = {k: p.clone() for k, p in agent.target_approx.state_dict().items()}
    stats = agent.update(batch)
    assert {"approx_loss", "approx_gap", "critic_loss", "actor_loss"} <= set(stats)
    after, target_after = agent.approx.state_dict(), agent.target_approx.state_dict()
    assert all(not torch.equal(before[k], after[k]) for k in before)  # every approximation moved
    # soft update: target' = tau * online' + (1 - tau) * target, with tau = 0.01
    for k in target_before:
        expected = 0.01 * after[k] + 0.99 * target_before[k]
        assert torch.allclose(target_after[k], expected, atol=1e-6)


@pytest.mark.parametrize("field, value, message", [("approx_lr", 0.0, "approx_lr must be a positive number"),
                                                   ("entropy_coef", -1.0, "entropy_coef must be a non-negative"),
                                                   ("gamma", 2.0, r"gamma must be a number in \[0, 1\]")])
def test_bad_hyperparameters_raise(field, value, message):
    with pytest.raises(ValueError, match=message):
        InferenceConfig(**{field: value}).validate()


def test_the_learner_needs_its_own_config_and_trains_with_the_default():
    from marl_edu.learners.continuous import ContinuousMADDPGConfig
    from marl_edu.training.loops import train

    with pytest.raises(ValueError, match="needs an InferenceConfig"):
        InferringMADDPG(3, 4, 2, ContinuousMADDPGConfig())
    run = train("maddpg_inferred", episodes=2, config=None, seed=0, eval_every=2, eval_episodes=1, progress=False)
    assert isinstance(run.agent.config, InferenceConfig) and run.updates == 0  # 2 x 16 x 25 steps < 2000 warm-up


def test_update_refuses_a_bad_batch_before_the_approximations_step():
    agent = _learner()
    rng = np.random.default_rng(0)
    batch = {"obs": rng.normal(size=(16, 3, 4)), "next_obs": rng.normal(size=(16, 3, 4)),
             "actions": rng.uniform(-1, 1, size=(16, 3, 2)), "rewards": rng.normal(size=(16, 3)),
             "dones": np.zeros((16, 3))}
    before = {k: p.clone() for k, p in agent.approx.state_dict().items()}
    bad_obs = batch["obs"].copy()
    bad_obs[4, 1, 3] = np.inf
    for bad, message in ((batch | {"obs": bad_obs}, r"batch\['obs'\] must be finite, got 0 NaN and 1 infinite of 192 "
                                                    r"entries, the first at index \(4, 1, 3\)"),
                         (batch | {"actions": batch["actions"][:, :2]},
                          r"batch\['actions'\]: expected shape \(B=16, N=3, A=2\), got \(16, 2, 2\)")):
        with pytest.raises(ValueError, match=message):
            agent.update(bad)
    assert all(torch.equal(before[k], p) for k, p in agent.approx.state_dict().items())  # no step was taken
    agent.update(batch)
    assert agent.updates == 1
