"""Pictures: learning curves with the optimal and random lines, and episode GIFs.

GIFs are written to ``media/`` with Pillow and shown in notebooks by embedding the file's bytes,
so they play in JupyterLab and on the web, and nbval can compare them byte for byte.
"""

from __future__ import annotations

import pathlib
from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import numpy as np
from PIL import Image

from marl_edu.base.course_paths import media_dir
from marl_edu.base.files import atomic_write
from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import non_negative_int, positive_int

def moving_average(values: Sequence[float], window: int) -> np.ndarray:
    """Trailing mean over the last ``window`` values (fewer at the start), same length as ``values``."""
    values = np.asarray(values, dtype=np.float64)
    check_shape(values, ("T",), "values")
    window = positive_int(window, "window")
    sums = np.cumsum(np.insert(values, 0, 0.0))  # (T+1,)
    starts = np.maximum(np.arange(1, len(values) + 1) - window, 0)  # (T,)
    ends = np.arange(1, len(values) + 1)  # (T,)
    return (sums[ends] - sums[starts]) / (ends - starts)  # (T,)


def plot_learning_curve(returns: Sequence[float], optimal: float | None = None, random: float | None = None,
                        label: str = "team return", window: int = 1, ax: plt.Axes | None = None,
                        xlabel: str = "episode", ylabel: str = "team return (sum over agents)",
                        color: str = "C0") -> plt.Axes:
    """Plot one curve of per-episode returns with dashed reference lines.

    Args:
        returns: ``(episodes,)`` one team return per episode (or per evaluation).
        optimal: the exact optimum (``planning.optimal_team_return``), drawn as a green line.
        random: the random policy's mean return, drawn as a grey line.
        window: moving-average window; the raw returns are drawn faintly behind the average.
        color: the curve's colour, so several runs can share one ``ax``.
    """
    returns = np.asarray(returns, dtype=np.float64)
    check_shape(returns, ("episodes",), "returns")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    x = np.arange(1, len(returns) + 1)
    if window > 1:
        ax.plot(x, returns, color=color, alpha=0.25, linewidth=0.8)
        ax.plot(x, moving_average(returns, window), color=color, label=f"{label} ({window}-episode mean)")
    else:
        ax.plot(x, returns, color=color, label=label)
    if optimal is not None:
        ax.axhline(optimal, color="C2", linestyle="--", label=f"exact optimum ({optimal:.2f})")
    if random is not None:
        ax.axhline(random, color="0.5", linestyle=":", label=f"random policy ({random:.2f})")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return ax


def upscale(frame: np.ndarray, scale: int) -> np.ndarray:
    """Each pixel of ``(H, W, 3)`` becomes a ``scale x scale`` block: ``(H * scale, W * scale, 3)``."""
    return np.kron(frame, np.ones((scale, scale, 1), dtype=np.uint8))


def downscale(frame: np.ndarray, factor: int) -> np.ndarray:
    """Average each ``factor x factor`` block of ``(H, W, 3)`` uint8 into one pixel: ``(H // factor, W // factor, 3)``
    (the particle envs render 700 x 700; a quarter of that keeps their GIFs small)."""
    check_shape(frame, ("H", "W", 3), "frame")
    if isinstance(factor, bool) or not isinstance(factor, int) or not 1 <= factor <= min(frame.shape[:2]):
        raise ValueError(f"factor must be an int in [1, {min(frame.shape[:2])}], got {factor!r}")
    return np.asarray(Image.fromarray(np.ascontiguousarray(frame, dtype=np.uint8)).reduce(factor))


def side_by_side(panels: Sequence[np.ndarray], gap: int = 4) -> np.ndarray:
    """One frame of several panels in a row, ``(H, W_0 + gap + W_1 + ..., 3)``, with a grey strip ``gap`` pixels wide
    between neighbours (the envs draw on white), so that what stands at one panel's edge does not read as part of the
    next. ``panels``: frames ``(H, W_k, 3)`` uint8 of one height (widths may differ)."""
    if len(panels) == 0:
        raise ValueError("panels is empty: give the frames to put side by side")
    gap = non_negative_int(gap, "gap")
    height = check_shape(panels[0], ("H", "W", 3), "panels[0]")["H"]
    for k, panel in enumerate(panels):
        check_shape(panel, ("H", "W", 3), f"panels[{k}]", {"H": height})
        if panel.dtype != np.uint8:
            raise ValueError(f"panels[{k}]: expected uint8 RGB, got dtype {panel.dtype}")
    strip = np.full((height, gap, 3), 150, dtype=np.uint8)  # (H, gap, 3) grey
    row = [panels[0]]
    for panel in panels[1:]:
        row += [strip, panel]
    return np.concatenate(row, axis=1)  # (H, sum of widths + gaps, 3)


def _check_frames(frames: Sequence[np.ndarray]) -> None:
    if len(frames) == 0:
        raise ValueError("frames is empty: record an episode with run_episode(..., record_frames=True)")
    dims: dict[str, int] = {}
    for k, frame in enumerate(frames):
        check_shape(frame, ("H", "W", 3), f"frames[{k}]", dims)
        if frame.dtype != np.uint8:
            raise ValueError(f"frames[{k}]: expected uint8 RGB, got dtype {frame.dtype}")


def save_gif(frames: Sequence[np.ndarray], path: str | pathlib.Path, fps: float = 4.0, scale: int = 2,
             hold_last: int = 4) -> pathlib.Path:
    """Write RGB frames ``(H, W, 3)`` uint8 as a looping GIF.

    Args:
        path: a bare file name goes into ``course_paths.media_dir()`` (the course's ``media/`` from its notebooks,
            else ``media/`` beside the notebook); a path with folders is used as given.
        fps: frames per second (0.5 to 30).
        scale: integer upscaling so small grid worlds are readable.
        hold_last: how many extra frames to show the final scene before looping.
    Returns the path written. The same frames always give the same bytes. The file is written whole or not at all
    (``files.atomic_write``): an OSError ``could not write <path>: <cause>`` leaves a GIF already there as it was.
    """
    _check_frames(frames)
    if not 0.5 <= fps <= 30:
        raise ValueError(f"fps must be in [0.5, 30], got {fps}")
    if not isinstance(scale, int) or not 1 <= scale <= 8:
        raise ValueError(f"scale must be an int in [1, 8], got {scale!r}")
    path = pathlib.Path(path)
    if path.parent == pathlib.Path("."):
        path = media_dir() / path
    if path.suffix.lower() != ".gif":
        raise ValueError(f"path must end in .gif, got {path.name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [Image.fromarray(upscale(f, scale)) for f in frames]
    images += [images[-1]] * hold_last

    def write(file):
        images[0].save(file, format="GIF", save_all=True, append_images=images[1:], duration=int(1000 / fps),
                       loop=0, optimize=False, disposal=1)

    return atomic_write(path, write)


def show_gif(path: str | pathlib.Path):
    """Display a GIF in a notebook (embedded, so it plays in JupyterLab and on the web)."""
    from IPython.display import Image as IPyImage

    path = pathlib.Path(path)
    if path.parent == pathlib.Path("."):
        path = media_dir() / path
    if not path.exists():
        raise ValueError(f"no GIF at {path}; write it first with save_gif")
    return IPyImage(data=path.read_bytes(), format="gif")


def plot_frame(frame: np.ndarray, title: str = "", ax: plt.Axes | None = None, cell_size: int = 30) -> plt.Axes:
    """Show one rendered frame ``(H, W, 3)`` with a (row, col) grid of ``cell_size``-pixel cells."""
    _check_frames([frame])
    if ax is None:
        _, ax = plt.subplots(figsize=(frame.shape[1] / 40, frame.shape[0] / 40 + 0.4))
    ax.imshow(frame)
    rows, cols = frame.shape[0] // cell_size, frame.shape[1] // cell_size
    ax.set_xticks(np.arange(cols) * cell_size + cell_size / 2, [str(c) for c in range(cols)])
    ax.set_yticks(np.arange(rows) * cell_size + cell_size / 2, [str(r) for r in range(rows)])
    ax.set_xlabel("col")
    ax.set_ylabel("row")
    ax.set_title(title)
    return ax


def plot_ctde(n_agents: int = 2, ax: plt.Axes | None = None) -> plt.Axes:
    """Who sees what under centralised training with decentralised execution (CTDE).

    Solid arrows: execution (each actor sees only its own observation). Dashed: training only: the
    critic sees more than any actor (every agent's observation and action, or the state and the joint
    action) and sends a learning signal back to the actors. Agents are numbered from 0, as in the code.
    Drawn in notebook 01, before any method is taught: it names none.
    """
    if not isinstance(n_agents, int) or not 1 <= n_agents <= 6:
        raise ValueError(f"n_agents must be an int in [1, 6], got {n_agents!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8.5, 1.6 + 1.3 * n_agents))
    height = 1.3 * n_agents
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.5, height + 1.0)
    ax.axis("off")

    def box(x, y, w, h, text, color):
        ax.add_patch(plt.Rectangle((x, y), w, h, facecolor=color, edgecolor="black", linewidth=1))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9)

    def arrow(x0, y0, x1, y1, text="", dashed=False, color="black"):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="->", color=color, linestyle="--" if dashed else "-", linewidth=1.2))
        if text:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.12, text, ha="center", fontsize=8, color=color)

    box(0.1, 0.0, 1.6, height, "environment\n(Switch2)", "#e8e8e8")
    box(7.3, 0.15, 2.6, height - 0.3, "centralised critic(s)\nsee every o_i and a_i\n(or the state and\nthe joint action)"
        "\n\ntraining only", "#fde2c8")
    for i in range(n_agents):
        y = height - 1.3 * (i + 1) + 0.35
        box(3.6, y, 1.8, 0.6, f"actor {i}\nπ_{i}(a_{i} | o_{i})", "#cfe3f7")
        arrow(1.7, y + 0.45, 3.6, y + 0.45, f"o_{i} (own obs only)")
        arrow(3.6, y + 0.15, 1.7, y + 0.15, f"a_{i}")
        arrow(5.4, y + 0.45, 7.3, y + 0.45, f"o_{i}, a_{i}", dashed=True, color="C1")
        arrow(7.3, y + 0.15, 5.4, y + 0.15, "learning signal", dashed=True, color="C1")
    arrow(1.7, -0.2, 7.3, -0.2, "rewards r (training only)", dashed=True, color="C1")
    ax.text(4.5, height + 0.55, "execution: solid arrows only — each actor acts on its own observation",
            ha="center", fontsize=9)
    ax.text(4.5, height + 0.2, "training: dashed arrows too — the critic sees everything",
            ha="center", fontsize=9, color="C1")
    return ax


def greedy_axes(ax: plt.Axes, optimal: float | None, title: str, optimum_style: tuple[str, str],
                 random: float | None = None) -> plt.Axes:
    """Finish a plot of greedy evaluations against training episodes on ``ax``: the exact optimum's horizontal line
    (``optimum_style`` = (color, linestyle); None: not drawn), the random policy's (None: not drawn), axis labels,
    at most 5 round episode ticks, ``title``, grid and legend. Returns ``ax``. Every greedy-evaluation plot of the
    course ends with it (the capstones' too), so they read alike."""
    if optimal is not None:
        color, linestyle = optimum_style
        ax.axhline(optimal, color=color, linestyle=linestyle, label=f"exact optimum ({optimal:.1f})")
    if random is not None:
        ax.axhline(random, color="0.5", linestyle=":", label=f"random policy ({random:.1f})")
    ax.set_xlabel("training episode")
    # at most 5 round ticks, so a narrow 20000-episode axis stays readable
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10], integer=True))
    ax.set_ylabel("greedy team return")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def plot_seed_evaluations(seeds: Sequence[dict], optimal: float | None = None, ax: plt.Axes | None = None,
                          title: str = "") -> plt.Axes:
    """One line per training run of its periodic greedy evaluations, against the exact optimum; where a run also
    recorded its sampled policy's (``sampled_evaluations``, the same form), a dotted line of the same colour beside it
    (the y label says so; the legend, under the axes, names the seeds).

    Args:
        seeds: one dict per run with ``seed`` and ``evaluations``, a list of ``(episode, greedy team return)``
            (the rows of a ``benchmarks/learning.py`` summary.json), and optionally ``sampled_evaluations``, a list
            of ``(episode, sampled policy's mean team return)`` (runs recorded before it was kept have none).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    for row in seeds:
        if not row["evaluations"]:
            raise ValueError(f"seed {row['seed']} has no evaluations to plot")
        episodes, greedy = zip(*row["evaluations"])
        line, = ax.plot(episodes, greedy, "-o", markersize=2, linewidth=0.8, label=f"seed {row['seed']}")
        if row.get("sampled_evaluations"):
            episodes, sampled = zip(*row["sampled_evaluations"])
            ax.plot(episodes, sampled, ":", linewidth=1.1, color=line.get_color(),
                    label=f"_seed {row['seed']}, sampled")  # (a leading _: not in the legend; the y label says dotted)
    ax = sampled_ylabel(greedy_axes(ax, optimal, title, optimum_style=("C2", "--")), seeds)
    # one entry per seed, in rows under the axes: inside them it hid the late evaluations, where runs fall back
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    return ax


def sampled_ylabel(ax: plt.Axes, rows: Sequence[dict]) -> plt.Axes:
    """Where any of ``rows`` drew its sampled evaluations, the y label says which line is which."""
    if any(row.get("sampled_evaluations") for row in rows):
        ax.set_ylabel("team return\n(solid: greedy, dotted: sampled)")
    return ax


def plot_env_step_evaluations(seeds: Sequence[dict], target: float | None = None, ax: plt.Axes | None = None,
                              title: str = "") -> plt.Axes:
    """One line per training run of its periodic greedy evaluations against env steps (in millions), the axis of
    the MARL textbook's Level-Based Foraging figures, with the return counted as "reached" drawn as a dashed line.

    Args:
        seeds: one dict per run with ``seed`` and ``evaluations``, a list of ``(episode, env steps so far, greedy
            team return)`` (the per-seed files of ``benchmarks/foraging.py``), and optionally
            ``sampled_evaluations`` of the same form with the sampled policy's mean team return, drawn dotted in the
            run's colour.
        target: the return to draw (None: not drawn).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    for row in seeds:
        if not row["evaluations"]:
            raise ValueError(f"seed {row['seed']} has no evaluations to plot")
        if any(len(evaluation) != 3 for evaluation in row["evaluations"]):
            raise ValueError(f"seed {row['seed']}: each evaluation must be (episode, env steps, greedy team return), "
                             f"got {row['evaluations'][0]!r}")
        _, steps, greedy = zip(*row["evaluations"])
        line, = ax.plot(np.array(steps) / 1e6, greedy, "-", linewidth=0.9, label=f"seed {row['seed']}")
        if row.get("sampled_evaluations"):
            _, steps, sampled = zip(*row["sampled_evaluations"])
            ax.plot(np.array(steps) / 1e6, sampled, ":", linewidth=1.1, color=line.get_color())
    if target is not None:
        ax.axhline(target, color="black", linestyle="--", linewidth=0.8, label=f"target ({target:g})")
    ax.set_xlabel("env steps (millions)")
    ax.set_ylabel("greedy team return")
    sampled_ylabel(ax, seeds)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return ax


def env_step_band(curves: Sequence[Sequence[Sequence[float]]]) -> tuple[np.ndarray, np.ndarray]:
    """Several runs' curves read at the same env steps: ``(env steps (points,), values (runs, points))``.

    Runs are evaluated at different env steps (every so many episodes: a run whose episodes end sooner has taken fewer
    env steps at its k-th evaluation; every so many env steps: overshot by different amounts), so their k-th
    evaluations are not at one x. Each run is read at every env step at which any run was evaluated, by a straight
    line between its own two evaluations around it (``np.interp``), within the range every run covers: from the
    latest first evaluation to the earliest last one. Past the shortest run, nothing: a mean over the runs still
    going would jump where one stops. The mean over runs at these points is the mean of the runs' straight-line
    curves, exactly, between them too.

    Args:
        curves: one per run, a list of ``(env steps, value)`` pairs, env steps increasing. ValueError for none, an
            empty run, a point that is not a pair, a NaN or infinite number, env steps that do not increase, and runs
            that share no env steps.
    """
    if not curves or any(len(curve) == 0 for curve in curves):
        raise ValueError("env_step_band needs at least one run, each with at least one (env steps, value) pair")
    if any(len(pair) != 2 for curve in curves for pair in curve):
        raise ValueError("env_step_band: each point of a curve must be an (env steps, value) pair")
    runs = [np.array(curve, dtype=float) for curve in curves]  # each (points of that run, 2)
    if not all(np.isfinite(run).all() for run in runs):
        raise ValueError("env_step_band: env steps and values must be finite (no NaN)")
    for k, run in enumerate(runs):
        if (np.diff(run[:, 0]) <= 0).any():
            raise ValueError(f"env_step_band: run {k}'s env steps must increase")
    first, last = max(run[0, 0] for run in runs), min(run[-1, 0] for run in runs)
    if first > last:
        raise ValueError(f"env_step_band: the runs share no env steps (the latest first evaluation, {first:g}, "
                         f"comes after the earliest last one, {last:g})")
    steps = np.unique(np.concatenate([run[:, 0] for run in runs]))  # (every run's env steps, sorted once each)
    steps = steps[(steps >= first) & (steps <= last)]  # (points,)
    return steps, np.stack([np.interp(steps, run[:, 0], run[:, 1]) for run in runs])  # (points,), (runs, points)


def plot_env_step_band(curves: Sequence[Sequence[Sequence[float]]], ax: plt.Axes | None = None, color: str = "C0",
                       linestyle: str = "-", label: str = "", band_alpha: float = 0.15) -> plt.Axes:
    """Several runs' mean (a line in ``linestyle``) and range (a band from min to max, opacity ``band_alpha``)
    against env steps in millions, in one ``color``: our runs and published ones drawn on the same axes. Each run is
    read at the same env steps (``env_step_band``: between its evaluations, up to the shortest run's end).

    Args:
        curves: one per run, a list of ``(env steps, value)`` pairs (see ``env_step_band``).
    """
    steps, values = env_step_band(curves)  # (points,), (runs, points)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(steps / 1e6, values.mean(axis=0), linestyle, color=color, linewidth=1.4, label=label)
    ax.fill_between(steps / 1e6, values.min(axis=0), values.max(axis=0), color=color, alpha=band_alpha, linewidth=0)
    return ax


def seed_band(rows: Sequence[dict], key: str = "evaluations") -> tuple[np.ndarray, np.ndarray]:
    """Several runs' periodic greedy evaluations on one axis: ``(episodes (evals,), greedy (seeds, evals))``.

    Args:
        rows: one dict per seed with ``evaluations``, a list of ``(episode, greedy team return)``. Runs of a
            batched learner are evaluated at the same episodes, give or take the last batch: the episode axis is
            the mean over seeds, cut to the shortest run.
        key: ``"sampled_evaluations"`` for the sampled policy's evaluations instead (the same form).
    """
    if not rows or any(not row.get(key) for row in rows):
        raise ValueError(f"every run needs at least one evaluation ({key})")
    n = min(len(row[key]) for row in rows)
    episodes = np.array([[e for e, _ in row[key][:n]] for row in rows], dtype=float)  # (seeds, evals)
    values = np.array([[g for _, g in row[key][:n]] for row in rows], dtype=float)  # (seeds, evals)
    return episodes.mean(axis=0), values  # (evals,), (seeds, evals)


# Greedy team returns on Switch2 fall into four levels: exactly -10.0 when nobody arrives (-0.1 per agent per step for
# 50 steps), between -5.0 and -0.6 when one agent does (its +5 against the other's 50 steps at -0.1), above 0 when both
# do, and "solved" at 8.0 or more (within 0.3 of the optimum 8.3). Each level: (name, lowest return in it), best first.
SWITCH_OUTCOMES: tuple[tuple[str, float], ...] = (("solved (8.0 or more)", 8.0), ("both agents home", 0.0),
                                                   ("one agent home", -9.0), ("nobody home", -np.inf))


def outcome_counts(rows: Sequence[dict],
                   levels: Sequence[tuple[str, float]] = SWITCH_OUTCOMES) -> tuple[np.ndarray, np.ndarray]:
    """How many runs are at each outcome level at every periodic greedy evaluation.

    Args:
        rows: one dict per run with ``evaluations`` (see ``seed_band``).
        levels: ``(name, lowest return)`` pairs, best first, lowest returns strictly decreasing; a return belongs to
            the first level whose lowest return it reaches (one below every level is counted nowhere).

    Returns:
        episodes ``(evals,)`` and counts ``(len(levels), evals)``: ``counts[l, e]`` runs at level ``l`` at
        evaluation ``e``.
    """
    lows = [float(low) for _, low in levels]
    if not lows or any(a <= b for a, b in zip(lows, lows[1:])):
        raise ValueError(f"levels need strictly decreasing lowest returns, best first; got {lows}")
    episodes, greedy = seed_band(rows)  # (evals,), (seeds, evals)
    highs = [np.inf] + lows[:-1]
    counts = np.stack([((greedy >= low) & (greedy < high)).sum(axis=0) for low, high in zip(lows, highs)])  # (L, evals)
    return episodes, counts


def plot_outcomes(rows: Sequence[dict], ax: plt.Axes | None = None, color: str = "C0", title: str = "",
                  levels: Sequence[tuple[str, float]] = SWITCH_OUTCOMES) -> plt.Axes:
    """Stacked counts of runs per outcome level against training episodes, one method per axes.

    Returns that cluster at a few levels make a mean-and-range band over seeds useless (one run at -10 and one at
    8.3 span everything); counts say how many runs got how far. The best level is at the bottom in ``color``, each
    lower one paler, the last in light grey.

    Args:
        rows: one dict per run with ``evaluations`` (see ``seed_band``).
        color: the method's matplotlib color.
        levels: as in ``outcome_counts``.
    """
    from matplotlib.colors import to_rgba

    episodes, counts = outcome_counts(rows, levels)  # (evals,), (L, evals)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    alphas = np.linspace(1.0, 0.25, max(len(levels) - 1, 1))
    below = np.zeros(len(episodes))
    for k, (name, _) in enumerate(levels):
        face = to_rgba("0.9") if k == len(levels) - 1 and len(levels) > 1 else to_rgba(color, alphas[k])
        ax.fill_between(episodes, below, below + counts[k], step="mid", color=face, linewidth=0, label=name)
        below = below + counts[k]
    ax.set_xlim(episodes[0], episodes[-1])
    ax.set_ylim(0, len(rows))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10], integer=True))
    ax.set_xlabel("training episode")
    ax.set_ylabel(f"runs (of {len(rows)}), greedy")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    return ax


def plot_comparison(results: dict[str, Sequence[dict]], optimal: float | None = None, ax: plt.Axes | None = None,
                    title: str = "", colors: dict[str, str] | None = None, random: float | None = None) -> plt.Axes:
    """Per method, the mean greedy team return over seeds (line) and its range (band) against training episodes;
    where every run of a method also recorded its sampled policy's evaluations (``sampled_evaluations``), their mean
    as a thin dotted line of the method's colour.

    Args:
        results: method name -> that method's runs, each a dict with ``evaluations`` (see ``seed_band``).
        colors: method name -> matplotlib color, to keep a method's color the same across plots.
        random: the uniformly random policy's mean team return, drawn as a grey dotted line (None: not drawn).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.6))
    drawn = []  # the runs of the methods whose sampled line is drawn (the y label then says which line is which)
    for k, (method, rows) in enumerate(results.items()):
        episodes, greedy = seed_band(rows)
        color = (colors or {}).get(method, f"C{k}")
        style = "--" if method.endswith("-ff") else "-"
        ax.plot(episodes, greedy.mean(axis=0), style, color=color, linewidth=max(2.4 - 0.5 * k, 0.9),
                label=f"{method} (mean of {len(rows)} seeds; band: min to max)")  # thinner on top: overlaps show
        ax.fill_between(episodes, greedy.min(axis=0), greedy.max(axis=0), color=color, alpha=0.12, linewidth=0)
        if all(row.get("sampled_evaluations") for row in rows):
            episodes, sampled = seed_band(rows, "sampled_evaluations")  # (evals,), (seeds, evals)
            ax.plot(episodes, sampled.mean(axis=0), ":", color=color, linewidth=1.2, label=f"{method}, sampled")
            drawn += rows
    return sampled_ylabel(greedy_axes(ax, optimal, title, optimum_style=("black", ":"), random=random), drawn)


def plot_qmix(ax: plt.Axes | None = None) -> plt.Axes:
    """QMIX for two agents, drawn: the agent network (shared) gives each agent's utility of the action it took,
    Q_0(h_0, a_0) and Q_1(h_1, a_1); the mixing network combines them into Q_tot in two layers; four hypernetworks
    read the state s and output the mixing network's weights and biases (dashed: they set the mixer's parameters,
    they are not its inputs). abs() keeps both weight tensors non-negative; every tensor is labelled with its shape.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 5.2))
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 6.0)
    ax.axis("off")

    def box(x, y, w, h, text, color, fontsize=8.5):
        ax.add_patch(plt.Rectangle((x, y), w, h, facecolor=color, edgecolor="black", linewidth=1))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)

    def arrow(x0, y0, x1, y1, text="", dashed=False, color="black"):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="->", color=color, linestyle="--" if dashed else "-", linewidth=1.2))
        if text:
            ax.text(x0 + 0.1, (y0 + y1) / 2, text, ha="left", va="center", fontsize=7.5, color=color)

    agent, mixer, hyper = "#cfe3f7", "#fde2c8", "#e2f0d9"
    # the agents, bottom left: one shared network, each agent on its own history
    for i, x in enumerate((0.3, 3.0)):
        text = f"agent network (shared)\non agent {i}'s history h_{i}\n-> Q_{i}(h_{i}, .)  (B, A)"
        box(x, 0.2, 2.3, 0.8, text, agent)
        arrow(x + 1.15, 1.0, x + 1.15, 1.8)
    ax.text(2.8, 1.4, "q_taken = [Q_0(h_0, a_0), Q_1(h_1, a_1)]  (B, N)\nthe utilities of the actions taken",
            ha="center", va="center", fontsize=7.5, bbox=dict(facecolor="white", edgecolor="none", pad=1))
    # the mixing network, middle left
    box(0.3, 1.8, 5.0, 1.0, "layer 1:  hidden = elu( q W_1 + v_1 )\n"
        "(B, 1, N) @ (B, N, E) + (B, 1, E)  ->  (B, 1, E)", mixer)
    box(0.3, 3.3, 5.0, 1.0, "layer 2:  Q_tot = hidden w_2 + v_2\n(B, 1, E) @ (B, E, 1) + (B, 1, 1)  ->  (B,)", mixer)
    arrow(2.8, 2.8, 2.8, 3.3, "hidden (B, 1, E)")
    arrow(2.8, 4.3, 2.8, 4.95, "Q_tot (B,): regressed onto the TD target y_t")
    ax.text(2.8, 5.5, "mixing network: monotonic in each Q_i (W_1, w_2 >= 0)", ha="center", fontsize=9,
            color="C1")
    # the state and the hypernetworks, right
    box(10.3, 2.55, 1.4, 0.8, "state s\n(B, S)", "#e8e8e8")
    rows = [(4.45, "hyper_w2:  |MLP(s)|\n-> w_2 (B, E, 1)", 3.95),
            (3.55, "hyper_b2:  MLP(s)\n-> v_2 (B, 1, 1)", 3.6),
            (2.45, "hyper_w1:  |MLP(s)|\n-> W_1 (B, N, E)", 2.45),
            (1.55, "hyper_b1:  Linear(s)\n-> v_1 (B, 1, E)", 2.1)]
    for y, text, target in rows:
        box(7.2, y - 0.3, 2.1, 0.7, text, hyper, fontsize=7.5)
        arrow(10.3, 2.95, 9.3, y + 0.05)
        arrow(7.2, y + 0.05, 5.3, target, dashed=True, color="C2")
    ax.text(8.25, 5.5, "hypernetworks: the mixer's weights from s", ha="center", fontsize=9, color="C2")
    ax.text(8.25, 0.6, "dashed: parameters of the mixer, not inputs to it;\nabs() on the weights only, the biases "
            "may be negative", ha="center", fontsize=7.5, color="C2")
    return ax


def plot_q_tables(tables: dict[str, np.ndarray], greedy: dict[str, tuple[int, int]] | None = None,
                  axes: Sequence[plt.Axes] | None = None, fmt: str = "{:.1f}") -> list[plt.Axes]:
    """Tables of two agents' joint actions side by side, one heat map each, every entry written in it: a payoff
    table R ``(A, A)`` or a learned Q_tot ``(A, A)``, rows agent 0's action, columns agent 1's. ``greedy``: name ->
    the joint action to outline (what the agents play); ``axes``: one per table (None: a new figure)."""
    if not tables:
        raise ValueError("tables is empty: give at least one (A, A) table")
    arrays = {name: np.asarray(table, dtype=np.float64) for name, table in tables.items()}
    for name, table in arrays.items():
        check_shape(table, ("A", "A"), f"tables[{name!r}]")
    if axes is None:
        _, axes = plt.subplots(1, len(arrays), figsize=(3.3 * len(arrays), 3.0))
        axes = np.atleast_1d(axes)
    if len(axes) != len(arrays):
        raise ValueError(f"axes: one per table, {len(arrays)}, got {len(axes)}")
    low = min(float(t.min()) for t in arrays.values())
    high = max(float(t.max()) for t in arrays.values())
    for ax, (name, table) in zip(axes, arrays.items()):
        A = table.shape[0]
        ax.imshow(table, cmap="RdYlGn", vmin=low, vmax=high if high > low else low + 1)
        for a0 in range(A):
            for a1 in range(A):
                text = fmt.format(table[a0, a1])
                text = text[1:] if text.startswith("-") and float(text) == 0 else text  # -0.0 reads as 0.0
                ax.text(a1, a0, text, ha="center", va="center", fontsize=9)
        if greedy and name in greedy:
            a0, a1 = greedy[name]
            ax.add_patch(plt.Rectangle((a1 - 0.5, a0 - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.5))
        ax.set_xticks(range(A))
        ax.set_yticks(range(A))
        ax.set_xlabel("agent 1's action $a_1$")
        ax.set_ylabel("agent 0's action $a_0$")
        ax.set_title(name, fontsize=9)
    return list(axes)
