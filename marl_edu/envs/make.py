"""One environment by id (``make_env``: ma-gym, mpe2 or lbforaging) and K copies stepped in lock-step
(``make_vec_env``: arrays ``(K, N, .)`` for batched forward passes)."""

from __future__ import annotations
from typing import Any

import numpy as np

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import LIMITS, index_range, positive_int
from marl_edu.envs.batched_switch import BatchedSwitch
from marl_edu.envs.foraging import ForagingEnv, is_foraging, misspells_foraging
from marl_edu.envs.magym import MultiAgentEnv, is_switch, resolve_env_id
from marl_edu.envs.particle import ParticleEnv, check_force_range


def make_env(env_id: str, seed: int = 0) -> MultiAgentEnv | ParticleEnv | ForagingEnv:
    """Make one environment, e.g. ``make_env("Switch2-v0", seed=0)`` (ma-gym, :class:`MultiAgentEnv`),
    ``make_env("simple_spread_v3", seed=0)`` (mpe2, continuous actions, :class:`ParticleEnv`) or
    ``make_env("Foraging-8x8-2p-3f-v3", seed=0)`` (lbforaging, :class:`ForagingEnv`)."""
    if isinstance(env_id, str) and env_id.startswith("simple_"):  # mpe2's ids; ParticleEnv names a misspelt one
        return ParticleEnv(env_id, seed)
    if is_foraging(env_id) or misspells_foraging(env_id):  # ForagingEnv names a misspelt one
        return ForagingEnv(env_id, seed)
    return MultiAgentEnv(env_id, seed)


class VecEnv:
    """K copies of one environment stepped in lock-step in this process.

    ``reset()`` -> obs ``(K, N, O)``; ``step(actions)`` -> ``(obs (K, N, O), rewards (K, N), dones (K, N), info)``
    with int actions ``(K, N)`` for ma-gym and lbforaging or float forces ``(K, N, 2)`` in [-1, 1] for the particle envs
    (``continuous`` says which). A copy whose episode ended (all its agents done) is reset at once, so
    ``obs[k]`` is already the first observation of its next episode; what the episode ended on is in
    ``info["final_obs"] (K, N, O)`` where ``info["episode_done"] (K,)`` is True. ``info`` also holds
    ``terminated`` and ``truncated`` ``(K, N)`` and ``episode_team_return`` ``(K,)`` (NaN where the
    episode goes on); for cooperative navigation also ``collisions`` ``(K,)``, the touching pairs after this step.
    """

    def __init__(self, env_id: str, n_envs: int, seed: int = 0):
        positive_int(n_envs, "n_envs", LIMITS["n_envs"])
        self.envs = [make_env(env_id, seed + k) for k in range(n_envs)]  # copy k gets seed + k
        first = self.envs[0]
        self.env_id, self.n_envs = first.env_id, int(n_envs)
        self.n_agents, self.obs_dim, self.max_steps = first.n_agents, first.obs_dim, first.max_steps
        self.continuous = isinstance(first, ParticleEnv)
        if self.continuous:
            self.action_dim = first.action_dim
        else:
            self.n_actions, self.action_meanings = first.n_actions, first.action_meanings
        self._returns = np.zeros(self.n_envs, dtype=np.float64)

    def reset(self) -> np.ndarray:
        self._returns[:] = 0.0
        return np.stack([env.reset() for env in self.envs])  # (K, N, O)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        actions = np.asarray(actions)
        if self.continuous:
            check_shape(actions, (self.n_envs, self.n_agents, self.action_dim), "actions", dtype="float")
            check_force_range(actions)
        else:
            check_shape(actions, (self.n_envs, self.n_agents), "actions", dtype="int")
            index_range(actions, self.n_actions, "actions", self.action_meanings)
        results = [env._advance(a) for env, a in zip(self.envs, actions)]  # (checked above, all at once)
        obs = np.stack([r[0] for r in results])  # (K, N, O)
        rewards = np.stack([r[1] for r in results])  # (K, N)
        dones = np.stack([r[2] for r in results])  # (K, N)
        self._returns += rewards.sum(axis=1)  # team return so far, (K,)
        episode_done = dones.all(axis=1)  # (K,)
        info = {
            "terminated": np.stack([r[3]["terminated"] for r in results]),  # (K, N)
            "truncated": np.stack([r[3]["truncated"] for r in results]),  # (K, N)
            "episode_done": episode_done,  # (K,)
            "final_obs": obs.copy(),  # (K, N, O)
            "episode_team_return": np.where(episode_done, self._returns, np.nan),  # (K,)
        }
        if self.continuous and "collisions" in results[0][3]:  # cooperative navigation
            info["collisions"] = np.array([r[3]["collisions"] for r in results])  # (K,) touching pairs
        for k in np.flatnonzero(episode_done):
            obs[k] = self.envs[k].reset()
            self._returns[k] = 0.0
        return obs, rewards, dones, info

    def close(self) -> None:
        for env in self.envs:
            env.close()


BACKENDS = ("batched", "ma-gym")


def make_vec_env(env_id: str, n_envs: int, seed: int = 0, backend: str = "batched"):
    """K copies of ``env_id`` (ma-gym, particle or Level-Based Foraging) stepped together; copy k is seeded
    ``seed + k``. See :class:`VecEnv`.

    ``backend="batched"`` (the default) steps ma-gym's Switch ids as arrays (``batched_switch.BatchedSwitch``: the
    same transitions, several times faster) and every other env as ``VecEnv``; ``backend="ma-gym"`` always steps
    ma-gym's own environments (``VecEnv``)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if backend == "batched" and is_switch(env_id):
        return BatchedSwitch(resolve_env_id(env_id), n_envs, seed)  # (a typo is named with ma-gym's close ids)
    return VecEnv(env_id, n_envs, seed)
