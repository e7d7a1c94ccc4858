"""What the boundary checks cost: the share of a training run's wall-clock spent inside marl_edu's argument and data
checks (shapes, dtypes, finiteness, index ranges, the batch contracts), for every learner of the table on its default
env (Switch2-v0, or simple_spread_v3 for forces).

    .venv/bin/python benchmarks/check_cost.py
    .venv/bin/python benchmarks/check_cost.py --algos maddpg --episodes 300

Every check function (``CHECKS``) is wrapped, in every marl_edu module that holds it, by a timer that counts only the
outermost check (a check calling another is counted once); the run is otherwise the learner's default, for
``EPISODES[loop]`` episodes by its loop kind. Prints per learner the run's seconds, the seconds inside checks and their
share, one SUMMARY line per learner, and a last line with the largest share; the exit status is 1 when a share
reaches ``--limit`` (10%). The share is a ratio measured within one run, so a busy machine changes it little.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

from marl_edu.learners.table import LEARNERS, check_env

# (module, function): the checks data and arguments pass through while a learner trains
CHECKS = [
    ("base.shapes", "check_shape"), ("base.validate", "positive_int"), ("base.validate", "non_negative_int"),
    ("base.validate", "positive_number"), ("base.validate", "non_negative_number"), ("base.validate", "finite_number"),
    ("base.validate", "unit_interval"), ("base.validate", "boolean"), ("base.validate", "index_range"), ("base.validate", "finite"),
    ("base.validate", "zero_one"), ("base.validate", "generator"), ("data.buffers", "check_replay_batch"),
    ("data.rollout", "check_episode_batch"), ("pieces.nets", "check_policy_output"), ("learners.coma", "_check_policy"),
    ("pieces.targets", "_check_alike"), ("learners.maddpg", "check_temperature"), ("learners.table", "check_fits"),
    ("base.validate", "learner_sizes"), ("data.rollout", "check_padding"), ("data.rollout", "check_force_batch"),
    ("learners.ppo", "check_log_prob"), ("learners.ppo", "check_surrogate_inputs"),
]
# episodes of a run by the learner's loop kind: a few seconds of a core each, past the replays' warm-up
EPISODES = {"off_policy": 300, "on_policy": 1200, "episode_replay": 400, "continuous": 200, "continuous_on_policy": 400}
RUNS = {algo: EPISODES[row.loop] for algo, row in LEARNERS.items()}  # every learner of the table


def instrument() -> dict:
    """Wrap every check in ``CHECKS`` wherever a marl_edu module holds it; returns the counter the wrappers add to:
    ``{"seconds": time inside outermost checks, "calls": their number}``."""
    import importlib
    import pkgutil

    import marl_edu

    modules = [importlib.import_module(info.name) for info in pkgutil.walk_packages(marl_edu.__path__, "marl_edu.")
               if not info.ispkg and info.name != "marl_edu.__main__"]
    counter = {"seconds": 0.0, "calls": 0, "depth": 0}

    def timed(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if counter["depth"]:
                return function(*args, **kwargs)
            counter["depth"] += 1
            tic = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                counter["seconds"] += time.perf_counter() - tic
                counter["calls"] += 1
                counter["depth"] -= 1
        return wrapper

    for home, name in CHECKS:
        original = getattr(importlib.import_module(f"marl_edu.{home}"), name)
        wrapped = timed(original)
        for module in modules:  # every module that imported it by name holds its own reference
            if getattr(module, name, None) is original:
                setattr(module, name, wrapped)
    return counter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algos", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--episodes", type=int, default=None, help="episodes per run (default: per learner, RUNS)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=float, default=0.10, help="the share no learner's checks may reach")
    args = parser.parse_args(argv)
    counter = instrument()
    from marl_edu.runs.seed import train

    print(f"{'algo':>17} {'env':>16} {'episodes':>8} {'updates':>7} {'run s':>7} {'checks s':>8} {'share':>6} "
          f"{'calls':>8}")
    shares = {}
    for algo in args.algos:
        episodes, env = args.episodes or RUNS[algo], check_env(algo, None)
        counter.update(seconds=0.0, calls=0)
        tic = time.perf_counter()
        run = train(algo, env, episodes, seed=args.seed, progress=False, threads=1)
        seconds = time.perf_counter() - tic
        shares[algo] = share = counter["seconds"] / seconds
        print(f"{algo:>17} {env:>16} {len(run.episode_returns):>8} {run.updates:>7} {seconds:7.1f} "
              f"{counter['seconds']:8.2f} {share:6.1%} {counter['calls']:>8}", flush=True)
        print(f"SUMMARY algo={algo} env={env} episodes={episodes} run_s={seconds:.1f} "
              f"checks_s={counter['seconds']:.2f} share={share:.3f}")
    worst = max(shares, key=shares.get)
    print(f"LARGEST share={shares[worst]:.3f} algo={worst} of {len(shares)} learners (limit {args.limit:.3f})")
    return 0 if shares[worst] < args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
