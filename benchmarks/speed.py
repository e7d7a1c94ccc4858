"""How fast does each learner train, against how fast the environment alone runs?

    .venv/bin/python benchmarks/speed.py [--env Switch2-v2] [--seed 0] [--methods coma-gru maddpg-mlp ...]
                                         [--backends ma-gym batched]

The yardstick, timed in the same process: raw ma-gym (``gym.make``, one env, uniformly random actions, resets
included, no wrapper). Then the two ways the learners step 16 lock-step copies (``make_vec_env``'s backends):
``ma-gym`` (``VecEnv``: ma-gym's env per copy, converted and checked) and ``batched`` (``BatchedSwitch``: the same
transitions as arrays). Then each method trains on one seed with each backend, one torch thread, until a periodic
greedy evaluation gets within 0.3 of the optimum (8.0 on Switch2) or its budget runs out (20000 or 3000 episodes).

Prints env steps per second while training and its ratio to raw ma-gym, where the time goes (updating against
acting and stepping), and the wall-clock and episodes to reach that return. The two backends train to the same
returns (tests/test_train.py), so their rows differ in time only. Training steps count the steps of recorded episodes:
the on-policy learners also step copies whose episode already ended (lock-step, until the batch's longest episode
ends), and the wall-clock includes the periodic greedy evaluations, so the ratio measures everything a learner costs.
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


def raw_ma_gym_speed(env_id: str, steps: int, seed: int = 0) -> float:
    """Steps per second of one ma-gym env, ``gym.make`` with nothing around it: random actions, resets included."""
    import warnings

    import gym

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make(f"ma_gym:{env_id}")
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, env.action_space[0].n, size=(steps, env.n_agents)).tolist()
    env.reset()
    start = time.perf_counter()
    for action in actions:
        if all(env.step(action)[2]):
            env.reset()
    return steps / (time.perf_counter() - start)


def vec_env_speed(env_id: str, backend: str, n_envs: int, steps: int, seed: int = 0) -> float:
    """Env steps per second (summed over copies) of ``make_vec_env(..., backend)`` with random actions."""
    from marl_edu.envs import make_vec_env

    venv = make_vec_env(env_id, n_envs, seed, backend)
    actions = np.random.default_rng(seed).integers(0, venv.n_actions, size=(steps // n_envs, n_envs, venv.n_agents))
    venv.reset()
    start = time.perf_counter()
    for step_actions in actions:  # (K, N)
        venv.step(step_actions)
    return len(actions) * n_envs / (time.perf_counter() - start)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Switch2-v2", help="default: Switch2-v2, where both families can solve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=DEFAULT, choices=METHODS)
    parser.add_argument("--backends", nargs="+", default=["ma-gym", "batched"], choices=["ma-gym", "batched"],
                        help="how the 16 env copies are stepped (make_vec_env's backend); default: both")
    args = parser.parse_args(argv)
    from marl_edu.planning import optimal_team_return
    from marl_edu.cli import DEFAULT_EPISODES

    torch.set_num_threads(1)
    target = solved_threshold(optimal_team_return(args.env))
    raw = raw_ma_gym_speed(args.env, 100_000)
    print(f"raw ma-gym {args.env} (one env, random actions, resets included): {raw:.0f} steps/s = 1.00")
    for backend in args.backends:
        rate = vec_env_speed(args.env, backend, 16, 160_000 if backend == "batched" else 32_000)
        print(f"16 lock-step copies, backend {backend!r}: {rate:.0f} steps/s = {rate / raw:.2f}")
    print(f"\n{'method':<14} {'backend':<8} {'steps/s':>8} {'ratio':>6} {'update share':>12} {'to reach':>9} "
          f"{'episodes':>9} {'wall_s':>7}")
    for method in args.methods:
        algo, config = method_config(method)
        for backend in args.backends:
            run, figures = run_seed(algo, args.env, DEFAULT_EPISODES[algo], config, args.seed, stop_at=target,
                                    env_backend=backend)
            rate = figures["steps_per_s"]
            reached = bool(run.evaluations) and run.evaluations[-1][1] >= target - 1e-6
            to_reach = f"{run.eval_seconds[-1]:.0f} s" if reached else "never"
            print(f"{method:<14} {backend:<8} {rate:8.0f} {rate / raw:6.2f} {run.update_seconds / run.seconds:12.0%} "
                  f"{to_reach:>9} {len(run.episode_returns):>9} {run.seconds:7.1f}", flush=True)
    print(f"\nratio = training env steps/s / raw ma-gym steps/s; update share = time in update() / wall-clock; "
          f"'to reach' = wall-clock until a greedy evaluation first scored >= {target:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
