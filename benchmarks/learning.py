"""MADDPG's learning target on Switch2: one run per seed, greedy and sampled evaluation, a SUMMARY line.

    .venv/bin/python benchmarks/learning.py --algo maddpg --env Switch2-v2 --seeds 0 1 2 3 4 [--episodes 2000]

Each run trains for --episodes episodes and evaluates the greedy (argmax) policy every 100 episodes.
Switch is deterministic, so one greedy episode is that policy's exact return. Two figures are printed per
seed: the final policy's greedy return, and the greedy return of the best periodic snapshot (the weights
kept by early stopping, which is what --save-best writes as a checkpoint). The SUMMARY uses the final
policy unless --select best is given; say which one you report.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import torch

from marl_edu.maddpg import MADDPG, MADDPGConfig
from marl_edu.planning import optimal_team_return
from marl_edu.train import greedy_return, sampled_returns, train_maddpg

SOLVED = 8.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", choices=["maddpg"], default="maddpg")
    parser.add_argument("--env", default="Switch2-v2")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--select", choices=["final", "best"], default="final",
                        help="which policy the SUMMARY reports: the final one or the best periodic snapshot")
    parser.add_argument("--save-best", type=pathlib.Path, default=None,
                        help="write the best seed's best snapshot (actors only) to this checkpoint file")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be positive")
    torch.set_num_threads(1)  # one core per run, as the target says
    optimum = optimal_team_return(args.env)
    config = MADDPGConfig()
    print(f"{'seed':>4} {'final':>7} {'best':>7} {'sampled':>8} {'episodes':>8} {'env_steps':>9} {'wall_s':>7} {'steps/s':>8}")
    rows, best_overall = [], None
    for seed in args.seeds:
        run = train_maddpg(args.env, args.episodes, config, seed=seed, eval_every=100, progress=False)
        final = greedy_return(run.agent, args.env).team_return
        sampled = sampled_returns(run.agent, args.env, n_episodes=100, seed=seed).mean()
        best_agent = MADDPG(run.agent.n_agents, run.agent.obs_dim, run.agent.n_actions, config)
        best_agent.load_state_dict(run.best_state)
        best = greedy_return(best_agent, args.env).team_return
        rate = run.env_steps / run.seconds
        rows.append((final, best, run.seconds, rate))
        print(f"{seed:>4} {final:7.2f} {best:7.2f} {sampled:8.2f} {len(run.episode_returns):>8} {run.env_steps:>9} "
              f"{run.seconds:7.1f} {rate:8.0f}", flush=True)
        if best_overall is None or best > best_overall[0]:
            best_overall = (best, best_agent)
    chosen = np.array([r[0] if args.select == "final" else r[1] for r in rows])
    print(f"SUMMARY algo={args.algo} env={args.env} select={args.select} seeds={len(rows)} "
          f"median_return={np.median(chosen):.2f} min_return={chosen.min():.2f} "
          f"solved={int((chosen >= SOLVED - 1e-6).sum())}/{len(rows)} optimal={optimum:.2f} "
          f"wall_s={max(r[2] for r in rows):.0f} steps_per_s={np.mean([r[3] for r in rows]):.0f}")
    if args.save_best:
        args.save_best.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.save_best.with_suffix(".tmp")
        torch.save({"algo": "maddpg", "env": args.env, "actors": best_overall[1].actors.state_dict()}, tmp)
        tmp.replace(args.save_best)
    return 0


if __name__ == "__main__":
    sys.exit(main())
