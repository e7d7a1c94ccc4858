"""Cooperative navigation with discrete actions (``envs.spread_discrete``): mpe2's simple_spread_v3 with
``continuous_actions=False`` behind the course's interface."""

import json

import numpy as np
import pytest
from PIL import Image

from marl_edu.course.cli import main
from marl_edu.envs.make import make_env, make_vec_env
from marl_edu.envs.spread_discrete import ACTION_MEANINGS, SPREAD_DISCRETE_ID, SpreadDiscreteEnv
from marl_edu.learners.table import ALGORITHMS, entry

NOOP, LEFT, RIGHT, DOWN, UP = range(5)


def positions(env) -> np.ndarray:
    return np.array([agent.state.p_pos for agent in env._env.unwrapped.world.agents])  # (N, 2)


def landmarks(env) -> np.ndarray:
    return np.array([landmark.state.p_pos for landmark in env._env.unwrapped.world.landmarks])  # (L, 2)


def test_sizes_shapes_and_dtypes():
    env = make_env(SPREAD_DISCRETE_ID, seed=0)
    assert isinstance(env, SpreadDiscreteEnv) and not hasattr(env, "action_dim")
    assert (env.n_agents, env.obs_dim, env.n_actions, env.max_steps) == (3, 18, 5, 25)
    assert env.action_meanings == ACTION_MEANINGS == ["NOOP", "LEFT", "RIGHT", "DOWN", "UP"]
    obs = env.reset()
    assert obs.shape == (3, 18) and obs.dtype == np.float32
    next_obs, rewards, dones, info = env.step(np.array([NOOP, LEFT, UP]))
    assert next_obs.shape == (3, 18) and next_obs.dtype == np.float32
    assert rewards.shape == (3,) and rewards.dtype == np.float32
    assert dones.shape == (3,) and dones.dtype == bool and not dones.any()
    assert info["terminated"].dtype == info["truncated"].dtype == bool and info["step"] == 1
    assert set(info) >= {"landmark_distance", "agent_collisions", "collisions"}


def test_an_action_pushes_the_agent_its_way():
    # obs[:, 0:2] is each agent's velocity, 0 at the start. mpe2 scales a discrete action's unit force by 5 (its
    # sensitivity) and integrates over dt = 0.1 with mass 1: one step from rest gives a speed of 5 * 0.1 / 1 = 0.5.
    env = make_env(SPREAD_DISCRETE_ID, seed=0)
    np.testing.assert_array_equal(env.reset()[:, 0:2], 0.0)
    obs, _, _, info = env.step(np.array([RIGHT, LEFT, UP]))
    assert info["collisions"] == 0  # (no contact force to add)
    np.testing.assert_allclose(obs[:, 0:2], [[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5]], atol=1e-6)
    obs, _, _, _ = env.step(np.array([NOOP, DOWN, NOOP]))  # damping 0.25 slows a free agent: 0.5 * 0.75 = 0.375
    np.testing.assert_allclose(obs[:, 0:2], [[0.375, 0.0], [-0.375, -0.5], [0.0, 0.375]], atol=1e-6)


def test_each_reward_by_hand_and_the_team_reward_is_their_sum():
    # mpe2's reward with local_ratio 0.5: 0.5 * (-(sum over landmarks of the distance to the nearest agent)) +
    # 0.5 * (-(other agents this one touches)); the team reward is the sum over the three agents.
    env = make_env(SPREAD_DISCRETE_ID, seed=3)
    env.reset()
    rng = np.random.default_rng(0)
    total = 0.0
    for _ in range(env.max_steps):
        _, rewards, dones, info = env.step(rng.integers(0, 5, size=3))
        distance = np.linalg.norm(landmarks(env)[:, None] - positions(env)[None], axis=-1).min(axis=1).sum()
        np.testing.assert_allclose(rewards, -0.5 * distance - 0.5 * info["agent_collisions"], rtol=1e-5)
        assert info["landmark_distance"] == pytest.approx(distance)
        total += rewards.sum()
    venv = make_vec_env(SPREAD_DISCRETE_ID, 1, seed=3)
    venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(env.max_steps):
        _, rewards, _, info = venv.step(rng.integers(0, 5, size=(1, 3)))
    assert info["episode_done"][0] and info["episode_team_return"][0] == pytest.approx(total, rel=1e-6)


def test_an_episode_ends_at_the_time_limit_truncated_not_terminated():
    env = make_env(SPREAD_DISCRETE_ID, seed=0)
    env.reset()
    for t in range(1, 26):
        _, _, dones, info = env.step(np.array([NOOP, NOOP, NOOP]))
        assert dones.all() == (t == 25) and info["step"] == t
    assert info["truncated"].all() and not info["terminated"].any()
    with pytest.raises(ValueError, match="the episode is over"):
        env.step(np.array([NOOP, NOOP, NOOP]))


def test_the_same_seed_plays_the_same_episodes():
    def play(seed):
        env = make_env(SPREAD_DISCRETE_ID, seed=seed)
        rng = np.random.default_rng(1)
        out = []
        for _ in range(2):  # the second episode continues the first one's random stream
            out.append(env.reset())
            for _ in range(env.max_steps):
                obs, rewards, _, _ = env.step(rng.integers(0, 5, size=3))
                out += [obs, rewards]
        return np.concatenate([x.ravel() for x in out])

    np.testing.assert_array_equal(play(4), play(4))
    assert not np.array_equal(play(4), play(5))


@pytest.mark.parametrize("actions, message", [
    ([0, 1], r"actions: expected shape \(3,\)"),
    ([0.0, 1.0, 2.0], "actions: expected int elements, got dtype float64"),
    ([0, 5, 1], r"actions must be in \[0, 4\] \(NOOP, LEFT, RIGHT, DOWN, UP\), got \[0, 5, 1\]"),
    ([-1, 0, 0], r"actions must be in \[0, 4\]"),
    (np.eye(5, dtype=np.int64)[[0, 1, 2]], "one-hot actions\\? pass actions.argmax\\(-1\\)"),
])
def test_bad_actions_are_refused(actions, message):
    env = make_env(SPREAD_DISCRETE_ID, seed=0)
    with pytest.raises(ValueError, match="call reset"):
        env.step(np.array([0, 0, 0]))
    env.reset()
    with pytest.raises(ValueError, match=message):
        env.step(np.array(actions))
    venv = make_vec_env(SPREAD_DISCRETE_ID, 2, seed=0)
    venv.reset()
    with pytest.raises(ValueError, match="actions"):
        venv.step(np.array([actions, actions]))


def test_the_frame_is_an_rgb_image():
    env = make_env(SPREAD_DISCRETE_ID, seed=0)
    env.reset()
    frame = env.render_frame()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3


TINY = ["--episodes", "4", "--n-envs", "2", "--hidden", "8", "--eval-every", "4", "--final-episodes", "2",
        "--batch-size", "8", "--warmup", "16", "--no-progress"]  # (the last but one four: the replay of transitions')


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_every_discrete_learner_trains_on_it_from_the_command_line(algo, tmp_path):
    # (the replay of transitions updates once it holds --warmup of them: 16 of the 4 x 25 steps)
    options = TINY if entry(algo).loop == "off_policy" else TINY[:-5] + TINY[-1:]
    assert main(["--algo", algo, "--env", SPREAD_DISCRETE_ID, "--out", str(tmp_path), *options]) == 0
    summary = json.loads((tmp_path / "runs.json").read_text())
    row = summary["seeds"][0]
    assert summary["env"] == SPREAD_DISCRETE_ID and row["episodes"] >= 4 and row["env_steps"] >= 4 * 25
    assert summary["optimal"] is None and np.isfinite(row["greedy"]) and row["greedy"] < 0  # distances cost
    if algo == "vdn":  # the GIF at the family's size: a quarter of mpe2's 700 x 700 pictures (175 = 700 / 4)
        assert Image.open(tmp_path / "seed0" / "greedy.gif").size == (175, 175)
