"""Where transitions wait to be learned from.

``ReplayBuffer`` (off-policy, MADDPG): one ring buffer whose arrays keep the agent axis,
``(capacity, N, .)``. ``sample`` draws ONE set of indices and uses it for every agent, so row b of
the batch is one moment in time for the whole team. Sampling each agent separately would pair
agent 0's observation at time t with agent 1's action at some other time, and a centralised critic
trained on that learns about a world that never happened.

``n_step_transitions`` turns the steps of one episode, as they arrive, into the n-step transitions the replay
buffer stores (MADDPG on Switch: n = 3). ``check_replay_batch`` is what every off-policy learner's update checks a
batch with before using it.

On-policy learners (COMA and its baselines) keep no buffer: each update learns from the batch of whole episodes that
``rollout.collect_episodes`` has just played, padded to the longest with its masks, and then forgets it.

``EpisodeReplay`` (off-policy with recurrent agents: IQL, VDN, QMIX) keeps those batches of whole episodes instead, and
samples B of them: a GRU's hidden state at step t depends on every step before it, so the unit of replay is the
episode, not the transition.
"""

from __future__ import annotations

from collections import deque
from typing import Mapping

import numpy as np
import torch

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import LIMITS, finite, generator, index_range, positive_int, zero_one
from marl_edu.data.rollout import check_episode_batch


def n_step_transitions(pending: deque, gamma: float, next_obs: np.ndarray, terminal: bool, flush: bool) -> list:
    """The n-step transitions that the newest step of one episode (one env copy) completes.

    Args:
        pending: ``deque(maxlen=n)`` of this episode's not yet emitted steps ``(obs (N, O), actions (N,), reward)``,
            oldest first; the caller appends each new step before calling. Emitted steps are removed.
        gamma: the discount.
        next_obs: ``(N, O)`` the observation after the newest step (at an episode end: the end state).
        terminal: the episode ended in a real terminal state (nothing to bootstrap from after it).
        flush: the episode has ended (terminal or time limit): empty ``pending``.

    Returns:
        A list of ``(obs, actions, R, next_obs, terminal)``: when ``pending`` holds n steps, its oldest step t
        with ``R = r_t + g r_{t+1} + ... + g^{n-1} r_{t+n-1}`` (bootstrapped later with ``g^n Q'(next_obs)``).
        At a terminal end, also the shorter tail (R sums what is left; nothing is bootstrapped after a terminal
        state). A time-limit end drops its tail: those returns would need a shorter discount g^k than the g^n
        every stored transition is assumed to have.
    """
    out = []
    n = pending.maxlen
    while pending and (len(pending) == n or (flush and terminal)):
        ret = sum(gamma ** k * step[2] for k, step in enumerate(pending))
        out.append((pending[0][0], pending[0][1], ret, next_obs, terminal))
        pending.popleft()
        if not flush:
            break
    if flush:
        pending.clear()
    return out


def _stored(value, name: str) -> np.ndarray:
    """``value`` as a ``ReplayBuffer`` stores it, float32, checked finite there (a float64 1e300 becomes inf); a
    ValueError names ``name`` for text or for a value float32 cannot hold."""
    if np.asarray(value).dtype.kind not in "biuf":  # (bool, int, float; text and objects would fail inside numpy)
        raise ValueError(f"{name} must be numbers, got an array of {np.asarray(value).dtype}")
    with np.errstate(over="ignore"):  # (the overflow is reported below, by name)
        stored = np.asarray(value, dtype=np.float32)
    if not np.isfinite(stored).all():
        finite(value, name)  # NaN or infinity in what was given: said as before
        finite(stored, f"{name} as stored (float32)")  # finite as given, too large for float32
    return stored


MAX_BUFFER_BYTES = 8 * 2**30  # a replay's arrays, allocated up front: far above the course's (MADDPG's, Switch2: 10 MB)


def _check_memory(n_bytes: int, what: str) -> None:
    """ValueError before allocating a replay whose arrays would take more than ``MAX_BUFFER_BYTES``."""
    if n_bytes > MAX_BUFFER_BYTES:
        raise ValueError(f"{what} would take {n_bytes / 2**30:,.1f} GiB, more than the {MAX_BUFFER_BYTES // 2**30} GiB "
                         f"a replay may allocate: a smaller capacity")


class ReplayBuffer:
    """A ring buffer of joint transitions, arrays ``(capacity, N, .)``.

    Args:
        capacity: how many transitions to keep; the oldest are overwritten first.
        n_agents: N.  obs_dim: O.  act_dim: A, the width of one agent's stored action (the number of
            actions for one-hot discrete actions, the action dimension for continuous ones).
    """

    KEYS = ("obs", "actions", "rewards", "next_obs", "dones")

    def __init__(self, capacity: int, n_agents: int, obs_dim: int, act_dim: int):
        self.capacity = positive_int(capacity, "capacity", LIMITS["buffer_size"])
        self.n_agents = positive_int(n_agents, "n_agents")
        self.obs_dim = positive_int(obs_dim, "obs_dim")
        self.act_dim = positive_int(act_dim, "act_dim")
        _check_memory(4 * self.capacity * self.n_agents * (2 * self.obs_dim + self.act_dim + 2),
                      f"ReplayBuffer({self.capacity:,} transitions of N={self.n_agents}, O={self.obs_dim}, "
                      f"A={self.act_dim})")
        self.obs = np.zeros((self.capacity, self.n_agents, self.obs_dim), dtype=np.float32)  # (capacity, N, O)
        self.actions = np.zeros((self.capacity, self.n_agents, self.act_dim), dtype=np.float32)  # (capacity, N, A)
        self.rewards = np.zeros((self.capacity, self.n_agents), dtype=np.float32)  # (capacity, N)
        self.next_obs = np.zeros_like(self.obs)  # (capacity, N, O)
        self.dones = np.zeros((self.capacity, self.n_agents), dtype=np.float32)  # (capacity, N) 1.0 = terminal
        self._next = 0  # where the next transition goes
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return (f"ReplayBuffer({self._size}/{self.capacity} transitions, N={self.n_agents}, "
                f"O={self.obs_dim}, A={self.act_dim})")

    def add(self, obs, actions, rewards, next_obs, dones) -> None:
        """Store one joint transition.

        Args:
            obs, next_obs: float ``(N, O)``.
            actions: float ``(N, A)`` (one-hot for discrete actions: use ``shapes.one_hot``).
            rewards: float ``(N,)``.
            dones: bool or float ``(N,)``: 1 only where the agent reached a real terminal state. Pass
                the env's ``info["terminated"]``, not ``dones``: a time-limit end is not terminal.

        Raises ValueError, and stores nothing, for a wrong shape, a NaN or infinite entry, or dones other than 0/1.
        """
        dims = {"N": self.n_agents, "O": self.obs_dim, "A": self.act_dim}
        check_shape(obs, ("N", "O"), "obs", dims)
        if np.ndim(actions) == 1:
            raise ValueError(f"actions: expected shape (N={self.n_agents}, A={self.act_dim}), got "
                             f"{np.shape(actions)}; store one-hot actions: shapes.one_hot(actions, {self.act_dim})")
        check_shape(actions, ("N", "A"), "actions", dims)
        check_shape(rewards, ("N",), "rewards", dims)
        check_shape(next_obs, ("N", "O"), "next_obs", dims)
        check_shape(dones, ("N",), "dones", dims)
        # as stored (float32): 1e300 is finite as a float64 and infinite once stored; a NaN or an infinity stored here
        # would be replayed into every critic for a long time
        obs, actions, rewards, next_obs = (_stored(value, name) for value, name in (
            (obs, "obs"), (actions, "actions"), (rewards, "rewards"), (next_obs, "next_obs")))
        if not np.isin(np.asarray(dones, dtype=np.float64), (0.0, 1.0)).all():
            raise ValueError(f"dones must be 0/1 (or bool) per agent, got {np.asarray(dones).tolist()}; "
                             f"are rewards and dones swapped? The order is (obs, actions, rewards, next_obs, dones)")
        i = self._next
        self.obs[i], self.actions[i], self.rewards[i] = obs, actions, rewards
        self.next_obs[i], self.dones[i] = next_obs, dones
        self._next = (i + 1) % self.capacity
        self._size = min(self._size + 1, self.capacity)

    def sample_indices(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """B indices drawn uniformly (with replacement) from the stored transitions, int ``(B,)``."""
        batch_size = positive_int(batch_size, "batch_size")
        generator(rng, "rng")
        if self._size == 0:
            raise ValueError("cannot sample from an empty ReplayBuffer; add transitions first")
        return rng.integers(0, self._size, size=batch_size)  # (B,)

    def get(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        """The transitions at ``indices`` (B,), for every agent: a dict of arrays ``(B, N, .)``."""
        indices = np.asarray(indices)
        check_shape(indices, ("B",), "indices", dtype="int")
        index_range(indices, self._size, "indices")  # only stored transitions
        return {key: getattr(self, key)[indices] for key in self.KEYS}  # each (B, N, .)

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A batch of B joint transitions, ONE index set shared by all agents.

        Returns a dict: obs ``(B, N, O)``, actions ``(B, N, A)``, rewards ``(B, N)``,
        next_obs ``(B, N, O)``, dones ``(B, N)``.
        """
        return self.get(self.sample_indices(batch_size, rng))


def check_replay_batch(batch: Mapping, n_agents: int, obs_dim: int, act_dim: int, one_hot: bool = False,
                       n_subpolicies: int | None = None, name: str = "batch") -> dict[str, int]:
    """Check a replay batch before a learner's update touches it (one place for every off-policy learner).

    Args:
        batch: a dict of numpy arrays or tensors, ``ReplayBuffer.sample``'s: obs and next_obs float ``(B, N, O)``,
            actions float ``(B, N, A)``, rewards float ``(B, N)``, dones ``(B, N)`` 0/1 (float or bool); with
            ``n_subpolicies`` also subpolicies int ``(B, N)`` (``SubpolicyReplayBuffer.sample``'s, without its
            ``"slices"``). No other keys.
        n_agents, obs_dim, act_dim: the learner's N, O and A.
        one_hot: the actions are discrete: each agent's row must be one-hot (0/1 entries, exactly one 1).
        n_subpolicies: M, when the batch records which of M sub-policies each agent played, in [0, M).
        name: what the messages call the batch (``"batch['slices'][0][1]"`` for one of an ensemble's slices).

    Returns:
        The sizes ``{"B": ..., "N": ..., "O": ..., "A": ...}``.

    Raises:
        ValueError naming the entry, what was expected and what came: a missing or unknown key, a wrong shape or
        dtype, B = 0, a NaN or infinite value, dones or one-hot entries other than 0/1, a sub-policy out of range.
        The checks are a few reductions per array, cheap next to an update.
    """
    keys = ReplayBuffer.KEYS + (("subpolicies",) if n_subpolicies is not None else ())
    if not isinstance(batch, Mapping):
        raise ValueError(f"{name} must be a dict of arrays (ReplayBuffer.sample's), got {type(batch).__name__}")
    missing, unknown = [k for k in keys if k not in batch], sorted(set(batch) - set(keys))
    if missing:
        raise ValueError(f"{name} is missing {missing}: a replay batch holds {', '.join(keys)}")
    if unknown:
        raise ValueError(f"{name} has unexpected keys {unknown}: a replay batch holds {', '.join(keys)} only")
    obs, actions, rewards, next_obs, dones = (batch[k] for k in ReplayBuffer.KEYS)
    dims = {"N": n_agents, "O": obs_dim, "A": act_dim}
    check_shape(obs, ("B", "N", "O"), f"{name}['obs']", dims, dtype="float")
    if one_hot and getattr(actions, "ndim", None) == 2:
        raise ValueError(f"{name}['actions']: expected shape (B={dims['B']}, N={n_agents}, A={act_dim}) (3 dims), got "
                         f"{tuple(actions.shape)} (2 dims); store one-hot actions: shapes.one_hot(actions, {act_dim})")
    check_shape(actions, ("B", "N", "A"), f"{name}['actions']", dims, dtype="float")
    check_shape(rewards, ("B", "N"), f"{name}['rewards']", dims, dtype="float")
    check_shape(next_obs, ("B", "N", "O"), f"{name}['next_obs']", dims, dtype="float")
    check_shape(dones, ("B", "N"), f"{name}['dones']", dims)
    if n_subpolicies is not None:
        check_shape(batch["subpolicies"], ("B", "N"), f"{name}['subpolicies']", dims, dtype="int")
    if dims["B"] == 0:
        raise ValueError(f"{name}['obs']: expected B >= 1 transitions, got B = 0")
    for key in ("obs", "actions", "rewards", "next_obs"):
        finite(batch[key], f"{name}['{key}']")
    zero_one(dones, f"{name}['dones']")
    if one_hot:
        zero_one(actions, f"{name}['actions']")
        ones = actions.sum(-1)  # (B, N) how many actions each agent took
        if not (ones == 1).all():
            index = tuple(int(i) for i in np.argwhere(np.asarray(ones.tolist()) != 1)[0])
            raise ValueError(f"{name}['actions'] must be one-hot rows (one 1 per agent), got {ones[index].item()} "
                             f"ones at {index}")
    if n_subpolicies is not None:
        index_range(batch["subpolicies"], n_subpolicies, f"{name}['subpolicies']")
    return dims


class EpisodeReplay:
    """A ring buffer of whole episodes for the recurrent off-policy learners, arrays ``(capacity, T+1, N, .)`` and
    ``(capacity, T, .)`` with T the env's time limit, each episode padded to T as ``collect_episodes`` pads a batch.

    Args:
        capacity: how many episodes to keep; the oldest are overwritten first.
        max_steps: T, the env's time limit (every episode fits).
        n_agents: N.  obs_dim: O.  n_actions: A.

    ``add`` stores a batch of episodes (``rollout.collect_episodes``'s); ``sample`` draws B of them uniformly (with
    replacement) and returns them as the same kind of batch, cut to the longest of the B.
    """

    KEYS = ("obs", "actions", "rewards", "dones", "step_mask", "agent_mask")

    def __init__(self, capacity: int, max_steps: int, n_agents: int, obs_dim: int, n_actions: int):
        self.capacity = positive_int(capacity, "capacity", LIMITS["buffer_size"])
        self.max_steps = positive_int(max_steps, "max_steps")
        self.n_agents = positive_int(n_agents, "n_agents")
        self.obs_dim = positive_int(obs_dim, "obs_dim")
        self.n_actions = positive_int(n_actions, "n_actions")
        C, T, N, O = self.capacity, self.max_steps, self.n_agents, self.obs_dim
        _check_memory(4 * C * (T + 1) * N * (O + 5) + 8 * C,  # obs, actions (8 bytes), rewards, masks, dones
                      f"EpisodeReplay({C:,} episodes of T={T} steps, N={N}, O={O})")
        self.obs = np.zeros((C, T + 1, N, O), dtype=np.float32)  # (C, T+1, N, O) steps, then the end state
        self.actions = np.zeros((C, T + 1, N), dtype=np.int64)  # (C, T+1, N)
        self.rewards = np.zeros((C, T, N), dtype=np.float32)  # (C, T, N) each agent's own reward
        self.dones = np.ones((C, T), dtype=np.float32)  # (C, T) 1 at a real terminal step and on padding
        self.step_mask = np.zeros((C, T), dtype=np.float32)  # (C, T) 1 on real steps
        self.agent_mask = np.zeros((C, T, N), dtype=np.float32)  # (C, T, N)
        self.lengths = np.zeros(C, dtype=np.int64)  # (C,) each stored episode's length
        self._next = 0  # where the next episode goes
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return (f"EpisodeReplay({self._size}/{self.capacity} episodes of at most T={self.max_steps} steps, "
                f"N={self.n_agents}, O={self.obs_dim}, A={self.n_actions})")

    def add(self, batch: Mapping) -> None:
        """Store every episode of a batch (``collect_episodes``'s, B episodes of at most L <= T steps: obs
        ``(B, L+1, N, O)`` ...), checked first by ``rollout.check_episode_batch``; nothing is stored if it fails."""
        dims = check_episode_batch(batch, self.n_agents, self.obs_dim, self.n_actions, behaviour=False)
        B, L = dims["B"], dims["T"]
        if L > self.max_steps:
            raise ValueError(f"batch['rewards']: episodes of up to T={self.max_steps} steps fit, got {L} steps")
        arrays = {key: batch[key].detach().cpu().numpy() for key in self.KEYS}
        for b in range(B):
            i = self._next
            self.obs[i], self.actions[i], self.rewards[i] = 0.0, 0, 0.0  # padding, as collect_episodes pads
            self.dones[i], self.step_mask[i], self.agent_mask[i] = 1.0, 0.0, 0.0
            self.obs[i, :L + 1], self.actions[i, :L + 1] = arrays["obs"][b], arrays["actions"][b]
            self.rewards[i, :L], self.dones[i, :L] = arrays["rewards"][b], arrays["dones"][b]
            self.step_mask[i, :L], self.agent_mask[i, :L] = arrays["step_mask"][b], arrays["agent_mask"][b]
            self.lengths[i] = int(arrays["step_mask"][b].sum())
            self._next = (i + 1) % self.capacity
            self._size = min(self._size + 1, self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator, device: str | torch.device = "cpu") -> dict:
        """B episodes drawn uniformly (with replacement), as a batch of tensors on ``device`` cut to the longest of
        them, L: obs ``(B, L+1, N, O)``, actions ``(B, L+1, N)``, rewards ``(B, L, N)``, dones and step_mask
        ``(B, L)``, agent_mask ``(B, L, N)``."""
        batch_size = positive_int(batch_size, "batch_size")
        generator(rng, "rng")
        if self._size == 0:
            raise ValueError("cannot sample from an empty EpisodeReplay; add episodes first")
        indices = rng.integers(0, self._size, size=batch_size)  # (B,)
        L = int(self.lengths[indices].max())  # later columns are padding in every sampled episode
        batch = {"obs": self.obs[indices, :L + 1], "actions": self.actions[indices, :L + 1],
                 "rewards": self.rewards[indices, :L], "dones": self.dones[indices, :L],
                 "step_mask": self.step_mask[indices, :L], "agent_mask": self.agent_mask[indices, :L]}
        return {key: torch.as_tensor(value, device=device) for key, value in batch.items()}
