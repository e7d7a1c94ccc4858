"""Matchups on physical deception: one learner's adversary against another's good agents."""

import numpy as np
import pytest
import torch

from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import make_env
from marl_edu.learners.continuous import ContinuousMADDPG
from marl_edu.learners.ensembles import EnsembleConfig, EnsembleMADDPG
from marl_edu.training.competition import play_matchup


def _constant(force) -> ContinuousMADDPG:
    """A learner for simple_adversary_v3 (N=3, O=10) whose every actor outputs tanh(b) = force, whatever it sees:
    weights 0, last bias atanh(force)."""
    agent = ContinuousMADDPG(3, 10, 2, seed=0)
    with torch.no_grad():
        for actor in agent.actors:
            for p in actor.parameters():
                p.zero_()
            actor.mlp.net[-1].bias.copy_(torch.atanh(torch.tensor(force, dtype=torch.float32)))
    return agent


def test_the_adversary_comes_from_one_learner_and_the_good_agents_from_the_other():
    right, still = _constant([0.5, 0.0]), _constant([0.0, 0.0])
    score = play_matchup(right, still, episodes=3, seed=4)
    # by hand: the same 3 episodes with agent 0 pushing right at 0.5 and agents 1, 2 standing still
    env = make_env("simple_adversary_v3", seed=4)
    runs = [run_episode(env, lambda obs: np.array([[0.5, 0.0], [0.0, 0.0], [0.0, 0.0]], dtype=np.float32))
            for _ in range(3)]
    assert score.adversary_return == pytest.approx(np.mean([run.agent_returns[0] for run in runs]), rel=1e-5)
    assert score.good_return == pytest.approx(np.mean([run.agent_returns[1] for run in runs]), rel=1e-5)
    final = np.array([run.metrics["goal_distance"][-1] for run in runs])  # (3, N)
    assert score.adversary_distance == pytest.approx(final[:, 0].mean(), rel=1e-5)
    assert score.good_distance == pytest.approx(final[:, 1:].min(axis=1).mean(), rel=1e-5)
    # swapped roles: now the adversary stands still and the good agents push right, another game
    assert play_matchup(still, right, episodes=3, seed=4).adversary_return != pytest.approx(score.adversary_return)


def test_an_ensemble_plays_one_sub_policy_per_episode():
    ensemble = EnsembleMADDPG(3, 10, 2, EnsembleConfig(n_subpolicies=2), seed=0)
    with torch.no_grad():
        for index, actor in enumerate(ensemble.actors):  # actors[i * M + m]: sub-policy m pushes right or left
            for p in actor.parameters():
                p.zero_()
            actor.mlp.net[-1].bias.copy_(torch.atanh(torch.tensor([0.5 if index % 2 == 0 else -0.5, 0.0])))
    score = play_matchup(ensemble, _constant([0.0, 0.0]), episodes=6, seed=2)
    # the same draws by hand: numpy's generator from the matchup seed, one (N,) draw for each learner per episode
    rng = np.random.default_rng(2)
    env = make_env("simple_adversary_v3", seed=2)
    returns = []
    for _ in range(6):
        k = rng.integers(0, 2, size=3)  # the adversary learner's draw (its agent 0 plays k[0]) ...
        force = 0.5 if k[0] == 0 else -0.5
        forces = np.array([[force, 0.0], [0, 0], [0, 0]], np.float32)  # (N, 2)
        returns.append(run_episode(env, lambda obs: forces).agent_returns[0])
    assert score.adversary_return == pytest.approx(np.mean(returns), rel=1e-5)


def test_bad_matchups_raise_clear_errors():
    agent = _constant([0.0, 0.0])
    with pytest.raises(ValueError, match="one adversary"):
        play_matchup(agent, agent, env_id="simple_spread_v3", episodes=1)
    with pytest.raises(ValueError, match="the good learner was built for N=2"):
        play_matchup(agent, ContinuousMADDPG(2, 10, 2), episodes=1)
    with pytest.raises(ValueError, match="episodes must be a positive int"):
        play_matchup(agent, agent, episodes=0)
    with pytest.raises(ValueError, match="continuous MADDPG"):
        play_matchup(agent, object(), episodes=1)
