"""What the layers above the envs need to know about a family of environments, declared once per family.

A family is a set of ids one backend module makes (ma-gym's Switch, ma-gym's other tasks, mpe2's particle envs with
forces, mpe2's cooperative navigation with discrete actions, lbforaging): each such module ends with one
:class:`EnvFamily` value, and ``envs.make`` lists them (``FAMILIES``) and finds an id's with ``family(env_id)``.
Training, evaluation, resume, the command line and the benchmarks read these fields instead of telling envs apart by
their ids or classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import index_range

ACTION_KINDS = ("discrete", "forces")  # int actions (N,) from A choices; float forces (N, 2) in [-1, 1]
EVAL_EPISODES = 10  # a periodic evaluation where episodes are random (not Switch): the mean of this many
FINAL_EVAL_EPISODES = 100  # ... and a run's final figure there


@dataclass(frozen=True)
class EnvFamily:
    """One family of environments, as the layers above the envs see it.

    name: what the family is called in messages, e.g. ``"Switch"``.
    backend: the library that simulates it (``"ma-gym"``, ``"mpe2"``, ``"lbforaging"``).
    example: one of its ids, for messages and docs.
    recognises: ``recognises(env_id) -> bool``, whether an id is this family's to make, or a misspelling of one of
        its ids (then ``resolve`` names the close ids). ``envs.make.family`` asks the families in order.
    resolve: ``resolve(env_id) -> str``, the id as the family writes it (``"ma_gym:Switch2-v0"`` -> ``"Switch2-v0"``);
        ValueError for an id it does not make, naming the close ones.
    ids: ``ids() -> list[str]``, every id it makes.
    env: the class of one environment, ``env(env_id, seed)`` (its ``step`` takes int actions ``(N,)`` or forces
        ``(N, 2)``, as ``actions`` says).
    actions: ``"discrete"`` or ``"forces"`` (``ACTION_KINDS``): which learners of the table act on it.
    deterministic: whether an episode depends on the actions alone (Switch); then one greedy episode is a greedy
        policy's exact return.
    eval_episodes: how many episodes a periodic evaluation averages (greedy actions, or forces without noise): 1 when
        deterministic.
    final_eval_episodes: how many a run's final figure averages.
    eval_seed: the seed of the env the evaluation episodes are played on (the same start states for every policy).
    optimum: ``optimum(env_id) -> float``, the exact optimal team return, or None when it is not known.
    render: how one of its envs draws itself (``render_frame()``: a uint8 RGB image ``(H, W, 3)``).
    gif_scale: how a GIF of an episode sizes those pictures: 2 doubles a small grid world's pixels (``save_gif``'s
        ``scale``), 0.25 shows a quarter of the particle envs' 700 x 700 (``viz.downscale`` by 4).
    gif_fps: the GIF's frames per second (``save_gif``'s ``fps``).
    batched: a class stepping K copies as arrays, ``batched(env_id, n_envs, seed)`` (``make_vec_env``'s
        ``backend="batched"``), or None (then K copies of ``env`` step one after the other, ``VecEnv``).
    """

    name: str
    backend: str
    example: str
    recognises: Callable[[str], bool]
    resolve: Callable[[str], str]
    ids: Callable[[], list[str]]
    env: type
    actions: str
    deterministic: bool
    eval_episodes: int
    final_eval_episodes: int
    eval_seed: int
    optimum: Callable[[str], float] | None
    render: str
    gif_scale: float
    gif_fps: float
    batched: type | None = None

    def __post_init__(self):
        if self.actions not in ACTION_KINDS:
            raise ValueError(f"{self.name}: actions must be one of {ACTION_KINDS}, got {self.actions!r}")
        if self.deterministic and self.eval_episodes != 1:
            raise ValueError(f"{self.name}: a deterministic family's evaluation is one episode, got "
                             f"{self.eval_episodes}")
        if min(self.eval_episodes, self.final_eval_episodes) < 1:
            raise ValueError(f"{self.name}: evaluation episodes must be positive")
        if not (self.gif_scale in range(1, 9) or (self.gif_scale > 0 and 1 / self.gif_scale in range(2, 9))):
            raise ValueError(f"{self.name}: gif_scale must be an integer 1-8 or its reciprocal, got {self.gif_scale}")
        if not 0.5 <= self.gif_fps <= 30:  # (viz.save_gif's range)
            raise ValueError(f"{self.name}: gif_fps must be in [0.5, 30], got {self.gif_fps}")

    def __repr__(self) -> str:
        return f"EnvFamily({self.name!r}: {self.backend}, e.g. {self.example!r}, {self.actions} actions)"


def check_int_actions(actions: np.ndarray, n_agents: int, n_actions: int, meanings: list[str]) -> None:
    """What the ``step`` of every family with discrete actions checks: one int action per agent, ``(N,)``, each in
    ``0..A-1`` (``meanings``: the A actions' names, for the message). A one-hot ``(N, A)`` gets its own hint."""
    if actions.shape == (n_agents, n_actions):
        raise ValueError(f"actions: expected one integer action per agent, shape ({n_agents},), got "
                         f"{actions.shape}: one-hot actions? pass actions.argmax(-1)")
    check_shape(actions, (n_agents,), "actions", dtype="int")
    index_range(actions, n_actions, "actions", meanings)
