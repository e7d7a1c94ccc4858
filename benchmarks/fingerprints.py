"""Fingerprints of short training runs of every learner, to show that a refactor changed no number.

Each learner trains briefly on a fixed seed with small settings that still reach many updates; the fingerprint is the
sha256 of its per-episode returns, its periodic evaluations and every tensor of every network it holds. Run it before
and after a change on the same machine (and torch build): identical lines mean identical numerics. The values differ
between CPUs (AVX2 and AVX-512 round differently), so they are compared run to run, never committed as a test.

Usage: python benchmarks/fingerprints.py [--only NAME ...]     (about 40 s for all twelve on one core)
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np
import torch

from marl_edu.baselines import IACV, IDDPG, CentralV
from marl_edu.coma import COMA, COMAConfig
from marl_edu.continuous import ContinuousIDDPG, ContinuousMADDPG, ContinuousMADDPGConfig
from marl_edu.ensembles import EnsembleConfig, EnsembleMADDPG
from marl_edu.inference import InferenceConfig, InferringMADDPG
from marl_edu.maddpg import MADDPG, MADDPGConfig
from marl_edu.train import train_coma, train_continuous, train_maddpg, train_value_decomposition
from marl_edu.value_decomposition import IQL, QMIX, VDN, ValueDecompositionConfig

SEED = 7
SMALL_MADDPG = dict(n_envs=4, warmup_steps=200, batch_size=64, buffer_size=5_000)
SMALL_CONTINUOUS = dict(n_envs=4, warmup_steps=100, batch_size=32, buffer_size=5_000)


def runs():
    """name -> a function that trains that learner briefly and returns its TrainResult."""
    def maddpg(learner):
        return lambda: train_maddpg("Switch2-v2", 60, MADDPGConfig(**SMALL_MADDPG), seed=SEED, eval_every=20,
                                    progress=False, learner=learner)

    def coma(learner):
        return lambda: train_coma("Switch2-v0", 96, COMAConfig(n_envs=8), seed=SEED, eval_every=32,
                                  progress=False, learner=learner)

    def value_decomposition(learner):
        return lambda: train_value_decomposition("Switch2-v0", 64, ValueDecompositionConfig(n_envs=8, batch_episodes=8),
                                                 seed=SEED, eval_every=32, progress=False, learner=learner)

    def continuous(learner, config):
        return lambda: train_continuous("simple_spread_v3", 24, config, seed=SEED, eval_every=12, eval_episodes=2,
                                        progress=False, learner=learner)

    return {
        "maddpg": maddpg(MADDPG), "iddpg": maddpg(IDDPG),
        "coma": coma(COMA), "central_v": coma(CentralV), "iac": coma(IACV),
        "iql": value_decomposition(IQL), "vdn": value_decomposition(VDN), "qmix": value_decomposition(QMIX),
        "maddpg_continuous": continuous(ContinuousMADDPG, ContinuousMADDPGConfig(**SMALL_CONTINUOUS)),
        "iddpg_continuous": continuous(ContinuousIDDPG, ContinuousMADDPGConfig(**SMALL_CONTINUOUS)),
        "maddpg_inferred": continuous(InferringMADDPG, InferenceConfig(**SMALL_CONTINUOUS)),
        "maddpg_ensemble": continuous(EnsembleMADDPG, EnsembleConfig(**SMALL_CONTINUOUS)),
    }


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
    torch.set_num_threads(1)
    for name, run in runs().items():
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        result = run()
        print(f"{name:18s} {fingerprint(result)}  episodes {len(result.episode_returns):3d}  updates "
              f"{result.updates:4d}  ({time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
