import numpy as np
import pytest

from marl_edu.envs.make import make_env, make_vec_env
from marl_edu.envs.particle import to_mpe_action


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
    from marl_edu.envs.magym import register_switch3

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
    # The standing-still reference for PredatorPrey7x7-v0: the prey never step beside a predator, so a team that never
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


def test_an_env_without_a_time_limit_gets_the_courses_and_its_episodes_end_truncated():
    from marl_edu.envs.magym import DEFAULT_MAX_STEPS
    from marl_edu.data.rollout import run_episode

    env = make_env("PongDuel-v0")  # ma-gym's only env with no time limit: two paddles that never miss play forever
    assert env.time_limit_added and env.max_steps == DEFAULT_MAX_STEPS == 1000
    assert "max_steps=1000 (the course's: the env has no time limit)" in repr(env)
    assert not make_env("Switch2-v0").time_limit_added and make_env("Switch2-v0").max_steps == 50
    env.max_steps = 3  # (a short cap, to reach it in a few steps; a random point takes longer than that)
    episode = run_episode(env, lambda obs: np.zeros(2, dtype=np.int64))
    assert episode.length == 3 and episode.dones[-1].all() and not episode.dones[:-1].any()
    assert episode.truncated[-1].all() and not episode.terminated.any()  # cut off by the limit: bootstrapped
    env.max_steps = DEFAULT_MAX_STEPS
    rng = np.random.default_rng(0)
    episode = run_episode(env, lambda obs: rng.integers(0, 3, size=2))
    assert episode.length < DEFAULT_MAX_STEPS and episode.terminated[-1].all()  # a missed ball: PongDuel's own end


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
    from marl_edu.envs.particle import ParticleEnv

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


# ---- Level-Based Foraging (lbforaging 2.0.0) behind the same numpy interface as ma-gym's.

NONE, NORTH, SOUTH, WEST, EAST, LOAD = range(6)  # lbforaging's Action enum
FORAGING = "Foraging-8x8-2p-3f-v3"  # 8x8 grid, 2 agents, 3 food: the MARL textbook's task


def test_foraging_spaces_and_observation_layout():
    env = make_env(FORAGING, seed=0)
    assert (env.env_id, env.n_agents, env.obs_dim, env.n_actions, env.max_steps) == (FORAGING, 2, 15, 6, 50)
    assert env.action_meanings == ["NONE", "NORTH", "SOUTH", "WEST", "EAST", "LOAD"]
    obs = env.reset()
    assert obs.shape == (2, 15) and obs.dtype == np.float32
    # O = 3 food x (y, x, level) + 2 agents x (y, x, level) = 9 + 6 = 15, read against lbforaging's own state
    lbf = env._env.unwrapped
    food = [[y, x, lbf.field[y, x]] for y, x in zip(*np.nonzero(lbf.field))]  # row-major order
    agents = [[*p.position, p.level] for p in lbf.players]
    assert len(food) == 3 and all(1 <= level <= agents[0][2] + agents[1][2] for _, _, level in food)
    assert obs[0].tolist() == [v for f in food for v in f] + agents[0] + agents[1]  # food, itself, the other
    assert obs[1].tolist() == [v for f in food for v in f] + agents[1] + agents[0]  # each agent sees itself first


def test_foraging_loading_rewards_by_hand():
    # Drive lbforaging's state: food of level 3 at (2, 2) and of level 2 at (5, 5), so the spawned levels total
    # F = 3 + 2 = 5; agent 0 (level 1) west of the first food at (2, 1), agent 1 (level 2) north of it at (1, 2).
    env = make_env(FORAGING, seed=0)
    env.reset()
    lbf = env._env.unwrapped
    lbf.field[:] = 0
    lbf.field[2, 2], lbf.field[5, 5] = 3, 2
    lbf._food_spawned = 5
    (lbf.players[0].position, lbf.players[0].level), (lbf.players[1].position, lbf.players[1].level) = \
        ((2, 1), 1), ((1, 2), 2)
    lbf._gen_valid_moves()  # lbforaging's list of each agent's possible actions, as after a step

    # Step 1: agent 0 alone cannot load the level-3 food (1 < 3): nothing happens
    obs, rewards, dones, info = env.step(np.array([LOAD, NONE]))
    assert rewards.tolist() == [0.0, 0.0] and rewards.dtype == np.float32 and not dones.any()
    assert obs[0].tolist() == [2, 2, 3, 5, 5, 2, -1, -1, 0, 2, 1, 1, 1, 2, 2]  # empty third food slot: (-1, -1, 0)
    assert obs[1].tolist() == [2, 2, 3, 5, 5, 2, -1, -1, 0, 1, 2, 2, 2, 1, 1]
    # Step 2: together 1 + 2 = 3 >= 3: agent i gets level_i * 3 / ((1 + 2) * 5): 1 * 3 / 15 = 0.2 and 2 * 3 / 15 = 0.4
    obs, rewards, dones, info = env.step(np.array([LOAD, LOAD]))
    np.testing.assert_allclose(rewards, [0.2, 0.4], rtol=1e-6)
    assert obs[0, :9].tolist() == [5, 5, 2, -1, -1, 0, -1, -1, 0]  # the food left moves up to the first slot
    assert not dones.any() and info["step"] == 2
    # Steps 3-49: 41 waits, then agent 1 walks (1, 2) -> (4, 2) -> (4, 5), north of the level-2 food
    plan = [(NONE, NONE)] * 41 + [(NONE, SOUTH)] * 3 + [(NONE, EAST)] * 3
    for actions in plan:
        obs, rewards, dones, info = env.step(np.array(actions))
    assert info["step"] == 49 and not dones.any() and obs[1, 9:11].tolist() == [4, 5]
    # Step 50, the time limit: agent 1 loads it alone (2 >= 2): 2 * 2 / (2 * 5) = 0.4. The last food went on the last
    # step: the task is over (terminated), not cut off (truncated)
    obs, rewards, dones, info = env.step(np.array([NONE, LOAD]))
    np.testing.assert_allclose(rewards, [0.0, 0.4], rtol=1e-6)
    assert info["step"] == 50 and dones.tolist() == [True, True]
    assert info["terminated"].tolist() == [True, True] and info["truncated"].tolist() == [False, False]
    # over the episode: agent 0 0.2, agent 1 0.4 + 0.4 = 0.8; the team 1.0, as in every episode that loads all food
    with pytest.raises(ValueError, match="episode is over"):
        env.step(np.array([NONE, NONE]))


def _first_move(start, goal, blocked, size):
    """The first move (NORTH, SOUTH, WEST or EAST) of a shortest path from ``start`` to ``goal`` on a size x size grid
    around the ``blocked`` cells; None when there is no path."""
    from collections import deque

    moves = {NORTH: (-1, 0), SOUTH: (1, 0), WEST: (0, -1), EAST: (0, 1)}
    came_from, queue = {start: None}, deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            while came_from[cell][0] != start:
                cell = came_from[cell][0]
            return came_from[cell][1]
        for move, (dy, dx) in moves.items():
            step = (cell[0] + dy, cell[1] + dx)
            if 0 <= min(step) and max(step) < size and step not in blocked and step not in came_from:
                came_from[step] = (cell, move)
                queue.append(step)
    return None


def _load_together(obs):
    """A scripted team for Foraging-8x8-2p-3f from the observation layout: both agents walk to the first food in
    agent 0's observation, stand beside it (each on its nearest free side) and load it together."""
    food = [(int(obs[0, k]), int(obs[0, k + 1])) for k in range(0, 9, 3) if obs[0, k + 2] > 0]
    positions = [(int(obs[0, 9]), int(obs[0, 10])), (int(obs[0, 12]), int(obs[0, 13]))]  # itself, then agent 1
    (fy, fx) = food[0]
    sides = [(fy - 1, fx), (fy + 1, fx), (fy, fx - 1), (fy, fx + 1)]  # (food is never on the grid's edge)
    goals = []
    for (y, x) in positions:
        goals.append(min((s for s in sides if s not in goals), key=lambda s: abs(s[0] - y) + abs(s[1] - x)))
    if positions == goals:
        return np.array([LOAD, LOAD])
    moves = [None if positions[i] == goals[i] else
             _first_move(positions[i], goals[i], blocked=set(food) | {positions[1 - i]}, size=8) for i in range(2)]
    return np.array([NONE if move is None else move for move in moves])  # (N,) wait where there is no way yet


def test_foraging_episode_that_loads_every_food_terminates():
    env = make_env(FORAGING, seed=3)
    obs = env.reset()
    levels = obs[0, [11, 14]]  # (2,) agent 0's and agent 1's level
    food_total = obs[0, 2:9:3].sum()  # F, the spawned food's levels added up
    assert levels.tolist() == [1, 2]
    returns, dones = np.zeros(2), np.zeros(2, dtype=bool)
    while not dones.all():
        food_before = obs[0, 2:9:3].sum()
        obs, rewards, dones, info = env.step(_load_together(obs))
        loaded = food_before - obs[0, 2:9:3].sum()  # the level of the food loaded this step (both agents load it)
        # agent i's share: level_i * f / ((1 + 2) * F)
        np.testing.assert_allclose(rewards, levels * loaded / (levels.sum() * food_total), rtol=1e-6)
        returns += rewards
    assert info["step"] < 50 and info["terminated"].all() and not info["truncated"].any()
    assert (obs[:, 2:9:3] == 0).all()  # every food slot empty
    # loading every food together, agent i gets level_i / (1 + 2) of the whole: 1/3 and 2/3, 1 for the team
    np.testing.assert_allclose(returns, [1 / 3, 2 / 3], rtol=1e-6)


def test_foraging_time_limit_is_truncation_not_termination():
    env = make_env(FORAGING, seed=0)
    env.reset()
    for t in range(1, 51):
        _, rewards, dones, info = env.step(np.array([NONE, NONE]))
        assert rewards.tolist() == [0.0, 0.0] and dones.tolist() == [t == 50] * 2 and info["step"] == t
    assert info["truncated"].tolist() == [True, True] and info["terminated"].tolist() == [False, False]
    assert info["terminated"].dtype == info["truncated"].dtype == dones.dtype == bool
    with pytest.raises(ValueError, match="episode is over"):
        env.step(np.array([NONE, NONE]))


def test_foraging_same_seed_same_episodes():
    def play(seed):
        env, rng = make_env(FORAGING, seed=seed), np.random.default_rng(0)
        frames = []
        for _ in range(2):  # the second episode continues the seed's random stream
            frames.append(env.reset())
            for _ in range(20):
                frames.append(env.step(rng.integers(0, 6, size=2))[0])
        return np.stack(frames)  # (42, N, O)

    np.testing.assert_array_equal(play(5), play(5))
    assert not np.array_equal(play(5)[0], play(6)[0])  # another seed, another start
    assert not np.array_equal(play(5)[0], play(5)[21])  # the second episode starts elsewhere


def test_foraging_start_states_do_not_depend_on_how_earlier_episodes_ended():
    # lbforaging's reset redraws an agent's cell when it falls where an agent stood at the end of the last episode,
    # so its start states would follow from the policy played before; ForagingEnv places the agents as the first
    # reset does, so an env of one seed starts the same episodes whatever is played (evaluations compare policies
    # on the same start states). Measured on lbforaging alone: these two policies' starts part at episode 9 of 40.
    def starts(policy):
        env, frames = make_env(FORAGING, seed=0), []
        for _ in range(40):
            frames.append(env.reset())
            while not env.step(policy())[2].all():
                pass
        return np.stack(frames)  # (40, N, O)

    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(starts(lambda: np.zeros(2, dtype=np.int64)), starts(lambda: rng.integers(0, 6, 2)))


def test_foraging_ids_with_prefix_and_coop():
    env = make_env("lbforaging:Foraging-8x8-2p-2f-coop-v3", seed=0)
    assert env.env_id == "Foraging-8x8-2p-2f-coop-v3" and env.obs_dim == 2 * 3 + 2 * 3
    obs = env.reset()
    # -coop: every food's level is the agents' levels added up, so no agent can load one alone
    assert obs[0, [2, 5]].tolist() == [obs[0, 8] + obs[0, 11]] * 2


def test_foraging_bad_actions_raise_clear_errors():
    env = make_env(FORAGING)
    with pytest.raises(ValueError, match="call reset"):
        env.step(np.array([0, 0]))
    env.reset()
    with pytest.raises(ValueError, match=r"actions must be in \[0, 5\] \(NONE, NORTH, SOUTH, WEST, EAST, LOAD\), "
                                         r"got \[0, 6\]"):
        env.step(np.array([0, 6]))
    with pytest.raises(ValueError, match=r"actions must be in \[0, 5\].*got \[-1, 0\]"):
        env.step(np.array([-1, 0]))
    with pytest.raises(ValueError, match=r"actions: expected shape \(2,\), got \(3,\)"):
        env.step(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="expected int elements"):
        env.step(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="expected int elements"):
        env.step(np.array([True, False]))
    with pytest.raises(ValueError, match=r"one-hot actions\? pass actions.argmax\(-1\)"):
        env.step(np.eye(6, dtype=np.float32)[[0, 5]])
    assert env.step([LOAD, NONE])[3]["step"] == 1  # a list of ints is fine


def test_unknown_foraging_id_lists_close_matches():
    with pytest.raises(ValueError, match="unknown Level-Based Foraging environment 'Foraging-8x8-2p-3f-v2'; "
                                         "did you mean 'Foraging-8x8-2p-3f-v3'"):
        make_env("Foraging-8x8-2p-3f-v2")
    with pytest.raises(ValueError, match="did you mean 'Foraging-8x8-2p-3f-coop-v3', 'Foraging-8x8-2p-3f-v3'"):
        make_env("lbforaging:Foraging-8x8-2p-3f")
    with pytest.raises(ValueError, match="'Foragin-8x8-2p-3f-v3'; did you mean 'Foraging-8x8-2p-3f-v3'"):
        make_env("Foragin-8x8-2p-3f-v3")  # a typo in the name still gets Foraging's ids, not ma-gym's
    with pytest.raises(ValueError, match=r"ids look like Foraging\{-2s\}-\{s\}x\{s\}-\{p\}p-\{f\}f\{-coop\}-v3"):
        make_env("lbforaging:Forest-v0")
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        make_env(FORAGING, seed=-1)


def test_foraging_vec_env_auto_resets():
    from marl_edu.envs.foraging import ForagingEnv
    from marl_edu.envs.make import VecEnv, make_env as one

    venv = make_vec_env(FORAGING, n_envs=3, seed=0)  # the batched backend is Switch's only: this is a VecEnv
    assert type(venv) is VecEnv and not venv.continuous and isinstance(venv.envs[0], ForagingEnv)
    assert (venv.n_agents, venv.obs_dim, venv.n_actions, venv.max_steps) == (2, 15, 6, 50)
    assert venv.action_meanings == ["NONE", "NORTH", "SOUTH", "WEST", "EAST", "LOAD"]
    first = venv.reset()  # (K, N, O)
    assert first.shape == (3, 2, 15) and first.dtype == np.float32
    copies = [one(FORAGING, seed=k) for k in range(3)]  # copy k is seeded 0 + k
    np.testing.assert_array_equal(first, np.stack([env.reset() for env in copies]))
    wait = np.full((3, 2), NONE)
    for _ in range(50):
        obs, rewards, dones, info = venv.step(wait)
        assert rewards.shape == dones.shape == (3, 2) and rewards.dtype == np.float32
    assert info["episode_done"].tolist() == [True] * 3 and info["truncated"].all() and not info["terminated"].any()
    np.testing.assert_array_equal(info["final_obs"], first)  # nobody moved or loaded
    np.testing.assert_array_equal(info["episode_team_return"], [0.0] * 3)
    np.testing.assert_array_equal(obs, np.stack([env.reset() for env in copies]))  # each copy's next episode
    with pytest.raises(ValueError, match=r"actions must be in \[0, 5\] \(NONE, NORTH, SOUTH, WEST, EAST, LOAD\)"):
        venv.step(np.array([[0, 0], [0, 6], [0, 0]]))
    with pytest.raises(ValueError, match=r"actions: expected shape \(3, 2\)"):
        venv.step(np.zeros(2, dtype=np.int64))
    venv.close()


def test_foraging_render_frame_is_headless_rgb(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)  # no window: lbforaging's own renderer would need one
    from marl_edu.envs.foraging import AGENT_COLORS

    env = make_env(FORAGING, seed=0)
    with pytest.raises(ValueError, match="call reset"):
        env.render_frame()
    obs = env.reset()
    frame = env.render_frame()
    assert frame.shape == (8 * 40 + 1, 8 * 40 + 1, 3) and frame.dtype == np.uint8  # 40 pixels a cell, 1 for the edge

    def pixel(y, x):  # a point inside cell (y, x), left of its centre and clear of the level written there
        return frame[int(y) * 40 + 20, int(x) * 40 + 10].tolist()

    for k in range(0, 9, 3):  # food: green squares
        assert pixel(obs[0, k], obs[0, k + 1]) == [44, 160, 44]
    assert pixel(obs[0, 9], obs[0, 10]) == list(AGENT_COLORS[0])  # agent 0
    assert pixel(obs[0, 12], obs[0, 13]) == list(AGENT_COLORS[1])  # agent 1
    assert (frame == 255).all(axis=-1).mean() > 0.5  # mostly empty (white) cells
