"""Write results/foraging/textbook.json, the MARL textbook's published runs on Level-Based Foraging, from a local copy
of its exercises' repository: the committed JSON is the data benchmarks/foraging.py, notebook 16 and the tests read
(nothing is fetched when they run).

    .venv/bin/python tools/textbook_curves.py PATH --commit SHA

PATH is a checkout of github.com/LukasSchaefer/marl-book-exercises at commit SHA (or a copy of its
deep_marl_data/lbf_8x8-2p-3f_coop folder's results.csv files under the same paths). For IDQN, VDN and QMIX, seeds
0-4, each row's ``environment_steps`` and ``mean_episode_returns`` are kept as published (the numbers as their text
reads; JSON keeps every digit of these), the other columns left out.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import pathlib
import re
import sys

from marl_edu.base.files import atomic_write_text

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "foraging" / "textbook.json"
REPOSITORY = "https://github.com/LukasSchaefer/marl-book-exercises"
FOLDER = "deep_marl_data/lbf_8x8-2p-3f_coop"
SEEDS = ("0", "1", "2", "3", "4")
# our learner's name (benchmarks/foraging.py's METHODS) -> the textbook's folder for the same algorithm
ALGORITHMS = {"iql": "idqn", "vdn": "vdn", "qmix": "qmix"}
COLUMNS = ("environment_steps", "mean_episode_returns")
SOURCE = {
    "book": "S. V. Albrecht, F. Christianos and L. Schäfer, Multi-Agent Reinforcement Learning: Foundations and "
            "Modern Approaches, MIT Press 2024: the runs its exercises publish",
    "repository": REPOSITORY,
    "paths": f"{FOLDER}/<algorithm>/<seed>/results.csv for algorithm idqn (our iql), vdn and qmix, seeds 0-4",
    "columns": {"environment_steps": "env steps of training so far",
                "mean_episode_returns": "the mean team return over that evaluation's episodes: the two agents' "
                                        "returns summed, the file's agent0/ and agent1/ columns"},
    "evaluation": "every 100,000 env steps, 20 episodes, epsilon-greedy with epsilon 0.05 (each run's config.yaml: "
                  "eval_interval, eval_episodes, eps_evaluation)",
    "training": "lbforaging:Foraging-8x8-2p-3f-v3 with 50-step episodes and the team reward (the CooperativeReward "
                "wrapper), rewards standardised, 4M env steps; MLP agents of 128x128 units with shared parameters "
                "and the agent's id in its observation, Adam with learning rate 3e-4, a replay of 10,000 "
                "transitions, batch 32, double Q-learning, a target copy every 200 updates, epsilon 1.0 to 0.05 "
                "over the first 10% of the steps (each run's config.yaml)",
    "written_by": "tools/textbook_curves.py, from a local copy of the repository at the commit named here",
}


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def read_run(path: pathlib.Path) -> list[list]:
    """One results.csv: its ``[environment_steps, mean_episode_returns]`` pairs, in its order. ValueError naming the
    file for a missing column, a value that is not a number (or not finite), or env steps that do not increase."""
    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    if not rows or any(column not in rows[0] for column in COLUMNS):
        raise ValueError(f"{path}: needs the columns {', '.join(COLUMNS)} and at least one row")
    pairs = []
    for row in rows:
        steps, value = row["environment_steps"] or "", row["mean_episode_returns"] or ""  # (a short row: None)
        if not re.fullmatch(r"\d+", steps) or not re.fullmatch(r"[-+0-9.eE]+", value) or not _finite(value):
            raise ValueError(f"{path}: not a step count and a finite return: {steps[:40]!r}, {value[:40]!r}")
        pairs.append([int(steps), float(value)])
    if any(a[0] >= b[0] for a, b in zip(pairs, pairs[1:])):
        raise ValueError(f"{path}: environment_steps must increase row by row")
    return pairs


def textbook_json(checkout: pathlib.Path, commit: str) -> str:
    """The file's text: the source block, then one line per seed of ``[env steps, mean return]`` pairs."""
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise ValueError(f"--commit must be the 40 hex digits of the checkout's commit, got {commit[:50]!r}")
    source = {**SOURCE, "commit": commit}
    lines = ["{", f' "source": {json.dumps(source, indent=1, ensure_ascii=False)},'.replace("\n", "\n "),
             ' "env": "Foraging-8x8-2p-3f-v3",', ' "runs": {']
    for k, (method, algorithm) in enumerate(ALGORITHMS.items()):
        lines += [f'  "{method}": {{"algorithm": "{algorithm}", "seeds": {{']
        for j, seed in enumerate(SEEDS):
            pairs = read_run(checkout / FOLDER / algorithm / seed / "results.csv")
            lines.append(f'   "{seed}": {json.dumps(pairs)}' + ("," if j < len(SEEDS) - 1 else ""))
        lines.append("  }}" + ("," if k < len(ALGORITHMS) - 1 else ""))
    lines += [" }", "}"]
    text = "\n".join(lines) + "\n"
    json.loads(text)  # (a check of the hand-laid layout)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=pathlib.Path, help="a local copy of the textbook exercises' repository")
    parser.add_argument("--commit", required=True, help="the commit the copy is of (40 hex digits)")
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help="default: results/foraging/textbook.json")
    args = parser.parse_args(argv)
    try:
        text = textbook_json(args.checkout, args.commit)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    try:
        atomic_write_text(args.out, text)  # whole or not at all: a textbook.json already there stays as it was
    except OSError as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
