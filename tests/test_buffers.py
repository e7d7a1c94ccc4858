from collections import deque

import math

import numpy as np
import pytest
import torch

from marl_edu.base.shapes import one_hot
from marl_edu.data.buffers import ReplayBuffer, check_replay_batch, n_step_transitions
from batches import entry_set, replaced, replay_batch


def fill(buffer, steps):
    """Transition t stores obs[i] = [10 t + i, 0], so every value says when and whose it is."""
    for t in range(steps):
        obs = np.array([[10 * t + i, 0] for i in range(2)], dtype=np.float32)  # (N=2, O=2)
        actions = one_hot(np.array([t % 5, (t + 1) % 5]), 5)  # (N=2, A=5)
        rewards = np.array([t, -t], dtype=np.float32)  # (N=2,)
        buffer.add(obs, actions, rewards, obs + 1, np.array([False, t == steps - 1]))


def test_storage_shapes_and_ring_overwrite():
    buffer = ReplayBuffer(capacity=3, n_agents=2, obs_dim=2, act_dim=5)
    assert buffer.obs.shape == (3, 2, 2) and buffer.actions.shape == (3, 2, 5) and buffer.rewards.shape == (3, 2)
    fill(buffer, 4)  # t = 0, 1, 2, 3 into 3 slots: t = 3 overwrites slot 0
    assert len(buffer) == 3
    assert buffer.obs[:, 0, 0].tolist() == [30, 10, 20]  # slot 0 holds t=3 (10*3 + 0), slots 1, 2 hold t=1, 2


def test_one_index_set_is_shared_by_all_agents():
    buffer = ReplayBuffer(capacity=100, n_agents=2, obs_dim=2, act_dim=5)
    fill(buffer, 50)
    batch = buffer.sample(64, np.random.default_rng(0))
    assert batch["obs"].shape == batch["next_obs"].shape == (64, 2, 2)
    assert batch["actions"].shape == (64, 2, 5) and batch["rewards"].shape == batch["dones"].shape == (64, 2)
    t = (batch["obs"][:, 0, 0] / 10).astype(int)  # the time step of agent 0's row, (B,)
    np.testing.assert_array_equal(batch["obs"][:, 1, 0], 10 * t + 1)  # agent 1's row is from the same t
    np.testing.assert_array_equal(batch["rewards"], np.stack([t, -t], axis=1))
    np.testing.assert_array_equal(batch["actions"].argmax(-1), np.stack([t % 5, (t + 1) % 5], axis=1))


def test_sampling_is_deterministic_for_a_seed():
    buffer = ReplayBuffer(capacity=100, n_agents=2, obs_dim=2, act_dim=5)
    fill(buffer, 50)
    a = buffer.sample(8, np.random.default_rng(1))
    b = buffer.sample(8, np.random.default_rng(1))
    for key in ReplayBuffer.KEYS:
        np.testing.assert_array_equal(a[key], b[key])


def test_replay_bad_inputs():
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        ReplayBuffer(0, 2, 2, 5)
    buffer = ReplayBuffer(10, 2, 2, 5)
    with pytest.raises(ValueError, match="empty ReplayBuffer"):
        buffer.sample(4, np.random.default_rng(0))
    obs = np.zeros((2, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"store one-hot actions: shapes.one_hot\(actions, 5\)"):
        buffer.add(obs, np.array([0, 1]), np.zeros(2), obs, np.zeros(2))
    with pytest.raises(ValueError, match=r"rewards: expected shape \(N=2,\) \(1 dims\), got \(2, 1\) \(2 dims\)"):
        buffer.add(obs, np.zeros((2, 5)), np.zeros((2, 1)), obs, np.zeros(2))
    with pytest.raises(ValueError, match=r"obs: expected shape \(N=2, O=2\), got \(3, 2\)"):
        buffer.add(np.zeros((3, 2)), np.zeros((2, 5)), np.zeros(2), obs, np.zeros(2))
    with pytest.raises(ValueError, match="are rewards and dones swapped"):
        buffer.add(obs, np.zeros((2, 5)), np.array([False, True]), obs, np.array([-0.1, -0.1]))
    fill(buffer, 3)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        buffer.sample(0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng must be a numpy Generator"):
        buffer.sample(4, rng=42)
    with pytest.raises(ValueError, match=r"indices must be in \[0, 2\]"):
        buffer.get(np.array([0, 3]))


@pytest.mark.parametrize("key", ["obs", "actions", "rewards", "next_obs"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_add_refuses_nan_and_infinity_and_stores_nothing(key, bad):
    buffer = ReplayBuffer(10, 2, 2, 5)
    fill(buffer, 2)
    transition = {"obs": np.zeros((2, 2), dtype=np.float32), "actions": one_hot(np.array([0, 1]), 5),
                  "rewards": np.zeros(2, dtype=np.float32), "next_obs": np.zeros((2, 2), dtype=np.float32),
                  "dones": np.zeros(2)}
    transition[key][-1] = bad  # agent 1's last entry
    with pytest.raises(ValueError, match=rf"^{key} must be finite, got .* the first at index \(1"):
        buffer.add(**transition)
    assert len(buffer) == 2 and np.isfinite(buffer.obs).all() and np.isfinite(buffer.actions).all()


@pytest.mark.parametrize("key", ["obs", "rewards", "next_obs"])
@pytest.mark.parametrize("big", [1e300, -1e39])
def test_add_refuses_values_that_overflow_float32_where_they_are_stored(key, big):
    # float32's largest is about 3.4e38: 1e300 and -1e39 are finite as float64 but become +-inf once stored, so the
    # check is on the values as stored (issue 32)
    buffer = ReplayBuffer(10, 2, 2, 5)
    fill(buffer, 2)
    transition = {"obs": np.zeros((2, 2)), "actions": one_hot(np.array([0, 1]), 5), "rewards": np.zeros(2),
                  "next_obs": np.zeros((2, 2)), "dones": np.zeros(2)}
    transition[key][-1] = big  # agent 1's row: 2 entries of obs, 1 reward
    assert np.isfinite(transition[key]).all()
    count = np.size(transition[key][-1])
    with pytest.raises(ValueError, match=rf"^{key} as stored \(float32\) must be finite, got 0 NaN and {count} "
                                         rf"infinite of {transition[key].size} entries, the first at index \(1"):
        buffer.add(**transition)
    assert len(buffer) == 2 and np.isfinite(buffer.obs).all() and np.isfinite(buffer.rewards).all()


def test_add_refuses_text_naming_the_argument():
    buffer = ReplayBuffer(10, 2, 2, 5)
    obs = np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"^rewards must be numbers, got an array of <U1"):
        buffer.add(obs, one_hot(np.array([0, 1]), 5), np.array(["a", "b"]), obs, np.zeros(2))
    assert len(buffer) == 0


# each bad batch (B=4, N=2, O=3, A=5 one-hot) and what its message must say
BAD_REPLAY_BATCHES = {
    "a missing key": (lambda b: {k: v for k, v in b.items() if k != "rewards"},
                      r"batch is missing \['rewards'\]: a replay batch holds obs, actions, rewards, next_obs, dones"),
    "an unknown key": (replaced("returns", np.zeros((4, 2))), r"batch has unexpected keys \['returns'\]"),
    "not a dict": (lambda b: list(b.values()), r"batch must be a dict of arrays \(ReplayBuffer.sample's\), got list"),
    "action indices": (replaced("actions", np.zeros((4, 2), dtype=np.int64)),
                       r"batch\['actions'\]: expected shape \(B=4, N=2, A=5\) \(3 dims\), got \(4, 2\) \(2 dims\);"
                       r" store one-hot actions: shapes.one_hot\(actions, 5\)"),
    "int one-hot actions": (lambda b: b | {"actions": b["actions"].astype(np.int64)},
                            r"batch\['actions'\]: expected float elements, got dtype (torch\.)?int64"),
    "actions not 0/1": (entry_set("actions", (2, 1, 0), 0.5), r"batch\['actions'\] must be 0 or 1 in every entry, "
                                                        r"got 0.5 at index \(2, 1, 0\)"),
    "two actions at once": (replaced("actions", np.ones((4, 2, 5), dtype=np.float32)),
                            r"batch\['actions'\] must be one-hot rows \(one 1 per agent\), got 5.0 ones at \(0, 0\)"),
    "wrong A": (replaced("actions", np.zeros((4, 2, 4), dtype=np.float32)),
                r"batch\['actions'\]: expected shape \(B=4, N=2, A=5\), got \(4, 2, 4\)"),
    "wrong N": (replaced("obs", np.zeros((4, 3, 3), dtype=np.float32)),
                r"batch\['obs'\]: expected shape \(B, N=2, O=3\), got \(4, 3, 3\)"),
    "wrong O": (replaced("next_obs", np.zeros((4, 2, 2), dtype=np.float32)),
                r"batch\['next_obs'\]: expected shape \(B=4, N=2, O=3\), got \(4, 2, 2\)"),
    "rewards (B,)": (replaced("rewards", np.zeros(4, dtype=np.float32)),
                     r"batch\['rewards'\]: expected shape \(B=4, N=2\) \(2 dims\), got \(4,\) \(1 dims\)"),
    "rewards of another B": (replaced("rewards", np.zeros((3, 2), dtype=np.float32)),
                             r"batch\['rewards'\]: expected shape \(B=4, N=2\), got \(3, 2\)"),
    "B = 0": (lambda b: {k: v[:0] for k, v in b.items()}, r"batch\['obs'\]: expected B >= 1 transitions, got B = 0"),
    "int obs": (lambda b: b | {"obs": b["obs"].astype(np.int64)}, r"batch\['obs'\]: expected float elements"),
    "NaN obs": (entry_set("obs", (1, 0, 2), math.nan), r"batch\['obs'\] must be finite, got 1 NaN and 0 infinite of 24 "
                                                  r"entries, the first at index \(1, 0, 2\)"),
    "inf next_obs": (entry_set("next_obs", (3, 1, 0), math.inf), r"batch\['next_obs'\] must be finite, got 0 NaN and 1"),
    "NaN reward": (entry_set("rewards", (0, 1), math.nan), r"batch\['rewards'\] must be finite, got 1 NaN"),
    "NaN action": (entry_set("actions", (0, 1, 1), math.nan), r"batch\['actions'\] must be finite, got 1 NaN"),
    "dones 2": (entry_set("dones", (1, 1), 2.0), r"batch\['dones'\] must be 0 or 1 in every entry, got 2.0 at index "
                                            r"\(1, 1\)"),
    "rewards as dones": (replaced("dones", np.full((4, 2), -0.1, dtype=np.float32)),
                         r"batch\['dones'\] must be 0 or 1 in every entry, got -0.1"),
}


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("case", BAD_REPLAY_BATCHES)
def test_check_replay_batch_names_what_is_wrong(case, kind):
    change, message = BAD_REPLAY_BATCHES[case]

    def as_kind(batch):  # the same batch as tensors: a learner's update may get either
        if kind == "torch" and isinstance(batch, dict):
            return {key: torch.as_tensor(value) for key, value in batch.items()}
        return batch

    assert check_replay_batch(as_kind(replay_batch(B=4)), 2, 3, 5, one_hot=True) == {"B": 4, "N": 2, "O": 3, "A": 5}
    bad = as_kind(change(replay_batch(B=4)))
    with pytest.raises(ValueError, match=message):
        check_replay_batch(bad, 2, 3, 5, one_hot=True)


def test_check_replay_batch_continuous_actions_and_sub_policies():
    batch = replay_batch(B=4, A=2) | {"actions": np.full((4, 2, 2), -0.7, dtype=np.float32)}  # forces, not one-hot
    check_replay_batch(batch, 2, 3, 2)
    with pytest.raises(ValueError, match=r"batch\['actions'\] must be 0 or 1"):
        check_replay_batch(batch, 2, 3, 2, one_hot=True)
    playing = batch | {"subpolicies": np.array([[0, 2]] * 4)}  # (B, N) in [0, M=3)
    check_replay_batch(playing, 2, 3, 2, n_subpolicies=3)
    with pytest.raises(ValueError, match=r"^batch is missing \['subpolicies'\]"):
        check_replay_batch(batch, 2, 3, 2, n_subpolicies=3)
    with pytest.raises(ValueError, match=r"^batch\['slices'\]\[1\]\[0\]\['subpolicies'\] must be in \[0, 1\]"):
        check_replay_batch(playing, 2, 3, 2, n_subpolicies=2, name="batch['slices'][1][0]")
    with pytest.raises(ValueError, match=r"batch\['subpolicies'\]: expected int elements"):
        check_replay_batch(playing | {"subpolicies": np.zeros((4, 2))}, 2, 3, 2, n_subpolicies=3)


def _pending(rewards):
    pending = deque(maxlen=3)
    for t, r in enumerate(rewards):
        pending.append((f"o{t}", f"a{t}", r))
    return pending


def test_n_step_return_by_hand():
    # gamma = 0.5, rewards 1, 2, 4: R = 1 + 0.5 * 2 + 0.25 * 4 = 3.0, bootstrapped from next_obs
    out = n_step_transitions(_pending([1.0, 2.0, 4.0]), 0.5, "o3", terminal=False, flush=False)
    assert out == [("o0", "a0", 3.0, "o3", False)]


def test_terminal_flushes_the_tail_and_truncation_drops_it():
    # terminal after 2 pending steps (rewards 1, 2): R_0 = 1 + 0.5 * 2 = 2.0, R_1 = 2.0, both terminal
    out = n_step_transitions(_pending([1.0, 2.0]), 0.5, "end", terminal=True, flush=True)
    assert out == [("o0", "a0", 2.0, "end", True), ("o1", "a1", 2.0, "end", True)]
    # time limit with 2 pending steps: their returns would need gamma^2, not gamma^3: dropped
    pending = _pending([1.0, 2.0])
    assert n_step_transitions(pending, 0.5, "end", terminal=False, flush=True) == [] and len(pending) == 0


def test_n_steps_arrive_one_at_a_time_then_the_terminal_tail():
    # n = 3, gamma = 0.5, rewards 1, 2, 4, 8 then terminal: each append after the third emits the oldest step,
    # R_0 = 1 + 1 + 1 = 3.0, R_1 = 2 + 2 + 2 = 6.0, then at the end R_2 = 4 + 4 = 8.0 and R_3 = 8.0
    pending = deque(maxlen=3)
    emitted = []
    for t, (r, done) in enumerate([(1.0, False), (2.0, False), (4.0, False), (8.0, True)]):
        pending.append((f"o{t}", f"a{t}", r))
        emitted += [row[:3] for row in n_step_transitions(pending, 0.5, f"o{t + 1}", terminal=done, flush=done)]
    assert emitted == [("o0", "a0", 3.0), ("o1", "a1", 6.0), ("o2", "a2", 8.0), ("o3", "a3", 8.0)]
