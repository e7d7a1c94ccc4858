"""The learning targets on Switch2: one run per seed, greedy and sampled evaluation, a SUMMARY line.

    .venv/bin/python benchmarks/learning.py --algo maddpg --env Switch2-v2 --seeds 0 1 2 3 4 [--episodes 1500]
        [--actor-gradient expected|gumbel] [--out results/maddpg/Switch2-v2]
    .venv/bin/python benchmarks/learning.py --algo coma --env Switch2-v0 --seeds 0 1 2 3 4 [--episodes 6000]
        [--feed-forward] [--per-agent-reward] [--out results/coma/Switch2-v0]

Each run trains for --episodes episodes (one core per run) and then evaluates its final policy: greedy
(every agent takes its argmax action; Switch is deterministic, so one episode is that policy's exact
return) and sampled (actions drawn from the actors, mean over 100 episodes). A seed is solved when its
greedy team return is at least 8.0. With --out, the results the notebooks load are written there:
summary.json (every seed's row and greedy evaluations during training), run.json (the per-episode
returns of the first seed, the notebook's reference curve) and policy.pt (that seed's final actors).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys

import numpy as np

from marl_edu.base.files import atomic_write_text
from marl_edu.envs.planning import optimal_team_return
from marl_edu.learners.coma import COMA, COMAConfig
from marl_edu.learners.maddpg import MADDPG, MADDPGConfig
from marl_edu.learners.table import algo_name_of_class, entry
from marl_edu.runs.grid import check_options, open_out
from marl_edu.runs.seed import run_seed
from marl_edu.training.checkpoints import save_policy

SOLVED = 8.0


def _rounded(run) -> dict:
    """Per-episode returns and greedy evaluations, rounded to 0.01 (every Switch reward is a multiple of 0.1), and
    the sampled evaluations at the same episodes (means over episodes) to 0.001."""
    return {"episode_returns": [round(r, 2) for r in run.episode_returns],
            "evaluations": [(episode, round(greedy, 2)) for episode, greedy in run.evaluations],
            "sampled_evaluations": [(episode, round(sampled, 3)) for episode, sampled in run.sampled_evaluations]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    algos = [algo_name_of_class(MADDPG), algo_name_of_class(COMA)]  # the two learners of the learning targets
    parser.add_argument("--algo", choices=algos, default=algos[0])
    parser.add_argument("--env", default="Switch2-v2")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=None, help="default: the command line's, 1500 (maddpg), 6000 (coma)")
    parser.add_argument("--actor-gradient", choices=["expected", "gumbel"], default="expected",
                        help="MADDPGConfig.actor_gradient: exact expectation over own actions, or Gumbel-softmax")
    parser.add_argument("--feed-forward", action="store_true", help="COMA with feed-forward instead of GRU actors")
    parser.add_argument("--per-agent-reward", action="store_true",
                        help="COMA whose critic row a learns agent a's own reward instead of the team reward")
    parser.add_argument("--out", type=str, default=None,
                        help="write summary.json, run.json and policy.pt (first seed) to this folder")
    args = parser.parse_args(argv)
    if args.episodes is None:
        args.episodes = entry(args.algo).episodes
    check_options(parser, args)
    args.out, held = open_out(parser, args.out) if args.out is not None else (None, None)  # (held to the end)
    optimum = optimal_team_return(args.env)
    off_policy = entry(args.algo).config is MADDPGConfig
    if off_policy:
        config = MADDPGConfig(actor_gradient=args.actor_gradient)
    else:
        config = COMAConfig(recurrent=not args.feed_forward, team_reward=not args.per_agent_reward)
    print(f"{'seed':>4} {'greedy':>7} {'sampled':>8} {'episodes':>8} {'env_steps':>9} {'wall_s':>7} {'steps/s':>8}")
    rows = []
    try:
        return _train_seeds(args, config, off_policy, optimum, rows, argv)
    except KeyboardInterrupt:  # (one line, no traceback)
        done = f"{len(rows)} of {len(args.seeds)} seeds" + (" (their rows are printed above)" if rows else "")
        kept = ""
        if args.out is not None and rows:  # (a row is counted once its seed's files are written)
            kept = f"; {args.out / 'policy.pt'} and run.json are this run's first seed's"
            if (args.out / "summary.json").exists():
                kept += ", beside an earlier run's summary.json"
        print(f"interrupted after {done}: summary.json is written only once every seed is done{kept}",
              file=sys.stderr)
        return 130


def _train_seeds(args, config, off_policy: bool, optimum: float, rows: list, argv) -> int:
    """Train every seed of ``args.seeds`` in turn, each row appended to ``rows`` and printed as it ends; then the
    SUMMARY line and, with ``args.out``, summary.json. Returns 0."""
    for seed in args.seeds:
        run, figures = run_seed(args.algo, args.env, args.episodes, config, seed, eval_every=50 if off_policy else 400,
                                threads=1)  # one core per run, as the target says
        # this script's rows keep the exact figures (the command line and compare.py round them), no updates
        row = {key: figures[key] for key in ("seed", "greedy", "sampled", "sampled_as", "episodes", "env_steps",
                                             "wall_s", "steps_per_s")}
        row["evaluations"], row["sampled_evaluations"] = (_rounded(run)[key] for key in ("evaluations",
                                                                                        "sampled_evaluations"))
        if args.out and seed == args.seeds[0]:
            args.out.mkdir(parents=True, exist_ok=True)
            save_policy(run.agent, args.env, args.out / "policy.pt")
            reference = {"algo": args.algo, "env": args.env, "seed": seed, "greedy": row["greedy"],
                         "config": dataclasses.asdict(config), **_rounded(run)}
            atomic_write_text(args.out / "run.json", json.dumps(reference) + "\n")
        rows.append(row)  # (counted once its files are written)
        print(f"{seed:>4} {row['greedy']:7.2f} {row['sampled']:8.2f} {row['episodes']:>8} {row['env_steps']:>9} "
              f"{row['wall_s']:7.1f} {row['steps_per_s']:8.0f}", flush=True)
    greedy = np.array([row["greedy"] for row in rows])
    variant = (f"actor_gradient={args.actor_gradient}" if off_policy
               else f"recurrent={config.recurrent} team_reward={config.team_reward}")
    print(f"{variant} episodes={args.episodes}")
    summary = (f"SUMMARY algo={args.algo} env={args.env} seeds={len(rows)} median_return={np.median(greedy):.2f} "
               f"min_return={greedy.min():.2f} solved={int((greedy >= SOLVED - 1e-6).sum())}/{len(rows)} "
               f"optimal={optimum:.2f} wall_s={max(row['wall_s'] for row in rows):.0f} "
               f"steps_per_s={np.mean([row['steps_per_s'] for row in rows]):.0f}")
    print(summary)
    if args.out:
        command = "benchmarks/learning.py " + " ".join(sys.argv[1:] if argv is None else argv)
        atomic_write_text(args.out / "summary.json", json.dumps({"command": command, "summary": summary, "seeds": rows,
                                                                "optimal": optimum}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
