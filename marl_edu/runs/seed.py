"""One seed of any learner, with its figures and files: what the command line, the benchmarks and the widgets share.

``run_seed`` trains one seed of a learner of ``learners.LEARNERS`` with its loop and measures it (the final greedy and
sampled team returns on a discrete task, when it first solved; a continuous learner's noise-free and sampled score
is ``particle_figures``); ``rounded`` gives the figures as the files record them; ``save_artifacts`` writes a seed's
``policy.pt`` and ``greedy.gif``, ``write_curve`` the runs' evaluations as a PNG; ``solve_counts`` and
``sampled_gaps`` sum up a method's seeds as the tables and notebooks read them; ``load_replay_policy`` loads a
saved policy (never a run in progress) and ``replay_figures`` measures it as training measured it. ``METHODS`` and
``method_config`` name the variants (a GRU or feed-forward actor) ``benchmarks/compare.py`` and ``benchmarks/speed.py``
train.
"""

from __future__ import annotations

import numbers
import pathlib
import statistics
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np

from marl_edu.base.files import atomic_write
from marl_edu.base.threads import torch_threads
from marl_edu.base.viz import downscale, plot_seed_evaluations, save_gif
from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import family, make_env
from marl_edu.envs.particle import PARTICLE_EVAL_SEED
from marl_edu.learners.baselines import IACV, IDDPG, CentralQV, CentralV
from marl_edu.learners.coma import COMA
from marl_edu.learners.maddpg import MADDPG
from marl_edu.learners.ppo import IPPO, MAPPO
from marl_edu.learners.table import LEARNERS, algo_name, algo_name_of_class, check_env, config_class, entry
from marl_edu.learners.value_decomposition import IQL, QMIX, VDN
from marl_edu.training.checkpoints import load_checkpoint, policy_from_payload, save_policy
from marl_edu.training.evaluation import (greedy_return, greedy_team_return, paired_gap, paired_returns,
                                         particle_episodes, sampled_as, sampled_returns)
from marl_edu.training.loops import TrainResult, train
from marl_edu.training.resume import KIND

SOLVED_MARGIN = 0.3  # "solved": a greedy team return within 0.3 of the exact optimum (8.0 on Switch2, optimum 8.3)

# "<algo>-<variant>": a learner whose policy is recurrent (its row's ``Policy.recurrent``) with its GRU over the
# agent's history ("gru") or feed-forward on the current observation ("ff"); one whose actors are feed-forward MLPs
# whatever its config ("mlp"), with its default config. The config each variant sets:
VARIANTS = {"gru": {"recurrent": True}, "ff": {"recurrent": False}, "mlp": {}}
# the methods of the comparison (benchmarks/compare.py, notebooks 14, 15 and 16), in the order they joined it
METHODS = [f"{algo_name_of_class(learner)}-{variant}" for learner, variant in (
    (COMA, "gru"), (COMA, "ff"), (CentralV, "gru"), (CentralV, "ff"), (IACV, "gru"), (IACV, "ff"), (MADDPG, "mlp"),
    (IDDPG, "mlp"), (CentralQV, "gru"), (IQL, "gru"), (VDN, "gru"), (QMIX, "gru"), (MAPPO, "gru"), (IPPO, "gru"))]


SCORE_EPISODES = 100  # a run's final figures average over this many episodes (benchmarks' too): a continuous
# learner's score (evaluate_particle), a discrete one's sampled team return and, off Switch, its greedy one

def solved_threshold(optimum: float) -> float:
    return round(optimum - SOLVED_MARGIN, 6)


def solve_line(optimum: float) -> float:
    """The lowest greedy team return that counts as solved: ``solved_threshold(optimum)``, less the rounding of a
    float32 sum of rewards (a return of 8.0 arrives as 7.99999997)."""
    return solved_threshold(optimum) - 1e-6


# "late": the greedy evaluations after this share of a run's budget, where keeping a solve is judged
LATE = 2 / 3


def late_solved(evaluations: list, budget: int, line: float) -> list[bool]:
    """Whether each greedy evaluation late in a run was solved: one bool per ``(episode, value)`` of ``evaluations``
    with episode > ``LATE`` * ``budget`` (episodes), True where value >= ``line`` (``solve_line``). A steadier measure
    of keeping a solve than the final evaluation alone. ValueError if no evaluation is that late."""
    late = [value >= line for episode, value in evaluations if episode > budget * LATE]
    if not late:
        raise ValueError(f"no greedy evaluation after {LATE:.2f} of the budget of {budget} episodes "
                         f"(the last at episode {max((e for e, _ in evaluations), default=None)})")
    return late


def median_or_never(values: list) -> float | None:
    """The median of ``values`` where None (a seed that never solved) counts as never, larger than any number: None
    when half the values or more are None. ValueError for no values."""
    if not values:
        raise ValueError("median_or_never needs at least one value, got none")
    median = statistics.median([float("inf") if value is None else value for value in values])
    return None if median == float("inf") else median


def solve_counts(rows: list[dict], optimum: float) -> tuple[int, int, float | None]:
    """How a method did over its seeds, as the tables count it. ``rows``: one dict per seed with its final greedy team
    return ``"greedy"`` and ``"episodes_to_solve"`` (the first evaluation within ``SOLVED_MARGIN`` of ``optimum``,
    None if none was). Returns (seeds solved at the end: final greedy >= optimum - 0.3; seeds that solved at some
    point; the median episodes to solve over those seeds only, None if no seed did)."""
    if not rows:
        raise ValueError("solve_counts needs at least one seed's row, got none")
    line = solve_line(optimum)
    at_end = sum(row["greedy"] >= line for row in rows)
    episodes = [row["episodes_to_solve"] for row in rows if row["episodes_to_solve"] is not None]
    return at_end, len(episodes), (float(np.median(episodes)) if episodes else None)


class SampledGaps(NamedTuple):
    """What ``sampled_gaps`` measures over a method's seeds."""
    gaps: np.ndarray  # (S,) each seed's final sampled mean minus its noise-free (greedy) one
    mean: float  # their mean
    lower: int  # seeds whose sampled mean is below the noise-free one by more than the rounding (a tie is not lower)
    se: np.ndarray | None = None  # (S,) each gap's standard error, where the records keep it; else None
    higher_beyond: int | None = None  # seeds whose gap is more than 2 se + the rounding above zero (None without se)
    lower_beyond: int | None = None  # ... more than 2 se + the rounding below zero


def gap_rounding(noise_free_digits: int, sampled_digits: int, se_digits: int) -> float:
    """How far a gap, or a gap less twice its standard error, read from a record can be from the one measured, when
    the record rounds the noise-free (greedy) figure, the sampled one and the standard error to these decimals: half
    the last digit of each of the two figures, and twice half the standard error's. A gap within this of a line is
    not counted past it (a policy that plays alike on every episode records a gap of a few thousandths, se 0.0)."""
    return 0.5 * 10.0 ** -noise_free_digits + 0.5 * 10.0 ** -sampled_digits + 2 * 0.5 * 10.0 ** -se_digits


# compare.py's and particle.py's records (DIGITS: greedy and team_return to 0.01, sampled and its se to 0.001)
GAP_ROUNDING = gap_rounding(2, 3, 3)  # 0.005 + 0.0005 + 0.001 = 0.0065


def sampled_gaps(rows: list[dict], noise_free: str = "team_return", rounding: float = GAP_ROUNDING) -> SampledGaps:
    """The sampled policy against the noise-free (or greedy) one over a method's seeds. ``rows``: one record per seed
    (at least 1) with ``"sampled"``, its final policy's sampled mean team return, and ``noise_free``, the same
    policy's noise-free one (``"team_return"`` in a particle record, ``"greedy"`` in a discrete one). Records made
    since the sampled figures play the noise-free ones' episodes also keep each gap's standard error
    (``"sampled_gap_se"``, ``evaluation.paired_gap``): then ``se`` and the seeds beyond two standard errors either
    way. A gap counts as lower, or beyond, only by more than ``rounding``, how far the records' rounding can move it
    (``GAP_ROUNDING`` for compare.py's and particle.py's records; ``gap_rounding(4, 4, 4)`` for foraging.py's).
    Records without ``sampled_gap_se`` are Switch's, where every episode starts alike: ``se`` and the counts beyond
    two standard errors are then None. ValueError names a missing or non-finite figure, or rows of both kinds."""
    if not rows:
        raise ValueError("sampled_gaps needs at least one seed's row, got none")
    for index, row in enumerate(rows):
        for key in ("sampled", noise_free):
            if key not in row:
                raise ValueError(f"row {index} has no {key!r}: it holds {', '.join(map(repr, row)) or 'nothing'}")
            if isinstance(row[key], bool) or not isinstance(row[key], numbers.Real) or not np.isfinite(row[key]):
                raise ValueError(f"row {index}'s {key!r} is {row[key]!r}, expected a finite team return")
    gaps = np.array([row["sampled"] - row[noise_free] for row in rows], dtype=np.float64)  # (S,)
    if isinstance(rounding, bool) or not isinstance(rounding, numbers.Real) or not 0 <= rounding < 1:
        raise ValueError(f"rounding must be a number in [0, 1), how far the records' rounding can move a gap; got "
                         f"{rounding!r}")
    lower = int((gaps < -rounding).sum())
    kept = [index for index, row in enumerate(rows) if "sampled_gap_se" in row]
    if not kept:
        return SampledGaps(gaps, float(gaps.mean()), lower)
    if len(kept) < len(rows):
        missing = next(index for index in range(len(rows)) if index not in kept)
        raise ValueError(f"rows {', '.join(map(str, kept))} keep 'sampled_gap_se' and row {missing} does not: "
                         "records of two evaluation protocols (sampled on the noise-free episodes, or on others)")
    for index, row in enumerate(rows):
        value = row["sampled_gap_se"]
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0 or not np.isfinite(value):
            raise ValueError(f"row {index}'s 'sampled_gap_se' is {value!r}, expected a standard error (finite, >= 0)")
    se = np.array([row["sampled_gap_se"] for row in rows], dtype=np.float64)  # (S,)
    return SampledGaps(gaps, float(gaps.mean()), lower, se, int((gaps > 2 * se + rounding).sum()),
                       int((gaps < -2 * se - rounding).sum()))


def split(method: str) -> tuple[str, str]:
    """``"central_v-gru"`` -> ``("central_v", "gru")``."""
    algo, variant = method.rsplit("-", 1)
    return algo, variant


def method_config(method: str):
    """A method of ``METHODS`` -> ``(algo, config)``: its learner's name and default config, with a GRU (``-gru``,
    ``recurrent=True``) or feed-forward (``-ff``, ``recurrent=False``) actor (or agent network); ``-mlp``
    learners keep the default config. ValueError names a method not in ``METHODS``."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    algo, variant = split(method)
    return algo, config_class(algo)(**VARIANTS[variant])


def _counts(run: TrainResult) -> dict:
    """Every run's counts and speed: ``episodes``, ``env_steps``, ``wall_s``, ``steps_per_s``, ``updates``."""
    return {"episodes": len(run.episode_returns), "env_steps": run.env_steps, "wall_s": run.seconds,
            "steps_per_s": run.env_steps / run.seconds, "updates": run.updates}


def run_seed(algo: str, env_id: str, episodes: int | None, config=None, seed: int = 0, eval_every: int | None = None,
             optimum: float | None = None, stop_at: float | None = None, progress: bool = False,
             device: str = "cpu", env_backend: str = "batched", checkpoint=None,
             threads: int | None = None, final_episodes: int = SCORE_EPISODES,
             env_steps: int | None = None) -> tuple[TrainResult, dict]:
    """Train one seed of ``algo`` (a learner of ``LEARNERS``) with ``loops.train``, which stops early when a periodic
    evaluation reaches ``stop_at`` (a continuous learner's evaluations are the mean team return of 10 noise-free
    episodes). ``config``: None for the learner's defaults; ``eval_every``: None for its row's; ``env_backend``: how a
    discrete learner's env copies are stepped (``envs.make_vec_env``; the same transitions); ``checkpoint``: a
    ``resume.RunCheckpoint`` that saves the run in progress (and resumes it), or None; ``threads``: torch
    threads for the training and the final figures (``threads.torch_threads``); ``final_episodes``: how many
    episodes the final figures average over; ``env_steps``: a budget of env steps in place of ``episodes`` (give
    ``episodes=None``): the run ends with the first collection that reaches it (``loops.train``).

    Returns ``(run, figures)``: the ``TrainResult`` and its figures, exact (``rounded`` gives them as the files
    record them), in this order: ``seed``; for a discrete learner ``final_figures`` over ``final_episodes`` (``greedy``,
    the final policy's greedy team return; ``sampled``, its sampled policy's on the same episodes, its draws seeded
    with ``seed``; where episodes start at random ``sampled_starts`` and ``sampled_gap_se``) and ``sampled_as`` (what
    the sampled policy plays, ``evaluation.sampled_as``); ``episodes``,
    ``env_steps``, ``wall_s`` (training's wall-clock), ``steps_per_s``, ``updates``; for a discrete learner
    ``episodes_to_solve`` and ``seconds_to_solve`` (when a periodic greedy evaluation first reached
    ``solved_threshold(optimum)``; None if never, or if ``optimum`` is None); ``evaluations``, the periodic
    ``(episode, value)`` of ``run.evaluations``; ``sampled_evaluations``, the sampled policy's at the same episodes
    (``run.sampled_evaluations``). A continuous learner's: ``seed``, ``sampled_as``, ``sampled_starts`` (its
    sampled evaluations play its noise-free ones' episodes), the counts, ``evaluations``
    (the noise-free policy's) and ``sampled_evaluations``; its final score, noise-free and sampled, is
    ``particle_figures``.
    """
    run = train(algo, env_id, episodes, config, seed, eval_every, progress, device, stop_at, env_backend, checkpoint,
                threads, env_steps=env_steps)
    if entry(algo).continuous:
        return run, {"seed": seed, "sampled_as": sampled_as(run.agent), "sampled_starts": SAMPLED_STARTS, **_counts(run),
                     "evaluations": list(run.evaluations), "sampled_evaluations": list(run.sampled_evaluations)}
    target = float("inf") if optimum is None else solve_line(optimum)
    first = next((k for k, (_, g) in enumerate(run.evaluations) if g >= target), None)
    return run, {"seed": seed, **final_figures(run.agent, env_id, final_episodes, seed, threads=threads),
                 "sampled_as": sampled_as(run.agent),
                 **_counts(run), "episodes_to_solve": None if first is None else run.evaluations[first][0],
                 "seconds_to_solve": None if first is None else run.eval_seconds[first],
                 "evaluations": list(run.evaluations), "sampled_evaluations": list(run.sampled_evaluations)}


SAMPLED_STARTS = "greedy"  # a record's "sampled_starts": its sampled figures play its greedy figures' episodes


def final_figures(agent, env_id: str, episodes: int = SCORE_EPISODES, seed: int = 0,
                  threads: int | None = None) -> dict:
    """A discrete learner's final figures: ``greedy`` (``greedy_team_return``: one episode on Switch, exact; else the
    mean of ``episodes``) and ``sampled`` (the mean team return of ``episodes`` episodes of the sampled policy, its
    draws seeded ``seed``, ``evaluation.sampled_returns``). Where episodes start at random, the sampled ones are the
    greedy figure's own (``evaluation.paired_returns``), and the figures add ``sampled_starts``
    (``SAMPLED_STARTS``) and ``sampled_gap_se``, the standard error of sampled minus greedy over those episodes
    (``gap_se``: none for one episode)."""
    if family(env_id).deterministic:  # (every episode starts alike)
        greedy = greedy_team_return(agent, env_id, episodes, threads=threads)
        return {"greedy": greedy, "sampled": float(sampled_returns(agent, env_id, episodes, seed, threads).mean())}
    greedy, sampled = paired_returns(agent, env_id, episodes, seed, threads)  # (episodes,), (episodes,)
    return {"greedy": float(greedy.mean()), "sampled": float(sampled.mean()), "sampled_starts": SAMPLED_STARTS,
            **gap_se(sampled, greedy)}


def gap_se(sampled: np.ndarray, greedy: np.ndarray) -> dict:
    """``{"sampled_gap_se": ...}`` of paired team returns ``(E,)`` (``evaluation.paired_gap``), or nothing for one
    episode, which has no standard error (a record never holds a NaN)."""
    return {"sampled_gap_se": paired_gap(sampled, greedy).se} if len(sampled) > 1 else {}


def noise_free_policies(agent) -> list:
    """What a continuous learner plays without exploration noise, obs ``(N, O)`` -> forces ``(N, 2)``: its policy,
    or for a policy ensemble (its row's ``Policy.subpolicies``) one policy per sub-policy m = 0..M-1, every agent
    playing its sub-policy m."""
    if entry(algo_name(agent)).policy.subpolicies:
        return [agent.policy(np.full(agent.n_agents, m)) for m in range(agent.n_subpolicies)]
    return [agent.greedy_policy()]


def particle_figures(agent, env_id: str, episodes: int = SCORE_EPISODES, seed: int = PARTICLE_EVAL_SEED,
                     progress: bool = False, threads: int | None = None) -> dict:
    """A continuous learner's score on a particle env, ``evaluate_particle`` of its noise-free policy over
    ``episodes`` episodes from ``seed`` (an ensemble's: the mean over its sub-policies, each over those episodes):
    ``team_return``; on cooperative navigation ``landmark_distance`` (mean over steps), ``final_landmark_distance``
    and ``collisions_per_step`` (other envs do not report them: left out); ``agent_returns``, one per agent (on
    physical deception the adversary's first, then the good agents'); then ``sampled``, the sampled policy's mean
    team return over the same episodes (``evaluation.sampled_returns`` from the noise-free score's ``Starts``; the
    particle envs draw only when an episode starts, so every sub-policy of an ensemble played the same episodes), its
    draws seeded ``seed`` too (``evaluation.sampled_as`` says what it plays); ``sampled_starts``
    (``SAMPLED_STARTS``) and ``sampled_gap_se``, the standard error of sampled minus noise-free over those episodes
    (``evaluation.paired_gap``; an ensemble's noise-free return per episode is the mean over its sub-policies)."""
    played = [particle_episodes(policy, env_id, episodes, seed, progress, threads)
              for policy in noise_free_policies(agent)]  # (score, returns (episodes,), starts) per policy
    scores = [score for score, _, _ in played]
    figures = {key: float(np.mean([getattr(score, key) for score in scores]))
               for key in ("team_return", "landmark_distance", "final_landmark_distance", "collisions_per_step")}
    figures = {key: value for key, value in figures.items() if not np.isnan(value)}
    figures["agent_returns"] = np.mean([score.agent_returns for score in scores], axis=0).tolist()
    sampled = sampled_returns(agent, env_id, episodes, seed, threads, played[0][2])  # (episodes,) on those starts
    noise_free = np.mean([returns for _, returns, _ in played], axis=0)  # (episodes,) mean over sub-policies
    return {**figures, "sampled": float(sampled.mean()), "sampled_starts": SAMPLED_STARTS,
            **gap_se(sampled, noise_free)}


DIGITS = {"greedy": 2, "sampled": 3, "sampled_gap_se": 3, "team_return": 2, "landmark_distance": 3,
          "final_landmark_distance": 3, "collisions_per_step": 3, "wall_s": 1, "steps_per_s": None,
          "seconds_to_solve": 1}  # None: a whole int


def rounded(figures: dict) -> dict:
    """``run_seed``'s figures (with ``particle_figures``' if any) as the files record them, with the same keys in the
    same order: ``greedy``, ``team_return``, every agent's return and every evaluation to 0.01 (every Switch reward
    is a multiple of 0.1), ``sampled``, its gap's standard error, every sampled evaluation (a mean over episodes) and
    the particle distances and collisions to 0.001, ``wall_s`` and
    ``seconds_to_solve`` to 0.1 s, ``steps_per_s`` to a whole int; the others (and Nones) as they are."""
    row = dict(figures)
    for key, digits in DIGITS.items():
        if row.get(key) is not None:
            row[key] = round(row[key], digits)
    if "agent_returns" in row:
        row["agent_returns"] = [round(value, 2) for value in row["agent_returns"]]
    if "evaluations" in row:
        row["evaluations"] = [(episode, round(value, 2)) for episode, value in figures["evaluations"]]
    if "sampled_evaluations" in row:
        row["sampled_evaluations"] = [(episode, round(value, 3)) for episode, value in figures["sampled_evaluations"]]
    return row


def save_artifacts(run: TrainResult, env_id: str, folder: pathlib.Path, threads: int | None = None) -> None:
    """The final policy (``policy.pt``) and a GIF of one episode of it (``greedy.gif``, ``write_gif``) in
    ``folder``, each written atomically (``files.atomic_write``)."""
    folder.mkdir(parents=True, exist_ok=True)
    save_policy(run.agent, env_id, folder / "policy.pt")
    write_gif(run.agent, env_id, folder / "greedy.gif", threads)


def write_gif(agent, env_id: str, path: pathlib.Path, threads: int | None = None) -> pathlib.Path:
    """A GIF of one episode of ``agent``'s final policy from the env seeded 0, written atomically (``viz.save_gif``):
    a discrete learner's greedy episode (``greedy_return``), a continuous learner's noise-free one (an ensemble's:
    sub-policy 0 of every agent), sized and timed as the env's family says (``gif_scale``, ``gif_fps``: the particle
    envs' 700 x 700 at a quarter, 8 steps a second)."""
    if not entry(algo_name(agent)).continuous:
        frames = greedy_return(agent, env_id, record_frames=True, threads=threads).frames
    else:
        with torch_threads(threads):
            frames = run_episode(make_env(env_id, seed=0), noise_free_policies(agent)[0], record_frames=True).frames
    found = family(env_id)
    scale, fps = found.gif_scale, found.gif_fps
    if scale < 1:
        return save_gif([downscale(frame, round(1 / scale)) for frame in frames], path, fps=fps, scale=1)
    return save_gif(frames, path, fps=fps, scale=int(scale))


def write_curve(rows: list[dict], optimum: float | None, title: str, path: pathlib.Path,
                ylabel: str | None = None) -> None:
    """The runs' periodic evaluations (against the exact optimum if known), as a PNG (written atomically);
    ``ylabel``: what the evaluations are, if not the greedy team return."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    plot_seed_evaluations(rows, optimal=optimum, ax=ax, title=title)
    if ylabel:
        ax.set_ylabel(ylabel)
    fig.tight_layout()
    atomic_write(path, lambda file: fig.savefig(file, dpi=100, format="png"))
    plt.close(fig)


def known_optimum(env_id: str) -> float | None:
    """The exact optimal team return of ``env_id`` where its family knows it (``EnvFamily.optimum``: the Switch envs,
    by exact planning), else None. ValueError for an unknown id."""
    optimum = family(env_id).optimum
    return None if optimum is None else optimum(env_id)


def replay_figures(agent, env_id: str, episodes: int = 100, seed: int = 0, progress: bool = False,
                   threads: int | None = None) -> dict:
    """A saved policy's figures, as runs.json records a training run's (``rounded``): discrete, ``final_figures``
    (``greedy`` and ``sampled``, its draws seeded ``seed``, as ``run_seed``'s final figures); continuous,
    ``particle_figures`` over ``episodes`` episodes from ``seed``."""
    if entry(algo_name(agent)).continuous:
        return rounded(particle_figures(agent, env_id, episodes, seed, progress, threads))
    return rounded(final_figures(agent, env_id, episodes, seed, threads))


def load_replay_policy(path: str, env_id: str | None = None):
    """The learner in the policy file ``path``, the env it was trained on and the one it will play, ``env_id`` or, if
    None, that one (``learners.check_env``): ``(agent, trained_on, plays_on)``. ValueError in one line for a missing
    file, one that is not a checkpoint, a run in progress (``seed<S>/run.pt``: continue it with ``--resume``), any
    other checkpoint that is not a policy, weights holding NaN or infinity, or a policy whose sizes do not fit the env
    it will play (checked before its learner is built)."""
    if pathlib.Path(path).is_dir():
        raise ValueError(f"{path} is a folder, not a policy file: give one of its seed<S>/policy.pt")
    payload = load_checkpoint(path)
    if payload["algo"] == KIND:
        raise ValueError(f"{path} is a run in progress saved by Ctrl-C, not a policy: finish it with --resume OUT "
                         f"(its run's folder), then replay seed<S>/policy.pt")
    plays_on = None
    if payload["algo"] in LEARNERS:  # (else policy_from_payload says what the file holds)
        plays_on = check_env(payload["algo"], payload["env"] if env_id is None else env_id)
    agent = policy_from_payload(payload, path, plays_on=plays_on)  # refuses damaged headers, mismatched tensors, NaN
    return agent, payload["env"], plays_on
