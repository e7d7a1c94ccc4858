"""Level-Based Foraging beside the MARL textbook's published runs: IQL, VDN and QMIX (and, where the textbook has no
figure, COMA and central-V) on Foraging-8x8-2p-3f-v3 (two agents, three food items, 8x8 grid, 50-step episodes),
every agent learning the team reward (the sum of the agents' rewards: loading every food item pays 1 in all).

    .venv/bin/python benchmarks/foraging.py                          # every method, seeds 0-4, two runs at a time
    .venv/bin/python benchmarks/foraging.py --methods iql vdn qmix coma central_v --reuse  # keep the runs on disk
    .venv/bin/python benchmarks/foraging.py --methods vdn --seeds 0 --episodes 2000 --out results/tmp/foraging
    .venv/bin/python benchmarks/foraging.py --methods vdn --seeds 100 101 --set lr=5e-4 --out results/tmp/tuning
    .venv/bin/python benchmarks/foraging.py --redraw   # train nothing: the table and curves.png from the files

The 2M-env-step grid (issue 48: IQL, VDN, QMIX, MAPPO and IPPO, seeds 0-4, a budget of env steps since this task's
episodes end early), over as many sittings as it takes: the same command each sitting, in the background. IQL and
VDN learn at 2e-4 there and QMIX at its default 2e-3, chosen on this task's tuning seeds (benchmarks/TUNING.md, "The
learning rate of IQL, VDN and QMIX on Level-Based Foraging": IQL's and QMIX's the best of three on seeds 100 and 101,
IQL's confirmed on 102-104; VDN's level with 5e-4 there); MAPPO and IPPO at their defaults.

    nohup nice -n 10 .venv/bin/python benchmarks/foraging.py --methods iql vdn qmix mappo ippo --env-steps 2000000 \
        --epsilon-steps 300000 --set iql.lr=2e-4 vdn.lr=2e-4 --checkpoint-every 300 \
        --checkpoint-dir ~/.cache/marl-edu/foraging_2m --reuse --out results/foraging_2m > 2m.log 2>&1 &
    git add results/foraging_2m/*/seed*.json

(The committed grid was trained twice: first before the sampled figures played the greedy ones' episodes, then again,
over several sittings, with the pairing; every run trained again reproduced its first record's greedy figures,
evaluations and counts to the bit, and the kept policies and GIFs byte for byte: benchmarks/TUNING.md, "Greedy and
sampled on the same episodes, and the grids re-trained with it".) ``--reuse`` keeps every seed whose record of this run
is on disk (a record made before the pairing, without ``sampled_starts``, is refused: move it away, or train into a
fresh --out); ``--checkpoint-every 300`` saves each run in progress every 5 minutes to OUT/METHOD/seed<S>.run.pt (about
41 MB with a value-decomposition learner's replay; deleted when its record is written; never committed), so a run cut
off by the end of a sitting continues from its last save to the same result (Ctrl-C ends a sitting with one line and
exit status 130, every finished run's files on disk). ``--checkpoint-dir`` keeps them outside the checkout, so that a
sitting in a fresh clone on the same machine finds them (without it they are saved in OUT, gitignored, and a fresh clone
starts them again). Each run's files are written as it ends: commit its record run by run as it appears (the summary and
curves.png are written when a sitting completes the grid). Ray runs it where installed (``--runner``, the default then);
otherwise the process pool. Its own folder, not results/foraging: the 1M-step runs there are what notebook 16, the
results page and their tests read, and these differ in kind (a budget of env steps), so each folder's summary holds one
experiment. ``--epsilon-steps 300000`` keeps the 1M runs' exploration in env steps: their epsilon decayed over 30% of
20,000 episodes, which ended at 297,000-300,000 env steps (each record's evaluations give the env steps at episode
6,000), where 30% of a 2M budget would be 600,000; so a 2M run's first million steps explore on the 1M runs' schedule
and its second million is more training, not another schedule (the textbook's decay ends at 400,000: 10% of its 4M, to
0.05). MAPPO's and IPPO's entropy weight still anneals over 60% of the budget (1.2M env steps; the 1M runs' ended at
590,000-595,000). Its cost, estimated from the committed 1M-step runs' speeds as a ratio to raw lbforaging timed beside
each (machines of one kind differ by more than twice; a test holds these to results/foraging): IQL 0.09-0.13, VDN
0.09-0.13, QMIX 0.11-0.12, MAPPO 0.22-0.24, IPPO 0.15-0.18 (IQL's and VDN's 0.09 are their seed 0, trained while other
work shared the machine for part of the run; their other seeds 0.12-0.13). With raw lbforaging at 17,500 steps/s (an
idle machine) a 2M run takes about 15 minutes of one core for IQL and VDN, 16-17 for QMIX, 8-9 for MAPPO and 11-12 for
IPPO: about 5.6 core-hours for the 25 runs, 7 with a margin for the later, shorter episodes (more updates per env step),
so about 3.5-4 hours on 2 idle cores; a machine busy with other work (raw lbforaging at 4,400-6,300 steps/s) takes 3-4
times as long, up to an hour or more a run: hence the checkpoints.

Per run: every ``--eval-every`` episodes the greedy policy plays 10 episodes (the same 10 start states each time,
``train.greedy_team_return``; ``envs.foraging.ForagingEnv.reset`` says why they are the same); the env steps and seconds
of one core at which that mean first reached 0.8; and at the end the mean over 100 greedy episodes. Beside each, the
sampled policy's on the same episodes (``runs.seed.final_figures``: each sampled episode starts where its greedy twin
did; IQL, VDN and QMIX epsilon-greedy with 0.05, the others drawing from their policy), recorded as ``sampled``,
``sampled_starts``, ``sampled_gap_se`` (the standard error of sampled minus greedy, episode by episode), ``sampled_as``
and ``sampled_evaluations``. The textbook's exercises publish their runs of the same task (IDQN, VDN and QMIX, 5 seeds
each, 4M env steps, evaluated every 100k env steps epsilon-greedy with 0.05): results/foraging/textbook.json holds them
as published, with their source (tools/textbook_curves.py wrote it from a local copy), and ``TEXTBOOK`` below computes
its columns of the table from that file: the env steps at which each seed's evaluation first reached 0.8 (the range over
seeds) and the range of the last evaluations; curves.png draws their mean and range.

Our learners use their defaults (``ValueDecompositionConfig``: GRU agents, TD(lambda) targets, tuned on Switch2-v0;
COMA and central-V ``COMAConfig``'s), with any other values in ``METHODS``. Tried on seed 100 and left out:
feed-forward agents with 128 hidden units, 4 updates per collection and epsilon decayed over 10% (the textbook's
choices where ours has one) stayed at a greedy mean of 0.02-0.11 over 400k env steps, where GRU agents (2 updates per
collection, a target copy every 50) reached 0.13-0.22 in 200k. VDN with one change at a time over 1M env steps
(a learning rate, the exploration, the replay, one-step targets, feed-forward agents) is in benchmarks/TUNING.md,
"VDN on Level-Based Foraging"; ``benchmarks/foraging_food.py`` counts which food a kept policy loads.

Writes OUT/METHOD/seed<S>.json (the run's figures, its evaluations and the yardstick timed in the same invocation), the
first seed's OUT/METHOD/policy.pt and greedy.gif (``runs.grid.keeps_files``), OUT/curves.png (the runs' evaluations
beside the textbook's runs) and OUT/summary.json (the table, the lines beside the textbook and the command); prints one
line per run, the table, one SUMMARY line per method and one line per method beside the textbook (``beside_textbook``:
issue 48's bar, and the means where the runs end). With ``--reuse`` the runs already on disk are kept, each with its
own yardstick (machines of the same kind differ in speed by more than twice), so a run's speed is read as its ratio to
raw lbforaging, never in seconds against another's. With ``--redraw`` nothing is trained: the summary's table, its
lines beside the textbook and curves.png are rewritten from the records.

The runs go where compare.py's go (``--runner``: a local process pool, or Ray when it is installed; ``--address``: a
Ray cluster; ``marl_edu.runs.grid``), one torch thread each; the files come back to this process, which writes them.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import pathlib
import sys
import time

import numpy as np

from marl_edu.base.files import atomic_write, atomic_write_text
from marl_edu.envs.foraging import START_STATES
from marl_edu.learners.baselines import CentralV
from marl_edu.learners.coma import COMA
from marl_edu.learners.ppo import IPPO, MAPPO
from marl_edu.learners.table import algo_name_of_class, config_class, config_with, recorded_config
from marl_edu.learners.value_decomposition import IQL, QMIX, VDN
from marl_edu.runs.folder import lock, writable_folder
from marl_edu.runs.grid import (MAYBE_FLOAT, MAYBE_INT, add_runner_options, check_options,
                                check_runner_options, drop_runner_options, interrupted, keeps_files, open_out,
                                read_record, require_paired, run_files, run_grid, write_files)
from marl_edu.runs.seed import SOLVED_MARGIN, run_seed, save_artifacts, solve_line
from marl_edu.training.resume import load_run_state, seed_checkpoint

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENV_ID = "Foraging-8x8-2p-3f-v3"
TARGET = 0.8  # the mean greedy return the textbook's figures count "reached" at
# "reached" is run_seed's "solved" (a periodic greedy evaluation at its line, less a float sum's rounding) with the
# target as the line: an optimum SOLVED_MARGIN above it
REACHED_AS_SOLVED = TARGET + SOLVED_MARGIN
NO_RUN = {"steps_to_target": "-", "final": "-"}
# the MARL textbook's published runs on this task, as published, with their source (tools/textbook_curves.py)
TEXTBOOK_FILE = ROOT / "results" / "foraging" / "textbook.json"


def value_range(values: list, fmt) -> str:
    """``"low-high"`` of ``values`` as ``fmt`` writes them, one value if the two read the same; "-" for none."""
    if not values:
        return "-"
    low, high = fmt(min(values)), fmt(max(values))
    return low if low == high else f"{low}-{high}"


def textbook_runs(path: pathlib.Path = TEXTBOOK_FILE) -> dict[str, dict[str, list]]:
    """The textbook's runs in ``path``: ``method -> seed -> [[env steps, mean team return], ...]`` (our method names:
    its IDQN is our iql). ValueError naming the file for one that is not JSON, a method the benchmark does not have,
    or a seed's curve that is empty, not of (int, finite number) pairs, or whose env steps do not increase."""
    try:
        runs = json.loads(path.read_text())["runs"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not the textbook's runs ({error})") from None
    curves = {}
    for method, run in runs.items():
        if method not in METHODS or not isinstance(run, dict) or not isinstance(run.get("seeds"), dict):
            raise ValueError(f"{path}: {str(method)[:40]!r} is not a method of this benchmark with its seeds")
        for seed, pairs in run["seeds"].items():
            ok = isinstance(pairs, list) and len(pairs) > 0 and all(
                isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and type(pair[1]) in (int, float)
                and np.isfinite(pair[1]) for pair in pairs)
            if not ok or any(a[0] >= b[0] for a, b in zip(pairs, pairs[1:])):
                raise ValueError(f"{path}: {method} seed {seed}: needs [env steps, mean return] pairs, env steps "
                                 f"increasing, every return finite")
        curves[method] = run["seeds"]
    return curves


def first_reached(pairs: list) -> int | None:
    """The env steps of the first ``[env steps, mean return]`` pair at ``TARGET`` or above (counted as our runs'
    "reached" is, ``solve_line``), None if none is."""
    line = solve_line(REACHED_AS_SOLVED)
    return next((steps for steps, value in pairs if value >= line), None)


def textbook_figures(seeds: dict[str, list]) -> dict[str, str]:
    """The table's textbook columns from one learner's published runs (``seed -> [[env steps, mean return], ...]``):
    ``steps_to_target``, the range over seeds of the env steps at which a seed's evaluation first reached ``TARGET``
    (in millions, one decimal, ``first_reached``; "(k/n)" when only k of n seeds reached it; "never in X M" when none
    did, X the shortest run), and ``final``, the range of the seeds' last evaluations."""
    if not seeds:
        raise ValueError("textbook_figures needs at least one seed's curve, got none")
    reached = [steps for steps in map(first_reached, seeds.values()) if steps is not None]
    finals = [pairs[-1][1] for pairs in seeds.values()]
    if not reached:
        to_target = f"never in {min(pairs[-1][0] for pairs in seeds.values()) / 1e6:.1f}M"
    else:
        to_target = value_range(reached, lambda v: f"{v / 1e6:.1f}") + "M"
        if len(reached) < len(seeds):
            to_target += f" ({len(reached)}/{len(seeds)})"
    return {"steps_to_target": to_target, "final": value_range(finals, lambda v: f"{v:.2f}")}


def textbook_seeds(method: str, runs: dict | None = None) -> list[list]:
    """The textbook's per-seed curves of ``method`` in ``runs`` (``textbook_runs()``'s, read from its file when
    None). ValueError if it publishes none."""
    runs = textbook_runs() if runs is None else runs
    if method not in runs:
        raise ValueError(f"the textbook publishes no run of {method!r} on this task (only of {', '.join(runs)})")
    return list(runs[method].values())


def textbook_firsts(method: str, runs: dict | None = None) -> list[int | None]:
    """Per seed of the textbook's run of ``method`` (in the file's order), ``first_reached``."""
    return [first_reached(pairs) for pairs in textbook_seeds(method, runs)]


def textbook_mean_at(method: str, env_steps: int, runs: dict | None = None) -> float:
    """The mean over the textbook's seeds of ``method`` of each seed's evaluation at ``env_steps``, read on a
    straight line between its two evaluations around it (it evaluates every 100,000 env steps), as notebook 16 reads
    it. ValueError for a method it has no run of, or ``env_steps`` before a seed's first evaluation or after its
    last."""
    values = []
    for pairs in textbook_seeds(method, runs):
        steps, returns = np.array(pairs, dtype=np.float64).T  # (evaluations,), (evaluations,)
        if not steps[0] <= env_steps <= steps[-1]:
            raise ValueError(f"the textbook's {method}: its evaluations span {steps[0]:,.0f}-{steps[-1]:,.0f} env "
                             f"steps, not {env_steps:,}")
        values.append(np.interp(env_steps, steps, returns))
    return float(np.mean(values))


def beside_textbook(rows: list[dict]) -> list[str]:
    """One line per method of ``rows`` (a grid's records), in the tables' order: on how many seeds a periodic greedy
    mean reached ``TARGET``, and at which env steps; with a textbook run of the method, issue 48's bar, on how many
    seeds by half the env steps of the textbook's earliest first ``TARGET`` (a seed whose run ended before that
    without reaching it is not counted either way); and the final means, greedy and sampled, where the runs end (a
    budget of env steps that every run shares; otherwise where the shortest ends), beside the textbook's mean there
    (``textbook_mean_at``), which is evaluated epsilon-greedy with 0.05 like our value-based learners' sampled
    policy."""
    runs = textbook_runs()
    names = {method: run["algorithm"].upper() for method, run in json.loads(TEXTBOOK_FILE.read_text())["runs"].items()}
    lines = []
    for method in METHODS:
        mine = [row for row in rows if row["method"] == method]
        if not mine:
            continue
        reached = [row["steps_to_target"] for row in mine if row["steps_to_target"] is not None]
        line = f"{method}: reached {TARGET:g} on {len(reached)} of {len(mine)} seed{'s' if len(mine) > 1 else ''}"
        if reached:
            line += f" ({value_range(reached, lambda v: f'{v / 1e3:.0f}k')} env steps)"
        if method in runs:
            firsts = [steps for steps in textbook_firsts(method, runs) if steps is not None]
            if firsts:
                half = min(firsts) / 2
                by = sum(steps <= half for steps in reached)
                unknown = sum(row["steps_to_target"] is None and row["env_steps"] < half for row in mine)
                ended = f"{unknown} ended before it; " if unknown else ""
                line += (f", {by} of {len(mine)} by {half / 1e6:.1f}M ({ended}half the env steps of the textbook's "
                         f"earliest first {TARGET:g}; its {names[method]}'s seeds first reached it at "
                         f"{value_range(firsts, lambda v: f'{v / 1e6:.1f}')}M"
                         f"{'' if len(firsts) == len(runs[method]) else f', {len(firsts)} of {len(runs[method])}'})")
            else:
                line += f"; the textbook's {names[method]} never did"
        budgets = {row.get("budget", {}).get("env_steps") for row in mine}
        if len(budgets) == 1 and None not in budgets:  # (one budget of env steps: every run ends just past it)
            at = budgets.pop()
            where = f"at {at / 1e6:.1f}M"
        else:  # (a budget of episodes, or several: where the shortest run ends)
            at = min(row["env_steps"] for row in mine)
            where = f"at {at / 1e3:.0f}k (where the shortest run ends)"
        greedy = float(np.mean([row["final"] for row in mine]))
        sampled = float(np.mean([row["sampled"] for row in mine]))
        line += f"; {where} the final mean is {greedy:.2f} greedy and {sampled:.2f} sampled"
        if method not in runs:
            lines.append(f"{line} (no textbook run)")
            continue
        try:
            theirs = textbook_mean_at(method, at, runs)
        except ValueError:  # (our runs end before its first evaluation, or after its last)
            lines.append(f"{line} (the textbook's runs have no evaluation there)")
            continue
        lines.append(f"{line}, the textbook's {names[method]} {theirs:.2f} ({sampled - theirs:+.2f} sampled: both "
                     f"epsilon 0.05)")
    return lines


# the learners (by class, named as the tables name them), in the order the tables list them: each one's config
# values other than its defaults (none)
METHODS = {algo_name_of_class(learner): {} for learner in (IQL, VDN, QMIX, COMA, CentralV, MAPPO, IPPO)}
# per learner, the textbook's figures on this task, computed from TEXTBOOK_FILE (its exercises publish no COMA,
# central-V, MAPPO or IPPO run here)
TEXTBOOK = {method: NO_RUN for method in METHODS} | {method: textbook_figures(seeds)
                                                    for method, seeds in textbook_runs().items()}
FINAL_EPISODES = 100
# a run's record as run_one writes it (OUT/METHOD/seed<S>.json) and the summary's yardstick: what --reuse trusts
RECORD = {"method": str, "seed": int, "final": float, "sampled": float, "episodes_to_target": MAYBE_INT,
          "steps_to_target": MAYBE_INT, "seconds_to_target": MAYBE_FLOAT, "episodes": int, "env_steps": int,
          "updates": int, "wall_s": float, "steps_per_s": float, "config": dict, "evaluations": list}
SUMMARY = {"raw_steps_per_s": MAYBE_FLOAT}
CURVES = ("evaluations", "sampled_evaluations")  # a seed's file keeps its curves; the summary's rows leave them out


def method_config(method: str, pairs: list[str] = ()):
    """The learner's config for this benchmark: its defaults, then ``METHODS[method]``, then ``pairs`` (``--set``'s
    ``field=value``, read by ``table.config_with``; ValueError names a field the learner does not have or a value its
    field cannot take)."""
    return config_with(config_class(method), [f"{key}={value}" for key, value in METHODS[method].items()] + list(pairs))


def method_pairs(pairs: list[str], methods: list[str]) -> dict[str, list[str]]:
    """``--set``'s values by method: ``"METHOD.field=value"`` is that method's alone (``"iql.lr=2e-4"``), a bare
    ``"field=value"`` every method's, each method's list in the order given (a field set twice takes its last value).
    ValueError naming the setting for a method not among ``methods``, or a value its learner's config refuses."""
    chosen = {method: [] for method in methods}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:  # (before the method: "lr0.5" is no method "lr0")
            raise ValueError(f"{pair!r} is not [METHOD.]FIELD=VALUE")
        method, dot, field = name.rpartition(".")
        if dot and method.strip() not in chosen:
            raise ValueError(f"{pair}: no method {method.strip()!r} among --methods ({', '.join(methods)})")
        for target in [method.strip()] if dot else methods:
            try:
                method_config(target, [field + sep + value])  # (each setting alone: the error names it)
            except ValueError as error:
                named = not dot and repr(pair) in str(error)  # (config_with names a bare setting already)
                raise ValueError(str(error) if named else f"{pair}: {error}") from None
            chosen[target].append(field + sep + value)
    return chosen


def epsilon_pairs(method: str, epsilon_steps: int | None, env_steps: int | None) -> list[str]:
    """``--epsilon-steps``' config value for ``method``: for a learner that decays epsilon over ``epsilon_fraction``
    of its budget (IQL, VDN, QMIX), the fraction of ``env_steps`` that ends the decay after ``epsilon_steps`` env
    steps (``["epsilon_fraction=0.15"]`` for 300,000 of 2,000,000); for the others (their entropy schedules) and
    without ``epsilon_steps``, none. ValueError unless 1 <= epsilon_steps <= env_steps (a budget of env steps)."""
    if epsilon_steps is None:
        return []
    if env_steps is None or not 1 <= epsilon_steps <= env_steps:
        raise ValueError(f"--epsilon-steps must be between 1 and --env-steps ({env_steps}), got {epsilon_steps}")
    if "epsilon_fraction" not in {field.name for field in dataclasses.fields(config_class(method))}:
        return []
    return [f"epsilon_fraction={epsilon_steps / env_steps!r}"]


def budget_of(episodes: int | None, env_steps: int | None) -> dict[str, int]:
    """A run's budget as its record says it: ``{"env_steps": N}`` (the run ends with the first collection that
    reaches N env steps, ``loops.train``) or ``{"episodes": N}``."""
    return {"env_steps": env_steps} if env_steps is not None else {"episodes": episodes}


def checkpoint_path(folder: pathlib.Path, method: str, seed: int) -> pathlib.Path:
    """Where a run in progress is saved with ``--checkpoint-every``: FOLDER/METHOD/seed<S>.run.pt, FOLDER being OUT or
    ``--checkpoint-dir`` (gone once its record is written)."""
    return pathlib.Path(folder) / method / f"seed{seed}.run.pt"


def own_progress(path: pathlib.Path, header: dict) -> bool:
    """Whether the run in progress saved at ``path`` is the run whose ``checkpoint_header`` is ``header`` (a config
    saved before a field was added has it at its default, ``recorded_config``). ValueError if the file is not a run
    in progress."""
    saved = load_run_state(path)[0]
    saved = {**saved, "config": recorded_config(header["method"], saved.get("config", {}))}
    return all(saved.get(key) == value for key, value in header.items())


def leftover_is_own(path: pathlib.Path, header: dict) -> bool:
    """Whether a run in progress left beside a finished record is that run's own, to remove: not when it is another
    experiment's (two may share a --checkpoint-dir), nor a file that is no run in progress."""
    try:
        return own_progress(path, header)
    except ValueError:
        return False


def checkpoint_header(method: str, seed: int, budget: dict, eval_every: int, config: dict) -> dict:
    """What a run-in-progress file records of its run: a file whose header differs is another run's, never resumed
    (``resume.seed_checkpoint``). ``start_states`` names how the env draws its episodes' starts
    (``envs.foraging.START_STATES``): a run saved before they followed from the seed alone has none, and is another
    run."""
    return {"env": ENV_ID, "start_states": START_STATES, "method": method, "seed": seed, "budget": budget,
            "eval_every": eval_every, "config": config}


def run_one(job: tuple) -> tuple[dict, dict[str, bytes]]:
    """Train one learner for one seed on one torch thread (``runs.seed.run_seed``) and measure it: when its periodic
    greedy mean first reached ``TARGET`` (episodes, env steps, seconds since the start), and its final greedy mean
    over ``final_episodes`` episodes. ``job``: ``(method, seed, episodes, eval_every, keep_artifacts, pairs,
    final_episodes, env_steps, checkpoint)``; ``pairs``: config values on top of the benchmark's (``method_config``);
    ``env_steps``: a budget of env steps in place of ``episodes`` (then None); ``checkpoint``: None, or ``(path,
    every_seconds, resuming)``: the run in progress is saved at ``path`` at most every ``every_seconds`` (on the disk
    of the machine that trains it) and, ``resuming``, continued from the file there if there is one, to the same bits
    as a run straight through (``resume.RunCheckpoint``; its wall-clock counts the sittings' training only). Returns
    the run's row (its ``budget``, ``budget_of``) and, with ``keep_artifacts`` (the first seed), its files as bytes
    (``run_files``: the final policy and a GIF of its greedy episode from env seed 0, ``save_artifacts``)."""
    method, seed, episodes, eval_every, keep_artifacts, pairs, final_episodes, env_steps, saving = job
    config = method_config(method, pairs)
    budget = budget_of(episodes, env_steps)
    checkpoint = None
    if saving is not None:
        path, every_seconds, resuming = saving
        header = checkpoint_header(method, seed, budget, eval_every, dataclasses.asdict(config))
        checkpoint = seed_checkpoint(pathlib.Path(path), header, every_seconds, resuming)
    run, figures = run_seed(method, ENV_ID, episodes, config, seed, eval_every, optimum=REACHED_AS_SOLVED,
                            checkpoint=checkpoint, threads=1, final_episodes=final_episodes, env_steps=env_steps)
    first = next((k for k, (episode, _) in enumerate(run.evaluations) if episode == figures["episodes_to_solve"]),
                 None)
    row = {"method": method, "seed": seed, "final": round(figures["greedy"], 4),
           "sampled": round(figures["sampled"], 4), "sampled_starts": figures["sampled_starts"],
           "sampled_gap_se": round(figures["sampled_gap_se"], 4), "sampled_as": figures["sampled_as"],
           "episodes_to_target": figures["episodes_to_solve"],
           "steps_to_target": None if first is None else run.eval_env_steps[first],
           "seconds_to_target": None if first is None else round(figures["seconds_to_solve"], 1),
           "episodes": figures["episodes"], "env_steps": figures["env_steps"], "updates": figures["updates"],
           "wall_s": round(figures["wall_s"], 1), "steps_per_s": round(figures["steps_per_s"], 1),
           "config": dataclasses.asdict(config), "budget": budget,
           "evaluations": [[episode, steps, round(value, 4)]  # (episodes, env steps, greedy mean of 10 episodes)
                           for (episode, value), steps in zip(run.evaluations, run.eval_env_steps)],
           "sampled_evaluations": [[episode, steps, round(value, 4)]  # the sampled policy's mean of 10, the same times
                                   for (episode, value), steps in zip(run.sampled_evaluations, run.eval_env_steps)]}
    files = run_files(lambda folder: save_artifacts(run, ENV_ID, folder, threads=1)) if keep_artifacts else {}
    return row, files


ALL_FOOD = 1.0 - 1e-6  # a team return that loaded every food item (they pay 1 in all; less a float sum's rounding)


def diagnose(method: str, seed: int, episodes: int | None, eval_every: int, pairs: list[str],
             env_steps: int | None) -> list[str]:
    """Train one run of a value-based learner (iql, vdn, qmix) in this process exactly as ``run_one`` trains it, with
    ``keep.Diagnosis`` measuring every update (its TD loss, the agents' utilities of the actions taken, QMIX's credit
    to each agent dQ_tot/dQ_i, the gradient's norm before clipping and the weights' step; none of it draws from the
    run's generators), and return one line per evaluation window: env steps at its end, the greedy mean, epsilon at
    its end (the next collection's), the updates' means (none in a window without an update), and what the replay
    held: its episodes' mean team return and the share of them that loaded every food item (``ALL_FOOD``), then the
    same for the last 50 episodes played. The first line names the figures; the last gives the final greedy mean over
    ``FINAL_EPISODES``, which equals the run record's ``final``."""
    from keep import Diagnosis  # (benchmarks/keep.py: the Switch diagnosis, its per-update figures shared)
    from marl_edu.base.schedules import linear
    from marl_edu.training.evaluation import greedy_team_return
    from marl_edu.training.loops import train

    config = method_config(method, pairs)
    if not hasattr(config, "buffer_episodes"):
        raise ValueError(f"--diagnose measures the value-based learners' updates (iql, vdn, qmix), not {method}'s")
    with Diagnosis() as diagnosis:
        run = train(method, ENV_ID, episodes, config, seed, eval_every, False, threads=1, update=diagnosis.update,
                    env_steps=env_steps)
    returns = np.array(run.episode_returns)  # (episodes,) each training episode's team return
    budget = episodes if env_steps is None else env_steps  # what epsilon decays over a fraction of (loops.train)
    keys = [key for key in diagnosis.rows[0] if key != "time" and not key.endswith("|g|max")] if diagnosis.rows else []
    lines = [f"{'steps':>6} {'greedy':>6} {'eps':>5} " + " ".join(f"{key:>9}" for key in keys)
             + f" {'replay':>6} {'all':>5} {'last50':>6} {'all':>5}"]
    start = run.started
    for (episode, greedy), seconds, steps in zip(run.evaluations, run.eval_seconds, run.eval_env_steps):
        end = run.started + seconds
        rows = [row for row in diagnosis.rows if start < row["time"] <= end]
        start = end
        done = steps if env_steps is not None else episode  # (the next collection's epsilon, as train computes it)
        eps = linear(config.epsilon_start, config.epsilon_end, done, config.epsilon_fraction * budget)
        held, last = returns[max(0, episode - config.buffer_episodes):episode], returns[max(0, episode - 50):episode]
        figures = " ".join(f"{np.mean([row[key] for row in rows]):9.4f}" if rows else f"{'':>9}" for key in keys)
        lines.append(f"{steps / 1000:5.0f}k {greedy:6.2f} {eps:5.2f} {figures} {held.mean():6.3f} "
                     f"{(held >= ALL_FOOD).mean():5.2f} {last.mean():6.3f} {(last >= ALL_FOOD).mean():5.2f}")
    final = greedy_team_return(run.agent, ENV_ID, FINAL_EPISODES, threads=1)
    lines.append(f"final greedy mean over {FINAL_EPISODES} episodes: {final:.4f}")
    return lines


def raw_speed(steps: int = 20_000, seed: int = 0) -> float:
    """Env steps per second of lbforaging's own env (``gymnasium.make``, no wrapper, uniformly random actions, resets
    included): the yardstick each run's speed is divided by, timed in the same run of this script."""
    import gymnasium
    import lbforaging  # noqa: F401  (registers its ids)

    env = gymnasium.make(ENV_ID)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, done, truncated, _ = env.step(tuple(int(a) for a in rng.integers(0, 6, size=2)))
        if done or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def table(rows: list[dict]) -> list[str]:
    """A markdown table: per method, seeds that reached the target, the range of env steps and seconds to it over
    those seeds, the range of final means, and of the runs' speeds as a ratio to raw lbforaging timed in the same
    invocation; the textbook's figures beside."""
    lines = ["| method | reached 0.8 | env steps to 0.8 | seconds of one core to 0.8 | final mean (100 episodes) | "
             "env steps per run | speed / raw lbforaging | textbook: steps to 0.8 | textbook: final |",
             "|---|---|---|---|---|---|---|---|---|"]
    for method in METHODS:
        mine = [row for row in rows if row["method"] == method]
        if not mine:
            continue
        reached = [row for row in mine if row["steps_to_target"] is not None]  # (the env steps and seconds to it:
        # over these seeds)
        ratios = [row["steps_per_s"] / row["raw_steps_per_s"] for row in mine if row.get("raw_steps_per_s")]
        thousands = lambda v: f"{v / 1e3:.0f}k"  # noqa: E731
        lines.append(f"| {method} | {len(reached)}/{len(mine)} "
                     f"| {value_range([row['steps_to_target'] for row in reached], thousands)} "
                     f"| {value_range([row['seconds_to_target'] for row in reached], lambda v: f'{v:.0f}')} "
                     f"| {value_range([row['final'] for row in mine], lambda v: f'{v:.2f}')} "
                     f"| {value_range([row['env_steps'] for row in mine], thousands)} "
                     f"| {value_range(ratios, lambda v: f'{v:.2f}')} | {TEXTBOOK[method]['steps_to_target']} | "
                     f"{TEXTBOOK[method]['final']} |")
    return lines


MAX_ENV_STEPS = 100_000_000  # --env-steps' bound
EPISODE_STEPS = 50  # the task's episodes end after 50 steps: a budget of N episodes is at most 50 N env steps
# a learner's colour, ours and the textbook's alike (notebook 16's colours)
COLORS = {algo_name_of_class(learner): color for learner, color in [
    (IQL, "C6"), (VDN, "C8"), (QMIX, "C9"), (COMA, "C0"), (CentralV, "C1"), (MAPPO, "darkviolet"), (IPPO, "k")]}


def figure(rows: list[dict], path: pathlib.Path) -> pathlib.Path:
    """One panel per method, against env steps on one axis for every panel: our runs' greedy evaluations (mean
    over seeds, band from min to max; the sampled policy's mean dotted where records have it) and, in the same
    colour and dashed, the textbook's published runs (``TEXTBOOK_FILE``), mean and a lighter band; the target dotted
    and our budget (the largest run's: its env steps, or its episodes at most ``EPISODE_STEPS`` env steps each) a
    vertical line.
    OUT/curves.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from marl_edu.base.viz import plot_env_step_band

    textbook = textbook_runs()
    published = json.loads(TEXTBOOK_FILE.read_text())  # its source, and its names (its IDQN is our iql)
    methods = [method for method in METHODS if any(row["method"] == method for row in rows)]
    budget = max(row.get("budget", {}).get("env_steps") or row["episodes"] * EPISODE_STEPS  # millions of env steps
                 for row in rows) / 1e6
    right = max([budget, *(pairs[-1][0] / 1e6 for method in methods for pairs in textbook.get(method, {}).values())])
    columns = min(3, len(methods))
    rows_of_panels = -(-len(methods) // columns)
    fig, axes = plt.subplots(rows_of_panels, columns, figsize=(5.5 * columns, 3.6 * rows_of_panels + 0.4),
                             squeeze=False, sharey=True)
    for ax in axes.flat[len(methods):]:
        ax.set_visible(False)
    for ax, method in zip(axes.flat, methods):
        mine = sorted((row for row in rows if row["method"] == method), key=lambda row: row["seed"])
        color = COLORS[method]
        plot_env_step_band([[(steps, value) for _, steps, value in row["evaluations"]] for row in mine], ax=ax,
                           color=color, label=f"ours, greedy: mean of {len(mine)} seeds (band: min to max)",
                           band_alpha=0.25)
        sampled = [row for row in mine if row.get("sampled_evaluations")]  # (runs recorded since they are kept)
        if sampled:
            plot_env_step_band([[(steps, value) for _, steps, value in row["sampled_evaluations"]] for row in sampled],
                               ax=ax, color=color, linestyle=":", label=f"ours, sampled: mean of {len(sampled)} seeds",
                               band_alpha=0.0)
        if method in textbook:
            seeds, name = textbook[method], published["runs"][method]["algorithm"].upper()
            plot_env_step_band(list(seeds.values()), ax=ax, color=color, linestyle="--", band_alpha=0.08,
                               label=f"textbook's {name}, epsilon 0.05: mean of {len(seeds)} seeds (light band)")
            beside = f"textbook: {TEXTBOOK[method]['steps_to_target']} env steps to {TARGET}"
        else:
            beside = "no textbook run"
        ax.axhline(TARGET, color="0.3", linestyle=":", linewidth=0.8, label=f"target ({TARGET:g})")
        ax.axvline(budget, color="0.3", linestyle="-.", linewidth=0.8, label=f"our budget ({budget:g}M env steps)")
        ax.set_xlim(0, right * 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("env steps (millions)")
        ax.set_ylabel("team return")
        ax.set_title(f"{method} on {ENV_ID}\n({beside})", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper left")
    source = published["source"]
    # the runs' --eval-every: an evaluation comes at the first collection's end past each multiple of it (208, 400,
    # 608, ... with 16 copies), so their mean spacing
    periods = {round((row["evaluations"][-1][0] - row["evaluations"][0][0]) / (len(row["evaluations"]) - 1))
               for row in rows if len(row["evaluations"]) > 1}
    every = f"every {periods.pop()} episodes" if len(periods) == 1 else "periodically"
    fig.suptitle(f"Solid: our runs (greedy mean of 10 episodes {every}). Dashed: the MARL textbook's "
                 f"published runs, {source['repository'].removeprefix('https://')} at "
                 f"{source['commit'][:7]} ({TEXTBOOK_FILE.relative_to(ROOT)})", fontsize=9)
    fig.tight_layout()
    atomic_write(path, lambda file: fig.savefig(file, dpi=90, format="png"))
    plt.close(fig)
    return path


def kept_runs(out: pathlib.Path, jobs: list[tuple[str, int]], episodes: int | None, configs: dict[str, dict],
              env_steps: int | None = None) -> dict:
    """The runs ``--reuse`` keeps: ``(method, seed) -> row`` for each of ``jobs`` whose ``OUT/METHOD/seed<S>.json``
    holds this run, paired (``runs.grid.require_paired``: ValueError for this run's record made before the pairing),
    with this budget (a run overshoots it by less than one collection; with ``env_steps``, a record whose
    ``budget`` is those env steps; a record without one had a budget of episodes) and config, with the yardstick
    timed beside it
    (a run recorded without one takes its invocation's, from ``OUT/summary.json``). ValueError in one line for a file
    that is not this script's record of that run (``runs.grid.read_record``: not JSON, NaN, a field missing or of
    another type, another method's or seed's)."""
    previous = out / "summary.json"  # a kept run without its own yardstick takes its invocation's
    earlier_raw = read_record(previous, SUMMARY)["raw_steps_per_s"] if previous.exists() else None
    kept = {}
    for method, seed in jobs:
        path = out / method / f"seed{seed}.json"
        if not path.exists():
            continue
        row = read_record(path, RECORD, {"method": method, "seed": seed})  # (refused unless this script's own)
        n_envs = row["config"].get("n_envs")
        if type(n_envs) is not int:
            raise ValueError(f"--reuse: {path} is not a run's record of this benchmark: its config has no n_envs")
        budget = row.get("budget", {"episodes": row["episodes"]})  # (runs recorded before budgets were: episodes)
        if not isinstance(budget, dict):
            raise ValueError(f"--reuse: {path} is not a run's record of this benchmark: its budget is not a dict")
        if env_steps is not None:
            same = budget == {"env_steps": env_steps}
        else:
            same = "episodes" in budget and row["episodes"] >= episodes and n_envs > row["episodes"] - episodes
        # (a field added to the config since the run was recorded takes its default: table.recorded_config)
        if same and recorded_config(method, row["config"]) == recorded_config(method, configs[method]):
            require_paired(row, path)  # (this run's record, made before the pairing: refused, never trained over)
            # (written back as it was read: a record with its own yardstick keeps its bytes)
            kept[method, seed] = row if "raw_steps_per_s" in row else {"raw_steps_per_s": earlier_raw, **row}
    return kept


def redraw(out: pathlib.Path) -> tuple[dict, list[dict]]:
    """Train nothing: read OUT/summary.json and the records of the runs it lists (``read_record``: ValueError for a
    file that is not this script's), rewrite the summary's ``textbook`` with today's ``TEXTBOOK``, its ``runs``,
    ``table`` and ``beside_textbook`` from the records (a run trained again since the summary was written shows as
    it is now; the runs listed and the command unchanged) and redraw OUT/curves.png from them. Returns the summary
    and the records."""
    summary = read_record(out / "summary.json", {"runs": list, "table": list, "command": str}, what="--redraw")
    rows = [read_record(out / run["method"] / f"seed{run['seed']}.json", RECORD,
                        {"method": run["method"], "seed": run["seed"]}, what="--redraw") for run in summary["runs"]]
    runs = [{key: value for key, value in row.items() if key not in CURVES} for row in rows]  # as main writes them
    summary = {**summary, "textbook": TEXTBOOK, "table": table(runs), "beside_textbook": beside_textbook(runs),
               "runs": runs}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    figure(rows, out / "curves.png")
    return summary, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)  # (a recorded command drops options by their full names)
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=None, help="training episodes per run (default: 20000, "
                                                                    "at most 1M env steps; or --env-steps)")
    parser.add_argument("--env-steps", type=int, default=None, metavar="N",
                        help="a budget of env steps per run instead of episodes: a run ends with the first collection "
                             f"that reaches N (at most {MAX_ENV_STEPS:,})")
    parser.add_argument("--epsilon-steps", type=int, default=None, metavar="N",
                        help="with --env-steps: IQL, VDN and QMIX decay epsilon over the first N env steps "
                             "(epsilon_fraction = N / the budget; default: their epsilon_fraction of the budget)")
    parser.add_argument("--checkpoint-every", type=float, default=None, metavar="SECONDS",
                        help="save each run in progress at most every SECONDS to OUT/METHOD/seed<S>.run.pt (on the "
                             "machine that trains it; --checkpoint-dir for another folder than OUT); with --reuse a "
                             "run cut off continues from its file to the same result (default: no saves, a cut-off "
                             "run starts again)")
    parser.add_argument("--checkpoint-dir", type=str, default=None, metavar="DIR",
                        help="with --checkpoint-every: keep the runs in progress in DIR/METHOD/seed<S>.run.pt instead "
                             "of OUT's (a folder outside the checkout outlives it: a grid over sittings in fresh "
                             "clones)")
    parser.add_argument("--eval-every", type=int, default=200, help="episodes between evaluations (default: 200)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default: 2); with "
                                                             "--address, the cluster's CPUs decide")
    add_runner_options(parser)
    parser.add_argument("--out", type=str, default=ROOT / "results" / "foraging",
                        help="results folder (default: results/foraging)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep runs whose OUT/METHOD/seed<S>.json holds this budget and config (an interrupted "
                             "benchmark)")
    parser.add_argument("--set", dest="pairs", nargs="+", default=[], metavar="[METHOD.]FIELD=VALUE",
                        help="config values on top of every method's, or one method's as METHOD.FIELD=VALUE "
                             "(iql.lr=2e-4); tuning: use seeds 100+ and another --out; the committed "
                             "results/foraging holds the defaults only")
    parser.add_argument("--diagnose", action="store_true",
                        help="write nothing: train each run in this process, one after another, and print what its "
                             "updates saw and did and what its replay held, per evaluation window (``diagnose``; "
                             "iql, vdn, qmix)")
    parser.add_argument("--redraw", action="store_true",
                        help="train nothing: from the runs OUT/summary.json lists (their OUT/METHOD/seed<S>.json), "
                             "rewrite the summary's table and textbook columns and redraw OUT/curves.png")
    args = parser.parse_args(argv)
    if args.diagnose:
        if args.redraw or args.reuse:
            parser.error("--diagnose trains in this process and writes nothing: not with --redraw or --reuse")
        unmeasured = [method for method in args.methods if not hasattr(method_config(method), "buffer_episodes")]
        if unmeasured:
            parser.error(f"--diagnose measures the value-based learners' updates (iql, vdn, qmix), not those of "
                         f"{', '.join(unmeasured)}")
    if args.env_steps is not None:
        if args.episodes is not None:
            parser.error("give --episodes or --env-steps, not both")
        if not 1 <= args.env_steps <= MAX_ENV_STEPS:
            parser.error(f"--env-steps must be between 1 and {MAX_ENV_STEPS:,}, got {args.env_steps}")
    elif args.episodes is None:
        args.episodes = 20_000
    if args.epsilon_steps is not None:
        if args.env_steps is None:
            parser.error("--epsilon-steps needs a budget of env steps (--env-steps)")
        if any(pair.partition("=")[0].rpartition(".")[2].strip() == "epsilon_fraction" for pair in args.pairs):
            parser.error("give --epsilon-steps or --set epsilon_fraction=..., not both")
    if args.checkpoint_every is not None and not args.checkpoint_every > 0:
        parser.error(f"--checkpoint-every must be a positive number of seconds, got {args.checkpoint_every}")
    if args.checkpoint_dir is not None and args.checkpoint_every is None:
        parser.error("--checkpoint-dir is where --checkpoint-every saves the runs in progress: give both")
    check_options(parser, args)
    if args.redraw:
        out, held = open_out(parser, args.out)  # (a folder this script may write, one script at a time)
        try:
            try:
                summary, rows = redraw(out)
            except ValueError as error:  # no summary.json of this script's in OUT, or a record not its run's
                parser.error(str(error))
            print("\n".join(summary["table"] + summary["beside_textbook"]))
            print(f"curves: {out / 'curves.png'} ({len(rows)} runs)")
            return 0
        finally:
            if held is not None:
                held.close()
    check_runner_options(parser, args)
    tables = (ROOT / "results" / "foraging").resolve()
    if args.pairs and not args.diagnose and pathlib.Path(args.out).resolve() == tables:
        parser.error("--set trains other configs than the tables': give another --out than results/foraging")
    try:
        chosen = method_pairs(args.pairs, args.methods)
    except ValueError as error:
        parser.error(f"--set {error}")
    try:
        pairs = {method: [*chosen[method], *epsilon_pairs(method, args.epsilon_steps, args.env_steps)]
                 for method in args.methods}  # (each method's: --epsilon-steps sets only the value-based learners')
    except ValueError as error:
        parser.error(str(error))
    try:
        configs = {method: dataclasses.asdict(method_config(method, pairs[method])) for method in args.methods}
    except ValueError as error:
        parser.error(f"--set {error}")
    if args.diagnose:
        try:
            for method in args.methods:
                for seed in args.seeds:
                    print(f"{method} seed {seed}, {ENV_ID}, config: {' '.join(pairs[method]) or 'the defaults'}",
                          flush=True)
                    print("\n".join("  " + line for line in diagnose(method, seed, args.episodes, args.eval_every,
                                                                      pairs[method], args.env_steps)), flush=True)
        except KeyboardInterrupt:
            print("interrupted: --diagnose writes nothing; the run in progress is lost", file=sys.stderr)
            return 130
        return 0
    jobs = [(method, seed) for seed in args.seeds for method in args.methods]
    args.out, held = open_out(parser, args.out)  # (held until the script ends: one script per folder at a time)
    progress, held_progress = args.out, None  # where the runs in progress are saved, and that folder's lock
    if args.checkpoint_dir is not None:
        try:  # expanded and absolute (--checkpoint-dir=~/x is not expanded by the shell; a Ray worker has its own cwd)
            progress = writable_folder(pathlib.Path(args.checkpoint_dir).expanduser().resolve()
                                       if args.checkpoint_dir.strip() else "")
            held_progress = lock(progress)  # (two sittings in two clones never save over each other's runs)
        except ValueError as error:  # (its messages name --out, the option they were written for)
            if held is not None:
                held.close()
            parser.error(str(error).replace("--out", "--checkpoint-dir", 1))
    budget = budget_of(args.episodes, args.env_steps)
    header = lambda method, seed: checkpoint_header(method, seed, budget, args.eval_every,  # noqa: E731
                                                    recorded_config(method, configs[method]))
    try:
        kept = kept_runs(args.out, jobs, args.episodes, configs, args.env_steps) if args.reuse else {}
        for method, seed in jobs:  # a run in progress is continued only by --reuse, and only by its own run
            path = checkpoint_path(progress, method, seed)
            if not args.checkpoint_every or (method, seed) in kept or not path.exists():
                continue
            if not args.reuse:
                raise ValueError(f"{path} holds a run in progress: give --reuse to continue it, or delete it to "
                                 f"train that run from its start")
            if not own_progress(path, header(method, seed)):
                raise ValueError(f"--reuse: {path} holds another run in progress (another budget, config, "
                                 f"evaluation period or start-state rule): delete it to train that run from its start")
    except ValueError as error:
        for handle in (held, held_progress):
            if handle is not None:
                handle.close()
        parser.error(str(error))
    start = time.perf_counter()
    raw = raw_speed()
    print(f"raw lbforaging ({ENV_ID}, random actions, one core): {raw:,.0f} env steps per second, the yardstick")
    print(f"{'method':>6} {'seed':>4} {'to 0.8':>9} {'seconds':>7} {'final':>6} {'env steps':>9} {'wall_s':>7} "
          f"{'steps/s':>7} {'/ raw':>6}")
    rows = []
    saving = lambda method, seed: None if args.checkpoint_every is None else (  # noqa: E731
        str(checkpoint_path(progress, method, seed)), args.checkpoint_every, args.reuse)
    todo = [(method, seed, args.episodes, args.eval_every, keeps_files(args.out / method, seed, args.seeds),
             pairs[method], FINAL_EPISODES, args.env_steps, saving(method, seed))
            for method, seed in jobs if (method, seed) not in kept]
    trained = (({**row, "raw_steps_per_s": round(raw, 1)}, files)  # each as it ends: its files written at once
               for row, files in run_grid(run_one, todo, args.runner, args.jobs, args.address))
    try:
        for row, files in itertools.chain(((row, {}) for row in kept.values()), trained):  # (not a list: one run's
            # files are written as it ends, not once every run has)
            record = (json.dumps(row) + "\n").encode()
            # atomically, the record last
            write_files(args.out / row["method"], {**files, f"seed{row['seed']}.json": record})
            rows.append(row)  # (counted once its record is on disk)
            leftover = checkpoint_path(progress, row["method"], row["seed"])  # its run in progress, now done, goes;
            if leftover.exists() and leftover_is_own(leftover, header(row["method"], row["seed"])):  # not another's
                leftover.unlink()
            to_target = "-" if row["steps_to_target"] is None else f"{row['steps_to_target']}"
            seconds = "-" if row["seconds_to_target"] is None else f"{row['seconds_to_target']:.0f}"
            print(f"{row['method']:>6} {row['seed']:>4} {to_target:>9} {seconds:>7} {row['final']:6.2f} "
                  f"{row['env_steps']:>9} {row['wall_s']:7.1f} {row['steps_per_s']:7.0f} "
                  f"{row['steps_per_s'] / (row.get('raw_steps_per_s') or float('nan')):6.3f}", flush=True)
    except KeyboardInterrupt:  # (Ctrl-C between sittings: one line, every finished run's files already written)
        return interrupted(len(rows), args.out, f"the runs in progress were saved at most {args.checkpoint_every:g} s "
                           "ago and continue with --reuse" if args.checkpoint_every else
                           "the runs in progress are lost (no --checkpoint-every)")
    rows.sort(key=lambda row: jobs.index((row["method"], row["seed"])))  # the summary lists them in the jobs' order
    lines = table(rows)
    print("\n".join(lines))
    for method in args.methods:
        mine = [row for row in rows if row["method"] == method]
        reached = sum(row["steps_to_target"] is not None for row in mine)
        print(f"SUMMARY method={method} env={ENV_ID} seeds={len(mine)} reached_0.8={reached}/{len(mine)} "
              f"final_median={np.median([row['final'] for row in mine]):.2f}")
    beside = beside_textbook(rows)
    print("\n".join(beside))
    print(f"total wall-clock {time.perf_counter() - start:.0f} s with {args.jobs} jobs")
    given = sys.argv[1:] if argv is None else argv
    recorded = drop_runner_options([a for a in given if a != "--reuse"],
                                   also=("--checkpoint-every", "--checkpoint-dir"))  # (a resumed run is the same run)
    command = " ".join(["benchmarks/foraging.py", *recorded])
    summary = {"command": command, "env": ENV_ID, "target": TARGET, "textbook": TEXTBOOK, "table": lines,
               "beside_textbook": beside, "raw_steps_per_s": round(raw, 1),
               "runs": [{key: value for key, value in row.items() if key not in CURVES} for row in rows]}
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "summary.json", json.dumps(summary, indent=1) + "\n")
    print(f"curves: {figure(rows, args.out / 'curves.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
