"""Competition on the MADDPG paper's physical deception (mpe2 simple_adversary_v3: 1 adversary, 2 good agents),
continuous actions, several seeds. Prints a row per run, the matchup tables and SUMMARY lines.

    .venv/bin/python benchmarks/competition.py [--seeds 0 1 2 3 4] [--episodes 4000] [--jobs 2]
        [--methods maddpg ensemble team] [--out results/competition/simple_adversary_v3]

Methods (every one ``loops.train`` with the same budget; all play themselves during training):
  maddpg    continuous MADDPG, each critic learns its own agent's reward (the env's: adversary -d_0, good agents
            -min(d_1, d_2) + d_0, d_i the distance of agent i to the goal landmark)
  ensemble  the same with policy ensembles (``marl_edu.learners.ensembles``, M=3 sub-policies per agent, paper section 4.3)
  team      MADDPG whose every critic learns the team reward, the sum over all three agents

Scores (``play_matchup``, 50 episodes from seed 20000, the env's own per-agent rewards; noise-free but where said):
  self-play: each run's adversary against its own good agents, noise-free and, beside it, sampled (the policy as it
  explores at the end of training: its last exploration noise, sigma ``noise_end``);
  cross-play against opponents never trained with: each maddpg or ensemble run's adversary against the good agents
  of every OTHER seed's maddpg run, and each maddpg or ensemble run's good agents against every other seed's maddpg
  adversary. The paper's question: does an ensemble do better than a single policy against opponents that changed?
With --out: summary.json (the tables, every run's self-play scores, config and evaluations, noise-free and sampled,
every matchup) and for
the first seed <method>/policy.pt and <method>/selfplay.gif. The runs and the matchups go where compare.py's go
(``--runner``, ``--address``: ``marl_edu.runs.grid``), one torch thread each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import time

import numpy as np

from marl_edu.base.files import atomic_write_text
from marl_edu.base.threads import torch_threads
from marl_edu.base.viz import downscale, save_gif
from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import make_env
from marl_edu.learners.continuous import ContinuousMADDPG
from marl_edu.learners.ensembles import EnsembleMADDPG
from marl_edu.learners.table import CONTINUOUS_ALGORITHMS, algo_name_of_class, config_class
from marl_edu.runs.grid import (add_runner_options, check_options, check_runner_options, drop_runner_options,
                                open_out, run_files, run_grid, write_files)
from marl_edu.runs.seed import rounded, run_seed
from marl_edu.training.checkpoints import save_policy
from marl_edu.training.competition import episode_policy, play_matchup

ENV_ID = "simple_adversary_v3"
MADDPG = algo_name_of_class(ContinuousMADDPG).removesuffix("_continuous")  # the method every other one plays against
METHODS = {MADDPG: (algo_name_of_class(ContinuousMADDPG), {}),
           "ensemble": (algo_name_of_class(EnsembleMADDPG), {"n_subpolicies": 3}),
           "team": (algo_name_of_class(ContinuousMADDPG), {"team_reward": True})}  # name -> (learners.LEARNERS key,
# config values other than the defaults)
MATCHUP_EPISODES = 50


def make_config(method: str):
    algo, overrides = METHODS[method]
    return config_class(algo)(**overrides)


def save_selfplay(agent, folder: pathlib.Path) -> None:
    """``agent``'s policy (``policy.pt``) and a GIF of one self-play episode from env seed 0 (``selfplay.gif``: an
    ensemble's agents each draw a sub-policy, ``episode_policy``), each written atomically, in ``folder``."""
    save_policy(agent, ENV_ID, folder / "policy.pt")
    frames = run_episode(make_env(ENV_ID, seed=0), episode_policy(agent, np.random.default_rng(0)),
                         record_frames=True).frames
    save_gif([downscale(f, 4) for f in frames], folder / "selfplay.gif", fps=8, scale=1)


def train_one(job: tuple) -> tuple[dict, dict[str, bytes]]:
    """Train one learner for one seed (one torch thread, ``marl_edu.runs.seed.run_seed``) and score it in self-play
    (``play_matchup``). ``job``: ``(method, seed, episodes, keep_artifacts)``. Returns its row (method, seed, the
    score's fields, counts, config, its actors' weights for the cross-play matchups, and evaluations during training)
    and, with ``keep_artifacts`` (the first seed, with --out), its policy and self-play GIF as bytes
    (``save_selfplay``, ``run_files``). The row's ``sampled_selfplay`` is the self-play score of the policy as it
    explores at the end of training (``sampled_as``), ``sampled_evaluations`` its evaluations during training."""
    method, seed, episodes, keep_artifacts = job
    config = make_config(method)
    run, figures = run_seed(METHODS[method][0], ENV_ID, episodes, config, seed, eval_every=200, threads=1)
    with torch_threads(1):
        score = play_matchup(run.agent, run.agent, ENV_ID, MATCHUP_EPISODES)
        sampled = play_matchup(run.agent, run.agent, ENV_ID, MATCHUP_EPISODES, sampled=True)
        files = run_files(lambda folder: save_selfplay(run.agent, folder)) if keep_artifacts else {}
    row = rounded(figures)
    return {"method": method, "seed": seed, **dataclasses.asdict(score),
            **{key: row[key] for key in ("episodes", "env_steps", "updates", "wall_s")},
            "sampled_selfplay": dataclasses.asdict(sampled), "sampled_as": row["sampled_as"],
            "sampled_starts": row["sampled_starts"],
            "config": dataclasses.asdict(config), "actors": run.agent.actors.state_dict(),
            "evaluations": row["evaluations"], "sampled_evaluations": row["sampled_evaluations"]}, files


def rebuild(row: dict):
    """The trained learner of one row, from its config and actors' weights."""
    algo, _ = METHODS[row["method"]]
    config = type(make_config(row["method"]))(**row["config"])
    agent = CONTINUOUS_ALGORITHMS[algo](3, 10, 2, config)  # simple_adversary_v3: N=3, O=10 (padded), A=2
    agent.actors.load_state_dict(row["actors"])
    return agent


def matchup(pair: tuple[dict, dict]) -> dict:
    """One cross-play game, on one torch thread: ``pair``'s adversary row's adversary against its good row's good
    agents."""
    adversary_row, good_row = pair
    with torch_threads(1):
        score = play_matchup(rebuild(adversary_row), rebuild(good_row), ENV_ID, MATCHUP_EPISODES)
    return {"adversary": [adversary_row["method"], adversary_row["seed"]],
            "good": [good_row["method"], good_row["seed"]], **dataclasses.asdict(score)}


def mean_range(values, digits: int = 1) -> str:
    values = np.asarray(values)
    return f"{values.mean():.{digits}f} ({values.min():.{digits}f} to {values.max():.{digits}f})"


def selfplay_line(label: str, scores: list[dict]) -> str:
    """One row of the self-play table: the mean (range) over the seeds' scores (``MatchupScore`` fields)."""
    return (f"| {label} | {mean_range([r['adversary_return'] for r in scores])} | "
            f"{mean_range([r['good_return'] for r in scores])} | "
            f"{mean_range([r['adversary_distance'] for r in scores], 3)} | "
            f"{mean_range([r['good_distance'] for r in scores], 3)} | {len(scores)} |")


def selfplay_table(rows: list[dict]) -> list[str]:
    """Per method, its runs' noise-free self-play scores and, beneath them where the runs kept it, the sampled ones."""
    lines = ["| method | adversary return | good agents' return | adversary's final distance to goal | "
             "nearest good agent's | seeds |", "|---|---|---|---|---|---|"]
    for method in METHODS:
        mine = [row for row in rows if row["method"] == method]
        if mine:
            lines.append(selfplay_line(method, mine))
            if all("sampled_selfplay" in row for row in mine):  # (runs recorded before it have none)
                lines.append(selfplay_line(f"{method}, sampled", [row["sampled_selfplay"] for row in mine]))
    return lines


def crossplay_table(games: list[dict]) -> list[str]:
    """Per role and method, the mean over its cross-play games (each an average over seeds s != s')."""
    lines = ["| who plays | against | games | adversary return | good agents' return | adversary's final distance |",
             "|---|---|---|---|---|---|"]
    for method in (MADDPG, "ensemble"):
        as_adversary = [g for g in games if g["adversary"][0] == method and g["good"][0] == MADDPG
                        and g["adversary"][1] != g["good"][1]]
        as_good = [g for g in games if g["good"][0] == method and g["adversary"][0] == MADDPG
                   and g["adversary"][1] != g["good"][1]]
        for role, mine, other in (("adversary", as_adversary, "other seeds' maddpg good agents"),
                                  ("good agents", as_good, "other seeds' maddpg adversaries")):
            if mine:
                lines.append(f"| {method} {role} | {other} | {len(mine)} | "
                             f"{np.mean([g['adversary_return'] for g in mine]):.1f} | "
                             f"{np.mean([g['good_return'] for g in mine]):.1f} | "
                             f"{np.mean([g['adversary_distance'] for g in mine]):.3f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=4000, help="training episodes per run (default: 4000)")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default: 2); with "
                                                             "--address, the cluster's CPUs decide")
    add_runner_options(parser)
    parser.add_argument("--out", type=str, default=None, help="write summary.json, policies and GIFs here")
    args = parser.parse_args(argv)
    check_options(parser, args)
    check_runner_options(parser, args)
    args.out, held = open_out(parser, args.out) if args.out is not None else (None, None)  # (held to the end)
    start = time.perf_counter()
    print(f"{'method':>8} {'seed':>4} {'adv ret':>8} {'good ret':>8} {'adv dist':>8} {'good dist':>9} "
          f"{'sampled: adv ret':>16} {'good ret':>8} {'wall_s':>7}")
    rows = []
    # the slow ensembles first, so the two workers finish together
    todo = [(method, seed, args.episodes, bool(args.out) and seed == args.seeds[0])
            for method in sorted(args.methods, key=lambda m: m != "ensemble") for seed in args.seeds]
    try:
        for row, files in run_grid(train_one, todo, args.runner, args.jobs, args.address):
            rows.append(row)
            if files:
                write_files(args.out / row["method"], files)  # each atomically
            print(f"{row['method']:>8} {row['seed']:>4} {row['adversary_return']:8.1f} {row['good_return']:8.1f} "
                  f"{row['adversary_distance']:8.3f} {row['good_distance']:9.3f} "
                  f"{row['sampled_selfplay']['adversary_return']:16.1f} {row['sampled_selfplay']['good_return']:8.1f} "
                  f"{row['wall_s']:7.1f}", flush=True)
        rows.sort(key=lambda row: (list(METHODS).index(row["method"]), row["seed"]))
        baseline = [row for row in rows if row["method"] == MADDPG]
        pairs = [(a, g) for a in rows for g in baseline
                 if a["method"] in (MADDPG, "ensemble") and a["seed"] != g["seed"]]
        pairs += [(a, g) for g in rows for a in baseline if g["method"] == "ensemble" and a["seed"] != g["seed"]]
        games = list(run_grid(matchup, pairs, args.runner, args.jobs, args.address, ordered=True))
    except KeyboardInterrupt:  # (the matchups need every run's actors, held in memory: no summary from a part)
        done = f"{len(rows)} finished runs" + (" (their rows are printed above)" if rows else "")
        kept = (f"; the first seed's policy.pt and selfplay.gif of each method that finished it are in {args.out}"
                if args.out is not None and any(row["seed"] == args.seeds[0] for row in rows) else "")
        print(f"interrupted after {done}: summary.json is written only once every run and matchup is done, so it was "
              f"not{kept}; the same command trains the grid again", file=sys.stderr)
        return 130
    lines = selfplay_table(rows) + [""] + crossplay_table(games)
    print("\n".join(lines))
    for method in args.methods:
        mine = [row for row in rows if row["method"] == method]
        print(f"SUMMARY method={method} env={ENV_ID} seeds={len(mine)} episodes={args.episodes} "
              f"selfplay_adversary_return={np.mean([r['adversary_return'] for r in mine]):.1f} "
              f"selfplay_adversary_distance={np.mean([r['adversary_distance'] for r in mine]):.3f}")
    print(f"total wall-clock {time.perf_counter() - start:.0f} s with {args.jobs} jobs")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        command = " ".join(["benchmarks/competition.py", *drop_runner_options(sys.argv[1:] if argv is None else argv)])
        runs = [{key: value for key, value in row.items() if key != "actors"} for row in rows]
        atomic_write_text(args.out / "summary.json", json.dumps(
            {"command": command, "env": ENV_ID, "episodes": args.episodes, "table": lines, "runs": runs,
             "matchups": games}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
