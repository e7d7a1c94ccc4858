"""BatchedSwitch against ma-gym's Switch (stepped through envs.VecEnv): the same transitions to the last bit."""

import numpy as np
import pytest

from marl_edu.envs.batched_switch import BatchedSwitch
from marl_edu.envs.make import VecEnv, make_vec_env

SWITCH_IDS = [f"Switch{n}-v{v}" for n in (2, 3, 4) for v in range(4)]  # (Switch3: registered by marl_edu.envs.make)
D, L, U, R, NOOP = range(5)  # ma-gym's actions: down, left, up, right, no-op


def _same_step(reference, batched, actions):
    """Step both with int actions (K, N) and assert every output is identical (values, dtypes, NaNs)."""
    expected, got = reference.step(actions), batched.step(actions)
    for name, x, y in zip(("obs", "rewards", "dones"), expected[:3], got[:3]):
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y), f"{name} differ after actions {actions.tolist()}:\n{x}\n{y}"
    assert set(expected[3]) == set(got[3])
    for key in expected[3]:
        x, y = expected[3][key], got[3][key]
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), f"info[{key!r}]: {x} vs {y}"
    return got


def _pair(env_id, n_envs):
    reference, batched = VecEnv(env_id, n_envs, 0), BatchedSwitch(env_id, n_envs, 0)
    first, mine = reference.reset(), batched.reset()
    assert first.dtype == mine.dtype == np.float32 and np.array_equal(first, mine)
    return reference, batched


@pytest.mark.parametrize("env_id", SWITCH_IDS)
def test_a_million_random_transitions_match_ma_gym(env_id):
    # 12 ids x 32 copies x 3,907 steps = 1,500,288 transitions. Half the actions head for the agent's goal (down or up
    # to the corridor, then along it), so that agents arrive, block each other in the corridor and end episodes early;
    # the other half are uniform, so that walls, no-ops and the time limit are met too.
    n_envs, steps = 32, 3907
    reference, batched = _pair(env_id, n_envs)
    rng = np.random.default_rng(SWITCH_IDS.index(env_id))
    N = batched.n_agents
    toward = np.array([R, L, R, L])[:N]  # (N,) the corridor direction of each agent's goal
    arrivals = 0
    for _ in range(steps):
        actions = rng.integers(0, 5, size=(n_envs, N))  # (K, N)
        guided = rng.random((n_envs, N)) < 0.5
        along = np.where(rng.random((n_envs, N)) < 0.7, toward, rng.choice([D, U], size=(n_envs, N)))
        actions = np.where(guided, along, actions)
        _, rewards, _, _ = _same_step(reference, batched, actions)
        arrivals += int((rewards == 5).sum())
    assert arrivals > 100  # the walk reaches the goals often enough to test arrivals


def _scripted(env_id, script):
    """Play ``script`` (a list of per-step actions (N,)) in one copy of both envs; return the batched outputs."""
    reference, batched = _pair(env_id, 1)
    return [_same_step(reference, batched, np.array([actions])) for actions in script]


def test_walls_and_the_grid_edge_block_a_move():
    # agent 0 starts at (0, 1): up leaves the grid, right (0, 2) is wall; left to (0, 0) and down to (1, 1) are free
    out = _scripted("Switch2-v0", [[U, NOOP], [R, NOOP], [L, NOOP], [D, NOOP]])
    rows_cols = [tuple(np.round(o[0][0, 0] * [2, 6]).astype(int)) for o in out]  # (row, col) of agent 0
    assert rows_cols == [(0, 1), (0, 1), (0, 0), (1, 0)]
    assert out[0][1][0].tolist() == pytest.approx([-0.1, -0.1])  # a blocked move still costs a step


def test_agents_move_in_index_order():
    # both step down into the corridor, then walk towards each other until they are side by side at (1, 3), (1, 4)
    to_meet = [[D, D], [R, L], [R, NOOP]]
    # agent 0 steps into the cell agent 1 leaves on the same step (agent 1 moves after it): blocked...
    follow_blocked = _scripted("Switch2-v0", to_meet + [[R, R]])[-1][0][0]
    assert np.round(follow_blocked[:, 1] * 6).tolist() == [3, 5]  # agent 0 stayed at column 3, agent 1 moved on
    # ...while agent 1 may step into the cell agent 0 left on the same step
    follow_allowed = _scripted("Switch2-v0", to_meet + [[L, L]])[-1][0][0]
    assert np.round(follow_allowed[:, 1] * 6).tolist() == [2, 3]
    # swapping places is blocked both ways: each target cell is occupied when its agent moves
    swap = _scripted("Switch2-v0", to_meet + [[R, L]])[-1][0][0]
    assert np.round(swap[:, 1] * 6).tolist() == [3, 4]


def test_arrival_pays_five_once_and_the_arrived_agent_blocks_the_cell():
    # agent 1 walks home from (0, 5): down, five lefts, up to (0, 0), arriving on step 7; then agent 0, still at
    # (0, 1), tries to step left onto (0, 0), where agent 1 now stands for the rest of the episode
    script = [[NOOP, D]] + [[NOOP, L]] * 5 + [[NOOP, U]] + [[L, NOOP]] * 2
    out = _scripted("Switch2-v0", script)
    rewards = np.array([o[1][0] for o in out])  # (T, N)
    assert rewards[:, 1].tolist() == pytest.approx([-0.1] * 6 + [5.0, 0.0, 0.0])  # +5 once, then nothing
    assert out[6][3]["terminated"][0].tolist() == [False, True]
    assert out[6][2][0].tolist() == [False, True]  # agent 1 is done, the episode goes on
    assert out[-1][0][0, 0].tolist() == pytest.approx([0.0, 0.17])  # agent 0 blocked: still at (0, 1)


def test_time_limit_truncates_and_an_arrival_on_the_last_step_terminates():
    # agent 1 walks home in 7 steps, waiting so that it arrives on step 50 exactly; agent 0 never moves
    script = [[NOOP, NOOP]] * 43 + [[NOOP, D]] + [[NOOP, L]] * 5 + [[NOOP, U]]
    out = _scripted("Switch2-v2", script)
    assert len(out) == 50
    obs, rewards, dones, info = out[-1]
    assert rewards[0].tolist() == pytest.approx([-0.1, 5.0])
    assert dones[0].tolist() == [True, True]
    assert info["terminated"][0].tolist() == [False, True] and info["truncated"][0].tolist() == [True, False]
    assert info["episode_done"].tolist() == [True]
    assert info["episode_team_return"][0] == pytest.approx(50 * -0.1 + (49 * -0.1 + 5.0), abs=1e-4)
    assert info["final_obs"][0, 1].tolist() == pytest.approx([0.0, 0.0, 1.0])  # (0, 0) at step 50/50
    assert np.allclose(obs[0], [[0.0, 0.17, 0.0], [0.0, 0.83, 0.0]])  # reset at once: the start


@pytest.mark.parametrize("env_id, obs_dim", [("Switch2-v0", 2), ("Switch2-v1", 4), ("Switch2-v2", 3),
                                             ("Switch4-v3", 12)])
def test_observation_layouts(env_id, obs_dim):
    env = BatchedSwitch(env_id, 3)
    obs = env.reset()
    assert obs.shape == (3, env.n_agents, obs_dim) and env.obs_dim == obs_dim
    if env_id == "Switch2-v1":  # every agent sees both: [row_1, col_1, row_2, col_2]
        assert np.allclose(obs[0], [[0.0, 0.17, 0.0, 0.83]] * 2)


def test_make_vec_env_picks_the_batched_switch_and_ma_gym_stays_selectable():
    assert isinstance(make_vec_env("Switch2-v0", 4, 0), BatchedSwitch)
    assert isinstance(make_vec_env("Switch2-v0", 4, 0, backend="ma-gym"), VecEnv)
    assert isinstance(make_vec_env("Checkers-v0", 2, 0), VecEnv)  # not a Switch: ma-gym's own
    with pytest.raises(ValueError, match="backend"):
        make_vec_env("Switch2-v0", 4, 0, backend="fast")


@pytest.mark.parametrize("actions, match", [
    (np.zeros((2, 3), dtype=np.int64), r"actions: expected shape \(2, 2\)"),
    (np.zeros((2, 2), dtype=np.float32), "actions"),
    (np.full((2, 2), 5), r"actions must be in \[0, 4\]"),
    (np.full((2, 2), -1), r"actions must be in \[0, 4\]"),
])
def test_bad_actions_are_named(actions, match):
    env = BatchedSwitch("Switch2-v0", 2)
    env.reset()
    with pytest.raises(ValueError, match=match):
        env.step(actions)


def test_bad_construction_and_order_are_named():
    with pytest.raises(ValueError, match="Switch"):
        BatchedSwitch("Checkers-v0", 2)
    with pytest.raises(ValueError, match="n_envs"):
        BatchedSwitch("Switch2-v0", 0)
    with pytest.raises(ValueError, match="reset"):
        BatchedSwitch("Switch2-v0", 2).step(np.zeros((2, 2), dtype=np.int64))
