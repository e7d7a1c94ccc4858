"""ma-gym's environments (Switch, PredatorPrey, ...) behind a thin, checked, numpy-only interface.

Every environment of the course speaks the same shapes, whatever its backend returns internally (the mpe2 and lbforaging modules beside this one too):

    reset()        -> obs      float32 (N, O)
    step(actions)  -> obs      float32 (N, O)   actions int (N,)
                      rewards  float32 (N,)
                      dones    bool    (N,)     True once the agent is finished, for any reason
                      info     dict: "terminated" bool (N,): finished by the task (Switch: arrived)
                                     "truncated"  bool (N,): cut off by the time limit instead
                                     "step"       int: steps taken in this episode

A time-limit end is not a terminal state: the world simply stopped being simulated. Targets must
bootstrap through it, so learners store ``info["terminated"]``, not ``dones``, in their buffers.
"""

from __future__ import annotations

import contextlib
import difflib
import random
import sys
import warnings
from typing import Any

import numpy as np

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import non_negative_int
from marl_edu.envs.family import EVAL_EPISODES, FINAL_EVAL_EPISODES, EnvFamily, check_int_actions
from marl_edu.envs.state import attributes_state, from_plain, restore_attributes, to_plain


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
        # TrafficJunction draws its cars from Python's random module, which its seed() leaves alone: it gets a
        # generator of its own, seeded from the env's seed, so that its episodes repeat and its state can be saved
        self._module = sys.modules[type(self._env.unwrapped).__module__]
        self._python_random = random.Random(self.seed) if getattr(self._module, "random", None) is random else None
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

    @contextlib.contextmanager
    def _own_random(self):
        """While ma-gym's env steps or resets: if it draws from Python's random module, that name in its module is
        this env's own generator (two TrafficJunctions, or a training and an evaluation env, never share draws)."""
        if self._python_random is None:
            yield
            return
        before, self._module.random = self._module.random, self._python_random
        try:
            yield
        finally:
            self._module.random = before

    def reset(self) -> np.ndarray:
        """Start an episode. Returns obs float32 ``(N, O)``."""
        with self._own_random():
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
        check_int_actions(actions, self.n_agents, self.n_actions, self.action_meanings)
        return self._advance(actions)

    def _advance(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """``step`` after its checks (``VecEnv`` checks all K copies' actions at once, then calls this)."""
        with self._own_random():
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

    # made at construction and never changed: not part of the state a resumed run restores
    FIXED = ("action_space", "observation_space", "spec", "viewer", "_viewer")

    def get_state(self) -> dict:
        """Everything that decides what this env does next, as plain data (``envs.state``): the step count and, of
        ma-gym's env, every attribute but its spaces and window: positions, the grid (Lumberjacks' agents too), its
        random generators (TrafficJunction's Python one too), the picture it draws on. ``set_state`` on an env made
        with the same id restores it."""
        if self._env.unwrapped is not self._env:
            raise ValueError(f"{self.env_id}: gym wrapped the env; its wrappers' state is not saved")
        return {"step_count": self._step_count, "dones": self._dones.copy(),
                "env": attributes_state(self._env, self.FIXED), "python_random": to_plain(self._python_random)}

    def set_state(self, state: dict) -> None:
        """Restore ``get_state``'s ``state`` (ValueError if it is not one of an env of this id)."""
        if isinstance(state, dict) and set(state) == {"step_count", "dones", "env"}:  # saved before TrafficJunction
            state = {**state, "python_random": None}  # had a generator of its own: right for every other task
        if not isinstance(state, dict) or set(state) != {"step_count", "dones", "env", "python_random"}:
            raise ValueError(f"the saved state is not a {self.env_id} env's")
        dones = np.asarray(state["dones"])
        if dones.shape != (self.n_agents,) or dones.dtype != bool:
            raise ValueError(f"the saved dones must be bool ({self.n_agents},), got {dones.dtype} {dones.shape}")
        if self._step_count is None:  # a fresh env: reset first, so that it holds every attribute a saved one does
            self.reset()
        python_random = from_plain(state["python_random"])
        if python_random is not None and not isinstance(python_random, random.Random):
            raise ValueError(f"the saved state's python_random must be a Python generator's state, got "
                             f"{type(python_random).__name__}")
        if (python_random is None) != (self._python_random is None):
            raise ValueError(f"the saved state is not a {self.env_id} env's: its Python generator is "
                             f"{'missing' if python_random is None else 'one this env does not draw from'}")
        restore_attributes(self._env, state["env"], self.FIXED, self.env_id)
        self._step_count, self._dones, self._python_random = state["step_count"], dones.copy(), python_random

    def render_frame(self) -> np.ndarray:
        """The current scene as a uint8 RGB image ``(H, W, 3)``, without opening a window."""
        if self._step_count is None:
            raise ValueError("call reset() before render_frame()")
        frame = np.asarray(self._env.render(mode="rgb_array"), dtype=np.uint8)
        return np.ascontiguousarray(frame[..., :3])

    def close(self) -> None:
        self._env.close()


def is_switch(env_id) -> bool:
    """Whether ``env_id`` is a Switch id (``"Switch2-v0"``, ``"ma_gym:Switch4-v3"``, ...), or a misspelling of one:
    the ``envs.switch`` family's, not ``MA_GYM``'s."""
    return isinstance(env_id, str) and env_id.removeprefix("ma_gym:").startswith("Switch")


def switch_ids() -> list[str]:
    """ma-gym's Switch ids, with the Switch3 ones: ``["Switch2-v0", ..., "Switch4-v3"]``."""
    return [env_id for env_id in _registry_ids() if is_switch(env_id)]


MA_GYM = EnvFamily(
    name="ma-gym", backend="ma-gym", example="PredatorPrey7x7-v0",
    recognises=lambda env_id: True,  # (asked last: every id no other family claims; resolve names ma-gym's close ids)
    resolve=resolve_env_id,
    ids=lambda: [env_id for env_id in _registry_ids() if not is_switch(env_id)],
    env=MultiAgentEnv, actions="discrete",
    deterministic=False,  # PredatorPrey's prey move at random, Combat's opponents too
    eval_episodes=EVAL_EPISODES, final_eval_episodes=FINAL_EVAL_EPISODES, eval_seed=0,
    optimum=None,
    render="ma-gym's own grid picture",
    gif_scale=2, gif_fps=4,  # each cell's pixels doubled, 4 steps a second
)
