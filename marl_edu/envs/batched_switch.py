"""ma-gym's Switch, K copies stepped as numpy arrays: the fast path for training.

ma-gym's ``Switch`` keeps one world in Python lists and redraws its picture on every reset; ``envs.VecEnv`` steps K of
them one after the other. ``BatchedSwitch`` holds the K worlds as arrays and moves them together, with ma-gym's rules
(``ma_gym/envs/switch/switch_one_corridor.py``), for Switch2, Switch4 and the Switch3 that ``envs`` registers:

- the grid is 3 x 7: a corridor along row 1, and rooms of two columns at each end of rows 0 and 2; everything else is
  wall. Agent i starts at ``START[i]`` and must reach ``GOAL[i]`` at the other end.
- agents move one after the other, in index order, each into the cell its action points to if that cell is inside
  the grid, not a wall and not occupied (by an agent that moved earlier in this step, or one that has arrived: an
  arrived agent stays on its goal for the rest of the episode). Actions: 0 down, 1 left, 2 up, 3 right, 4 no-op.
- reward per agent and step: ``step_cost`` (-0.1) while it has not arrived, +5 on the step it arrives, 0 afterwards.
- an agent is done when it arrives; at the time limit (50 steps) every agent is done, and only those that arrived
  have terminated (the rest are truncated).
- observation of agent i: ``(row / 2, col / 6)`` rounded to 2 decimals, plus ``step / max_steps`` for the ``-v2`` and
  ``-v3`` ids (the clock); the ``-v1`` and ``-v3`` ids give every agent all N agents' observations, concatenated.

Its transitions are ma-gym's to the last bit (``tests/test_batched_switch.py`` compares them over 1.5 x 10^6 random
steps and named corner cases); ``make_vec_env(..., backend="ma-gym")`` still steps ma-gym itself.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import LIMITS, index_range, non_negative_int, positive_int

ROWS, COLS = 3, 7
START = [(0, 1), (0, COLS - 2), (2, 1), (2, COLS - 2)]  # agent i's first cell (row, col)
GOAL = [(0, COLS - 1), (0, 0), (2, COLS - 1), (2, 0)]  # agent i's goal: the opposite end
ACTION_MEANINGS = ["DOWN", "LEFT", "UP", "RIGHT", "NOOP"]
STEP_COST, ARRIVAL_REWARD, MAX_STEPS = -0.1, 5.0, 50  # what ma-gym registers for every Switch id

# Cells are numbered row by row on the map with a one-cell wall border around it, (ROWS + 2) x (COLS + 2): cell
# (row, col) is (row + 1) * WIDTH + col + 1. A move adds an offset to the cell number, and stepping off the map
# walks into the border's wall, so no bounds check is needed.
WIDTH = COLS + 2
N_CELLS = (ROWS + 2) * WIDTH


def cell(row: int, col: int) -> int:
    """The number of map cell (row, col) on the bordered grid."""
    return (row + 1) * WIDTH + col + 1


MOVES = np.array([WIDTH, -1, -WIDTH, 1, 0])  # (5,) down, left, up, right, no-op as cell offsets
WALL = -1  # bordered grid cells: WALL, 0 free, i + 1 agent i


def empty_grid() -> np.ndarray:
    """The bordered Switch map with no agents, int ``(N_CELLS,)``: 0 on the corridor (row 1) and in the rooms of two
    columns at both ends of rows 0 and 2, WALL everywhere else (the border included)."""
    grid = np.full(N_CELLS, WALL, dtype=np.int64)
    for row in range(ROWS):
        for col in range(COLS):
            if row == ROWS // 2 or col in (0, 1, COLS - 2, COLS - 1):
                grid[cell(row, col)] = 0
    return grid


def cell_observations() -> np.ndarray:
    """What an agent on each cell observes, ma-gym's rounding: ``(round(row / 2, 2), round(col / 6, 2))`` as float32,
    ``(N_CELLS, 2)`` (zeros on the border, where no agent stands)."""
    table = np.zeros((N_CELLS, 2), dtype=np.float32)
    for row in range(ROWS):
        for col in range(COLS):
            table[cell(row, col)] = (round(row / (ROWS - 1), 2), round(col / (COLS - 1), 2))
    return table


CELL_OBS = cell_observations()
SWITCH_ID = re.compile(r"Switch([234])-v([0-3])")


class BatchedSwitch:
    """K copies of a ma-gym Switch id in lock-step, with ``envs.VecEnv``'s interface and outputs.

    ``reset()`` -> obs float32 ``(K, N, O)``; ``step(actions int (K, N))`` -> ``(obs (K, N, O), rewards float32 (K, N),
    dones bool (K, N), info)``, info holding ``terminated``, ``truncated`` ``(K, N)``, ``episode_done`` ``(K,)``,
    ``final_obs`` ``(K, N, O)`` and ``episode_team_return`` ``(K,)`` (NaN where the episode goes on). A copy whose
    episode ended is reset at once (``obs[k]`` is its next episode's first observation).

    Attributes as ``VecEnv``: env_id, n_envs (K), n_agents (N), obs_dim (O), n_actions (A), action_meanings,
    max_steps, continuous (False).
    """

    def __init__(self, env_id: str, n_envs: int, seed: int = 0):
        name = env_id.removeprefix("ma_gym:") if isinstance(env_id, str) else ""
        match = SWITCH_ID.fullmatch(name)  # (the ids envs registers: ma-gym's Switch2 and 4, and Switch3)
        if match is None:
            raise ValueError(f"BatchedSwitch plays the Switch ids (Switch2-v0 .. Switch4-v3, with Switch3), "
                             f"got {env_id!r}")
        self.env_id = name
        self.n_envs = positive_int(n_envs, "n_envs", LIMITS["n_envs"])
        self.seed = non_negative_int(seed, "seed")  # (Switch has no randomness; kept for VecEnv's interface)
        self.n_agents = int(match.group(1))
        version = int(match.group(2))
        self.clock, self.full_observable = version >= 2, version % 2 == 1
        per_agent = 2 + int(self.clock)  # (row, col) and maybe the clock
        self.obs_dim = per_agent * (self.n_agents if self.full_observable else 1)
        self.n_actions, self.action_meanings = len(MOVES), list(ACTION_MEANINGS)
        self.max_steps = MAX_STEPS
        self.continuous = False
        K, N = self.n_envs, self.n_agents
        self._start = np.array([cell(*START[i]) for i in range(N)])  # (N,) cell numbers
        self._goal = np.array([cell(*GOAL[i]) for i in range(N)])  # (N,)
        self._first_grid = empty_grid()  # (N_CELLS,) the map at the start of an episode: agent i on its start
        self._first_grid[self._start] = np.arange(1, N + 1)
        self._pos = np.zeros((K, N), dtype=np.int64)  # (K, N) every agent's cell
        self._grid = np.zeros((K, N_CELLS), dtype=np.int64)  # (K, N_CELLS) WALL, 0 or agent id + 1
        self._arrived = np.zeros((K, N), dtype=bool)  # (K, N)
        self._steps = np.zeros(K, dtype=np.int64)  # (K,) steps taken in each copy's episode
        self._returns = np.zeros(K, dtype=np.float64)  # (K,) team return so far
        self._started = False

    def __repr__(self) -> str:
        return (f"BatchedSwitch({self.env_id!r}, K={self.n_envs} copies: N={self.n_agents} agents, O={self.obs_dim} "
                f"obs dims, A={self.n_actions} actions, max_steps={self.max_steps})")

    def _reset_copies(self, copies: np.ndarray) -> None:
        """Put the copies ``copies`` (bool ``(K,)``) back at the start of an episode."""
        self._pos[copies] = self._start  # (N,) broadcast over the chosen copies
        self._grid[copies] = self._first_grid  # (N_CELLS,)
        self._arrived[copies] = False
        self._steps[copies] = 0
        self._returns[copies] = 0.0

    def _observe(self) -> np.ndarray:
        """Every copy's observations, float32 ``(K, N, O)``."""
        K, N = self.n_envs, self.n_agents
        obs = CELL_OBS[self._pos]  # (K, N, 2)
        if self.clock:  # step / max_steps, divided in float64 as Python divides, then stored as float32
            clock = (self._steps / self.max_steps).astype(np.float32)  # (K,)
            obs = np.concatenate([obs, np.broadcast_to(clock[:, None, None], (K, N, 1))], axis=-1)  # (K, N, 3)
        if self.full_observable:  # every agent sees [obs_1, ..., obs_N]
            obs = np.repeat(obs.reshape(K, 1, -1), N, axis=1)  # (K, N, N * (2 or 3))
        return obs

    def reset(self) -> np.ndarray:
        """Start an episode in every copy. Returns obs float32 ``(K, N, O)``."""
        self._reset_copies(np.ones(self.n_envs, dtype=bool))
        self._started = True
        return self._observe()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Apply int actions ``(K, N)`` to every copy; see the class docstring for what comes back."""
        if not self._started:
            raise ValueError("call reset() before step()")
        actions = np.asarray(actions)
        check_shape(actions, (self.n_envs, self.n_agents), "actions", dtype="int")
        index_range(actions, self.n_actions, "actions", self.action_meanings)
        K, N = self.n_envs, self.n_agents
        copies = np.arange(K)  # (K,)
        rewards = np.zeros((K, N), dtype=np.float32)  # (K, N): 0 for an agent that had arrived already
        for i in range(N):  # index order: agent i sees where agents 0..i-1 moved to in this step
            active = ~self._arrived[:, i]  # (K,) agents that have not arrived move
            here = self._pos[:, i]  # (K,)
            there = here + MOVES[actions[:, i]]  # (K,)
            moves = active & (self._grid[copies, there] == 0)  # (K,) into a free cell: walls and agents block
            self._grid[copies[moves], here[moves]] = 0
            self._grid[copies[moves], there[moves]] = i + 1
            self._pos[moves, i] = there[moves]
            arrives = active & (self._pos[:, i] == self._goal[i])  # (K,)
            self._arrived[:, i] |= arrives
            rewards[active, i] = STEP_COST
            rewards[arrives, i] = ARRIVAL_REWARD
        self._steps += 1
        terminated = self._arrived.copy()  # (K, N) done by the task
        dones = terminated | (self._steps >= self.max_steps)[:, None]  # (K, N) the time limit ends everyone
        obs = self._observe()  # (K, N, O)
        self._returns += rewards.sum(axis=1)  # (K,)
        episode_done = dones.all(axis=1)  # (K,)
        info = {
            "terminated": terminated,  # (K, N)
            "truncated": dones & ~terminated,  # (K, N)
            "episode_done": episode_done,  # (K,)
            "final_obs": obs.copy(),  # (K, N, O)
            "episode_team_return": np.where(episode_done, self._returns, np.nan),  # (K,)
        }
        if episode_done.any():
            self._reset_copies(episode_done)
            obs[episode_done] = self._observe()[episode_done]
        return obs, rewards, dones, info

    STATE = ("_pos", "_grid", "_arrived", "_steps", "_returns")  # the arrays that change as the copies step

    def get_state(self) -> dict:
        """Every copy's world (positions, grid, arrivals, steps) and team return so far, as plain data; ``set_state``
        on a ``BatchedSwitch`` of the same id and size restores it (Switch draws no random numbers)."""
        return {"env_id": self.env_id, "n_envs": self.n_envs, "started": self._started,
                **{name.removeprefix("_"): getattr(self, name).copy() for name in self.STATE}}

    def set_state(self, state: dict) -> None:
        """Restore ``get_state``'s ``state``; ValueError naming what does not fit this vec env."""
        keys = {"env_id", "n_envs", "started", *(name.removeprefix("_") for name in self.STATE)}
        if not isinstance(state, dict) or set(state) != keys:
            raise ValueError(f"the saved state is not a BatchedSwitch's (expected keys {sorted(keys)})")
        if (state["env_id"], state["n_envs"]) != (self.env_id, self.n_envs):
            raise ValueError(f"the saved state is of {state['n_envs']} copies of {state['env_id']}; this vec env has "
                             f"{self.n_envs} copies of {self.env_id}")
        for name in self.STATE:
            current, saved = getattr(self, name), np.asarray(state[name.removeprefix("_")])
            if saved.shape != current.shape or saved.dtype != current.dtype:
                raise ValueError(f"the saved {name.removeprefix('_')} must be {current.dtype} {current.shape}, got "
                                 f"{saved.dtype} {saved.shape}")
        for name in self.STATE:
            setattr(self, name, np.asarray(state[name.removeprefix("_")]).copy())
        self._started = bool(state["started"])

    def close(self) -> None:
        """Nothing to release (VecEnv's interface)."""
