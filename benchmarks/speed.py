"""How fast does each learner train, against how fast the environment alone runs?

    .venv/bin/python benchmarks/speed.py [--seeds 20 21 22 23 24] [--methods coma-gru maddpg-mlp ...]
                                         [--backends batched ma-gym] [--before] [--env Switch2-v2]

The yardstick, timed in the same process: raw ma-gym (``gym.make``, one env, uniformly random actions, resets
included, no wrapper) on each env the methods train on. Then the two ways the learners step 16 lock-step copies
(``make_vec_env``'s backends): ``ma-gym`` (``VecEnv``: ma-gym's env per copy, converted and checked) and ``batched``
(``BatchedSwitch``: the same transitions as arrays).

Then each method trains with each backend on every seed, one torch thread, with the defaults the command line and
the notebooks' panels use (the learner table's budget, the learner's config), on its family's task unless ``--env`` is
given: the on-policy learners (COMA, central-V, IAC-V) on Switch2-v0, the off-policy ones (MADDPG, IDDPG) on
Switch2-v2, where the issue's goal measures them. Every run trains its whole budget, so the row says both when a
periodic greedy evaluation first got within 0.3 of the optimum (8.0 on Switch2) and whether the final policy is
there. ``--before`` adds the previous release's path for comparison, timed in the same run: the ``ma-gym`` backend
and the old defaults (``PREVIOUS``: for the on-policy learners the step-by-step unroll, learning rates 1e-3, 4 critic
steps and 20,000 episodes; for the off-policy ones learning rates 1e-3 and 5e-4 and 3,000 episodes). Those runs stop
at the first solve, since only their time to it is compared.

Prints per run the env steps per second while training and its ratio to raw ma-gym, the share of time in updates,
the wall-clock and episodes to reach the solved line and the final greedy return; then a SUMMARY line per method and
path: median ratio, median wall-clock to solve (a seed that never solved counts as never) and final solves. The
ratio counts the steps of recorded episodes: the on-policy learners also step copies whose episode already ended
(lock-step, until the batch's longest episode ends), and the wall-clock includes the periodic greedy evaluations, so
the ratio measures everything a learner costs. The seeds default to 20-24, which no committed result and no
tuning sweep used.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import numpy as np

from marl_edu.learners.baselines import IACV, IDDPG, CentralV
from marl_edu.learners.coma import COMA
from marl_edu.learners.maddpg import MADDPG
from marl_edu.learners.table import ON_POLICY, algo_name_of_class, entry
# the per-seed runner, and the method names ("coma-gru", ... "iddpg-mlp") with their learners and configs
from marl_edu.runs.seed import METHODS, method_config, run_seed, solve_line, solved_threshold, split

# one method per learner timed by default: each learner's first (for COMA, central-V and IAC-V the GRU actor)
DEFAULT = [next(method for method in METHODS if split(method)[0] == algo_name_of_class(learner))
           for learner in (COMA, CentralV, IACV, MADDPG, IDDPG)]
TASK = {"on-policy": "Switch2-v0", "off-policy": "Switch2-v2"}  # where the goal measures each family
# each family's defaults and budget before the tuning of issue 18 (benchmarks/TUNING.md)
PREVIOUS = {"on-policy": (dict(actor_lr=1e-3, critic_lr=1e-3, critic_steps=4, fused_unroll=False), 20000),
            "off-policy": (dict(actor_lr=1e-3, critic_lr=5e-4), 3000)}


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


YARDSTICK_STEPS = 200_000  # raw ma-gym Switch2-v0 random steps: one yardstick of wall-clock (keep.py's, fresh.py's)


def yardstick_seconds(steps: int = YARDSTICK_STEPS) -> float:
    """Seconds raw ma-gym takes for ``YARDSTICK_STEPS`` random steps of Switch2-v0 on this machine now, timed over
    ``steps`` of them (fewer only in the tests)."""
    return YARDSTICK_STEPS / raw_ma_gym_speed("Switch2-v0", steps)


def vec_env_speed(env_id: str, backend: str, n_envs: int, steps: int, seed: int = 0) -> float:
    """Env steps per second (summed over copies) of ``make_vec_env(..., backend)`` with random actions."""
    from marl_edu.envs.make import make_vec_env

    venv = make_vec_env(env_id, n_envs, seed, backend)
    actions = np.random.default_rng(seed).integers(0, venv.n_actions, size=(steps // n_envs, n_envs, venv.n_agents))
    venv.reset()
    start = time.perf_counter()
    for step_actions in actions:  # (K, N)
        venv.step(step_actions)
    return len(actions) * n_envs / (time.perf_counter() - start)


def paths(method: str, backends: list[str], before: bool) -> list[tuple[str, str, object, int, bool]]:
    """``(label, backend, config, episodes, stop_at_solve)`` for every way ``method`` is timed."""
    algo, config = method_config(method)
    now = [("now", backend, config, entry(algo).episodes, False) for backend in backends]
    if not before:
        return now
    changes, episodes = PREVIOUS["on-policy" if algo in ON_POLICY else "off-policy"]
    return now + [("before", "ma-gym", dataclasses.replace(config, **changes), episodes, True)]


def median_seconds(values: list[float | None]) -> str:
    middle = statistics.median([float("inf") if v is None else v for v in values])
    return "never" if middle == float("inf") else f"{middle:.1f} s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default=None, help="train every method here (default: the family's task)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[20, 21, 22, 23, 24])
    parser.add_argument("--methods", nargs="+", default=DEFAULT, choices=METHODS)
    parser.add_argument("--backends", nargs="+", default=["batched"], choices=["ma-gym", "batched"],
                        help="how the 16 env copies are stepped (make_vec_env's backend); default: batched")
    parser.add_argument("--before", action="store_true", help="also time the previous release's path")
    args = parser.parse_args(argv)
    from marl_edu.envs.planning import optimal_team_return

    task = {method: args.env or TASK["on-policy" if split(method)[0] in ON_POLICY else "off-policy"]
            for method in args.methods}
    raw = {}
    for env_id in sorted(set(task.values())):
        raw[env_id] = raw_ma_gym_speed(env_id, 100_000)
        print(f"raw ma-gym {env_id} (one env, random actions, resets included): {raw[env_id]:.0f} steps/s = 1.00")
        for backend in ("ma-gym", "batched"):
            rate = vec_env_speed(env_id, backend, 16, 160_000 if backend == "batched" else 32_000)
            print(f"  16 lock-step copies, backend {backend!r}: {rate:.0f} steps/s = {rate / raw[env_id]:.2f}")
    print(f"\n{'method':<14} {'path':<7} {'backend':<8} {'seed':>4} {'steps/s':>8} {'ratio':>6} {'updates':>8} "
          f"{'to solve':>9} {'episodes':>9} {'final':>6} {'wall_s':>7}", flush=True)
    summaries = []
    for method in args.methods:
        algo, _ = method_config(method)
        env_id = task[method]
        optimum = optimal_team_return(env_id)
        target = solve_line(optimum)
        for label, backend, config, episodes, stop in paths(method, args.backends, args.before):
            rows = []
            for seed in args.seeds:
                run, figures = run_seed(algo, env_id, episodes, config, seed, optimum=optimum,
                                        stop_at=solved_threshold(optimum) if stop else None, env_backend=backend,
                                        threads=1)  # one core per run
                rows.append(figures)
                seconds = figures["seconds_to_solve"]
                print(f"{method:<14} {label:<7} {backend:<8} {seed:>4} {figures['steps_per_s']:8.0f} "
                      f"{figures['steps_per_s'] / raw[env_id]:6.2f} {run.update_seconds / run.seconds:8.0%} "
                      f"{'never' if seconds is None else f'{seconds:.1f} s':>9} "
                      f"{figures['episodes_to_solve'] or '-':>9} {figures['greedy']:6.1f} {run.seconds:7.1f}",
                      flush=True)
            ratio = statistics.median(r["steps_per_s"] for r in rows) / raw[env_id]
            solved = sum(r["seconds_to_solve"] is not None for r in rows)
            final = "" if stop else f"; the final policy on {sum(r['greedy'] >= target for r in rows)}/{len(rows)}"
            summaries.append(f"SUMMARY {method} {label} {backend} on {env_id}: ratio {ratio:.2f}, median "
                             f"{median_seconds([r['seconds_to_solve'] for r in rows])} to solve (solved on "
                             f"{solved}/{len(rows)} seeds{final}), budget {episodes} episodes")
    print()
    print("\n".join(summaries))
    print("\nratio = training env steps/s / raw ma-gym steps/s on the same env (median over seeds); updates = time in "
          "update() / wall-clock; to solve = wall-clock until a greedy evaluation first scored within 0.3 of the "
          "optimum; final = the final policy's greedy team return")
    return 0


if __name__ == "__main__":
    sys.exit(main())
