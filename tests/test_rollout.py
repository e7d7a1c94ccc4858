import numpy as np
import pytest
import torch

from marl_edu.data.rollout import collect_episodes, random_policy, run_episode, team_returns
from marl_edu.envs.make import make_env, make_vec_env
from marl_edu.learners.coma import COMA, COMAConfig
from batches import episode_batch

NOOP = 4


def test_noop_episode_by_hand():
    env = make_env("Switch2-v0")
    episode = run_episode(env, lambda obs: np.array([NOOP, NOOP]))
    assert episode.length == 50  # nobody arrives, so the time limit ends it
    assert episode.obs.shape == episode.next_obs.shape == (50, 2, 2)
    assert episode.actions.shape == episode.rewards.shape == episode.dones.shape == (50, 2)
    assert episode.agent_returns.tolist() == pytest.approx([-5.0, -5.0])  # 50 x -0.1 each
    assert episode.team_return == pytest.approx(-10.0)  # the sum over both agents
    assert episode.truncated[-1].all() and not episode.terminated.any()
    np.testing.assert_array_equal(episode.obs[1:], episode.next_obs[:-1])  # next_obs[t] is obs[t + 1]


def test_frames_are_one_more_than_steps():
    episode = run_episode(make_env("Switch2-v0"), lambda obs: np.array([NOOP, NOOP]), record_frames=True)
    assert len(episode.frames) == episode.length + 1  # the start, then one per step
    assert run_episode(make_env("Switch2-v0"), lambda obs: np.array([NOOP, NOOP])).frames is None


def test_random_policy_is_deterministic_for_a_seed():
    env = make_env("Switch2-v0")
    a = run_episode(env, random_policy(2, 5, np.random.default_rng(7)))
    b = run_episode(env, random_policy(2, 5, np.random.default_rng(7)))
    np.testing.assert_array_equal(a.actions, b.actions)
    assert a.team_return == b.team_return


def test_team_returns_and_bad_inputs():
    env = make_env("Switch2-v0")
    returns = team_returns(env, lambda obs: np.array([NOOP, NOOP]), n_episodes=3, progress=False)
    np.testing.assert_allclose(returns, [-10.0] * 3)
    with pytest.raises(ValueError, match="n_episodes must be a positive int"):
        team_returns(env, lambda obs: np.array([NOOP, NOOP]), n_episodes=0)
    with pytest.raises(ValueError, match="rng must be a numpy Generator"):
        random_policy(2, 5, rng=0)
    with pytest.raises(ValueError, match="n_actions must be a positive int, got 0"):
        random_policy(2, 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="policy must be a function"):
        run_episode(env, policy=None)
    with pytest.raises(ValueError, match=r"actions: expected shape \(2,\) \(1 dims\), got \(\) \(0 dims\)"):
        run_episode(env, lambda obs: 4)  # one action for the team instead of one per agent


def test_collected_batch_shapes_and_masks():
    venv = make_vec_env("Switch2-v0", 3, seed=0)
    agent = COMA(2, 2, 5, COMAConfig(hidden=8, n_envs=3), seed=0)
    batch, returns, steps = collect_episodes(agent, venv, epsilon=1.0)  # uniformly random play
    assert batch["obs"].shape == (3, 51, 2, 2) and batch["actions"].shape == (3, 51, 2)
    assert batch["rewards"].shape == (3, 50, 2) and batch["agent_mask"].shape == (3, 50, 2)
    lengths = batch["step_mask"].sum(dim=1)  # (K,)
    assert steps == int(lengths.sum()) and len(returns) == 3
    # each agent's rewards, summed over agents and steps, are the episode's team return
    assert batch["rewards"].sum(dim=(1, 2)).tolist() == pytest.approx(returns, abs=1e-4)
    # padding is 'done', so nothing flows back from it; a real step is done only at a terminal end
    for k, length in enumerate(lengths.long().tolist()):
        assert batch["dones"][k, length:].eq(1).all()
        assert batch["dones"][k, : length - 1].eq(0).all()
    # the end state (index length) holds the last observation and an action sampled there, for bootstrapping
    ends = lengths.long()
    end_obs = batch["obs"][torch.arange(3), ends]  # (K, N, O)
    assert end_obs.abs().sum() > 0  # an observation was written there (positions are never all zero)
    assert batch["actions"][torch.arange(3), ends].ne(0).any()  # 6 uniform samples, not all DOWN (fixed seed)


def test_check_episode_batch_accepts_a_collected_batch_and_returns_its_sizes():
    from marl_edu.data.rollout import check_episode_batch

    agent = COMA(2, 2, 5, COMAConfig(hidden=8, n_envs=3), seed=0)
    batch, _, _ = collect_episodes(agent, make_vec_env("Switch2-v0", 3, seed=0), epsilon=0.2)
    T = batch["rewards"].shape[1]
    assert check_episode_batch(batch, 2, 2, 5) == {"B": 3, "T+1": T + 1, "T": T, "N": 2, "O": 2, "A": 5}
    assert check_episode_batch(episode_batch(), 2, 2, 5)["T"] == 3


@pytest.mark.parametrize("key, value, message", [
    ("actions", torch.zeros(2, 4, 2), r"batch\['actions'\]: expected torch.int64 elements \(action indices in "
                                      r"\[0, A\)\), got torch.float32"),
    ("rewards", torch.zeros(2, 4, 2), r"batch\['rewards'\]: expected shape \(B=2, T=3, N=2\), got \(2, 4, 2\): axis 1"),
    ("obs", torch.zeros(2, 4, 2, 3), r"batch\['obs'\]: expected shape \(B, T\+1, N=2, O=2\), got \(2, 4, 2, 3\)"),
    ("obs", np.zeros((2, 4, 2, 2), dtype=np.float32), r"batch\['obs'\]: expected a torch tensor \(collect_episodes "
                                                      r"makes them\), got ndarray"),
    ("obs", torch.zeros(2, 4, 2, 2, dtype=torch.float64), r"batch\['obs'\]: expected torch.float32 elements, got "
                                                          r"torch.float64"),
    ("epsilon", 1.5, r"batch\['epsilon'\] must be a number in \[0, 1\], got 1.5"),
    ("step_mask", torch.zeros(2, 3), r"batch\['step_mask'\]: expected at least one real step \(a 1\), got all zeros"),
])
def test_check_episode_batch_names_the_tensor(key, value, message):
    from marl_edu.data.rollout import check_episode_batch

    with pytest.raises(ValueError, match=message):
        check_episode_batch(episode_batch() | {key: value}, 2, 2, 5)


class _CorruptedEnv:
    """make_vec_env's copies, except that copy 1's observation or reward turns NaN at step 2."""

    def __init__(self, what):
        self.venv, self.what, self.t = make_vec_env("Switch2-v0", 3, seed=0), what, 0

    def __getattr__(self, name):
        return getattr(self.venv, name)

    def reset(self):
        self.t = 0
        return self.venv.reset()

    def step(self, actions):
        next_obs, rewards, dones, info = self.venv.step(actions)
        self.t += 1
        if self.t == 2:
            (next_obs if self.what == "obs" else rewards)[1, 0] = np.nan
        return next_obs, rewards, dones, info


@pytest.mark.parametrize("what, message", [
    ("obs", r"the observations the policy got \(B, N, O\) must be finite, got 2 NaN and 0 infinite of 12 entries, "
            r"the first at index \(1, 0, 0\)"),
    ("rewards", r"the env's rewards \(K, T, N\) must be finite, got 1 NaN and 0 infinite of \d+ entries, "
                r"the first at index \(1, 1, 0\)")])
def test_collect_episodes_refuses_nan_from_the_env(what, message):
    # step 2 (t = 1) returns the NaN: its reward is recorded at t = 1 and the whole batch's check refuses it; the
    # observation after it (both entries of copy 1's agent 0: 2 NaN of K*N*O = 12) is refused by the policy that
    # would act on it at t = 2
    agent = COMA(2, 2, 5, COMAConfig(hidden=8, n_envs=3), seed=0)
    with pytest.raises(ValueError, match=message):
        collect_episodes(agent, _CorruptedEnv(what), epsilon=0.5)
