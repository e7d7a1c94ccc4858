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


def test_a_sampled_matchup_adds_each_learners_last_exploration_noise_and_leaves_training_untouched():
    # sampled=True: each learner plays as it explores at the end of training, clip(mu(o) + noise_end * eps, -1, 1), eps
    # drawn from a generator of the matchup's own (seed for the adversary's learner, seed + 1 for the good agents')
    right, still = _constant([0.5, 0.0]), _constant([0.0, 0.0])
    before = right.generator.get_state().clone(), still.generator.get_state().clone()
    score = play_matchup(right, still, episodes=2, seed=4, sampled=True)
    # by hand: the same 2 episodes (one env copy each, as the learners' sampled_actions(1) play them)
    env = make_env("simple_adversary_v3", seed=4)
    noise = {id(right): torch.Generator().manual_seed(4), id(still): torch.Generator().manual_seed(5)}
    sigma = right.config.noise_end  # 0.05, the schedule's last sigma

    def forces(obs):  # (N, O) -> (N, 2): row 0 from `right` plus its noise, rows 1, 2 from `still` plus its own
        mine = lambda agent, mu: torch.clamp(torch.tensor(mu) + sigma * torch.randn((1, 3, 2), generator=noise[id(agent)]),
                                             -1, 1)[0].numpy()
        return np.concatenate([mine(right, [[0.5, 0.0]] * 3)[:1], mine(still, [[0.0, 0.0]] * 3)[1:]])

    runs = [run_episode(env, forces) for _ in range(2)]
    assert score.adversary_return == pytest.approx(np.mean([run.agent_returns[0] for run in runs]), rel=1e-5)
    assert score.good_return == pytest.approx(np.mean([run.agent_returns[1] for run in runs]), rel=1e-5)
    assert score != play_matchup(right, still, episodes=2, seed=4)  # the noise-free game is another
    assert score == play_matchup(right, still, episodes=2, seed=4, sampled=True)  # the same seed, the same game
    # the learners' own generators (their training's stream) are where they were
    assert torch.equal(right.generator.get_state(), before[0]) and torch.equal(still.generator.get_state(), before[1])
    with pytest.raises(ValueError, match="sampled must be True or False, got 1"):
        play_matchup(right, still, episodes=1, sampled=1)


def test_a_sampled_self_play_draws_from_one_generator():
    # self-play: one learner plays both roles, so its noise comes from one generator seeded with the matchup's seed,
    # drawn once per step for all N agents (as its training's act does)
    right = _constant([0.5, 0.0])
    score = play_matchup(right, right, episodes=1, seed=3, sampled=True)
    env = make_env("simple_adversary_v3", seed=3)
    noise = torch.Generator().manual_seed(3)
    mu = torch.tensor([[[0.5, 0.0]] * 3])  # (1, N, 2)
    run = run_episode(env, lambda obs: torch.clamp(mu + 0.05 * torch.randn((1, 3, 2), generator=noise), -1, 1)[0].numpy())
    assert score.adversary_return == pytest.approx(run.agent_returns[0], rel=1e-5)


def test_sampled_and_noise_free_matchups_play_the_same_start_states():
    # both play successive episodes of one env seeded `seed`, and the env's draws do not depend on what is played: with
    # no noise to add (noise_end = 0) the sampled game is the noise-free one, figure for figure, so a gap between the
    # two is the noise's alone
    agent = ContinuousMADDPG(3, 10, 2, seed=5)  # untrained: its forces differ from agent to agent and step to step
    agent.config.noise_end = 0.0
    assert play_matchup(agent, agent, episodes=3, seed=9, sampled=True) == play_matchup(agent, agent, episodes=3,
                                                                                        seed=9)


def test_a_sampled_ensemble_draws_its_sub_policies_from_the_matchups_generator():
    # an ensemble's sampled self-play (noise_end = 0: no noise to add): each episode draws every agent's sub-policy,
    # torch.randint(0, M, (1, N)), from the matchup's generator seeded `seed`; sub-policy m pushes right (m = 0) or left
    ensemble = EnsembleMADDPG(3, 10, 2, EnsembleConfig(n_subpolicies=2, noise_end=0.0), seed=0)
    with torch.no_grad():
        for index, actor in enumerate(ensemble.actors):  # actors[i * M + m]
            for p in actor.parameters():
                p.zero_()
            actor.mlp.net[-1].bias.copy_(torch.atanh(torch.tensor([0.5 if index % 2 == 0 else -0.5, 0.0])))
    before = ensemble.generator.get_state().clone()
    score = play_matchup(ensemble, ensemble, episodes=4, seed=6, sampled=True)
    draws, env, returns = torch.Generator().manual_seed(6), make_env("simple_adversary_v3", seed=6), []
    for _ in range(4):
        m = torch.randint(0, 2, (1, 3), generator=draws)[0].numpy()  # (N,) this episode's sub-policies
        forces = np.array([[0.5 if k == 0 else -0.5, 0.0] for k in m], dtype=np.float32)  # (N, 2)
        returns.append(run_episode(env, lambda obs: forces).agent_returns[0])
    assert score.adversary_return == pytest.approx(np.mean(returns), rel=1e-5)
    assert torch.equal(ensemble.generator.get_state(), before)  # the learner's own stream untouched
