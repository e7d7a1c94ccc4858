"""The mpe2 particle environments (continuous actions) behind the same numpy interface as ma-gym's."""

import numpy as np
import pytest

from marl_edu.envs import make_env, to_mpe_action


def test_action_mapping_by_hand():
    # a = (x, y) in [-1, 1]^2 -> mpe2's [none, left, right, down, up] with x = right - left, y = up - down
    actions = np.array([[0.5, -0.25], [-1.0, 1.0], [0.0, 0.0]], dtype=np.float32)  # (N, 2)
    expected = np.array([[0.0, 0.0, 0.5, 0.25, 0.0],    # right 0.5, down 0.25
                         [0.0, 1.0, 0.0, 0.0, 1.0],     # left 1, up 1
                         [0.0, 0.0, 0.0, 0.0, 0.0]])    # no force
    mpe = to_mpe_action(actions)  # (N, 5)
    np.testing.assert_allclose(mpe, expected)
    np.testing.assert_allclose(mpe[:, 2] - mpe[:, 1], actions[:, 0])  # the force mpe2 applies: right - left
    np.testing.assert_allclose(mpe[:, 4] - mpe[:, 3], actions[:, 1])  # and up - down


def test_simple_spread_shapes_and_time_limit():
    env = make_env("simple_spread_v3", seed=0)
    assert (env.n_agents, env.obs_dim, env.action_dim, env.max_steps) == (3, 18, 2, 25)
    obs = env.reset()
    assert obs.shape == (3, 18) and obs.dtype == np.float32
    for t in range(1, 26):
        obs, rewards, dones, info = env.step(np.zeros((3, 2), dtype=np.float32))
        assert obs.shape == (3, 18) and rewards.shape == (3,) and rewards.dtype == np.float32 and info["step"] == t
        assert dones.tolist() == [t == 25] * 3  # the only end is the time limit (25 steps) ...
        assert not info["terminated"].any() and info["truncated"].tolist() == [t == 25] * 3  # ... a truncation
    with pytest.raises(ValueError, match="the episode is over"):
        env.step(np.zeros((3, 2), dtype=np.float32))


def test_rewards_are_the_landmark_distance_and_collisions():
    # local_ratio 0.5: r_i = 0.5 * (-sum_l min_j |p_j - l|) + 0.5 * (-collisions of agent i)
    env = make_env("simple_spread_v3", seed=3)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(25):
        _, rewards, _, info = env.step(rng.uniform(-1, 1, size=(3, 2)).astype(np.float32))
        expected = -0.5 * info["landmark_distance"] - 0.5 * info["agent_collisions"]  # (N,)
        np.testing.assert_allclose(rewards, expected, rtol=1e-5, atol=1e-5)
        assert info["collisions"] == info["agent_collisions"].sum() // 2  # pairs, each counted by both agents


def test_same_seed_same_episode_other_seed_other_start():
    def play(seed):
        env = make_env("simple_spread_v3", seed=seed)
        frames = [env.reset()]
        rng = np.random.default_rng(1)
        for _ in range(5):
            frames.append(env.step(rng.uniform(-1, 1, size=(3, 2)).astype(np.float32))[0])
        return np.stack(frames)

    np.testing.assert_array_equal(play(7), play(7))
    assert not np.allclose(play(7)[0], play(8)[0])


def test_bad_actions_raise_clear_errors():
    env = make_env("simple_spread_v3", seed=0)
    with pytest.raises(ValueError, match="call reset"):
        env.step(np.zeros((3, 2), dtype=np.float32))
    env.reset()
    with pytest.raises(ValueError, match=r"actions: expected shape \(3, 2\)"):
        env.step(np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="dtype"):
        env.step(np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(ValueError, match=r"actions must be in \[-1, 1\].*got min 1.5, max 1.5: squash"):
        env.step(np.full((3, 2), 1.5, dtype=np.float32))
    with pytest.raises(ValueError, match="actions must be finite"):
        env.step(np.full((3, 2), np.nan, dtype=np.float32))


def test_unknown_particle_id_suggests_the_right_one():
    from marl_edu.envs import ParticleEnv

    with pytest.raises(ValueError, match="did you mean 'simple_spread_v3'"):
        make_env("simple_spred_v3")
    with pytest.raises(ValueError, match="unknown particle environment 'Switch2-v0'"):
        ParticleEnv("Switch2-v0")  # the class checks the id itself, not only make_env


def test_render_frame_is_headless_rgb():
    env = make_env("simple_spread_v3", seed=0)
    env.reset()
    frame = env.render_frame()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0


def test_physical_deception_pads_the_adversarys_observation():
    env = make_env("simple_adversary_v3", seed=0)
    assert (env.n_agents, env.obs_dim, env.obs_dims, env.teams) == (3, 10, [8, 10, 10], ["adversary", "agent", "agent"])
    obs = env.reset()  # (N, O) = (3, 10)
    assert obs.shape == (3, 10) and obs.dtype == np.float32
    # the adversary sees 2 landmarks and 2 other agents (8 numbers, padded with 2 zeros), not which landmark is the goal
    assert obs[0, 8:].tolist() == [0.0, 0.0] and np.abs(obs[0, :8]).min() > 0
    assert np.abs(obs[1:]).min() > 0  # the good agents' 10 numbers: goal, 2 landmarks, 2 other agents


def test_physical_deception_rewards_by_hand():
    # adversary (agent 0): r_0 = -d_0; good agents: r_1 = r_2 = -min(d_1, d_2) + d_0, with d_i = |p_i - goal|
    env = make_env("simple_adversary_v3", seed=1)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(25):
        _, rewards, dones, info = env.step(rng.uniform(-1, 1, size=(3, 2)).astype(np.float32))
        d = info["goal_distance"]  # (N,)
        np.testing.assert_allclose(rewards, [-d[0], -min(d[1], d[2]) + d[0], -min(d[1], d[2]) + d[0]], rtol=1e-5)
    assert dones.all() and not info["terminated"].any()  # 25 steps, a time limit
    # summed over the team, the adversary's distance counts twice for the good agents and once against it
    np.testing.assert_allclose(rewards.sum(), -2 * min(d[1], d[2]) + d[0], rtol=1e-5)
