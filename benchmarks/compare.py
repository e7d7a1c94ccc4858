"""Does the centralised critic help, and how does value decomposition compare? The learners on the same tasks and seeds.

    .venv/bin/python benchmarks/compare.py                      # everything below, two runs at a time
    .venv/bin/python benchmarks/compare.py --envs Switch2-v0 --seeds 0 1 --jobs 1
    .venv/bin/python benchmarks/compare.py --envs Switch4-v0 --methods coma-gru maddpg-mlp --seeds 0 1

Methods (``marl_edu.learners.table.LEARNERS``), each on its family's budget:
- on-policy, 6000 episodes (batches of 16 whole episodes): coma, central_v, iac, each with the GRU actor
  over the agent's history ("gru") and with a feed-forward actor on the current observation ("ff");
- off-policy, 1500 episodes (a replay buffer; actors are feed-forward MLPs, "mlp"): maddpg, iddpg;
- value decomposition, 3000 episodes (an episode replay; GRU agent networks, "gru"): iql, vdn, qmix;
- PPO, 6000 episodes (on-policy, COMA's GRU actor, several epochs per batch): mappo, ippo.
``--episodes N`` gives every method N episodes; ``--episodes N vdn-gru=M`` gives vdn-gru M and the others N (the
harder tasks' on-policy tables ran 15,000-30,000 episodes, which value decomposition does not need).
Every run evaluates its greedy policy periodically (every 200 or 50 episodes) and at the end, where the
final greedy team return (Switch is deterministic: one episode is exact; on other tasks, such as PredatorPrey7x7-v0
whose prey move at random, the mean of 10 episodes periodically and 100 at the end) and the mean sampled return of
100 episodes are recorded (on those tasks on the greedy figure's own episodes, with the standard error of the gap
between the two, ``sampled_gap_se``). "Solved" means a greedy team return within 0.3 of the exact optimum (8.0 on
Switch2, optimum 8.3); "to solve" is the first periodic evaluation that reached it. Without an exact optimum (not Switch)
nothing is called solved, and the table gives the final sampled returns instead. Every task also gets a random line:
the mean team return of uniformly random actions.

Re-running some methods of a task keeps the other rows: delete those methods' folders (results/compare/ENV/METHOD/)
and run the command of the task's whole table (its methods, seeds and budgets: the results page's "Reproduce" line)
with --reuse, which trains only the runs missing on disk, then writes the table, its command and the figure again
from every run's file. Ctrl-C stops a comparison with one line and exit status 130: every finished run's files are on
disk, and the same command with --reuse trains only the runs missing.

Writes results/compare/ENV/METHOD/seed<S>.json per run, the first seed's policy.pt and greedy.gif, and
results/compare/ENV/summary.json (the table's rows and the command; on Switch3-v0 and Switch4-v0 also issue 48's bar
for QMIX and MAPPO, ``KEEP_BAR``, which notebook 16 and the results page read); draws media/compare_<env>.png (mean and
range over seeds against the optimum); prints one table row per method and environment (the table of results/README.md).

Where the runs go (--runner): Ray when it is installed (pip install -e ".[ray]"), else a local process pool. With
Ray and no --address, a local Ray instance with --jobs CPUs; with --address (e.g. auto, or ray://head:10001) the
same command runs on that cluster, one CPU per run, and every run's files come back to this process, which writes
them: the results are the same files whichever runner ran them (only the wall-clock figures differ). Every node of
a cluster needs the course's environment (make setup) and joins it from there (ray start --address=HEAD:6379).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

from marl_edu.base.files import atomic_write, atomic_write_text
from marl_edu.envs.make import family
from marl_edu.learners.baselines import IACV, IDDPG, CentralQV, CentralV
from marl_edu.learners.coma import COMA
from marl_edu.learners.maddpg import MADDPG
from marl_edu.learners.ppo import IPPO, MAPPO
from marl_edu.learners.table import algo_name_of_class
from marl_edu.learners.value_decomposition import IQL, QMIX, VDN
from marl_edu.runs.grid import (MAX_EPISODES, MAYBE_FLOAT, MAYBE_INT, add_runner_options, check_options,
                                check_runner_options, drop_runner_options, interrupted, open_out, read_record,
                                require_paired, run_files, run_grid, where, write_files)
# the per-seed runner, and the method names ("coma-gru", ... "iddpg-mlp") with their learners and configs
from marl_edu.runs.seed import METHODS, method_config, rounded, run_seed, save_artifacts, solve_counts, split

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "compare"


def budget_and_period(algo: str, episodes: int | None) -> tuple[int, int]:
    """A run's budget in episodes (``episodes``, or None for learner ``algo``'s table budget) and its evaluation
    period (the table's, or the whole budget when ``--episodes`` is smaller)."""
    from marl_edu.learners.table import entry

    budget = episodes or entry(algo).episodes
    return budget, min(entry(algo).eval_every, budget)


def run_one(job: tuple[str, str, int, int | None, bool]) -> tuple[dict, dict[str, bytes]]:
    """Train one method on one env with one seed (in a worker process, one torch thread): its table row, and the
    files to write under ENV/METHOD/ as bytes (``seed<S>.json``, and for the first seed the policy and its greedy
    GIF), so that the process writing them may be on another machine than the one that trained."""
    from marl_edu.runs.seed import known_optimum

    env_id, method, seed, episodes, keep_artifacts = job
    algo, config = method_config(method)
    budget, eval_every = budget_and_period(algo, episodes)
    run, figures = run_seed(algo, env_id, budget, config, seed, eval_every, known_optimum(env_id), threads=1)
    row = {"env": env_id, "method": method, **rounded(figures)}
    files = run_files(lambda folder: save_artifacts(run, env_id, folder, threads=1)) if keep_artifacts else {}
    files[f"seed{seed}.json"] = (json.dumps(row) + "\n").encode()  # written last: the mark of a finished run
    return row, files


# a run's record as run_one writes it (ENV/METHOD/seed<S>.json): what --reuse and the tables trust
RECORD = {"env": str, "method": str, "seed": int, "greedy": float, "sampled": float, "episodes": int, "env_steps": int,
          "wall_s": float, "steps_per_s": float, "updates": int, "episodes_to_solve": MAYBE_INT,
          "seconds_to_solve": MAYBE_FLOAT, "evaluations": list}


def record(out: pathlib.Path, env_id: str, method: str, seed: int, what: str = "--reuse") -> dict:
    """The record of ``method`` on ``env_id`` with ``seed`` in ``out``, checked (``runs.grid.read_record``: this
    script's fields and types, finite numbers, that very run; where episodes start at random, ``require_paired``: its
    sampled figures on its greedy ones' episodes); ValueError in one line, after ``what``, otherwise."""
    path = out / env_id / method / f"seed{seed}.json"
    row = read_record(path, RECORD, {"env": env_id, "method": method, "seed": seed}, what)
    if not family(env_id).deterministic:
        require_paired(row, path, what)
    return row


def finished(out: pathlib.Path, env_id: str, method: str, seed: int, budget: int, n_envs: int = 16) -> bool:
    """Whether ``out`` holds a finished run of this budget (runs overshoot it by less than one lock-step). ValueError
    in one line for a file there that is not this script's record of that run (``record``)."""
    if not (out / env_id / method / f"seed{seed}.json").exists():
        return False
    return budget <= record(out, env_id, method, seed)["episodes"] < budget + n_envs


def table_row(env_id: str, method: str, rows: list[dict], optimum: float | None, budget: int) -> dict:
    """Median and min final greedy return over seeds, how many solved, the medians of episodes and seconds
    to solve over the seeds that solved, and the median env steps per second. ``budget``: episodes per run
    (a run may overshoot it by less than one lock-step of its 16 env copies). Without a known optimum (``None``: not
    Switch) nothing is "solved": the solved counts are None, and the row has the median and min final sampled return
    (the stochastic policy that was trained, 100 episodes) instead."""
    greedy = np.array([r["greedy"] for r in rows])
    solved = [r for r in rows if r["episodes_to_solve"] is not None]
    # without a known optimum nothing is solved: no seed has an episode to solve
    final_solved, ever_solved, episodes_to_solve = solve_counts(rows, optimum) if optimum is not None else (None,) * 3
    seconds_to_solve = float(np.median([r["seconds_to_solve"] for r in solved])) if solved else None
    row = {"env": env_id, "method": method, "seeds": len(rows), "median_greedy": float(np.median(greedy)),
           "min_greedy": float(greedy.min()), "final_solved": final_solved,
           "ever_solved": ever_solved, "episodes_to_solve": episodes_to_solve,
           "seconds_to_solve": seconds_to_solve, "episodes": budget,
           "steps_per_s": float(np.median([r["steps_per_s"] for r in rows])), "optimal": optimum}
    if optimum is None:
        sampled = np.array([r["sampled"] for r in rows])
        row.update(median_sampled=float(np.median(sampled)), min_sampled=float(sampled.min()))
    return row


def table_header(optimum: float | None) -> str:
    """The results table's header and rule for a task with a known optimum (solved counts) or without (sampled)."""
    middle = ("median sampled | min sampled" if optimum is None else
              "solved at the end | to solve: median episodes / wall-clock (seeds that got there)")
    return (f"| env | method | median greedy | min greedy | {middle} | episodes | env steps/s |\n"
            "|---|---|---|---|---|---|---|---|")


def format_row(t: dict) -> str:
    """One row of the results table (``table_header``'s columns): a task without a known optimum has the sampled
    returns where the others have their solved counts."""
    if t["optimal"] is None:
        middle = f"{t['median_sampled']:.1f} | {t['min_sampled']:.1f}"
    else:
        to_solve = ("-" if t["episodes_to_solve"] is None
                    else f"{t['episodes_to_solve']:.0f} ep / {t['seconds_to_solve']:.0f} s")
        middle = f"{t['final_solved']}/{t['seeds']} | {to_solve} ({t['ever_solved']}/{t['seeds']})"
    return (f"| {t['env']} | {t['method']} | {t['median_greedy']:.1f} | {t['min_greedy']:.1f} | {middle} | "
            f"{t['episodes']} | {t['steps_per_s']:.0f} |")


# a learner's colour in every plot, both of its actors alike
COLORS = {COMA: "C0", CentralV: "C1", IACV: "C2", MADDPG: "C3", IDDPG: "C4", CentralQV: "C5", IQL: "C6", VDN: "C8",
          QMIX: "C9", MAPPO: "C7", IPPO: "C4"}

RANDOM_EPISODES = 1000  # the random reference line: uniformly random actions, this many episodes, seed 0
# issue 48's bar with more agents: these methods end solved on at least this many of the table's 5 seeds on these tasks
# (written into the tasks' summary.json, where notebook 16 and the results page read it)
KEEP_BAR = {"tasks": ["Switch3-v0", "Switch4-v0"],
            "methods": [f"{algo_name_of_class(learner)}-gru" for learner in (QMIX, MAPPO)], "ended_solved": 4, "of": 5}


def random_line(env_id: str) -> float:
    """The mean team return of uniformly random actions over ``RANDOM_EPISODES`` episodes (seed 0), rounded."""
    from marl_edu.envs.make import make_env
    from marl_edu.data.rollout import random_policy, team_returns

    env = make_env(env_id, seed=0)
    policy = random_policy(env.n_agents, env.n_actions, np.random.default_rng(0))
    return round(float(team_returns(env, policy, RANDOM_EPISODES, progress=False).mean()), 2)


def plot(env_id: str, results: dict[str, list[dict]], optimum: float, media: pathlib.Path,
         random: float | None = None) -> pathlib.Path:
    """The on-policy and the off-policy learners side by side (``marl_edu.base.viz.plot_comparison``), one panel per kind
    of actor that ran, against the optimum and the random policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from marl_edu.base.viz import plot_comparison

    from marl_edu.learners.table import entry

    colors = {method: COLORS[entry(split(method)[0]).learner] for method in results}  # the same in every plot

    def panel(method: str) -> str:  # the value-decomposition learners get their own panel
        algo, variant = split(method)
        return "vd" if entry(algo).loop == "episode_replay" else variant

    titles = {"gru": "on-policy, GRU actors", "ff": "on-policy, feed-forward actors", "mlp": "off-policy, MLP actors",
              "vd": "value decomposition, GRU agents"}
    titles = {key: title for key, title in titles.items() if any(panel(m) == key for m in results)}
    fig, axes = plt.subplots(1, len(titles), figsize=(14 * len(titles) / 3, 3.8), sharey=True, squeeze=False)
    for ax, (key, title) in zip(axes[0], titles.items()):
        plot_comparison({m: rows for m, rows in results.items() if panel(m) == key}, optimum, ax=ax,
                        title=f"{env_id}: {title}", colors=colors, random=random)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.26))  # below: curves stay visible
    fig.tight_layout()
    path = media / f"compare_{env_id.lower().replace('-', '_')}.png"
    atomic_write(path, lambda file: fig.savefig(file, dpi=90, bbox_inches="tight", format="png"))
    plt.close(fig)
    return path


def parse_episodes(values: list[str], methods: list[str]) -> dict[str, int]:
    """``--episodes``' values -> episodes per method of ``methods`` that has a budget given (the others keep their
    learner's own): ``["15000", "vdn-gru=3000"]`` gives vdn-gru 3000 and every other method 15000. Refuses a method
    that is not run, a count that is not an integer in [1, ``MAX_EPISODES``], and two plain counts."""
    every, given = None, {}
    for value in values:
        method, _, count = value.rpartition("=")
        if method and method not in methods:
            raise ValueError(f"--episodes {value}: {method} is not one of the --methods run ({' '.join(methods)})")
        if not count.isdigit() or not 1 <= int(count) <= MAX_EPISODES:
            raise ValueError(f"--episodes {value}: the episodes must be an integer between 1 and {MAX_EPISODES:,} "
                             f"(check_options' bound, as every script's), got {count[:20]!r}")
        if not method and every is not None:
            raise ValueError(f"--episodes: two counts for every method ({every} and {count}); give one, and "
                             "METHOD=N for the others")
        if method:
            given[method] = int(count)
        else:
            every = int(count)
    return {method: given.get(method, every) for method in methods if given.get(method, every) is not None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["Switch2-v0", "Switch2-v2"])
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default: 2); with "
                                                              "--address, the cluster's CPUs decide")
    add_runner_options(parser)
    parser.add_argument("--reuse", action="store_true",
                        help="keep runs whose seed<S>.json exists (to finish an interrupted comparison)")
    parser.add_argument("--episodes", nargs="+", default=None, metavar="N|METHOD=N",
                        help="episodes per run: N for every method, METHOD=N for one (default: the learner's own "
                             "budget, 6000 on-policy, 1500 off-policy, 3000 value decomposition)")
    parser.add_argument("--out", type=str, default=RESULTS,
                        help="results folder (default: results/compare; the figures go to media/ only then)")
    args = parser.parse_args(argv)
    try:
        episodes = parse_episodes(args.episodes or [], args.methods)
    except ValueError as error:
        parser.error(str(error))
    check_options(parser, args)
    check_runner_options(parser, args)
    from marl_edu.learners.table import entry
    from marl_edu.runs.seed import known_optimum
    from marl_edu.envs.make import resolve

    try:
        args.envs = [resolve(env_id) for env_id in args.envs]
    except ValueError as error:
        parser.error(str(error))
    optima = {env_id: known_optimum(env_id) for env_id in args.envs}  # Switch's exact optimum, else None
    # seed by seed, so that an interrupted comparison has every method on its first seeds
    jobs = [(env_id, method, seed, episodes.get(method), seed == args.seeds[0])
            for seed in args.seeds for env_id in args.envs for method in args.methods]
    budget = {method: episodes.get(method) or entry(split(method)[0]).episodes for method in args.methods}
    args.out, held = open_out(parser, args.out)  # (held until the script ends: one script per folder at a time)
    args.out = args.out.resolve()
    try:
        todo = [job for job in jobs if not (args.reuse and finished(args.out, *job[:3], budget[job[1]]))]
    except ValueError as error:
        if held is not None:
            held.close()
        parser.error(str(error))
    # --reuse only skips runs that are already on disk, and --jobs only says how many run at once: the results are
    # those of the command without them
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["benchmarks/compare.py", *drop_runner_options([a for a in given if a != "--reuse"],
                                                                      also=("--jobs",))])
    start = time.perf_counter()
    print(f"{len(todo)} runs of {len(jobs)} to do, {where(args)}", flush=True)
    written = 0
    try:
        for row, files in run_grid(run_one, todo, args.runner, args.jobs, args.address):
            write_files(args.out / row["env"] / row["method"], files)  # each atomically, seed<S>.json last
            written += 1
            print(f"  {row['env']:<11} {row['method']:<14} seed {row['seed']}: greedy {row['greedy']:5.1f}, "
                  f"solved at {row['episodes_to_solve']} episodes, {row['wall_s']:.0f} s "
                  f"({time.perf_counter() - start:.0f} s so far)", flush=True)
    except KeyboardInterrupt:  # (Ctrl-C: one line, every finished run's files already written)
        return interrupted(len(jobs) - len(todo) + written, args.out)
    for env_id in args.envs:
        results = {method: [record(args.out, env_id, method, seed, "the table") for seed in args.seeds]
                   for method in args.methods}
        table = [table_row(env_id, method, rows, optima[env_id], budget[method]) for method, rows in results.items()]
        print("\n" + table_header(optima[env_id]))
        print("\n".join(format_row(t) for t in table))
        random = random_line(env_id)
        optimum = "not known" if optima[env_id] is None else f"{optima[env_id]:.1f}"
        print(f"reference lines on {env_id}: exact optimum {optimum}, uniformly random actions {random:.2f} "
              f"(mean of {RANDOM_EPISODES} episodes)")
        judged = env_id in KEEP_BAR["tasks"] and set(KEEP_BAR["methods"]) <= set(args.methods)  # (the bar's rows run)
        bar = {"bar": KEEP_BAR} if judged else {}
        atomic_write_text(args.out / env_id / "summary.json", json.dumps(
            {"command": command, "seeds": args.seeds, "random": random, "table": table, **bar}, indent=1) + "\n")
        plot(env_id, results, optima[env_id], ROOT / "media" if args.out == RESULTS else args.out, random)
    return 0


if __name__ == "__main__":
    sys.exit(main())
