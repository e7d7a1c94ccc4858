"""The multi-agent particle environments of the MADDPG paper (``mpe2``, e.g. ``"simple_spread_v3"``): the
shapes of ``magym``'s interface with continuous actions: ``step(actions float (N, 2))``, each row a force
``(x, y)`` in ``[-1, 1]`` (:class:`ParticleEnv`)."""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import non_negative_int
from marl_edu.envs.family import EVAL_EPISODES, FINAL_EVAL_EPISODES, EnvFamily
from marl_edu.envs.state import attributes_state, restore_attributes


PARTICLE_ENVS = {  # id -> mpe2 arguments (mpe2's defaults)
    "simple_spread_v3": dict(N=3, local_ratio=0.5, max_cycles=25),  # cooperative navigation: 3 agents, 3 landmarks
    "simple_adversary_v3": dict(N=2, max_cycles=25),  # physical deception: 1 adversary, 2 good agents, 2 landmarks
}


def is_particle(env_id) -> bool:
    """Whether ``env_id`` is one of mpe2's ids with forces, or a misspelling of one (``"simple_..."``)."""
    return isinstance(env_id, str) and env_id.startswith("simple_")


def resolve_particle_id(env_id: str) -> str:
    """``env_id`` itself if it is a key of ``PARTICLE_ENVS``, else ValueError naming the close ids."""
    if env_id not in PARTICLE_ENVS:
        close = difflib.get_close_matches(str(env_id), list(PARTICLE_ENVS), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(map(repr, close))}?" if close else f"known: {', '.join(PARTICLE_ENVS)}"
        raise ValueError(f"unknown particle environment {env_id!r}; {hint}")
    return env_id


def to_mpe_action(actions: np.ndarray) -> np.ndarray:
    """Forces ``(N, 2)`` in [-1, 1] -> mpe2's continuous actions ``(N, 5)`` [none, left, right, down, up] >= 0.

    mpe2 applies the force ``x = right - left``, ``y = up - down``; a force ``(x, y)`` becomes
    ``[0, max(-x, 0), max(x, 0), max(-y, 0), max(y, 0)]``, so each agent's action is the 2-d force the paper's
    actor outputs (through a tanh).
    """
    x, y = actions[:, 0], actions[:, 1]  # (N,), (N,)
    zero = np.zeros_like(x)
    return np.stack([zero, np.maximum(-x, 0), np.maximum(x, 0), np.maximum(-y, 0), np.maximum(y, 0)], axis=1)


def check_force_range(actions: np.ndarray) -> None:
    """Float forces of any shape must be finite and in [-1, 1]; ValueError naming the actions otherwise."""
    if not np.isfinite(actions).all():
        raise ValueError(f"actions must be finite, got {actions.tolist()}")
    if actions.min() < -1 or actions.max() > 1:
        raise ValueError(f"actions must be in [-1, 1] (a force (x, y) per agent), got min {actions.min():.3g}, "
                         f"max {actions.max():.3g}: squash the actor's output with tanh")


class MpeEnv:
    """One mpe2 environment with numpy arrays in and out: what :class:`ParticleEnv` (forces) and the discrete
    cooperative navigation (``envs.spread_discrete``) share: reset, observations, the paper's metrics, rendering, and
    the state a resumed run restores. The subclass says how actions are checked and handed to mpe2 (``step``,
    ``_advance``).

    ``scenario``: the mpe2 module (``"simple_spread_v3"``); ``arguments``: its ``parallel_env`` arguments
    (``PARTICLE_ENVS``'s); ``continuous_actions``: mpe2's own flag (forces, or one of 5 actions).
    """

    def __init__(self, env_id: str, seed: int, scenario: str, arguments: dict, continuous_actions: bool):
        import importlib
        import os

        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # mpe2 draws with pygame, whose import prints a banner
        non_negative_int(seed, "seed")
        self.env_id, self.seed, self.scenario = env_id, int(seed), scenario
        module = importlib.import_module(f"mpe2.{scenario}")
        self._env = module.parallel_env(**arguments, continuous_actions=continuous_actions, render_mode="rgb_array")
        self._names = list(self._env.possible_agents)
        self.n_agents = len(self._names)
        self.teams = [name.rsplit("_", 1)[0] for name in self._names]  # "adversary_0" -> "adversary"
        self.obs_dims = [int(self._env.observation_space(name).shape[0]) for name in self._names]
        self.obs_dim = max(self.obs_dims)
        self.max_steps = int(arguments["max_cycles"])
        self._step_count: int | None = None
        self._episodes = 0

    def _stack_obs(self, obs: dict) -> np.ndarray:
        """mpe2's per-agent observations -> float32 ``(N, O)``, each zero-padded at the end to O."""
        stacked = np.zeros((self.n_agents, self.obs_dim), dtype=np.float32)  # (N, O)
        for i, name in enumerate(self._names):
            stacked[i, :self.obs_dims[i]] = obs[name]
        return stacked

    def reset(self) -> np.ndarray:
        """Start an episode (the first one from ``seed``, the next ones continue its random stream). Returns obs
        float32 ``(N, O)``."""
        obs, _ = self._env.reset(seed=self.seed if self._episodes == 0 else None)
        self._episodes += 1
        self._step_count = 0
        obs = self._stack_obs(obs)  # (N, O)
        check_shape(obs, (self.n_agents, self.obs_dim), "obs")
        return obs

    def _check_can_step(self) -> None:
        if self._step_count is None:
            raise ValueError("call reset() before step()")
        if self._step_count >= self.max_steps:
            raise ValueError("the episode is over (every agent is done); call reset() to start a new one")

    def _step_mpe(self, mpe_actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Hand mpe2 one action per agent (rows of ``mpe_actions``, in mpe2's own form) and read the step back:
        ``(obs (N, O), rewards float32 (N,), dones (N,), info)``."""
        obs, rewards, terminations, truncations, _ = self._env.step(dict(zip(self._names, mpe_actions)))
        self._step_count += 1
        obs = self._stack_obs(obs)  # (N, O)
        rewards = np.array([rewards[name] for name in self._names], dtype=np.float32)  # (N,)
        terminated = np.array([terminations[name] for name in self._names], dtype=bool)  # (N,)
        truncated = np.array([truncations[name] for name in self._names], dtype=bool) & ~terminated  # (N,)
        info = {"terminated": terminated, "truncated": truncated, "step": self._step_count, **self._metrics()}
        return obs, rewards, terminated | truncated, info

    def _metrics(self) -> dict:
        """The MADDPG paper's figures for the current positions (cooperative navigation or physical deception)."""
        world, scenario = self._env.unwrapped.world, self._env.unwrapped.scenario
        agents = world.agents
        positions = np.array([agent.state.p_pos for agent in agents])  # (N, 2)
        if self.scenario == "simple_adversary_v3":
            goal = agents[0].goal_a.state.p_pos  # (2,) the same goal landmark for every agent
            return {"goal_distance": np.linalg.norm(positions - goal, axis=1)}  # (N,)
        landmarks = np.array([landmark.state.p_pos for landmark in world.landmarks])  # (L, 2)
        distances = np.linalg.norm(landmarks[:, None, :] - positions[None, :, :], axis=-1)  # (L, N)
        touching = np.array([[i != j and scenario.is_collision(a, b) for j, b in enumerate(agents)]
                             for i, a in enumerate(agents)])  # (N, N) bool
        return {"landmark_distance": float(distances.min(axis=1).sum()),
                "agent_collisions": touching.sum(axis=1).astype(np.int64),  # (N,)
                "collisions": int(touching.sum() // 2)}

    # made at construction and never changed: mpe2's scenario, spaces, window and fonts (the world and the agent
    # selector are saved apart: objects of its own classes), and its wrappers' links and spaces
    FIXED = ("_ezpickle_args", "_ezpickle_kwargs", "viewer", "screen", "game_font", "scenario", "world",
             "action_spaces", "observation_spaces", "state_space", "_agent_selector")
    FIXED_WRAPPER = ("env", "aec_env", "state_space", "metadata")
    # (pettingzoo sets _skip_agent_selection on the raw env while agents are done, and deletes it at the next step)

    def _wrappers(self) -> list:
        """pettingzoo's wrappers around mpe2's env, outermost first (the parallel API, order enforcing, bounds)."""
        chain, layer = [], self._env
        while layer is not self._env.unwrapped:
            chain.append(layer)
            layer = getattr(layer, "aec_env", None) or layer.env
        return chain

    def get_state(self) -> dict:
        """Everything that decides what this env does next, as plain data (``envs.state``): the step count, every
        agent's and landmark's position, velocity, action and colour (and which landmark is the goal, on physical
        deception), mpe2's step counter, rewards and random generator, the agent selector and the wrappers' flags.
        ``set_state`` on an env made with the same id restores it."""
        raw = self._env.unwrapped
        world = raw.world
        entities = [*world.agents, *world.landmarks]
        return {"step_count": self._step_count, "episodes": self._episodes,
                "wrappers": [attributes_state(layer, self.FIXED_WRAPPER) for layer in self._wrappers()],
                "raw": attributes_state(raw, self.FIXED),
                "selector": attributes_state(raw._agent_selector),
                "world": attributes_state(world, ("agents", "landmarks")),
                "entities": [{"attributes": attributes_state(entity, ("state", "action", "_goal_a")),
                              "state": attributes_state(entity.state),
                              "action": attributes_state(entity.action) if hasattr(entity, "action") else None,
                              "goal": (world.landmarks.index(entity._goal_a)
                                       if getattr(entity, "_goal_a", None) is not None else None)}
                             for entity in entities]}

    def set_state(self, state: dict) -> None:
        """Restore ``get_state``'s ``state`` (ValueError if it is not one of an env of this id)."""
        raw = self._env.unwrapped
        world = raw.world
        entities = [*world.agents, *world.landmarks]
        keys = {"step_count", "episodes", "wrappers", "raw", "selector", "world", "entities"}
        if (not isinstance(state, dict) or set(state) != keys or len(state["entities"]) != len(entities)
                or len(state["wrappers"]) != len(self._wrappers())):
            raise ValueError(f"the saved state is not a {self.env_id} env's")
        if self._step_count is None:  # a fresh env: reset first, so that it holds every attribute a saved one does
            self.reset()
        for layer, saved in zip(self._wrappers(), state["wrappers"]):
            restore_attributes(layer, saved, self.FIXED_WRAPPER, f"{self.env_id} wrapper")
        restore_attributes(raw, state["raw"], self.FIXED, self.env_id, transient=("_skip_agent_selection",))
        restore_attributes(raw._agent_selector, state["selector"], what=f"{self.env_id} agent selector")
        restore_attributes(world, state["world"], ("agents", "landmarks"), f"{self.env_id} world")
        for entity, saved in zip(entities, state["entities"]):
            restore_attributes(entity, saved["attributes"], ("state", "action", "_goal_a"), f"{self.env_id} entity")
            restore_attributes(entity.state, saved["state"], what=f"{self.env_id} entity state")
            if saved["action"] is not None:
                restore_attributes(entity.action, saved["action"], what=f"{self.env_id} entity action")
            if hasattr(entity, "_goal_a"):  # physical deception's agents: the goal landmark, by index
                entity._goal_a = None if saved["goal"] is None else world.landmarks[saved["goal"]]
        self._step_count, self._episodes = state["step_count"], state["episodes"]

    def render_frame(self) -> np.ndarray:
        """The current scene as a uint8 RGB image ``(H, W, 3)``, without opening a window."""
        if self._step_count is None:
            raise ValueError("call reset() before render_frame()")
        return np.ascontiguousarray(np.asarray(self._env.render(), dtype=np.uint8)[..., :3])

    def close(self) -> None:
        self._env.close()


class ParticleEnv(MpeEnv):
    """One mpe2 particle environment with continuous actions, numpy arrays in and out, checked at the boundary.

    ``reset()`` -> obs float32 ``(N, O)``; ``step(actions float (N, 2) in [-1, 1])`` -> ``(obs (N, O), rewards (N,),
    dones (N,), info)`` as for ma-gym (``terminated``, ``truncated``, ``step``), plus the paper's metrics after this
    step. Cooperative navigation (``simple_spread_v3``): ``landmark_distance`` (sum over landmarks of the distance to
    the nearest agent), ``agent_collisions`` int ``(N,)`` (other agents each one touches) and ``collisions``
    (touching pairs). Physical deception (``simple_adversary_v3``): ``goal_distance`` ``(N,)``, each agent's distance
    to the goal landmark (which the adversary, agent 0, is not told).

    When the agents' observations differ in length (the adversary sees 8 numbers, the good agents 10), each is padded
    with zeros at the end to the longest, O; ``obs_dims`` keeps the true lengths.

    Attributes: env_id, n_agents (N), obs_dim (O), obs_dims (N ints), teams (N names, e.g. "adversary", "agent"),
    action_dim (2), max_steps.
    """

    def __init__(self, env_id: str, seed: int = 0):
        env_id = resolve_particle_id(env_id)
        super().__init__(env_id, seed, env_id, PARTICLE_ENVS[env_id], continuous_actions=True)
        self.action_dim = 2

    def __repr__(self) -> str:
        teams = "" if len(set(self.teams)) == 1 else f" ({', '.join(self.teams)})"
        return (f"ParticleEnv({self.env_id!r}, seed={self.seed}: N={self.n_agents} agents{teams}, O={self.obs_dim} "
                f"obs dims, actions (N, 2) in [-1, 1], max_steps={self.max_steps})")

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Apply forces ``(N, 2)`` in [-1, 1]. Returns ``(obs (N, O), rewards (N,), dones (N,), info)``."""
        self._check_can_step()
        actions = np.asarray(actions)
        check_shape(actions, (self.n_agents, self.action_dim), "actions", dtype="float")
        check_force_range(actions)
        return self._advance(actions)

    def _advance(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """``step`` after its checks (``VecEnv`` checks all K copies' forces at once, then calls this)."""
        return self._step_mpe(to_mpe_action(actions.astype(np.float32)))  # (N, 5) forces as mpe2 takes them


PARTICLE_EVAL_SEED = 10_000  # evaluation episodes start from their own stream, never one training used

PARTICLE = EnvFamily(
    name="particle", backend="mpe2", example="simple_spread_v3",
    recognises=is_particle, resolve=resolve_particle_id, ids=lambda: list(PARTICLE_ENVS), env=ParticleEnv,
    actions="forces",
    deterministic=False,  # the start positions are random
    eval_episodes=EVAL_EPISODES, final_eval_episodes=FINAL_EVAL_EPISODES, eval_seed=PARTICLE_EVAL_SEED,
    optimum=None,
    render="mpe2's own picture of the agents and landmarks (pygame, no window)",
    gif_scale=0.25, gif_fps=8,  # a quarter of 700 x 700, 8 steps a second (25-step episodes)
)
