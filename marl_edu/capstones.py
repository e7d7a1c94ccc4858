"""What the two capstones (notebooks 13 and 14) do alike: the one API their modules follow, and its helpers.

Each capstone module (``capstone_maddpg``, ``capstone_coma``) owns its parts and their checks:

    PARTS                    the names of the five parts the learner writes, in the notebook's order
    REFERENCE                part name -> marl_edu's own version of that part, in the learner's signature
    check_<part>(fn)         one printed verdict, PASSED / FAILED with a hint / NOT DONE YET; never raises

and offers the same six functions, each a few lines over the helpers below:

    assemble(**mine)         -> parts: the learner's where its check PASSED, marl_edu's reference for the others;
                                prints one table, part | your verdict | training uses
    whose(parts)             -> a legend label: how many of the parts trained with are the learner's
    train_yours(parts, env_id, episodes, seed, eval_every, stop_at, progress)
                             -> train.TrainResult: the library's own loop (train.train_maddpg or train.train_coma)
                                with the learner's update passed in (``update=``), never a copy of it
    reference_run(env_id)    -> the committed reference run (results/<algo>/<env_id>/run.json): seed, config,
                                evaluations [(episode, greedy team return)], ...
    random_return(env_id, episodes, seed)
                             -> the mean team return of uniformly random actions, the plot's bottom line
    plot_against_reference(result, optimal, random, env_id, ax, label)
                             -> the run's greedy evaluations against the committed reference run's, the exact
                                optimum and the random policy
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np

from marl_edu.envs import make_env
from marl_edu.rollout import random_policy, team_returns
from marl_edu.train import TrainResult
from marl_edu.viz import greedy_axes

RESULTS = pathlib.Path(__file__).resolve().parent.parent / "results"


def assemble(mine: dict[str, Callable], checkers: dict[str, Callable],
             reference: dict[str, Callable]) -> dict[str, Callable]:
    """Check each of the learner's parts quietly, print one table (part | your verdict | training uses) and return
    the parts to train with: the learner's where its check PASSED, ``reference``'s for the others (not given, NOT
    DONE YET or FAILED), so a part that fails never trains.

    Args:
        mine: part name -> the learner's function, for any of the capstone's parts.
        checkers: part name -> its ``check_<part>``, one for every part, in the notebook's order.
        reference: part name -> marl_edu's version of that part.
    A name that is not a part is a ValueError listing the parts.
    """
    unknown = sorted(set(mine) - set(checkers))
    if unknown:
        raise ValueError(f"unknown parts {unknown}; the parts are {', '.join(checkers)}")
    parts, rows = {}, []
    for name, check in checkers.items():
        if name not in mine:
            verdict = "not given"
        else:
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):
                try:
                    check(mine[name])
                except Exception as error:  # a checker never raises; this is a belt for braces
                    print(f"FAILED: the check raised {type(error).__name__}: {error}")
            verdict = next(iter(captured.getvalue().splitlines()), "no verdict")
        passed = verdict.startswith("PASSED")
        parts[name] = mine[name] if passed else reference[name]
        short = "PASSED" if passed else "NOT DONE YET" if verdict.startswith("NOT DONE") else \
            "FAILED" if verdict.startswith("FAILED") else verdict
        rows.append((name, short, "yours" if passed else "marl_edu's reference"))
    width = max(len(name) for name in checkers)
    print(f"{'part':<{width}} | {'your verdict':<12} | training uses")
    print(f"{'-' * width}-+-{'-' * 12}-+-{'-' * 20}")
    for name, short, used in rows:
        print(f"{name:<{width}} | {short:<12} | {used}")
    return parts


def check_parts(parts: dict[str, Callable], reference: dict[str, Callable]) -> None:
    """ValueError unless ``parts`` holds a function for every part of ``reference`` (``assemble``'s dict does)."""
    if not isinstance(parts, dict):
        raise ValueError(f"parts must be assemble(...)'s dict of part name -> function, got {type(parts).__name__}")
    missing = [name for name in reference if name not in parts]
    if missing:
        raise ValueError(f"parts is missing {missing}: pass assemble(...)'s dict")
    not_functions = [name for name in reference if not callable(parts[name])]
    if not_functions:
        raise ValueError(f"parts {not_functions} are not functions: pass assemble(...)'s dict")


def whose(parts: dict[str, Callable], reference: dict[str, Callable], algorithm: str) -> str:
    """A legend label for a run trained with ``parts``: how many of them are the learner's (not ``reference``'s),
    e.g. ``"your COMA (2 of 5 parts yours)"``."""
    mine = sum(parts[name] is not reference[name] for name in reference)
    if mine == len(reference):
        return f"your {algorithm}"
    if mine == 0:
        return "marl_edu's parts (your stubs are empty)"
    return f"your {algorithm} ({mine} of {len(reference)} parts yours)"


def learner_update(parts: dict[str, Callable], reference: dict[str, Callable], update: str,
                   passed_in: tuple[str, ...]) -> Callable | None:
    """The ``update=`` to hand the library's loop (``train.train_maddpg``, ``train.train_coma``): a function
    ``update(agent, batch)`` calling ``parts[update](agent, batch, *the parts named passed_in)``, or None (the loop
    calls the learner class's own ``agent.update(batch)``) when every one of those parts is marl_edu's."""
    names = (update, *passed_in)
    if all(parts[name] is reference[name] for name in names):
        return None
    update_part, given = parts[update], tuple(parts[name] for name in passed_in)

    def update_with_parts(agent, batch) -> None:
        update_part(agent, batch, *given)

    return update_with_parts


def reference_run(algo: str, env_id: str) -> dict:
    """The committed reference run of ``algo`` (``"maddpg"``, ``"coma"``) on ``env_id``,
    ``results/<algo>/<env_id>/run.json``: its ``seed``, ``config``, ``episode_returns`` and ``evaluations``
    ``[(episode, greedy team return)]``. ValueError if there is none."""
    path = RESULTS / algo / env_id / "run.json"
    if not path.is_file():
        committed = sorted(p.parent.name for p in (RESULTS / algo).glob("*/run.json"))
        raise ValueError(f"no committed reference run of {algo} on {env_id!r}; there are runs on {committed}")
    return json.loads(path.read_text())


def random_return(env_id: str, episodes: int = 100, seed: int = 0) -> float:
    """The mean team return of uniformly random actions over ``episodes`` episodes of one env seeded ``seed``."""
    env = make_env(env_id, seed=seed)
    policy = random_policy(env.n_agents, env.n_actions, np.random.default_rng(seed))
    return float(team_returns(env, policy, episodes, progress=False).mean())


def plot_against_reference(result: TrainResult, reference: dict, algorithm: str, optimal: float | None = None,
                           random: float | None = None, env_id: str = "", ax: plt.Axes | None = None,
                           label: str = "your run") -> plt.Axes:
    """``result``'s greedy evaluations (blue, legend ``label``) against the committed ``reference`` run's
    (``reference_run``'s dict; grey, wide), with the exact ``optimal`` return and the ``random`` policy's mean as
    horizontal lines (None: not drawn). Returns the matplotlib axes."""
    if not isinstance(result, TrainResult):
        raise ValueError(f"result must be train_yours(...)'s TrainResult, got {type(result).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.4))
    episodes, greedy = zip(*reference["evaluations"])
    ax.plot(episodes, greedy, "-o", color="0.65", markersize=4, linewidth=2.5,  # wide: it shows under a run that
            label=f"marl_edu's {algorithm} (committed run, seed {reference['seed']})")  # retraces it exactly
    if result.evaluations:
        episodes, greedy = zip(*result.evaluations)
        ax.plot(episodes, greedy, "-o", color="C0", markersize=3, linewidth=1.2, label=label)
    return greedy_axes(ax, optimal, f"{env_id}: greedy team return", optimum_style=("C2", "--"), random=random)
