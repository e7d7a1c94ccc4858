"""The env families (``FAMILIES``) and an id's (``family``); one environment by id (``make_env``: ma-gym, mpe2 or
lbforaging) and K copies stepped in lock-step (``make_vec_env``: arrays ``(K, N, .)`` for batched forward passes)."""

from __future__ import annotations
from typing import Any

import numpy as np

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import LIMITS, index_range, positive_int
from marl_edu.envs.family import EnvFamily
from marl_edu.envs.foraging import FORAGING, ForagingEnv
from marl_edu.envs.magym import MA_GYM, MultiAgentEnv
from marl_edu.envs.particle import PARTICLE, ParticleEnv, check_force_range
from marl_edu.envs.spread_discrete import SPREAD_DISCRETE, SpreadDiscreteEnv
from marl_edu.envs.switch import SWITCH

# Every env family, in the order they are asked whether an id is theirs: the first that recognises it makes it (mpe2's
# discrete id before its force ids, which share "simple_"; ma-gym last: it takes every id no other family claims).
FAMILIES = (SPREAD_DISCRETE, PARTICLE, FORAGING, SWITCH, MA_GYM)


def family(env_id: str) -> EnvFamily:
    """The family of ``env_id`` (``"Switch2-v0"`` -> ``SWITCH``, ``"simple_spread_v3"`` -> ``PARTICLE``, ...): what
    the layers above need to know of it (its action kind, evaluation, optimum, resume, rendering; see
    ``envs.family.EnvFamily``). ValueError for an id no family makes, naming the close ids of the family it looks
    like."""
    if not isinstance(env_id, str):
        raise ValueError(f"env_id must be a string such as 'Switch2-v0', got {type(env_id).__name__}")
    found = next(f for f in FAMILIES if f.recognises(env_id))  # (MA_GYM recognises every id)
    found.resolve(env_id)  # ValueError naming the close ids
    return found


def resolve(env_id: str) -> str:
    """``env_id`` as its family writes it: ``"ma_gym:Switch2-v0"`` -> ``"Switch2-v0"``,
    ``"lbforaging:Foraging-8x8-2p-3f-v3"`` -> ``"Foraging-8x8-2p-3f-v3"``; ValueError for an unknown id."""
    return family(env_id).resolve(env_id)


def make_env(env_id: str, seed: int = 0) -> MultiAgentEnv | ParticleEnv | ForagingEnv | SpreadDiscreteEnv:
    """Make one environment of its family (``family(env_id).env``), e.g. ``make_env("Switch2-v0", seed=0)`` (ma-gym,
    :class:`MultiAgentEnv`), ``make_env("simple_spread_v3", seed=0)`` (mpe2, forces, :class:`ParticleEnv`),
    ``make_env("simple_spread_v3_discrete", seed=0)`` (mpe2, discrete actions, :class:`SpreadDiscreteEnv`) or
    ``make_env("Foraging-8x8-2p-3f-v3", seed=0)`` (lbforaging, :class:`ForagingEnv`)."""
    return family(env_id).env(env_id, seed)


class VecEnv:
    """K copies of one environment stepped in lock-step in this process.

    ``reset()`` -> obs ``(K, N, O)``; ``step(actions)`` -> ``(obs (K, N, O), rewards (K, N), dones (K, N), info)``
    with int actions ``(K, N)`` (a family whose ``actions`` are ``"discrete"``) or float forces ``(K, N, 2)`` in
    [-1, 1] (``"forces"``, the particle envs; ``continuous`` says which). A copy whose episode ended (all its agents
    done) is reset at once, so ``obs[k]`` is already the first observation of its next episode; what the episode
    ended on is in ``info["final_obs"] (K, N, O)`` where ``info["episode_done"] (K,)`` is True. ``info`` also holds
    ``terminated`` and ``truncated`` ``(K, N)`` and ``episode_team_return`` ``(K,)`` (NaN where the episode goes on);
    for cooperative navigation also ``collisions`` ``(K,)``, the touching pairs after this step.

    ``states``: None, or one saved state per copy (an env's ``get_state``, or None for an env as made): then every
    copy is made with ``seed`` itself and put in its state, so that copy k's next episode is the one an env made with
    ``seed`` played after reaching ``states[k]`` (an evaluation's episodes, replayed side by side).
    """

    def __init__(self, env_id: str, n_envs: int, seed: int = 0, states: list | None = None):
        positive_int(n_envs, "n_envs", LIMITS["n_envs"])
        if states is None:
            self.envs = [make_env(env_id, seed + k) for k in range(n_envs)]  # copy k gets seed + k
        else:
            if not isinstance(states, list) or len(states) != n_envs:
                got = f"{len(states)} states" if isinstance(states, list) else type(states).__name__
                raise ValueError(f"states must be a list of one saved state (or None) per copy, {n_envs}; got {got}")
            self.envs = [make_env(env_id, seed) for _ in range(n_envs)]  # every copy as the env that was saved
            for k, (env, state) in enumerate(zip(self.envs, states)):
                if state is not None:  # (None: the env as made, before its first episode)
                    try:
                        env.set_state(state)
                    except ValueError as error:
                        raise ValueError(f"states[{k}]: {error}") from None
        first = self.envs[0]
        self.env_id, self.n_envs = first.env_id, int(n_envs)
        self.n_agents, self.obs_dim, self.max_steps = first.n_agents, first.obs_dim, first.max_steps
        self.continuous = family(env_id).actions == "forces"
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
        if "collisions" in results[0][3]:  # cooperative navigation (forces or discrete actions)
            info["collisions"] = np.array([r[3]["collisions"] for r in results])  # (K,) touching pairs
        for k in np.flatnonzero(episode_done):
            obs[k] = self.envs[k].reset()
            self._returns[k] = 0.0
        return obs, rewards, dones, info

    def get_state(self) -> dict:
        """The state of every copy (each env's ``get_state``: its world and random generator) and the team returns so
        far, as plain data: what a run in progress saves. ``set_state`` on a ``VecEnv`` of the same id, size and
        seed restores it, and the copies then step on to the same bits."""
        return {"env_id": self.env_id, "n_envs": self.n_envs, "returns": self._returns.copy(),
                "envs": [env.get_state() for env in self.envs]}

    def set_state(self, state: dict) -> None:
        """Restore ``get_state``'s ``state``; ValueError if it was saved from another env id or number of copies."""
        check_vec_state(self, state, {"env_id", "n_envs", "returns", "envs"})
        returns = np.asarray(state["returns"])
        check_shape(returns, (self.n_envs,), "the saved returns", dtype="float")
        for env, saved in zip(self.envs, state["envs"], strict=True):
            env.set_state(saved)
        self._returns = returns.astype(np.float64)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def check_vec_state(venv, state, keys: set[str]) -> None:
    """ValueError unless ``state`` is a saved state of a vec env like ``venv`` (the same keys, env id and copies)."""
    if not isinstance(state, dict) or set(state) != keys:
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"the saved state is not a vec env's of {venv.env_id} (keys {got}, expected {sorted(keys)})")
    if (state["env_id"], state["n_envs"]) != (venv.env_id, venv.n_envs):
        raise ValueError(f"the saved state is of {state['n_envs']} copies of {state['env_id']}; this vec env has "
                         f"{venv.n_envs} copies of {venv.env_id}")


BACKENDS = ("batched", "ma-gym")


def make_vec_env(env_id: str, n_envs: int, seed: int = 0, backend: str = "batched"):
    """K copies of ``env_id`` (ma-gym, particle or Level-Based Foraging) stepped together; copy k is seeded
    ``seed + k``. See :class:`VecEnv`.

    ``backend="batched"`` (the default) steps a family that has a batched class (``EnvFamily.batched``: Switch's
    ``batched_switch.BatchedSwitch``, the same transitions, several times faster) as arrays and every other env as
    ``VecEnv``; ``backend="ma-gym"`` always steps the backend's own environments (``VecEnv``)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    found = family(env_id)  # (a typo is named with its family's close ids)
    if backend == "batched" and found.batched is not None:
        return found.batched(found.resolve(env_id), n_envs, seed)
    return VecEnv(env_id, n_envs, seed)
