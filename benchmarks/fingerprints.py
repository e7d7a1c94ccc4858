"""Fingerprints of short training runs of every learner, to show that a refactor changed no number.

Each learner trains briefly on a fixed seed with small settings that still reach many updates; the fingerprint is the
sha256 of its per-episode returns, its periodic evaluations and every tensor of every network it holds. Run it before
and after a change on the same machine (and torch build): identical lines mean identical numerics. The values differ
between CPUs (AVX2 and AVX-512 round differently), so they are compared run to run, never committed as a test.

Usage: python benchmarks/fingerprints.py [--only NAME ...]     (about a minute for every learner on one core)
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np
import torch

from marl_edu.learners.table import LEARNERS
from marl_edu.runs.seed import run_seed

SEED = 7
# small settings per loop kind (learners.Entry.loop) that still reach many updates: (env, episodes, eval_every,
# config overrides)
SMALL = {
    "off_policy": ("Switch2-v2", 60, 20, dict(n_envs=4, warmup_steps=200, batch_size=64, buffer_size=5_000)),
    "on_policy": ("Switch2-v0", 96, 32, dict(n_envs=8)),
    "episode_replay": ("Switch2-v0", 64, 32, dict(n_envs=8, batch_episodes=8)),
    "continuous": ("simple_spread_v3", 24, 12, dict(n_envs=4, warmup_steps=100, batch_size=32, buffer_size=5_000)),
    "continuous_on_policy": ("simple_spread_v3", 24, 12, dict(n_envs=4)),
}


def runs():
    """name -> a function that trains that learner of ``LEARNERS`` briefly and returns its TrainResult."""
    def run(name, row):
        env_id, episodes, eval_every, overrides = SMALL[row.loop]
        return lambda: run_seed(name, env_id, episodes, row.config(**overrides), seed=SEED, eval_every=eval_every,
                                final_episodes=1, threads=1)[0]

    return {name: run(name, row) for name, row in LEARNERS.items()}


def fingerprint(result) -> str:
    digest = hashlib.sha256()
    digest.update(np.asarray(result.episode_returns, dtype=np.float64).tobytes())
    digest.update(np.asarray(result.evaluations, dtype=np.float64).tobytes())
    networks = {name: value for name, value in vars(result.agent).items() if isinstance(value, torch.nn.Module)}
    for name, network in sorted(networks.items()):  # every network the learner holds, targets and approximations too
        for key, tensor in network.state_dict().items():
            digest.update(f"{name}.{key}".encode())
            digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="learner names (default: all)")
    args = parser.parse_args()
    for name, run in runs().items():
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        result = run()
        print(f"{name:18s} {fingerprint(result)}  episodes {len(result.episode_returns):3d}  updates "
              f"{result.updates:4d}  ({time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
