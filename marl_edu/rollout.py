"""Run episodes with any policy and keep what happened as arrays shaped ``(T, N, .)``.

A policy is any function ``policy(obs) -> actions`` from obs float32 ``(N, O)`` to int actions ``(N,)`` (ma-gym)
or float forces ``(N, 2)`` in [-1, 1] (the particle envs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from tqdm.auto import tqdm

from marl_edu.envs import MultiAgentEnv, ParticleEnv
from marl_edu.shapes import check_shape

Policy = Callable[[np.ndarray], np.ndarray]


@dataclass
class Episode:
    """One episode, T steps of N agents.

    obs, next_obs: float32 ``(T, N, O)``; actions: int64 ``(T, N)`` (or float32 ``(T, N, 2)`` forces);
    rewards: float32 ``(T, N)``; dones, terminated, truncated: bool ``(T, N)``; frames: T + 1 RGB frames when
    recorded, else None; metrics: the env's other per-step ``info`` figures stacked over time, ``(T, ...)`` each
    (the particle envs': ``landmark_distance`` ``(T,)``, ``agent_collisions`` ``(T, N)``, ``collisions`` ``(T,)``).
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    dones: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    frames: list[np.ndarray] | None = field(default=None, repr=False)
    metrics: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def length(self) -> int:
        """T, the number of steps."""
        return int(self.actions.shape[0])

    @property
    def agent_returns(self) -> np.ndarray:
        """Each agent's undiscounted return, ``(N,)``."""
        return self.rewards.sum(axis=0, dtype=np.float64)

    @property
    def team_return(self) -> float:
        """The cooperative objective: the sum of every agent's rewards over the episode."""
        return float(self.rewards.sum(dtype=np.float64))


def random_policy(n_agents: int, n_actions: int, rng: np.random.Generator) -> Policy:
    """A policy that picks each agent's action uniformly at random from ``rng``."""
    for value, name in ((n_agents, "n_agents"), (n_actions, "n_actions")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")

    def policy(obs: np.ndarray) -> np.ndarray:
        check_shape(obs, (n_agents, "O"), "obs")
        return rng.integers(0, n_actions, size=n_agents)  # (N,)

    return policy


def run_episode(env: MultiAgentEnv | ParticleEnv, policy: Policy, record_frames: bool = False) -> Episode:
    """Reset ``env`` and run ``policy`` until every agent is done. Returns an :class:`Episode`."""
    if not callable(policy):
        raise ValueError(f"policy must be a function obs (N, O) -> actions (N,), got {type(policy).__name__}")
    obs = env.reset()  # (N, O)
    frames = [env.render_frame()] if record_frames else None
    steps: dict[str, list[np.ndarray]] = {k: [] for k in
                                          ("obs", "actions", "rewards", "next_obs", "dones", "terminated", "truncated")}
    metrics: dict[str, list] = {}
    dones = np.zeros(env.n_agents, dtype=bool)
    while not dones.all():
        actions = np.asarray(policy(obs))  # (N,) or (N, 2)
        next_obs, rewards, dones, info = env.step(actions)
        for key, value in (("obs", obs), ("actions", actions), ("rewards", rewards), ("next_obs", next_obs),
                           ("dones", dones), ("terminated", info["terminated"]), ("truncated", info["truncated"])):
            steps[key].append(value)
        for key in sorted(info.keys() - {"terminated", "truncated", "step"}):
            if isinstance(info[key], (int, float, np.ndarray)):  # the figures, not ma-gym's other notes
                metrics.setdefault(key, []).append(info[key])
        if frames is not None:
            frames.append(env.render_frame())
        obs = next_obs
    action_dtype = np.float32 if isinstance(env, ParticleEnv) else np.int64
    return Episode(
        obs=np.stack(steps["obs"]),  # (T, N, O)
        actions=np.stack(steps["actions"]).astype(action_dtype),  # (T, N) ints, or (T, N, 2) forces
        rewards=np.stack(steps["rewards"]),  # (T, N)
        next_obs=np.stack(steps["next_obs"]),  # (T, N, O)
        dones=np.stack(steps["dones"]),  # (T, N)
        terminated=np.stack(steps["terminated"]),  # (T, N)
        truncated=np.stack(steps["truncated"]),  # (T, N)
        frames=frames,
        metrics={key: np.stack(values) for key, values in metrics.items()},  # each (T, ...)
    )


def team_returns(env: MultiAgentEnv, policy: Policy, n_episodes: int, progress: bool = True) -> np.ndarray:
    """Run ``n_episodes`` episodes and return their team returns, ``(n_episodes,)`` float64."""
    if not isinstance(n_episodes, (int, np.integer)) or n_episodes < 1:
        raise ValueError(f"n_episodes must be a positive int, got {n_episodes!r}")
    episodes = tqdm(range(n_episodes), desc=f"{env.env_id} episodes", disable=not progress, leave=False)
    return np.array([run_episode(env, policy).team_return for _ in episodes])
