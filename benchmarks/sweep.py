"""Hyperparameter sweeps on Switch: one config over several seeds, how fast and how surely it solves.

    .venv/bin/python benchmarks/sweep.py --algo coma --env Switch2-v0 --episodes 3000 --seeds 10 11 12 13 14 \
        --set actor_lr=3e-3 entropy_start=0.05 [--set critic_steps=2 ...] [--jobs 2]

Every ``--set`` is one config (``key=value`` pairs on top of the learner's defaults; none: the defaults). Each config
trains once per seed for ``--episodes`` episodes (the whole budget: the entropy and epsilon schedules are fractions
of it), one torch thread per run, ``--jobs`` runs at a time (on Ray when it is installed, or a local process pool:
``--runner`` and ``--address`` as for compare.py, see ``marl_edu.runs.grid``), with a greedy evaluation every
``--eval-every`` episodes. Per run it prints the first episode and wall-clock at which a greedy evaluation reached the
solved line (within 0.3 of the exact optimum: 8.0 on Switch2) and the final greedy return; per config a SUMMARY line:
the median seconds and episodes to solve (a seed that never solved counts as infinite), how many seeds solved at some
point, and how many end solved. Run alone for wall-clock figures: two jobs on two cores slow each other down a little.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from marl_edu.envs.planning import optimal_team_return
from marl_edu.learners.coma import COMA
from marl_edu.learners.table import ALGORITHMS, algo_name_of_class, config_class, config_with
from marl_edu.runs.grid import add_runner_options, check_options, check_runner_options, run_grid, where
from marl_edu.runs.seed import run_seed, solve_line, solved_threshold


def one_run(job: tuple) -> tuple[int, dict]:
    """One config (``index`` in the sweep) on one seed, on one torch thread: ``(index, run_seed's figures)``."""
    index, algo, env_id, episodes, config, seed, eval_every, target = job
    run, figures = run_seed(algo, env_id, episodes, config, seed, eval_every, optimum=target, threads=1)
    return index, figures


def median_or_never(values: list) -> str:
    finite = [v if v is not None else float("inf") for v in values]
    middle = statistics.median(finite)
    return "never" if middle == float("inf") else f"{middle:.0f}"


def main(argv=None) -> int:
    """The command line (the module's docstring); Ctrl-C ends it with one line and exit status 130 (sweep.py writes no
    file: its table is printed once every run has finished)."""
    try:
        return sweep(argv)
    except KeyboardInterrupt:
        print("interrupted: sweep.py prints its table once every run has finished, and writes no file; the runs of "
              "this sitting are lost", file=sys.stderr)
        return 130


def sweep(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = algo_name_of_class(COMA)
    parser.add_argument("--algo", default=default, choices=list(ALGORITHMS), help="a discrete learner of the table "
                        f"(marl_edu.learners.table); default: {default}")
    parser.add_argument("--env", default="Switch2-v0")
    parser.add_argument("--episodes", type=int, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[10, 11, 12, 13, 14],
                        help="default: 10-14, seeds the committed results never used")
    parser.add_argument("--eval-every", type=int, default=None, help="default: the command line's for the learner")
    parser.add_argument("--set", dest="configs", nargs="*", action="append", default=None,
                        help="one config as field=value pairs; repeat --set for more configs")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, one core each (default: 1); with "
                                                             "--address, the cluster's CPUs decide")
    add_runner_options(parser)
    args = parser.parse_args(argv)
    check_options(parser, args)
    check_runner_options(parser, args)
    try:
        configs = [(pairs, config_with(config_class(args.algo), pairs)) for pairs in (args.configs or [[]])]
    except ValueError as error:
        parser.error(f"--set {error}")
    optimum = optimal_team_return(args.env)
    print(f"{args.algo} on {args.env}, {args.episodes} episodes, seeds {args.seeds}, solved at "
          f">= {solved_threshold(optimum):.1f}; {len(configs) * len(args.seeds)} runs, {where(args)}", flush=True)
    jobs = [(index, args.algo, args.env, args.episodes, config, seed, args.eval_every, optimum)
            for index, (_, config) in enumerate(configs) for seed in args.seeds]
    results = {index: [] for index in range(len(configs))}
    for index, figures in run_grid(one_run, jobs, args.runner, args.jobs, args.address):
        results[index].append(figures)
    target = solve_line(optimum)
    for index, (pairs, _) in enumerate(configs):
        rows = sorted(results[index], key=lambda row: args.seeds.index(row["seed"]))  # in the order of --seeds
        print(f"\n{' '.join(pairs) or '(defaults)'}")
        for row in rows:
            print(f"  seed {row['seed']:>3}: solved at {row['episodes_to_solve']} episodes / "
                  f"{row['seconds_to_solve'] if row['seconds_to_solve'] is None else round(row['seconds_to_solve'], 1)}"
                  f" s, final greedy {row['greedy']:.2f}, {row['steps_per_s']:.0f} steps/s, {row['wall_s']:.1f} s")
        seconds = median_or_never([r["seconds_to_solve"] for r in rows])
        episodes = median_or_never([r["episodes_to_solve"] for r in rows])
        print(f"SUMMARY {' '.join(pairs) or '(defaults)'}: median {seconds} s / {episodes} episodes to solve, "
              f"{sum(r['episodes_to_solve'] is not None for r in rows)}/{len(rows)} solved at some point, "
              f"{sum(r['greedy'] >= target for r in rows)}/{len(rows)} end solved", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
