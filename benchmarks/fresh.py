"""Do the taught defaults solve Switch2 fast, and stay solved? Issue 48's two figures over 20 fresh seeds.

    .venv/bin/python benchmarks/fresh.py                                   # every taught default, seeds 1000-1019
    .venv/bin/python benchmarks/fresh.py --methods coma-gru mappo-gru --reuse   # some of them, keeping finished seeds

The taught defaults, each with its learner table's budget, evaluation period and default config, as the command line
trains them (``benchmarks/compare.py``'s ``run_one``, through ``runs.grid``): COMA, MAPPO, IPPO, VDN and QMIX on
Switch2-v0, MADDPG on Switch2-v2 (the clock its feed-forward actors need). The one-change baselines (IQL, IAC-V, IDDPG,
central-V and central-QV) are not among them. The seeds are 1000-1019, fresh: no tuning sweep (seeds 10-14 and 100 and
up, benchmarks/TUNING.md) and no table (0-4; speed.py's 20-24) used them.

Per seed it records compare.py's record (final greedy and sampled returns, when a greedy evaluation first reached
8.0, its wall-clock, every evaluation) and beside it the **yardstick**: the seconds raw ma-gym takes for 200,000
random steps of Switch2-v0 (``speed.raw_ma_gym_speed``, as ``benchmarks/keep.py`` times it), timed in the same worker
just before the run and just after it (``yardstick_s``), and the machine's one-minute load average then (``load``).
The machine may be shared: a run's wall-clock is read in its own yardsticks (their mean), so runs under different
loads compare. Per learner (``table_row``):

- **to the first solve**: the median over seeds of the wall-clock to the first greedy evaluation at 8.0 (within 0.3
  of the optimum 8.3), in yardsticks; a seed that never got there counts as never (so the median is "never" when
  half the seeds or more never did). Issue 48's bar: 8 yardsticks. Beside it the median of the same evaluation's
  episode, which no load moves.
- **ended solved**: the seeds whose final policy's greedy return is 8.0 or more (Switch is deterministic: one
  episode is the policy's exact return). Issue 48's bar: 19 of 20.
- **late**: the mean over seeds of the share of greedy evaluations in the last third of the budget that were
  solved (``benchmarks/keep.py``'s), a steadier measure of keeping than the final evaluation alone.

Writes results/fresh/ENV/METHOD/seed<S>.json per run (the record last, the mark of a finished run; ``--reuse`` keeps
finished seeds, so a sitting cut off loses only the runs in progress; Ctrl-C ends one with a line saying so and exit
status 130), the first seed's policy.pt and greedy.gif,
and results/fresh/ENV/summary.json: the command, the seeds and one row per learner whose seeds have all finished.

**Timed again on a quiet machine** (``--retime``): the episodes a run took are exact wherever it ran, its seconds are
not. ``--retime`` trains nothing new: it trains each finished seed that solved again, the same seed and config, only
up to its first solve (``loops.train``'s ``stop_at``; on the same machine and packages training is deterministic, so
it replays the record's evaluations up to that solve, which is checked), with the yardstick and the load average
timed beside it as for a whole run, and writes ENV/METHOD/seed<S>.retime.json (a run trained again later drops it).
Once every seed of a learner that solved has one, its row's speed figures (the yardsticks to the first solve, the
yardstick and load columns, ``quiet``) come from the re-timings, ``timing`` says so, and the record of the whole run
is left as it was. A re-timing costs about 0.3-0.6 of a whole run (the median first solve over the budget); with
``--reuse`` the seeds re-timed before are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import numpy as np

import compare
from marl_edu.base.files import atomic_write_text
from marl_edu.learners.coma import COMA
from marl_edu.learners.maddpg import MADDPG
from marl_edu.learners.ppo import IPPO, MAPPO
from marl_edu.learners.table import algo_name_of_class, entry
from marl_edu.learners.value_decomposition import QMIX, VDN
from marl_edu.runs.grid import (add_runner_options, check_options, check_runner_options, interrupted, keeps_files,
                                open_out, read_record, run_grid, where, write_files)
from marl_edu.runs.seed import (known_optimum, late_solved, median_or_never, method_config, solve_line,
                                solved_threshold, split)
from marl_edu.training.loops import train
from speed import YARDSTICK_STEPS, yardstick_seconds

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "fresh"
SEEDS = list(range(1000, 1020))  # fresh: no tuning and no table used them
# the taught defaults, and the task each is measured on (issue 48: MADDPG on Switch2-v2)
TAUGHT = {f"{algo_name_of_class(learner)}-{variant}": env_id for learner, variant, env_id in (
    (COMA, "gru", "Switch2-v0"), (MAPPO, "gru", "Switch2-v0"), (IPPO, "gru", "Switch2-v0"),
    (VDN, "gru", "Switch2-v0"), (QMIX, "gru", "Switch2-v0"), (MADDPG, "mlp", "Switch2-v2"))}
SPEED_BAR, END_BAR = 8.0, 19  # issue 48's bars: median yardsticks to the first solve, seeds of 20 ended solved
# when the yardsticks can be held to the speed bar: a machine running the grid's two jobs and little else (load
# average at most this, all the while) and the median over the runs of the ratio between each run's two yardsticks,
# before and after it, at most 1.2. On a busy machine the yardstick slows less than training does (measured: 1.85
# times less, median over COMA's and MAPPO's fresh runs at load 5-15), so the yardsticks there overstate the time; the
# episodes stay exact. The median over the runs, not every run: on this machine idle the yardstick alone moved by up
# to 1.6 times between before and after one run (COMA's and MAPPO's re-timings one at a time, load 1.0, 2026-11-29:
# 16 of 36 runs beyond 20%), while their medians, 9.6 and 10.1 yardsticks, were within about 2% of the same
# re-timings two at a time (9.8, 10.2).
QUIET_LOAD, YARDSTICKS_AGREE = 2.5, 1.2


def run_one(job: tuple[str, str, int, int | None, bool, int]) -> tuple[dict, dict[str, bytes]]:
    """One seed of one method (``compare.run_one``: its record, and for the first seed its policy and GIF, as bytes)
    with the yardstick timed just before and just after it in the same process and the load average at both times.
    ``job``: ``(env_id, method, seed, episodes or None for the table's budget, keep_artifacts, yardstick_steps)``."""
    env_id, method, seed, episodes, keep_artifacts, steps = job
    load_before, before = os.getloadavg()[0], yardstick_seconds(steps)
    row, files = compare.run_one((env_id, method, seed, episodes, keep_artifacts))
    after, load_after = yardstick_seconds(steps), os.getloadavg()[0]
    row = {**row, "yardstick_s": [round(before, 3), round(after, 3)], "load": [round(load_before, 2),
                                                                                round(load_after, 2)]}
    files[f"seed{seed}.json"] = (json.dumps(row) + "\n").encode()  # (the same key: still written last)
    return row, files


# a run's record (ENV/METHOD/seed<S>.json): compare.py's and the yardsticks and loads beside it
RECORD = {**compare.RECORD, "yardstick_s": list, "load": list}
# a run timed again up to its first solve (ENV/METHOD/seed<S>.retime.json, --retime)
RETIME = {"env": str, "method": str, "seed": int, "episodes_to_solve": int, "seconds_to_solve": float,
          "yardstick_s": list, "load": list, "evaluations": list}


def retime_one(job: tuple[str, str, int, int | None, int, list]) -> tuple[dict, dict[str, bytes]]:
    """One finished seed trained again up to its first solve, timed as ``run_one`` times a whole run: its re-timing
    and the file to write under ENV/METHOD/. ``job``: ``(env_id, method, seed, episodes or None for the table's
    budget, yardstick_steps, the record's evaluations [[episode, greedy], ...], which solve at some point)``. The
    budget is the whole run's (the schedules stretch with it); ValueError if its evaluations up to the first solve
    are not the record's (not the same run)."""
    env_id, method, seed, episodes, steps, recorded = job
    algo, config = method_config(method)
    budget, eval_every = compare.budget_and_period(algo, episodes)  # (the whole run's)
    load_before, before = os.getloadavg()[0], yardstick_seconds(steps)
    run = train(algo, env_id, budget, config, seed, eval_every, progress=False,
                stop_at=solved_threshold(known_optimum(env_id)), threads=1)  # (train allows float32's 1e-6 itself)
    after, load_after = yardstick_seconds(steps), os.getloadavg()[0]
    evaluations = [[episode, round(value, 2)] for episode, value in run.evaluations]  # as the record holds them
    if evaluations != recorded[:len(evaluations)] or len(evaluations) != first_solve_index(recorded, env_id) + 1:
        raise ValueError(f"--retime: {method} seed {seed} on {env_id} was recorded first solving at episode "
                         f"{recorded[first_solve_index(recorded, env_id)][0]}, and its greedy evaluations now run "
                         f"{str(evaluations)[:60]}...: not the same run (another version of the code or its packages, "
                         f"or another machine?)")
    row = {"env": env_id, "method": method, "seed": seed, "episodes_to_solve": evaluations[-1][0],
           "seconds_to_solve": round(run.eval_seconds[-1], 1), "yardstick_s": [round(before, 3), round(after, 3)],
           "load": [round(load_before, 2), round(load_after, 2)], "evaluations": evaluations}
    return row, {f"seed{seed}.retime.json": (json.dumps(row) + "\n").encode()}


def record(out: pathlib.Path, env_id: str, method: str, seed: int, what: str = "--reuse") -> dict:
    """The checked record of ``method`` on ``env_id`` with ``seed`` in ``out`` (``runs.grid.read_record``), with its
    re-timing under ``"retimed"`` when ``--retime`` wrote one (seed<S>.retime.json: the same run's evaluations up to its
    first solve); ValueError in one line otherwise, also for yardsticks that are not two positive numbers."""
    path = out / env_id / method / f"seed{seed}.json"
    row = read_record(path, RECORD, {"env": env_id, "method": method, "seed": seed}, what)
    check_yardsticks(row, path, what)
    again = path.with_name(f"seed{seed}.retime.json")
    if again.exists():  # (--retime's: this run timed again up to its first solve)
        expected = {"env": env_id, "method": method, "seed": seed, "episodes_to_solve": row["episodes_to_solve"]}
        retimed = check_yardsticks(read_record(again, RETIME, expected, what), again, what)
        same = retimed["evaluations"] == row["evaluations"][:len(retimed["evaluations"])]
        if not same or retimed["seconds_to_solve"] < 0:
            raise ValueError(f"{what}: {again} is not a re-timing of {path.name}'s run (its evaluations differ, or "
                             f"its seconds are negative): delete it, or run --retime again")
        row = {**row, "retimed": retimed}
    return row


def check_yardsticks(row: dict, path: pathlib.Path, what: str) -> dict:
    """``row`` (a record or a re-timing), or ValueError in one line if its yardstick_s are not two positive numbers of
    seconds."""
    if len(row["yardstick_s"]) != 2 or not all(isinstance(value, (int, float)) and value > 0
                                               for value in row["yardstick_s"]):
        raise ValueError(f"{what}: {path}: its yardstick_s must be two positive numbers of seconds, got "
                         f"{str(row['yardstick_s'])[:40]}")
    return row


def finished(out: pathlib.Path, env_id: str, method: str, seed: int, budget: int) -> bool:
    """Whether ``out`` holds this seed's finished run of ``budget`` episodes (a run overshoots by less than one
    lock-step of its ``n_envs`` copies)."""
    if not (out / env_id / method / f"seed{seed}.json").exists():
        return False
    copies = method_config(method)[1].n_envs
    return budget <= record(out, env_id, method, seed)["episodes"] < budget + copies


def yardsticks(row: dict) -> float | None:
    """A run's wall-clock to its first solve in its own yardsticks (their mean, before and after the run), None if
    it never solved; ``row``: a record or a re-timing."""
    if row["seconds_to_solve"] is None:
        return None
    return row["seconds_to_solve"] / float(np.mean(row["yardstick_s"]))


def first_solve_index(evaluations: list, env_id: str) -> int | None:
    """The index in ``evaluations`` (``[[episode, greedy], ...]``) of the first solved one on ``env_id``, None if none
    is."""
    line = solve_line(known_optimum(env_id))
    return next((k for k, (_, value) in enumerate(evaluations) if value >= line), None)


def late_share(row: dict, budget: int, optimum: float) -> float:
    """The share of the run's greedy evaluations late in its ``budget`` (``late_solved``) that were solved."""
    try:
        return float(np.mean(late_solved(row["evaluations"], budget, solve_line(optimum))))
    except ValueError as error:
        raise ValueError(f"seed {row['seed']}: {error}") from None


def first_solve_times(rows: list[dict]) -> tuple[bool, list[float | None]]:
    """Whether the speed of these seeds' records reads their re-timings (once every seed that solved has one, a
    row's ``"retimed"``), and each seed's yardsticks to its first solve read that way (None: never solved)."""
    retimed = all("retimed" in row for row in rows if row["episodes_to_solve"] is not None) and any(
        row["episodes_to_solve"] is not None for row in rows)
    return retimed, [yardsticks(row["retimed"] if retimed and "retimed" in row else row) for row in rows]


def table_row(env_id: str, method: str, rows: list[dict], optimum: float, budget: int) -> dict:
    """One learner over its seeds (``rows``: their records, ``seeds_run`` their seeds): the median yardsticks to the
    first solve (a seed that never solved counts as never: None when the median is never), how many seeds solved at
    some point and at the end, the mean late share, the seeds that did not end solved (their final greedy and sampled
    returns, their best greedy evaluation, their first and last solved evaluations in episodes), the yardsticks' and
    loads' medians and ranges, whether the machine was quiet enough to hold the yardsticks to the speed bar
    (``QUIET_LOAD``, ``YARDSTICKS_AGREE``) and where the learner stands against the bars (``verdict``). The speed
    figures are the whole runs' (``timing`` "as trained"), or, once every seed that solved has a re-timing (a row's
    ``"retimed"``, ``--retime``), the re-timings' ("retimed"): their seconds to the first solve, yardsticks and
    loads."""
    solved = [row for row in rows if row["episodes_to_solve"] is not None]
    retimed, times = first_solve_times(rows)  # (times: None for never)
    timings = [row["retimed"] for row in solved] if retimed else rows  # what the speed figures read
    median = median_or_never(times)
    episodes = median_or_never([row["episodes_to_solve"] for row in rows])  # (exact: what the load cannot move)
    line = solve_line(optimum)
    missed = [{"seed": row["seed"], "final": row["greedy"], "sampled": row["sampled"],
               "best": max(value for _, value in row["evaluations"]), "first_solve": row["episodes_to_solve"],
               "last_solve": max((episode for episode, value in row["evaluations"] if value >= line), default=None)}
              for row in rows if row["greedy"] < line]
    sticks = [value for row in timings for value in row["yardstick_s"]]
    loads = [value for row in timings for value in row["load"]]
    t = {"env": env_id, "method": method, "seeds": len(rows), "seeds_run": [row["seed"] for row in rows],
            "episodes": budget, "optimal": optimum,
            "median_yardsticks_to_solve": None if median is None else round(median, 2),
            "median_episodes_to_solve": episodes,
            "solved_ever": sum(t is not None for t in times), "solved_at_end": len(rows) - len(missed),
            "late": round(float(np.mean([late_share(row, budget, optimum) for row in rows])), 3),
            "not_solved_at_end": missed,
            "yardstick_s": [round(statistics.median(sticks), 2), min(sticks), max(sticks)],
            "load": [round(statistics.median(loads), 2), min(loads), max(loads)],
            "timing": "retimed" if retimed else "as trained",
            "quiet": max(loads) <= QUIET_LOAD and statistics.median(
                max(row["yardstick_s"]) / min(row["yardstick_s"]) for row in timings) <= YARDSTICKS_AGREE}
    return {**t, "verdict": verdict(t)}


def table_header() -> str:
    """The table's header and rule (``format_row``'s columns)."""
    return ("| env | method | median yardsticks to the first solve (bar 8) | median episodes to it | ended solved "
            "(bar 19/20) | solved at some point | late | not solved at the end: seed (final greedy) | yardstick s: "
            "median (range) | load average: median (range) |\n|---|---|---|---|---|---|---|---|---|---|")


def format_row(t: dict) -> str:
    """One row of the table (``table_header``'s columns)."""
    median = "never" if t["median_yardsticks_to_solve"] is None else f"{t['median_yardsticks_to_solve']:.1f}"
    episodes = "never" if t["median_episodes_to_solve"] is None else f"{t['median_episodes_to_solve']:.0f}"
    missed = ", ".join(f"{m['seed']} ({m['final']:.1f})" for m in t["not_solved_at_end"]) or "none"
    stick, load = t["yardstick_s"], t["load"]
    return (f"| {t['env']} | {t['method']} | {median} | {episodes} | {t['solved_at_end']}/{t['seeds']} | "
            f"{t['solved_ever']}/{t['seeds']} | {t['late']:.2f} | {missed} | {stick[0]:.2f} ({stick[1]:.2f}-"
            f"{stick[2]:.2f}) | {load[0]:.1f} ({load[1]:.1f}-{load[2]:.1f}) |")


def verdict(t: dict) -> str:
    """Where a learner stands against issue 48's two bars, and by how much it misses one: no verdict on speed when the
    machine was not quiet (``t["quiet"]``: a busy machine, or a low load under which the yardstick still moved), none
    on ending solved before all 20 seeds have finished (a miss that is already certain, more than one seed not
    solved, is one)."""
    median = t["median_yardsticks_to_solve"]
    if median is None:
        speed = f"never solved on half the seeds or more: misses the bar of {SPEED_BAR:.0f} yardsticks"
    elif not t["quiet"] and t["load"][2] > QUIET_LOAD:
        speed = (f"{median:.1f} yardsticks, timed at a load average up to {t['load'][2]:.1f}: no verdict on the bar "
                 f"of {SPEED_BAR:.0f} (a busy machine's yardstick slows less than training; re-time on a quiet one)")
    elif not t["quiet"]:  # (a low load, and yet the yardstick moved under most runs)
        speed = (f"{median:.1f} yardsticks: no verdict on the bar of {SPEED_BAR:.0f} (each run's yardsticks, before "
                 f"and after it, differ by more than {YARDSTICKS_AGREE - 1:.0%} in the median run: re-time it)")
    else:
        speed = f"{median:.1f} yardsticks" + (" (timed again to the first solve)" if t["timing"] == "retimed" else "")
        speed += ": " + (f"within the bar of {SPEED_BAR:.0f}" if median <= SPEED_BAR else
                         f"misses the bar of {SPEED_BAR:.0f} by {median - SPEED_BAR:.1f}")
    missed = t["seeds"] - t["solved_at_end"]
    end = f"ended solved {t['solved_at_end']}/{t['seeds']}: "
    if missed > 20 - END_BAR:
        end += f"misses the bar of {END_BAR} of 20 by {plural(missed - (20 - END_BAR), 'seed')}"
    elif t["seeds"] < 20:
        end += f"no verdict yet on the bar of {END_BAR} of 20 ({t['seeds']} of 20 seeds finished)"
    else:
        end += f"meets the bar of {END_BAR} of 20"
    return f"{t['method']} on {t['env']}: {speed}; {end}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def command(methods: list[str], seeds: list[int], episodes: int | None) -> str:
    """The command that trains exactly these runs (the runner and --reuse left out: they do not change them)."""
    text = f"benchmarks/fresh.py --methods {' '.join(methods)} --seeds {' '.join(map(str, seeds))} --jobs 2"
    return text + (f" --episodes {episodes}" if episodes is not None else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=list(TAUGHT), choices=list(TAUGHT))
    parser.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default: 2)")
    add_runner_options(parser)
    parser.add_argument("--reuse", action="store_true", help="keep the seeds whose seed<S>.json is finished")
    parser.add_argument("--episodes", type=int, default=None,
                        help="episodes per run for every method (default: each learner's table budget)")
    parser.add_argument("--out", type=str, default=RESULTS, help="results folder (default: results/fresh)")
    parser.add_argument("--table-only", action="store_true",
                        help="train nothing: write the summaries from the seeds finished in --out")
    parser.add_argument("--retime", action="store_true",
                        help="train nothing new: time each finished seed that solved again, up to its first solve "
                             "(with --reuse: keep the seeds re-timed before), then write the summaries")
    args = parser.parse_args(argv)
    check_options(parser, args)
    check_runner_options(parser, args)
    if args.retime and args.table_only:
        parser.error("--retime and --table-only: choose one (--table-only trains nothing, --retime trains again)")
    budget = {method: args.episodes or entry(split(method)[0]).episodes for method in args.methods}
    args.out, held = open_out(parser, args.out)  # (held until the script ends: one script per folder at a time)
    jobs = [(TAUGHT[method], method, seed, args.episodes, keeps_files(args.out / TAUGHT[method] / method, seed,
                                                                      args.seeds), YARDSTICK_STEPS)
            for seed in args.seeds for method in args.methods]  # seed by seed: a cut-off sitting has every method
    try:
        if args.retime:  # the finished seeds that solved (and with --reuse, not re-timed yet), timed again
            finished_jobs = [job for job in jobs if finished(args.out, *job[:3], budget[job[1]])]
            records = [record(args.out, *job[:3], "--retime") for job in finished_jobs]
            todo = [(env_id, method, seed, args.episodes, YARDSTICK_STEPS, row["evaluations"])
                    for (env_id, method, seed, *_), row in zip(finished_jobs, records)
                    if row["episodes_to_solve"] is not None and not (args.reuse and "retimed" in row)]
        else:
            todo = [job for job in jobs if not ((args.reuse or args.table_only)
                                                and finished(args.out, *job[:3], budget[job[1]]))]
            todo = [] if args.table_only else todo
    except ValueError as error:
        if held is not None:
            held.close()
        parser.error(str(error))
    start = time.perf_counter()
    print(f"{len(todo)} {'re-timings' if args.retime else 'runs'} of {len(jobs)} seeds to do, {where(args)}; load "
          f"average now {os.getloadavg()[0]:.1f}", flush=True)
    written = 0
    try:
        for row, files in run_grid(retime_one if args.retime else run_one, todo, args.runner, args.jobs,
                                   args.address):
            if not args.retime:  # a run trained again: a re-timing of the run it replaces is not its own
                (args.out / row["env"] / row["method"] / f"seed{row['seed']}.retime.json").unlink(missing_ok=True)
            write_files(args.out / row["env"] / row["method"], files)  # each atomically, the record last
            written += 1
            print(f"  {row['method']:<10} seed {row['seed']}: "
                  + ("" if args.retime else f"greedy {row['greedy']:5.1f}, ") + "first solve "
                  f"{'-' if yardsticks(row) is None else f'{yardsticks(row):.1f}'} yardsticks (episode "
                  f"{row['episodes_to_solve']}), yardstick {np.mean(row['yardstick_s']):.2f} s, load "
                  f"{row['load'][0]:.1f}; {time.perf_counter() - start:.0f} s so far", flush=True)
    except KeyboardInterrupt:  # (Ctrl-C: one line, every finished run's files already written)
        if args.retime:
            return interrupted(written, args.out, "the re-timings in progress are lost; the same command with "
                               "--reuse times only the seeds not re-timed yet", what="re-timing")
        return interrupted(len(jobs) - len(todo) + written, args.out)
    # the summaries: every taught method of each env over its seeds finished, run now or before (all of --seeds once
    # they have all finished; a cut-off sitting's table says how many)
    for env_id in dict.fromkeys(TAUGHT[method] for method in args.methods):
        optimum, table = known_optimum(env_id), []
        for m in (m for m in TAUGHT if TAUGHT[m] == env_id):
            runs = args.episodes or entry(split(m)[0]).episodes
            done = [seed for seed in args.seeds if finished(args.out, env_id, m, seed, runs)]
            if done:
                table.append(table_row(env_id, m, [record(args.out, env_id, m, seed, "the table") for seed in done],
                                       optimum, runs))
        if not table:  # (no seed of this task has finished yet)
            continue
        methods = [t["method"] for t in table]
        print("\n" + table_header())
        print("\n".join(format_row(t) for t in table))
        print("\n".join(t["verdict"] for t in table))
        atomic_write_text(args.out / env_id / "summary.json", json.dumps(
            {"command": command(methods, args.seeds, args.episodes), "seeds": args.seeds,
             "yardstick_steps": YARDSTICK_STEPS, "taught": [m for m in TAUGHT if TAUGHT[m] == env_id],
             "bars": {"yardsticks_to_solve": SPEED_BAR, "ended_solved_of_20": END_BAR}, "table": table},
            indent=1) + "\n")
    if held is not None:
        held.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
