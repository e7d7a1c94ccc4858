"""How fast does each learner train, against how fast the environment alone runs?

    .venv/bin/python benchmarks/speed.py [--env Switch2-v2] [--seed 0] [--methods coma-gru maddpg-mlp ...]

First the raw speed of the environment in the same process: 16 lock-step copies (``make_vec_env``, what
every learner steps) and one copy, with uniformly random actions. Then each method trains on one seed,
one torch thread, until a periodic greedy evaluation gets within 0.3 of the optimum (8.0 on Switch2) or its
budget runs out (20000 or 3000 episodes). Prints env steps per second while training, the ratio to the raw
vector env, where the time goes (acting and stepping against updating), and the wall-clock and episodes
to reach that return. Training steps count the steps of recorded episodes: the on-policy learners also step
copies whose episode already ended (lock-step, until the batch's longest episode ends), and the wall-clock
includes the periodic greedy evaluations, so the ratio measures everything a learner costs beyond the env.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

# the per-seed runner, and the method names ("coma-gru", ... "iddpg-mlp") with their learners and configs
from marl_edu.cli import METHODS, method_config, run_seed, solved_threshold

DEFAULT = ["coma-gru", "central_v-gru", "iac-gru", "maddpg-mlp", "iddpg-mlp"]  # one per learner


def raw_env_speed(env_id: str, n_envs: int, steps: int, seed: int = 0) -> float:
    """Env steps per second (summed over copies) of ``make_vec_env`` with random actions."""
    from marl_edu.envs import make_vec_env

    venv = make_vec_env(env_id, n_envs, seed)
    rng = np.random.default_rng(seed)
    venv.reset()
    start = time.perf_counter()
    for _ in range(steps // n_envs):
        venv.step(rng.integers(0, venv.n_actions, size=(n_envs, venv.n_agents)))  # (K, N)
    return (steps // n_envs) * n_envs / (time.perf_counter() - start)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Switch2-v2", help="default: Switch2-v2, where both families can solve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=DEFAULT, choices=METHODS)
    args = parser.parse_args(argv)
    from marl_edu.planning import optimal_team_return
    from marl_edu.train import DEFAULT_EPISODES

    torch.set_num_threads(1)
    target = solved_threshold(optimal_team_return(args.env))
    raw_vec = raw_env_speed(args.env, 16, 32000)
    raw_one = raw_env_speed(args.env, 1, 8000)
    print(f"raw {args.env}, random actions: {raw_vec:.0f} steps/s with 16 lock-step copies, {raw_one:.0f} with one")
    print(f"\n{'method':<14} {'steps/s':>8} {'ratio':>6} {'update share':>12} {'to reach':>9} {'episodes':>9} "
          f"{'wall_s':>7}")
    for method in args.methods:
        algo, config = method_config(method)
        run, figures = run_seed(algo, args.env, DEFAULT_EPISODES[algo], config, args.seed, stop_at=target)
        rate = figures["steps_per_s"]
        reached = bool(run.evaluations) and run.evaluations[-1][1] >= target - 1e-6
        to_reach = f"{run.eval_seconds[-1]:.0f} s" if reached else "never"
        print(f"{method:<14} {rate:8.0f} {rate / raw_vec:6.2f} {run.update_seconds / run.seconds:12.0%} "
              f"{to_reach:>9} {len(run.episode_returns):>9} {run.seconds:7.1f}", flush=True)
    print(f"\nratio = training env steps/s / raw 16-copy env steps/s; update share = time in update() / wall-clock; "
          f"'to reach' = wall-clock until a greedy evaluation first scored >= {target:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
