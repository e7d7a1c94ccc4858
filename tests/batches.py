"""Hand-made batches for the tests of every learner's batch checks, and the ways to break one entry of them."""

import numpy as np
import torch


def episode_batch(B=2, T=3, N=2, O=2, A=5) -> dict:
    """An on-policy batch in ``collect_episodes``'s layout: B episodes of T real steps, N agents, obs dim O, A actions."""
    generator = torch.Generator().manual_seed(0)
    return {"obs": torch.rand(B, T + 1, N, O, generator=generator),
            "actions": torch.randint(0, A, (B, T + 1, N), generator=generator),
            "rewards": torch.full((B, T, N), -0.1), "dones": torch.zeros(B, T), "step_mask": torch.ones(B, T),
            "agent_mask": torch.ones(B, T, N), "epsilon": 0.1}


def replay_batch(B=8, N=2, O=3, A=5) -> dict[str, np.ndarray]:
    """What ``ReplayBuffer.sample`` returns: numpy arrays of B transitions, one-hot float32 actions."""
    rng = np.random.default_rng(0)
    return {"obs": rng.random((B, N, O), dtype=np.float32), "next_obs": rng.random((B, N, O), dtype=np.float32),
            "actions": np.eye(A, dtype=np.float32)[rng.integers(0, A, (B, N))],
            "rewards": rng.random((B, N), dtype=np.float32), "dones": np.zeros((B, N), dtype=np.float32)}


def replaced(key, value):
    """A change of a batch: ``key`` holds ``value`` instead."""
    return lambda batch: batch | {key: value}


def entry_set(key, index, value):
    """A change of a batch: entry ``index`` of ``batch[key]`` (a numpy array or tensor, copied first) set to ``value``."""
    def change(batch):
        array = batch[key].clone() if isinstance(batch[key], torch.Tensor) else batch[key].copy()
        array[index] = value
        return batch | {key: array}
    return change
