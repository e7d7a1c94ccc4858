"""Greedy and sampled on the same start states (issue 48): every kept policy of a task whose episodes start at random.

A run records its final greedy (with forces: noise-free) figure on one set of start states and its sampled figure on
another: the greedy one plays 100 episodes in a row on one env seeded the family's evaluation seed
(``evaluation.greedy_team_return``; a particle run's ``evaluate_particle``, seeded ``PARTICLE_EVAL_SEED``), the
sampled one the first episode of 100 env copies seeded s, s + 1, ... (``evaluation.sampled_returns``; s the run's
seed, or ``PARTICLE_EVAL_SEED`` for a particle run). So the two differ by their start states as well as by the
sampling. For the kept policy of every method (its lowest seed's final one, METHOD/policy.pt) in the committed grids
on PredatorPrey7x7-v0, cooperative navigation (discrete actions and forces) and Level-Based Foraging, this plays 100
episodes of each of:

  greedy          the greedy policy on the greedy figure's start states (the record's figure, played again);
  same starts     the greedy policy on the sampled figure's start states (``evaluation.greedy_on_sampled_starts``);
  sampled         the sampled policy there (the record's figure, played again).

Their differences split the recorded gap, sampled - greedy, in two: the start states (same starts - greedy) and the
sampling itself (sampled - same starts). Each part comes with its standard error: the start states' from two means of
different episodes (sqrt(var_A / n + var_B / n); the two sets share at most their first start state, where the run's
seed is the evaluation seed), the sampling's from the n paired differences, episode k of both starting alike (their
standard deviation over sqrt(n)). A replayed figure that is not its record's (beyond the record's rounding) stops the
script: the policy would not be the record's run. Only the kept policies can be played again; a grid's other
seeds' policies were not kept. Switch's episodes all start alike, so its grids need no such split; nor does a grid
whose records say ``sampled_starts`` (runs since the sampled figures play the greedy ones' own episodes): each of its
records' gaps is the sampling alone, with its standard error (``sampled_gap_se``), on every seed. Such grids are
skipped with a line saying so.

    .venv/bin/python benchmarks/start_states.py [--out results/start_states.json]

Prints one row per kept policy; with --out, writes them (and the command) as JSON. About two minutes of one core.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from marl_edu.base.files import atomic_write_text
from marl_edu.base.validate import positive_int
from marl_edu.envs.make import family
from marl_edu.envs.particle import PARTICLE_EVAL_SEED
from marl_edu.runs.seed import SCORE_EPISODES, load_replay_policy
from marl_edu.training.evaluation import greedy_on_sampled_starts, greedy_returns, sampled_returns

RESULTS = pathlib.Path(__file__).resolve().parent.parent / "results"
# the committed grids whose tasks start at random: (folder under results/, env id, the record's greedy figure's key)
GRIDS = [("compare/PredatorPrey7x7-v0", "PredatorPrey7x7-v0", "greedy"),
         ("compare/simple_spread_v3_discrete", "simple_spread_v3_discrete", "greedy"),
         ("foraging", "Foraging-8x8-2p-3f-v3", "final"),
         ("foraging_2m", "Foraging-8x8-2p-3f-v3", "final"),
         ("particle/simple_spread_v3", "simple_spread_v3", "team_return"),
         ("particle/simple_spread_v3-team", "simple_spread_v3", "team_return"),
         ("particle/simple_spread_v3-inferred", "simple_spread_v3", "team_return"),
         ("particle/simple_spread_v3-ppo", "simple_spread_v3", "team_return")]


def kept_record(folder: pathlib.Path, method: str) -> dict:
    """The record of the run whose policy ``folder/method/policy.pt`` is: the method's lowest seed, from its
    ``seed<S>.json`` (every grid here keeps one per run)."""
    records = [json.loads(path.read_text()) for path in (folder / method).glob("seed*.json")
               if path.stem[4:].isdigit()]
    if not records:
        raise ValueError(f"{folder / method} holds no seed<S>.json record beside its policy.pt")
    return min(records, key=lambda record: record["seed"])


def split(folder: str, env_id: str, greedy_key: str, method: str, episodes: int = SCORE_EPISODES) -> dict:
    """One kept policy's three figures (each a mean over ``episodes`` episodes, at least 2), the record's two, the
    split and its standard errors. ValueError if the replayed greedy or sampled figure is not the record's."""
    positive_int(episodes, "episodes")
    if episodes < 2:
        raise ValueError(f"episodes must be at least 2 (a standard error), got {episodes}")
    path = RESULTS / folder / method / "policy.pt"
    record = kept_record(RESULTS / folder, method)
    agent, _, _ = load_replay_policy(str(path), env_id)
    particle = family(env_id).actions == "forces"  # a particle run: its sampled figure starts from PARTICLE_EVAL_SEED
    seed = PARTICLE_EVAL_SEED if particle else record["seed"]  # where the record's sampled figure starts
    greedy = greedy_returns(agent, env_id, episodes, threads=1)  # (episodes,) the greedy figure's, as recorded
    same_starts = greedy_on_sampled_starts(agent, env_id, episodes, seed, threads=1)  # (episodes,) from seed + k
    sampled = sampled_returns(agent, env_id, episodes, seed, threads=1)  # (episodes,) from seed + k, sampled
    for name, played, recorded, digits in (("greedy", greedy, record[greedy_key], 2), ("sampled", sampled,
                                                                                        record["sampled"], 3)):
        if abs(played.mean() - recorded) > 0.6 * 10 ** -digits:  # (records keep 2 or 3 decimals, or more)
            raise ValueError(f"{folder}/{method}: the replayed {name} figure {played.mean():.4f} is not the record's "
                             f"{recorded} (seed {record['seed']}): is policy.pt that seed's run?")
    n = episodes
    start_error = np.sqrt(greedy.var(ddof=1) / n + same_starts.var(ddof=1) / n)  # two means of different episodes
    sampling_error = (sampled - same_starts).std(ddof=1) / np.sqrt(n)  # n paired differences
    return {"folder": folder, "env": env_id, "method": method, "seed": record["seed"], "episodes": episodes,
            "greedy": round(float(greedy.mean()), 4), "same_starts": round(float(same_starts.mean()), 4),
            "sampled": round(float(sampled.mean()), 4),
            "recorded_greedy": record[greedy_key], "recorded_sampled": record["sampled"],
            "sampled_as": record["sampled_as"],
            "start_states": round(float(same_starts.mean() - greedy.mean()), 4),
            "start_states_se": round(float(start_error), 4),
            "sampling": round(float(sampled.mean() - same_starts.mean()), 4),
            "sampling_se": round(float(sampling_error), 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=None, help="write the rows as JSON to this file")
    args = parser.parse_args(argv)
    if args.out is not None and (not args.out.name or args.out.is_dir() or not args.out.parent.is_dir()):
        parser.error(f"--out: {str(args.out)!r} is not a file name in an existing folder")
    rows = []
    print(f"{'grid':<36} {'method':<14} {'greedy':>8} {'same starts':>11} {'sampled':>8} | "
          f"{'start states (se)':>18} {'sampling (se)':>15}")
    try:
        for folder, env_id, greedy_key in GRIDS:
            for path in sorted((RESULTS / folder).glob("*/policy.pt")):
                if "sampled_starts" in kept_record(RESULTS / folder, path.parent.name):
                    print(f"{folder:<36} {path.parent.name:<14} needs no split: its records play the sampled figures "
                          "on the greedy ones' episodes (sampled_gap_se)", flush=True)
                    continue
                row = split(folder, env_id, greedy_key, path.parent.name)
                rows.append(row)
                print(f"{folder:<36} {row['method']:<14} {row['greedy']:8.3f} {row['same_starts']:11.3f} "
                      f"{row['sampled']:8.3f} | {row['start_states']:+9.3f} ({row['start_states_se']:5.3f}) "
                      f"{row['sampling']:+7.3f} ({row['sampling_se']:5.3f})", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {len(rows)} policies: nothing written", file=sys.stderr)
        return 130
    if args.out is not None:
        command = " ".join(["benchmarks/start_states.py", *(sys.argv[1:] if argv is None else argv)])
        atomic_write_text(args.out, json.dumps({"command": command, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
