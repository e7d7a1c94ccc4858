"""ma-gym environments behind a thin, checked, numpy-only interface.

Every environment speaks the same shapes, whatever ma-gym returns internally (lists of lists):

    reset()        -> obs      float32 (N, O)
    step(actions)  -> obs      float32 (N, O)   actions int (N,)
                      rewards  float32 (N,)
                      dones    bool    (N,)     True once the agent is finished, for any reason
                      info     dict: "terminated" bool (N,): finished by the task (Switch: arrived)
                                     "truncated"  bool (N,): cut off by the time limit instead
                                     "step"       int: steps taken in this episode

A time-limit end is not a terminal state: the world simply stopped being simulated. Targets must
bootstrap through it, so learners store ``info["terminated"]``, not ``dones``, in their buffers.

``make_vec_env`` steps K copies in lock-step, arrays ``(K, N, .)``, for batched actor forward passes.

The multi-agent particle environments of the MADDPG paper (``mpe2``, e.g. ``"simple_spread_v3"``) speak the same
shapes with continuous actions: ``step(actions float (N, 2))``, each row a force ``(x, y)`` in ``[-1, 1]``
(:class:`ParticleEnv`).

Level-Based Foraging (``lbforaging``, e.g. ``"Foraging-8x8-2p-3f-v3"``) speaks them with int actions, as ma-gym does
(:class:`ForagingEnv`).
"""

from __future__ import annotations

import difflib
import warnings
from typing import Any

import numpy as np

from marl_edu.batched_switch import BatchedSwitch
from marl_edu.shapes import check_shape
from marl_edu.validate import LIMITS, index_range, non_negative_int, positive_int


def register_switch3() -> None:
    """Register ``Switch3-v0`` .. ``Switch3-v3``: ma-gym's Switch with three agents, which its ``Switch`` class allows
    (``n_agents`` from 2 to 4) but does not register. The same four variants as Switch2 and Switch4 (v1 and v3 see
    every agent, v2 and v3 add the clock), the same step cost; agents 0 and 1 cross the top row as in Switch2 and
    agent 2 crosses from the bottom left, so three agents share the one-cell corridor."""
    import gym
    import ma_gym  # noqa: F401  (registers its own ids first)

    for version, (full_observable, clock) in enumerate([(False, False), (True, False), (False, True), (True, True)]):
        env_id = f"Switch3-v{version}"
        if env_id not in gym.envs.registry.env_specs:
            gym.envs.register(id=env_id, entry_point="ma_gym.envs.switch:Switch",
                              kwargs={"n_agents": 3, "full_observable": full_observable, "step_cost": -0.1,
                                      "clock": clock})


def _registry_ids() -> list[str]:
    """The native ma-gym environment ids (not the wrapped single-agent gym ones), with ``Switch3-v*``."""
    import gym

    register_switch3()
    return sorted(
        spec.id
        for spec in gym.envs.registry.all()
        if spec.entry_point.startswith("ma_gym.envs") and "openai" not in spec.entry_point
    )


def resolve_env_id(env_id: str) -> str:
    """``"Switch2-v0"`` or ``"ma_gym:Switch2-v0"`` -> ``"Switch2-v0"``; unknown ids raise ValueError."""
    if not isinstance(env_id, str):
        raise ValueError(f"env_id must be a string such as 'Switch2-v0', got {type(env_id).__name__}")
    name = env_id.removeprefix("ma_gym:")
    known = _registry_ids()
    if name not in known:
        prefixed = [k for k in known if k.lower().startswith(name.lower())]  # 'Switch2' -> the Switch2 ids
        close = (prefixed + [c for c in difflib.get_close_matches(name, known, n=4, cutoff=0.5) if c not in prefixed])[:4]
        hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else f"known ids: {', '.join(known)}"
        raise ValueError(f"unknown ma-gym environment {env_id!r}; {hint}")
    return name


# The time limit of an env that has none of its own (of ma-gym's, PongDuel-v0: two paddles that never miss would play
# forever): every episode ends, in training and in evaluation, and ends truncated, so targets bootstrap through it.
DEFAULT_MAX_STEPS = 1000


class MultiAgentEnv:
    """One ma-gym environment with numpy arrays in and out, checked at the boundary.

    Attributes:
        env_id: the resolved id, e.g. ``"Switch2-v0"``.
        n_agents (N), obs_dim (O), n_actions (A): sizes.
        action_meanings: list of A strings, e.g. ``["DOWN", "LEFT", "UP", "RIGHT", "NOOP"]``.
        max_steps: the environment's time limit, or ``DEFAULT_MAX_STEPS`` for one that has none
            (``time_limit_added`` says so).
    """

    def __init__(self, env_id: str, seed: int = 0):
        import gym

        non_negative_int(seed, "seed")
        self.env_id = resolve_env_id(env_id)
        self.seed = int(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gym's 'Box bound precision lowered' notice
            self._env = gym.make(f"ma_gym:{self.env_id}")
        self._env.seed(self.seed)
        self.n_agents = int(self._env.n_agents)
        sizes = {space.n for space in self._env.action_space}
        if len(sizes) != 1:
            raise ValueError(f"{self.env_id}: agents have different action counts {sizes}; not supported")
        self.n_actions = int(sizes.pop())
        self.obs_dim = int(self._env.observation_space[0].shape[0])
        meanings = getattr(self._env, "get_action_meanings", None)
        self.action_meanings = list(meanings(0)) if meanings else [str(a) for a in range(self.n_actions)]
        own_limit = getattr(self._env, "_max_steps", None)
        self.time_limit_added = own_limit is None
        self.max_steps = DEFAULT_MAX_STEPS if own_limit is None else int(own_limit)
        self._step_count: int | None = None
        self._dones = np.zeros(self.n_agents, dtype=bool)

    def __repr__(self) -> str:
        added = " (the course's: the env has no time limit)" if self.time_limit_added else ""
        return (f"MultiAgentEnv({self.env_id!r}, seed={self.seed}: N={self.n_agents} agents, "
                f"O={self.obs_dim} obs dims, A={self.n_actions} actions, max_steps={self.max_steps}{added})")

    def reset(self) -> np.ndarray:
        """Start an episode. Returns obs float32 ``(N, O)``."""
        obs = np.asarray(self._env.reset(), dtype=np.float32)  # (N, O)
        self._step_count = 0
        self._dones = np.zeros(self.n_agents, dtype=bool)
        check_shape(obs, (self.n_agents, self.obs_dim), "obs")
        return obs

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Apply int actions ``(N,)``. Returns ``(obs (N, O), rewards (N,), dones (N,), info)``."""
        if self._step_count is None:
            raise ValueError("call reset() before step()")
        if self._dones.all():
            raise ValueError("the episode is over (every agent is done); call reset() to start a new one")
        actions = np.asarray(actions)
        if actions.shape == (self.n_agents, self.n_actions):
            raise ValueError(f"actions: expected one integer action per agent, shape ({self.n_agents},), got "
                             f"{actions.shape}: one-hot actions? pass actions.argmax(-1)")
        check_shape(actions, (self.n_agents,), "actions", dtype="int")
        index_range(actions, self.n_actions, "actions", self.action_meanings)
        return self._advance(actions)

    def _advance(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """``step`` after its checks (``VecEnv`` checks all K copies' actions at once, then calls this)."""
        obs, rewards, dones, info = self._env.step(actions.tolist())
        self._step_count += 1
        obs = np.asarray(obs, dtype=np.float32)  # (N, O)
        rewards = np.asarray(rewards, dtype=np.float32)  # (N,)
        dones = np.array(dones, dtype=bool)  # (N,) a copy: ma-gym hands out its internal list
        at_limit = self._step_count >= self.max_steps
        if self.time_limit_added:  # the env's own ends are real; the course's limit cuts off everyone else
            terminated = dones.copy()  # (N,) bool
            dones[:] = dones | at_limit
        else:  # at its time limit ma-gym marks every agent done; only those that finished the task terminated
            terminated = self._finished() if at_limit else dones.copy()  # (N,) bool
        info = dict(info)
        info["terminated"] = terminated  # (N,) bool
        info["truncated"] = dones & ~terminated  # (N,) bool
        info["step"] = self._step_count
        self._dones = dones.copy()  # the caller may write into the array we hand out
        return obs, rewards, dones, info

    def _finished(self) -> np.ndarray:
        """At the time limit: which agents finished the task itself, bool ``(N,)``.

        Switch: the agents standing on their goal (arriving on the very last step counts). PredatorPrey:
        every agent when no prey is left (the last capture on the very last step counts). Other envs do
        not say, so only the agents that were done before the limit count as finished.
        """
        env = self._env.unwrapped
        if hasattr(env, "agent_pos") and hasattr(env, "final_agent_pos"):
            return np.array([env.agent_pos[i] == env.final_agent_pos[i] for i in range(self.n_agents)], dtype=bool)
        if hasattr(env, "_prey_alive"):
            return np.full(self.n_agents, not any(env._prey_alive), dtype=bool)
        return self._dones.copy()

    def render_frame(self) -> np.ndarray:
        """The current scene as a uint8 RGB image ``(H, W, 3)``, without opening a window."""
        if self._step_count is None:
            raise ValueError("call reset() before render_frame()")
        frame = np.asarray(self._env.render(mode="rgb_array"), dtype=np.uint8)
        return np.ascontiguousarray(frame[..., :3])

    def close(self) -> None:
        self._env.close()


# ----------------------------------------------------------------------------------------------
# The multi-agent particle environments (mpe2, PettingZoo's parallel API), continuous actions
# ----------------------------------------------------------------------------------------------

PARTICLE_ENVS = {  # id -> mpe2 arguments (mpe2's defaults)
    "simple_spread_v3": dict(N=3, local_ratio=0.5, max_cycles=25),  # cooperative navigation: 3 agents, 3 landmarks
    "simple_adversary_v3": dict(N=2, max_cycles=25),  # physical deception: 1 adversary, 2 good agents, 2 landmarks
}


def to_mpe_action(actions: np.ndarray) -> np.ndarray:
    """Forces ``(N, 2)`` in [-1, 1] -> mpe2's continuous actions ``(N, 5)`` [none, left, right, down, up] >= 0.

    mpe2 applies the force ``x = right - left``, ``y = up - down``; a force ``(x, y)`` becomes
    ``[0, max(-x, 0), max(x, 0), max(-y, 0), max(y, 0)]``, so each agent's action is the 2-d force the paper's
    actor outputs (through a tanh).
    """
    x, y = actions[:, 0], actions[:, 1]  # (N,), (N,)
    zero = np.zeros_like(x)
    return np.stack([zero, np.maximum(-x, 0), np.maximum(x, 0), np.maximum(-y, 0), np.maximum(y, 0)], axis=1)


def _check_force_range(actions: np.ndarray) -> None:
    """Float forces of any shape must be finite and in [-1, 1]; ValueError naming the actions otherwise."""
    if not np.isfinite(actions).all():
        raise ValueError(f"actions must be finite, got {actions.tolist()}")
    if actions.min() < -1 or actions.max() > 1:
        raise ValueError(f"actions must be in [-1, 1] (a force (x, y) per agent), got min {actions.min():.3g}, "
                         f"max {actions.max():.3g}: squash the actor's output with tanh")


class ParticleEnv:
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
        import importlib
        import os

        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # mpe2 draws with pygame, whose import prints a banner
        non_negative_int(seed, "seed")
        if env_id not in PARTICLE_ENVS:
            close = difflib.get_close_matches(str(env_id), list(PARTICLE_ENVS), n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(map(repr, close))}?" if close else f"known: {', '.join(PARTICLE_ENVS)}"
            raise ValueError(f"unknown particle environment {env_id!r}; {hint}")
        self.env_id, self.seed = env_id, int(seed)
        arguments = PARTICLE_ENVS[env_id]
        module = importlib.import_module(f"mpe2.{env_id}")
        self._env = module.parallel_env(**arguments, continuous_actions=True, render_mode="rgb_array")
        self._names = list(self._env.possible_agents)
        self.n_agents = len(self._names)
        self.teams = [name.rsplit("_", 1)[0] for name in self._names]  # "adversary_0" -> "adversary"
        self.obs_dims = [int(self._env.observation_space(name).shape[0]) for name in self._names]
        self.obs_dim = max(self.obs_dims)
        self.action_dim = 2
        self.max_steps = int(arguments["max_cycles"])
        self._step_count: int | None = None
        self._episodes = 0

    def __repr__(self) -> str:
        teams = "" if len(set(self.teams)) == 1 else f" ({', '.join(self.teams)})"
        return (f"ParticleEnv({self.env_id!r}, seed={self.seed}: N={self.n_agents} agents{teams}, O={self.obs_dim} "
                f"obs dims, actions (N, 2) in [-1, 1], max_steps={self.max_steps})")

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

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Apply forces ``(N, 2)`` in [-1, 1]. Returns ``(obs (N, O), rewards (N,), dones (N,), info)``."""
        if self._step_count is None:
            raise ValueError("call reset() before step()")
        if self._step_count >= self.max_steps:
            raise ValueError("the episode is over (every agent is done); call reset() to start a new one")
        actions = np.asarray(actions)
        check_shape(actions, (self.n_agents, self.action_dim), "actions", dtype="float")
        _check_force_range(actions)
        return self._advance(actions)

    def _advance(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """``step`` after its checks (``VecEnv`` checks all K copies' forces at once, then calls this)."""
        mpe = to_mpe_action(actions.astype(np.float32))  # (N, 5)
        obs, rewards, terminations, truncations, _ = self._env.step(dict(zip(self._names, mpe)))
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
        if self.env_id == "simple_adversary_v3":
            goal = agents[0].goal_a.state.p_pos  # (2,) the same goal landmark for every agent
            return {"goal_distance": np.linalg.norm(positions - goal, axis=1)}  # (N,)
        landmarks = np.array([landmark.state.p_pos for landmark in world.landmarks])  # (L, 2)
        distances = np.linalg.norm(landmarks[:, None, :] - positions[None, :, :], axis=-1)  # (L, N)
        touching = np.array([[i != j and scenario.is_collision(a, b) for j, b in enumerate(agents)]
                             for i, a in enumerate(agents)])  # (N, N) bool
        return {"landmark_distance": float(distances.min(axis=1).sum()),
                "agent_collisions": touching.sum(axis=1).astype(np.int64),  # (N,)
                "collisions": int(touching.sum() // 2)}

    def render_frame(self) -> np.ndarray:
        """The current scene as a uint8 RGB image ``(H, W, 3)``, without opening a window."""
        if self._step_count is None:
            raise ValueError("call reset() before render_frame()")
        return np.ascontiguousarray(np.asarray(self._env.render(), dtype=np.uint8)[..., :3])

    def close(self) -> None:
        self._env.close()


# ----------------------------------------------------------------------------------------------
# Level-Based Foraging (lbforaging, gymnasium API), discrete actions
# ----------------------------------------------------------------------------------------------

FORAGING_PREFIX = "lbforaging:"
FORAGING_PATTERN = "Foraging{-2s}-{s}x{s}-{p}p-{f}f{-coop}-v3"  # how lbforaging names the ids it registers


def _foraging_ids() -> list[str]:
    """lbforaging's registered ids with flat observations (``Foraging-8x8-2p-3f-v3``, ...), sorted. Its grid ids
    (``Foraging-grid-...``, observations ``(3, H, W)``, registered only on request) are left out."""
    import gymnasium
    import lbforaging  # noqa: F401  (registers its ids with gymnasium)

    return sorted(env_id for env_id, spec in gymnasium.registry.items()
                  if str(spec.entry_point).startswith("lbforaging.") and not spec.kwargs.get("grid_observation"))


def resolve_foraging_id(env_id: str) -> str:
    """``"Foraging-8x8-2p-3f-v3"`` or ``"lbforaging:Foraging-8x8-2p-3f-v3"`` -> ``"Foraging-8x8-2p-3f-v3"``;
    an unknown id raises ValueError with the closest registered ids."""
    if not isinstance(env_id, str):
        raise ValueError(f"env_id must be a string such as 'Foraging-8x8-2p-3f-v3', got {type(env_id).__name__}")
    name = env_id.removeprefix(FORAGING_PREFIX)
    known = _foraging_ids()
    if name in known:
        return name
    prefixed = [k for k in known if k.lower().startswith(name.lower())]  # 'Foraging-8x8-2p' -> its ids
    close = (prefixed + [c for c in difflib.get_close_matches(name, known, n=4, cutoff=0.6) if c not in prefixed])[:4]
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    raise ValueError(f"unknown Level-Based Foraging environment {env_id!r}; {hint}ids look like {FORAGING_PATTERN}, "
                     f"e.g. 'Foraging-8x8-2p-3f-v3'")


AGENT_COLORS = [(31, 119, 180), (255, 127, 14), (214, 39, 40), (148, 103, 189), (140, 86, 75), (227, 119, 194),
                (127, 127, 127), (188, 189, 34), (23, 190, 207)]  # matplotlib's tab10 without green (the food's)


class ForagingEnv:
    """One Level-Based Foraging task (``lbforaging`` 2.0.0) with numpy arrays in and out, checked at the boundary.

    The same interface as :class:`MultiAgentEnv`: ``reset()`` -> obs float32 ``(N, O)``; ``step(int actions (N,))``
    -> ``(obs (N, O), rewards float32 (N,), dones bool (N,), info)`` with ``info["terminated"]`` ``(N,)`` (every food
    was loaded: the task is over), ``info["truncated"]`` ``(N,)`` (the 50-step time limit came first) and
    ``info["step"]``. lbforaging itself reports both ends as ``done`` (its ``truncated`` is always False); this class
    tells them apart, and food loaded on the very last step counts as terminated.

    The task: N agents (levels 1 or 2) and up to F food items on an s x s grid, each food's level drawn from 1 to the
    sum of the (at most three lowest) agents' levels, or at that sum for every food in the ``-coop`` ids, so that no
    agent loads one alone. Actions ``NONE, NORTH, SOUTH, WEST, EAST, LOAD``; an impossible move (a wall, a food cell)
    or a LOAD next to no food does nothing, and an agent does not move into a cell another agent stays in or also moves
    into. A food is loaded when agents standing next to it (north, south, west or east) LOAD on the same step and
    their levels add up to at least its level.

    Rewards: each agent that helped load a food gets its own share of it, ``level_i * food_level / (sum of the
    loaders' levels * sum of the levels of all food spawned this episode)``; an episode in which every food is
    loaded therefore pays 1 in total across the agents. ``rewards`` holds each agent's own share; the learners
    sum them into the team reward, as the MARL textbook's runs on ``Foraging-8x8-2p-3f-v3`` do.

    Observation of agent i, O = 3 F + 3 N numbers (15 for ``Foraging-8x8-2p-3f-v3``: 3 food, 2 agents)::

        [y, x, level] of each food still on the field, in row-major order of position (a food's slot moves up when
                      one before it is loaded); the empty slots hold (-1, -1, 0)
        [y, x, level] of agent i itself
        [y, x, level] of every other agent, in index order

    y is the row (0 at the top), x the column. Without ``-2s`` each agent sees the whole grid, other agents included,
    in the grid's coordinates. With ``-2s`` it sees only the 5 x 5 window around itself, in that window's coordinates
    (its top-left corner is (max(y - 2, 0), max(x - 2, 0))), and agents out of sight leave (-1, -1, 0) slots at the end.

    Seeding: the first ``reset()`` seeds lbforaging's generator with ``seed``, later ones continue its stream (it
    draws the agents' positions and levels and the food); stepping draws no random numbers.

    ``render_frame()`` draws the grid itself with Pillow (agents as coloured discs with their level, food as green
    squares with its level): lbforaging's own renderer opens a pyglet window, which needs a display even for an
    RGB array.

    Attributes: env_id, seed, n_agents (N), obs_dim (O), n_actions (A = 6), action_meanings, max_steps (50),
    field_size ((rows, cols)), max_food (F).
    """

    CELL = 40  # pixels per grid cell in render_frame

    def __init__(self, env_id: str, seed: int = 0):
        import gymnasium
        from lbforaging.foraging.environment import Action

        non_negative_int(seed, "seed")
        self.env_id = resolve_foraging_id(env_id)
        self.seed = int(seed)
        self._env = gymnasium.make(self.env_id, disable_env_checker=True)  # (its checker warns about list rewards)
        self._lbf = self._env.unwrapped  # lbforaging's ForagingEnv: the field and the players
        self.n_agents = int(self._lbf.n_agents)
        self.n_actions = int(self._lbf.action_space[0].n)
        self.obs_dim = int(self._lbf.observation_space[0].shape[0])
        self.action_meanings = [action.name for action in sorted(Action, key=lambda a: a.value)]
        self.max_steps = int(self._lbf._max_episode_steps)
        self.field_size = tuple(int(s) for s in self._lbf.field_size)
        self.max_food = int(self._lbf.max_num_food)
        self._step_count: int | None = None
        self._over = False
        self._episodes = 0

    def __repr__(self) -> str:
        return (f"ForagingEnv({self.env_id!r}, seed={self.seed}: N={self.n_agents} agents, O={self.obs_dim} obs dims, "
                f"A={self.n_actions} actions, max_steps={self.max_steps})")

    def reset(self) -> np.ndarray:
        """Start an episode (the first one from ``seed``, the next ones continue its random stream). Returns obs
        float32 ``(N, O)``."""
        obs, _ = self._env.reset(seed=self.seed if self._episodes == 0 else None)
        self._episodes += 1
        self._step_count, self._over = 0, False
        obs = np.array(obs, dtype=np.float32)  # N arrays (O,) -> (N, O)
        check_shape(obs, (self.n_agents, self.obs_dim), "obs")
        return obs

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Apply int actions ``(N,)``. Returns ``(obs (N, O), rewards (N,), dones (N,), info)``."""
        if self._step_count is None:
            raise ValueError("call reset() before step()")
        if self._over:
            raise ValueError("the episode is over (every agent is done); call reset() to start a new one")
        actions = np.asarray(actions)
        # The usual case, int actions (N,) in range, is recognised in about a microsecond (lbforaging steps in about
        # 200 us); anything else goes through the checks whose errors say what is wrong.
        plainly_valid = (actions.shape == (self.n_agents,) and actions.dtype.kind in "iu"
                         and min(values := actions.tolist()) >= 0 and max(values) < self.n_actions)
        if not plainly_valid:
            if actions.shape == (self.n_agents, self.n_actions):
                raise ValueError(f"actions: expected one integer action per agent, shape ({self.n_agents},), got "
                                 f"{actions.shape}: one-hot actions? pass actions.argmax(-1)")
            check_shape(actions, (self.n_agents,), "actions", dtype="int")
            index_range(actions, self.n_actions, "actions", self.action_meanings)
        return self._advance(actions)

    def _advance(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """``step`` after its checks (``VecEnv`` checks all K copies' actions at once, then calls this)."""
        obs, rewards, done, _, info = self._env.step(actions.tolist())
        self._step_count += 1
        obs = np.array(obs, dtype=np.float32)  # N arrays (O,) -> (N, O)
        rewards = np.array(rewards, dtype=np.float32)  # (N,)
        terminated = np.zeros(self.n_agents, dtype=bool)  # (N,)
        truncated = np.zeros(self.n_agents, dtype=bool)  # (N,)
        if done:  # lbforaging's done: no food left, or the time limit (then some food is left)
            all_loaded = not self._lbf.field.any()
            terminated[:] = all_loaded  # the task is over (food loaded on the very last step counts)
            truncated[:] = not all_loaded
            self._over = True
        info = dict(info)
        info["terminated"] = terminated  # (N,) bool
        info["truncated"] = truncated  # (N,) bool
        info["step"] = self._step_count
        return obs, rewards, terminated | truncated, info

    def render_frame(self) -> np.ndarray:
        """The current grid as a uint8 RGB image ``(H, W, 3)`` (40 pixels a cell), drawn without a window: agents as
        coloured discs with their level, food as green squares with its level."""
        from PIL import Image, ImageDraw, ImageFont

        if self._step_count is None:
            raise ValueError("call reset() before render_frame()")
        rows, cols = self.field_size
        cell = self.CELL
        image = Image.new("RGB", (cols * cell + 1, rows * cell + 1), (255, 255, 255))
        draw = ImageDraw.Draw(image)
        try:
            font = ImageFont.load_default(size=cell // 2)  # Pillow >= 10.1 with FreeType
        except TypeError:  # an older Pillow: its small bitmap font
            font = ImageFont.load_default()
        for r in range(rows + 1):
            draw.line([(0, r * cell), (cols * cell, r * cell)], fill=(200, 200, 200))
        for c in range(cols + 1):
            draw.line([(c * cell, 0), (c * cell, rows * cell)], fill=(200, 200, 200))

        def label(y: int, x: int, text: str, color: tuple[int, int, int]) -> None:
            draw.text((x * cell + cell / 2, y * cell + cell / 2), text, fill=color, anchor="mm", font=font)

        inset = cell // 5
        for y, x in zip(*np.nonzero(self._lbf.field)):  # food cells
            draw.rectangle([x * cell + inset, y * cell + inset, (x + 1) * cell - inset, (y + 1) * cell - inset],
                           fill=(44, 160, 44))
            label(y, x, str(int(self._lbf.field[y, x])), (255, 255, 255))
        inset = cell // 8
        for i, player in enumerate(self._lbf.players):
            y, x = player.position
            draw.ellipse([x * cell + inset, y * cell + inset, (x + 1) * cell - inset, (y + 1) * cell - inset],
                         fill=AGENT_COLORS[i % len(AGENT_COLORS)])
            label(y, x, str(int(player.level)), (255, 255, 255))
        return np.asarray(image, dtype=np.uint8)  # (H, W, 3)

    def close(self) -> None:
        self._env.close()


def is_foraging(env_id) -> bool:
    """Whether ``env_id`` names a Level-Based Foraging task (``"Foraging-8x8-2p-3f-v3"``, ``"lbforaging:..."``)."""
    return isinstance(env_id, str) and (env_id.startswith("Foraging") or env_id.startswith(FORAGING_PREFIX))


def _misspells_foraging(env_id) -> bool:
    """``"Foragin-8x8-2p-3f-v3"``, ``"foraging-..."``: a typo of a Foraging id, whose error should list Foraging ids."""
    head = env_id.split("-")[0].lower() if isinstance(env_id, str) else ""
    return difflib.SequenceMatcher(None, head, "foraging").ratio() >= 0.75


def make_env(env_id: str, seed: int = 0) -> MultiAgentEnv | ParticleEnv | ForagingEnv:
    """Make one environment, e.g. ``make_env("Switch2-v0", seed=0)`` (ma-gym, :class:`MultiAgentEnv`),
    ``make_env("simple_spread_v3", seed=0)`` (mpe2, continuous actions, :class:`ParticleEnv`) or
    ``make_env("Foraging-8x8-2p-3f-v3", seed=0)`` (lbforaging, :class:`ForagingEnv`)."""
    if isinstance(env_id, str) and env_id.startswith("simple_"):  # mpe2's ids; ParticleEnv names a misspelt one
        return ParticleEnv(env_id, seed)
    if is_foraging(env_id) or _misspells_foraging(env_id):  # ForagingEnv names a misspelt one
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
            _check_force_range(actions)
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


def is_switch(env_id) -> bool:
    """Whether ``env_id`` is a Switch id (``"Switch2-v0"``, ``"ma_gym:Switch4-v3"``, ...), which decides three things:
    its episodes depend on the actions alone (no randomness but the policy's), so one greedy episode gives a greedy
    policy's exact return (elsewhere, PredatorPrey's prey move at random: ``train.greedy_team_return`` averages);
    ``make_vec_env``'s batched backend steps it as arrays (``BatchedSwitch``); and so the whole state of a run on it
    can be saved mid-episode and resumed (``resume``)."""
    return isinstance(env_id, str) and env_id.removeprefix("ma_gym:").startswith("Switch")


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
