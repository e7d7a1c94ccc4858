"""Level-Based Foraging (``lbforaging``, e.g. ``"Foraging-8x8-2p-3f-v3"``): the shapes of ``magym``'s
interface with int actions, as ma-gym's (:class:`ForagingEnv`)."""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import non_negative_int
from marl_edu.envs.family import EVAL_EPISODES, FINAL_EVAL_EPISODES, EnvFamily, check_int_actions
from marl_edu.envs.state import attributes_state, restore_attributes

FORAGING_PREFIX = "lbforaging:"
FORAGING_PATTERN = "Foraging{-2s}-{s}x{s}-{p}p-{f}f{-coop}-v3"  # how lbforaging names the ids it registers
# How ``ForagingEnv.reset`` draws an episode's start: a run in progress saved under another rule (before the agents
# were taken off the grid, its start states followed the policy) is another run, never continued under this one.
START_STATES = "from the seed alone: the agents taken off the grid before lbforaging's reset"


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
    draws the agents' positions and levels and the food); stepping draws no random numbers, and each reset places
    the agents afresh (``reset``), so the start states follow from the seed alone.

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
        float32 ``(N, O)``.

        lbforaging's reset draws each agent's cell in turn and draws again when the cell is taken, counting the cells
        where the agents stood at the end of the last episode as taken: the draws, and so every later start state,
        would depend on how earlier episodes ended, that is on the policy that played them. The agents are taken off
        the grid first, as before the first reset, so an env of one seed starts the same episodes whatever is played
        (an evaluation scores every policy on the same start states)."""
        for player in self._lbf.players:
            player.position = None  # (lbforaging's Player before its first setup: no cell taken)
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
            check_int_actions(actions, self.n_agents, self.n_actions, self.action_meanings)
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

    # lbforaging's attributes made at construction and never changed (the players and their valid actions are
    # saved apart: objects of its own classes)
    FIXED = ("logger", "action_space", "observation_space", "viewer", "spec", "players", "_valid_actions")

    def get_state(self) -> dict:
        """Everything that decides what this env does next, as plain data (``envs.state``): the step count, the
        field, every player's position, level and score, the valid actions lbforaging computed, its random generator
        and its wrapper's flag. ``set_state`` on an env made with the same id restores it."""
        players = self._lbf.players
        valid = self._lbf._valid_actions or {}  # (None in an env never reset: a run's copies before their first step)
        return {"step_count": self._step_count, "over": self._over, "episodes": self._episodes,
                "wrapper": attributes_state(self._env, ("env",)),
                "lbf": attributes_state(self._lbf, self.FIXED),
                "players": [attributes_state(player) for player in players],
                "valid_actions": [[int(action.value) for action in valid[player]] if player in valid else None
                                  for player in players]}

    def set_state(self, state: dict) -> None:
        """Restore ``get_state``'s ``state`` (ValueError if it is not one of an env of this id)."""
        from lbforaging.foraging.environment import Action

        keys = {"step_count", "over", "episodes", "wrapper", "lbf", "players", "valid_actions"}
        if not isinstance(state, dict) or set(state) != keys or len(state["players"]) != self.n_agents:
            raise ValueError(f"the saved state is not a {self.env_id} env's")
        if self._step_count is None:  # a fresh env: reset first, so that it holds every attribute a saved one does
            self.reset()
        restore_attributes(self._env, state["wrapper"], ("env",), self.env_id)
        restore_attributes(self._lbf, state["lbf"], self.FIXED, self.env_id)
        for player, saved in zip(self._lbf.players, state["players"]):
            restore_attributes(player, saved, what=f"{self.env_id} player")
        self._lbf._valid_actions = {player: [Action(value) for value in actions]
                                    for player, actions in zip(self._lbf.players, state["valid_actions"])
                                    if actions is not None}
        self._step_count, self._over, self._episodes = state["step_count"], state["over"], state["episodes"]

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


def misspells_foraging(env_id) -> bool:
    """``"Foragin-8x8-2p-3f-v3"``, ``"foraging-..."``: a typo of a Foraging id, whose error should list Foraging ids."""
    head = env_id.split("-")[0].lower() if isinstance(env_id, str) else ""
    return difflib.SequenceMatcher(None, head, "foraging").ratio() >= 0.75


FORAGING = EnvFamily(
    name="Level-Based Foraging", backend="lbforaging", example="Foraging-8x8-2p-3f-v3",
    recognises=lambda env_id: is_foraging(env_id) or misspells_foraging(env_id),
    resolve=resolve_foraging_id, ids=_foraging_ids, env=ForagingEnv, actions="discrete",
    deterministic=False,  # the agents' and food's places and levels are drawn at every reset
    eval_episodes=EVAL_EPISODES, final_eval_episodes=FINAL_EVAL_EPISODES, eval_seed=0,
    optimum=None,
    render="the grid drawn with Pillow: agents as coloured discs, food as green squares, each with its level",
    gif_scale=2, gif_fps=4,  # each cell's pixels doubled, 4 steps a second
)
