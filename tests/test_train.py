import pytest

from marl_edu.learners.maddpg import MADDPGConfig
from marl_edu.training.loops import train_maddpg


def test_training_is_deterministic_for_a_seed():
    config = MADDPGConfig(n_envs=4, warmup_steps=64, batch_size=32, hidden=16)
    runs = [train_maddpg("Switch2-v2", episodes=8, config=config, seed=3, eval_every=4, progress=False)
            for _ in range(2)]
    assert runs[0].episode_returns == runs[1].episode_returns and len(runs[0].episode_returns) >= 8
    assert runs[0].evaluations == runs[1].evaluations and runs[0].updates > 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="episodes must be a positive int, got -1"):
        train_maddpg("Switch2-v2", episodes=-1)
    with pytest.raises(ValueError, match="unknown ma-gym environment"):
        train_maddpg("Switch9-v2", episodes=1)
    from marl_edu.training.loops import train_coma, train_continuous

    for loop in (train_maddpg, train_coma, train_continuous):  # every loop evaluates every eval_every >= 1 episodes
        with pytest.raises(ValueError, match="eval_every must be a positive int, got 0"):
            loop(episodes=1, eval_every=0)


def test_no_epsilon_decay_phase_is_allowed():
    config = MADDPGConfig(n_envs=2, warmup_steps=32, batch_size=16, hidden=8, epsilon_fraction=0.0)
    assert len(train_maddpg("Switch2-v2", episodes=2, config=config, progress=False).episode_returns) >= 2


@pytest.mark.parametrize("algo", ["maddpg", "coma"])
def test_training_is_the_same_on_either_env_backend(algo):
    # the batched Switch steps the same transitions as ma-gym, so a seed trains to the same returns and weights
    import torch

    from marl_edu.learners.coma import COMAConfig
    from marl_edu.learners.maddpg import MADDPGConfig
    from marl_edu.training.loops import train_coma, train_maddpg

    loop, config = ((train_maddpg, MADDPGConfig(n_envs=4, warmup_steps=100, batch_size=32)) if algo == "maddpg"
                    else (train_coma, COMAConfig(n_envs=4)))
    runs = [loop("Switch2-v2", 24, config, seed=3, eval_every=12, progress=False, env_backend=backend)
            for backend in ("ma-gym", "batched")]
    assert runs[0].episode_returns == runs[1].episode_returns and runs[0].evaluations == runs[1].evaluations
    assert runs[0].updates == runs[1].updates > 0
    nets = [run.agent.actors if algo == "maddpg" else run.agent.actor for run in runs]
    assert all(torch.equal(p, q) for p, q in zip(nets[0].parameters(), nets[1].parameters()))


def test_a_policy_played_on_an_env_of_other_sizes_is_a_value_error():
    from marl_edu.learners.coma import COMA
    from marl_edu.learners.maddpg import MADDPG
    from marl_edu.training.loops import greedy_return, sampled_returns

    for agent in (COMA(2, 2, 5), MADDPG(2, 2, 5)):  # built for Switch2-v0: N=2, O=2, A=5
        with pytest.raises(ValueError, match=r"the policy does not fit Switch4-v0 \(N differs\)"):
            greedy_return(agent, "Switch4-v0")
        with pytest.raises(ValueError, match=r"the policy does not fit Switch2-v2 \(O differs\)"):
            sampled_returns(agent, "Switch2-v2", n_episodes=1)


def test_a_greedy_evaluation_is_one_episode_on_switch_and_a_mean_where_episodes_are_random():
    import numpy as np

    from marl_edu.learners.coma import COMA
    from marl_edu.envs.magym import is_switch
    from marl_edu.envs.make import make_env
    from marl_edu.data.rollout import run_episode
    from marl_edu.training.loops import GREEDY_EPISODES, greedy_return, greedy_team_return

    assert is_switch("Switch3-v0") and is_switch("ma_gym:Switch2-v2")
    assert not is_switch("PredatorPrey7x7-v0") and not is_switch("simple_spread_v3")
    switch = COMA(2, 2, 5, seed=0)
    assert greedy_team_return(switch, "Switch2-v0") == greedy_return(switch, "Switch2-v0").team_return
    # PredatorPrey's prey move at random: the mean of GREEDY_EPISODES successive episodes of one env seeded 0
    agent = COMA(4, 28, 5, seed=0)
    env = make_env("PredatorPrey7x7-v0", seed=0)
    by_hand = np.mean([run_episode(env, agent.greedy_policy()).team_return for _ in range(GREEDY_EPISODES)])
    assert greedy_team_return(agent, "PredatorPrey7x7-v0") == pytest.approx(by_hand)
    assert greedy_team_return(agent, "PredatorPrey7x7-v0", 3) == greedy_team_return(agent, "PredatorPrey7x7-v0", 3)
    with pytest.raises(ValueError, match="episodes"):
        greedy_team_return(agent, "PredatorPrey7x7-v0", 0)
