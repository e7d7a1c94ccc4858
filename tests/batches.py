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


def force_batch(B=2, T=3, N=2, O=2, A=2) -> dict:
    """A batch of whole episodes with forces, ``collect_force_episodes``'s layout: obs ``(B, T+1, N, O)``, actions
    ``(B, T, N, A)`` (the Gaussian's samples), rewards ``(B, T, N)``, dones ``(B, T)``, every step real."""
    generator = torch.Generator().manual_seed(0)
    return {"obs": torch.rand(B, T + 1, N, O, generator=generator),
            "actions": torch.randn(B, T, N, A, generator=generator), "rewards": torch.full((B, T, N), -0.5),
            "dones": torch.zeros(B, T)}


def batch_for(row, N=2, O=2, A=5) -> dict:
    """A correct batch for the update of a learner of table row ``row`` (N agents, obs dim O; A actions, or a force
    dimension of 2): what its loop kind gives its ``update``."""
    if row.loop in ("on_policy", "episode_replay"):
        return episode_batch(N=N, O=O, A=A)
    if row.loop == "continuous_on_policy":
        return force_batch(N=N, O=O)
    batch = replay_batch(N=N, O=O, A=A if row.loop == "off_policy" else 2)
    if row.loop == "continuous":
        batch["actions"] = batch["actions"] * 1.4 - 0.7  # forces in [-0.7, 0.7], not one-hot rows
        if row.policy.subpolicies:  # an ensemble's: the sub-policies played, and no slice batch yet (None: skipped)
            batch["subpolicies"] = np.zeros((8, N), dtype=np.int64)
            batch["slices"] = [[None] * row.config().n_subpolicies for _ in range(N)]
    return batch


def entries_set(key, value, *indices):
    """A change of a batch: entries ``indices`` of ``batch[key]`` (copied first) set to ``value``."""
    def change(batch):
        array = batch[key].clone() if isinstance(batch[key], torch.Tensor) else batch[key].copy()
        for index in indices:
            array[index] = value
        return batch | {key: array}
    return change


def changes(*steps):
    """Several changes of a batch, applied in order."""
    def change(batch):
        for step in steps:
            batch = step(batch)
        return batch
    return change
