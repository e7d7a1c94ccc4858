import numpy as np
import pytest

from marl_edu.envs import make_env, make_vec_env, to_mpe_action


DOWN, LEFT, UP, RIGHT, NOOP = range(5)


def test_switch2_spaces_and_first_observation():
    env = make_env("Switch2-v0", seed=0)
    assert (env.n_agents, env.obs_dim, env.n_actions, env.max_steps) == (2, 2, 5, 50)
    assert env.action_meanings == ["DOWN", "LEFT", "UP", "RIGHT", "NOOP"]
    obs = env.reset()
    assert obs.shape == (2, 2) and obs.dtype == np.float32
    # agent 0 starts at (row 0, col 1), agent 1 at (0, 5); obs = (row / 2, col / 6) rounded to 2 places
    np.testing.assert_allclose(obs, [[0 / 2, 0.17], [0 / 2, 0.83]])


def test_switch3_is_ma_gym_switch_with_three_agents():
    # ma-gym's Switch allows 2 to 4 agents but registers only Switch2 and Switch4; marl_edu registers Switch3-v0..v3
    # the same way (v1/v3 see every agent, v2/v3 add the clock), idempotently (a second registration changes nothing).
    from marl_edu.envs import register_switch3

    register_switch3()
    register_switch3()
    sizes = {v: make_env(f"ma_gym:Switch3-v{v}").obs_dim for v in range(4)}
    assert sizes == {0: 2, 1: 3 * 2, 2: 2 + 1, 3: 3 * (2 + 1)}
    env = make_env("Switch3-v0", seed=0)
    assert (env.n_agents, env.n_actions, env.max_steps) == (3, 5, 50)
    # agents 0 and 1 start as in Switch2, agent 2 at (row 2, col 1): obs (2 / 2, 1 / 6)
    np.testing.assert_allclose(env.reset(), [[0.0, 0.17], [0.0, 0.83], [1.0, 0.17]])


def test_one_step_by_hand():
    env = make_env("ma_gym:Switch2-v0", seed=0)  # the prefixed id works too
    env.reset()
    # RIGHT from (0,1) is a wall at (0,2); LEFT from (0,5) is a wall at (0,4): nobody moves
    obs, rewards, dones, info = env.step(np.array([RIGHT, LEFT]))
    np.testing.assert_allclose(obs, [[0.0, 0.17], [0.0, 0.83]])
    np.testing.assert_allclose(rewards, [-0.1, -0.1])  # the step cost, per agent
    assert rewards.dtype == np.float32 and dones.dtype == bool and dones.shape == (2,)
    # DOWN takes both into the corridor row: (1,1) -> (0.5, 0.17) and (1,5) -> (0.5, 0.83)
    obs, _, _, info = env.step(np.array([DOWN, DOWN]))
    np.testing.assert_allclose(obs, [[0.5, 0.17], [0.5, 0.83]])
    assert info["step"] == 2 and not info["terminated"].any() and not info["truncated"].any()


def test_time_limit_is_truncation_not_termination():
    env = make_env("Switch2-v0")
    env.reset()
    total = 0.0
    for t in range(50):
        _, rewards, dones, info = env.step(np.array([NOOP, NOOP]))
        total += rewards.sum()
    assert dones.all() and info["truncated"].all() and not info["terminated"].any()
    assert info["terminated"].dtype == info["truncated"].dtype == bool
    assert total == pytest.approx(50 * 2 * -0.1)  # 50 steps x 2 agents x -0.1 = -10.0


def test_predator_prey_ends_terminated_only_when_no_prey_is_left():
    # At the time limit (100 steps) with prey still alive every predator is truncated, not terminated. The last prey
    # caught on the very last step is a real end: terminated (the env is told the prey are gone just before it).
    for prey_left, terminated in ((True, False), (False, True)):
        env = make_env("PredatorPrey7x7-v0", seed=0)
        env.reset()
        noop = np.full(env.n_agents, NOOP)
        for _ in range(env.max_steps - 1):
            _, _, dones, info = env.step(noop)
            if dones.all():  # (no-ops never catch a prey: two predators must stand next to it)
                raise AssertionError("the episode ended early")
        if not prey_left:
            env._env.unwrapped._prey_alive = [False] * len(env._env.unwrapped._prey_alive)
        _, _, dones, info = env.step(noop)
        assert dones.all() and (info["terminated"] == terminated).all() and (info["truncated"] != terminated).all()


def test_predators_that_stand_still_pay_only_the_step_cost():
    # The README's reference line for PredatorPrey7x7-v0: the prey never step beside a predator, so a team that never
    # moves is never penalised: 100 steps x 4 predators x -0.01 = -4.0, in every episode
    env = make_env("PredatorPrey7x7-v0", seed=0)
    for _ in range(20):
        env.reset()
        total, dones = 0.0, np.zeros(env.n_agents, dtype=bool)
        while not dones.all():
            _, rewards, dones, _ = env.step(np.full(env.n_agents, NOOP))
            total += rewards.sum()
        assert total == pytest.approx(100 * 4 * -0.01)


def test_arrival_on_the_last_step_is_termination():
    env = make_env("Switch2-v0")
    env.reset()
    path = [DOWN, RIGHT, RIGHT, RIGHT, RIGHT, RIGHT, UP]  # agent 0: (0,1) -> (1,1) -> ... -> (1,6) -> (0,6)
    # agent 1 gets out of the way first: down twice to (2,5), then waits
    plan = [(NOOP, DOWN), (NOOP, DOWN)] + [(NOOP, NOOP)] * 41 + [(a, NOOP) for a in path]
    assert len(plan) == 50
    for actions in plan:
        _, rewards, dones, info = env.step(np.array(actions))
    assert rewards.tolist() == pytest.approx([5.0, -0.1])
    assert info["terminated"].tolist() == [True, False] and info["terminated"].dtype == bool
    assert info["truncated"].tolist() == [False, True]


def test_dones_are_copies_not_the_envs_internal_list():
    env = make_env("Switch2-v0")
    env.reset()
    _, _, dones, _ = env.step(np.array([NOOP, NOOP]))
    dones[:] = True
    _, _, dones2, _ = env.step(np.array([NOOP, NOOP]))  # would raise "episode is over" if shared
    assert not dones2.any()


def test_bad_actions_raise_clear_errors():
    env = make_env("Switch2-v0")
    with pytest.raises(ValueError, match="call reset"):
        env.step(np.array([0, 0]))
    env.reset()
    with pytest.raises(ValueError, match=r"actions must be in \[0, 4\].*got \[0, 5\]"):
        env.step(np.array([0, 5]))
    with pytest.raises(ValueError, match=r"actions: expected shape \(2,\), got \(3,\)"):
        env.step(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="expected int elements"):
        env.step(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"one-hot actions\? pass actions.argmax\(-1\)"):
        env.step(np.eye(5, dtype=np.float32)[[0, 1]])


def test_stepping_a_finished_episode_raises():
    env = make_env("Switch2-v0")
    env.reset()
    for _ in range(50):
        env.step(np.array([NOOP, NOOP]))
    with pytest.raises(ValueError, match="episode is over"):
        env.step(np.array([NOOP, NOOP]))


def test_unknown_id_lists_close_matches():
    with pytest.raises(ValueError, match="unknown ma-gym environment 'Swich2-v0'; did you mean 'Switch2-v0'"):
        make_env("Swich2-v0")
    with pytest.raises(ValueError, match="did you mean 'Switch2-v0', 'Switch2-v1'"):
        make_env("Switch2")
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        make_env("Switch2-v0", seed=-1)
    with pytest.raises(ValueError, match="seed must be a non-negative int, got True"):
        make_env("Switch2-v0", seed=True)


@pytest.mark.parametrize("env_id", ["Switch4-v0", "Switch2-v2", "PredatorPrey5x5-v0", "Checkers-v0", "Combat-v0"])
def test_other_native_ids_speak_the_same_shapes(env_id):
    env = make_env(env_id, seed=1)
    obs = env.reset()
    assert obs.shape == (env.n_agents, env.obs_dim) and obs.dtype == np.float32
    obs, rewards, dones, info = env.step(np.zeros(env.n_agents, dtype=np.int64))
    assert rewards.shape == dones.shape == info["truncated"].shape == (env.n_agents,)


def test_same_seed_same_episode():
    def play(seed):
        env, rng = make_env("PredatorPrey5x5-v0", seed=seed), np.random.default_rng(0)
        trajectory = [env.reset()]
        for _ in range(30):
            obs, _, dones, _ = env.step(rng.integers(0, 5, size=2))
            trajectory.append(obs)
            if dones.all():
                break
        return np.stack(trajectory)

    np.testing.assert_array_equal(play(3), play(3))
    assert not np.array_equal(play(3), play(4))  # the prey moves at random: the seed matters


def test_render_frame_is_headless_rgb():
    env = make_env("Switch2-v0")
    env.reset()
    frame = env.render_frame()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3


def test_vec_env_shapes_and_auto_reset():
    venv = make_vec_env("Switch2-v0", n_envs=3, seed=0)
    obs = venv.reset()
    assert obs.shape == (3, 2, 2)
    first = obs.copy()
    noop = np.full((3, 2), NOOP)
    for t in range(50):
        obs, rewards, dones, info = venv.step(noop)
        assert rewards.shape == dones.shape == (3, 2)
    assert info["episode_done"].tolist() == [True, True, True]
    np.testing.assert_array_equal(obs, first)  # already reset to the start
    np.testing.assert_array_equal(info["final_obs"], first)  # nobody moved, so the final obs is the start too
    np.testing.assert_allclose(info["episode_team_return"], [-10.0] * 3)  # 50 x 2 x -0.1
    _, _, _, info = venv.step(noop)
    assert np.isnan(info["episode_team_return"]).all()
    with pytest.raises(ValueError, match=r"actions: expected shape \(3, 2\)"):
        venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="n_envs must be a positive int"):
        make_vec_env("Switch2-v0", n_envs=0)


def test_vec_env_final_obs_differs_from_reset_obs():
    venv = make_vec_env("Switch2-v0", n_envs=2, seed=0)
    start = venv.reset()
    actions = np.array([[DOWN, NOOP], [NOOP, NOOP]])  # copy 0's agent 0 moves down once, then all wait
    obs, _, _, info = venv.step(actions)
    for _ in range(49):
        obs, _, _, info = venv.step(np.full((2, 2), NOOP))
    np.testing.assert_allclose(info["final_obs"][0, 0], [0.5, 0.17])  # where agent 0 ended: (1, 1)
    np.testing.assert_array_equal(obs, start)  # but the returned obs is the next episode's start


def test_vec_env_checks_all_copies_actions_at_once():
    venv = make_vec_env("Switch2-v0", 3, seed=0)
    venv.reset()
    with pytest.raises(ValueError, match=r"actions must be in \[0, 4\].*got \[\[0, 0\], \[0, 7\], \[0, 0\]\]"):
        venv.step(np.array([[0, 0], [0, 7], [0, 0]]))
    with pytest.raises(ValueError, match=r"actions: expected shape \(3, 2\)"):
        venv.step(np.zeros((2, 2), dtype=int))


# ---- The mpe2 particle environments (continuous actions) behind the same numpy interface as ma-gym's.

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


def test_particle_bad_actions_raise_clear_errors():
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


def test_particle_render_frame_is_headless_rgb():
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
