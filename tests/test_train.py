from collections import deque

import pytest

from marl_edu.maddpg import MADDPGConfig
from marl_edu.train import _n_step_transitions, train_maddpg


def _pending(rewards):
    pending = deque(maxlen=3)
    for t, r in enumerate(rewards):
        pending.append((f"o{t}", f"a{t}", r))
    return pending


def test_n_step_return_by_hand():
    # gamma = 0.5, rewards 1, 2, 4: R = 1 + 0.5 * 2 + 0.25 * 4 = 3.0, bootstrapped from next_obs
    out = _n_step_transitions(_pending([1.0, 2.0, 4.0]), 0.5, "o3", terminal=False, flush=False)
    assert out == [("o0", "a0", 3.0, "o3", False)]


def test_terminal_flushes_the_tail_and_truncation_drops_it():
    # terminal after 2 pending steps (rewards 1, 2): R_0 = 1 + 0.5 * 2 = 2.0, R_1 = 2.0, both terminal
    out = _n_step_transitions(_pending([1.0, 2.0]), 0.5, "end", terminal=True, flush=True)
    assert out == [("o0", "a0", 2.0, "end", True), ("o1", "a1", 2.0, "end", True)]
    # time limit with 2 pending steps: their returns would need gamma^2, not gamma^3: dropped
    pending = _pending([1.0, 2.0])
    assert _n_step_transitions(pending, 0.5, "end", terminal=False, flush=True) == [] and len(pending) == 0


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


def test_no_epsilon_decay_phase_is_allowed():
    config = MADDPGConfig(n_envs=2, warmup_steps=32, batch_size=16, hidden=8, epsilon_fraction=0.0)
    assert len(train_maddpg("Switch2-v2", episodes=2, config=config, progress=False).episode_returns) >= 2


def test_policy_checkpoint_round_trip(tmp_path):
    import numpy as np

    from marl_edu.train import load_policy, save_policy

    config = MADDPGConfig(n_envs=2, warmup_steps=32, batch_size=16, hidden=8)
    run = train_maddpg("Switch2-v2", episodes=2, config=config, seed=5, progress=False)
    path = save_policy(run.agent, "Switch2-v2", tmp_path / "policy.pt")
    loaded = load_policy(path, algo="maddpg", env_id="Switch2-v2")
    assert loaded.config == run.agent.config and loaded.n_agents == 2 and loaded.obs_dim == 3
    obs = np.random.default_rng(0).random((7, 2, 3), dtype=np.float32)  # (K, N, O) arbitrary observations
    assert np.array_equal(loaded.act(obs, greedy=True), run.agent.act(obs, greedy=True))
    with pytest.raises(ValueError, match="was trained on Switch2-v2, expected Switch2-v0"):
        load_policy(path, env_id="Switch2-v0")
