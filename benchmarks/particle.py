"""MADDPG against independent DDPG on the MADDPG paper's cooperative navigation (mpe2 simple_spread_v3), continuous
actions, several seeds, the paper's metrics. Prints a row per run, a table and one SUMMARY line per method.

    .venv/bin/python benchmarks/particle.py [--seeds 0 1 2 3 4] [--episodes 4000] [--jobs 2]
        [--out results/particle/simple_spread_v3]

Both learners are ``train_continuous`` with the same config, seeds and budget; they differ only in what each
critic sees (MADDPG: every agent's observation and action; independent DDPG: its own). ``--methods inferred`` trains
MADDPG whose critic targets use each agent's own approximations of the others' policies (``marl_edu.learners.inference``);
``--methods team`` MADDPG whose every critic learns the team reward (the sum over agents) instead of its own agent's.
Every run's final policy
(no noise) plays the same 100 evaluation episodes (``evaluate_particle``, start states from seed 10000), which also
score two reference policies: uniform random forces and standing still.

Figures per run: the mean team return (sum over the 3 agents and 25 steps), the landmark distance (sum over the 3
landmarks of the distance to the nearest agent) averaged over the steps and at the last step, and the collisions
(touching pairs) per step. With --out: summary.json (the table, the references, and every run's figures, config and
evaluations during training) and, for the first seed, <method>/policy.pt (its final actors) and <method>/greedy.gif.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import pathlib
import sys
import time

import numpy as np
import torch

ENV_ID = "simple_spread_v3"
METHODS = {  # short name -> (learners.LEARNERS key, config values other than the defaults)
    "maddpg": ("maddpg_continuous", {}), "iddpg": ("iddpg_continuous", {}),
    "inferred": ("maddpg_inferred", {}),  # MADDPG whose critics bootstrap from inferred policies (paper 4.2)
    "team": ("maddpg_continuous", {"team_reward": True}),  # MADDPG whose every critic learns the team's summed reward
    "mappo": ("mappo_continuous", {}),  # PPO with a Gaussian policy and a centralised V(s), from whole episodes
    "ippo": ("ippo_continuous", {}),  # ... with each agent's V on its own observation
}
EVAL_EPISODES = 100


def run_one(method: str, seed: int, episodes: int, out: str | None, first_seed: bool, pairs: list[str] = ()) -> dict:
    """Train one learner for one seed (one torch thread, ``marl_edu.runs.seed.run_seed``) and score its final policy
    (``evaluate_particle``); for the first seed with ``out``, save its policy and a GIF. Returns its row of
    summary.json's runs: method, seed, the score's fields, counts, speed, config and evaluations during training.
    ``pairs``: ``--set``'s field=value on top of the method's config."""
    torch.set_num_threads(1)
    from marl_edu.training.checkpoints import save_policy
    from marl_edu.runs.seed import rounded, run_seed
    from sweep import parse_config
    from marl_edu.training.loops import evaluate_particle

    algo, overrides = METHODS[method]
    config = parse_config(algo, [f"{key}={value}" for key, value in overrides.items()] + list(pairs))  # the defaults
    # and the method's values (the inferred learner's adds approx_lr and entropy_coef), then --set's
    run, figures = run_seed(algo, ENV_ID, episodes, config, seed, eval_every=200)  # evaluations: 10 episodes each
    score = evaluate_particle(run.agent.greedy_policy(), ENV_ID, EVAL_EPISODES)
    if out and first_seed:
        from marl_edu.envs.make import make_env
        from marl_edu.data.rollout import run_episode
        from marl_edu.base.viz import downscale, save_gif

        folder = pathlib.Path(out) / method
        save_policy(run.agent, ENV_ID, folder / "policy.pt")
        frames = run_episode(make_env(ENV_ID, seed=0), run.agent.greedy_policy(), record_frames=True).frames
        save_gif([downscale(f, 4) for f in frames], folder / "greedy.gif", fps=8, scale=1)
    row = rounded(figures)
    return {"method": method, "seed": seed, **dataclasses.asdict(score),
            **{key: row[key] for key in ("episodes", "env_steps", "updates", "wall_s", "steps_per_s")},
            "config": dataclasses.asdict(config), "evaluations": row["evaluations"]}


def reference_scores() -> dict[str, dict]:
    """The same 100 evaluation episodes played by uniform random forces and by standing still."""
    from marl_edu.training.loops import evaluate_particle

    rng = np.random.default_rng(0)
    policies = {"random": lambda obs: rng.uniform(-1, 1, size=(obs.shape[0], 2)).astype(np.float32),
                "still": lambda obs: np.zeros((obs.shape[0], 2), dtype=np.float32)}
    return {name: dataclasses.asdict(evaluate_particle(policy, ENV_ID, EVAL_EPISODES))
            for name, policy in policies.items()}


def table(rows: list[dict], references: dict[str, dict]) -> list[str]:
    """A markdown table: per method, mean (and range over seeds) of every figure; the references below."""
    lines = ["| policy | team return | landmark distance (mean over steps) | at the last step | collisions per step "
             "| seeds | wall-clock per run |", "|---|---|---|---|---|---|---|"]
    for method in METHODS:
        mine = [row for row in rows if row["method"] == method]
        if not mine:
            continue
        cells = []
        for key, digits in (("team_return", 1), ("landmark_distance", 3), ("final_landmark_distance", 3),
                            ("collisions_per_step", 3)):
            values = np.array([row[key] for row in mine])
            cells.append(f"{values.mean():.{digits}f} ({values.min():.{digits}f} to {values.max():.{digits}f})")
        walls = [row["wall_s"] for row in mine]
        lines.append(f"| {method} | {' | '.join(cells)} | {len(mine)} | {min(walls):.0f}-{max(walls):.0f} s |")
    for name, score in references.items():
        lines.append(f"| {name} (reference) | {score['team_return']:.1f} | {score['landmark_distance']:.3f} | "
                     f"{score['final_landmark_distance']:.3f} | {score['collisions_per_step']:.3f} | - | - |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=4000, help="training episodes per run (default: 4000)")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=["maddpg", "iddpg"])
    parser.add_argument("--set", dest="pairs", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="config values on top of every method's (tuning: seeds 100+)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default: 2)")
    parser.add_argument("--out", type=pathlib.Path, default=None, help="write summary.json, policies and GIFs here")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.jobs < 1 or len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0:
        parser.error("--episodes and --jobs must be positive, --seeds distinct non-negative ints")
    from sweep import parse_config

    try:
        for method in args.methods:
            parse_config(METHODS[method][0], args.pairs)
    except ValueError as error:
        parser.error(str(error))
    start = time.perf_counter()
    print(f"{'method':>7} {'seed':>4} {'return':>7} {'distance':>8} {'final':>6} {'coll/step':>9} {'wall_s':>7}")
    rows = []
    jobs = [(method, seed) for seed in args.seeds for method in args.methods]
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, method, seed, args.episodes, str(args.out) if args.out else None,
                               seed == args.seeds[0], args.pairs) for method, seed in jobs]
        for future in futures:
            row = future.result()
            rows.append(row)
            print(f"{row['method']:>7} {row['seed']:>4} {row['team_return']:7.1f} {row['landmark_distance']:8.3f} "
                  f"{row['final_landmark_distance']:6.3f} {row['collisions_per_step']:9.3f} {row['wall_s']:7.1f}",
                  flush=True)
    references = reference_scores()
    lines = table(rows, references)
    print("\n".join(lines))
    for method in args.methods:
        mine = [row for row in rows if row["method"] == method]
        print(f"SUMMARY method={method} env={ENV_ID} seeds={len(mine)} episodes={args.episodes} "
              f"team_return={np.mean([r['team_return'] for r in mine]):.1f} "
              f"landmark_distance={np.mean([r['landmark_distance'] for r in mine]):.3f} "
              f"collisions_per_step={np.mean([r['collisions_per_step'] for r in mine]):.3f}")
    print(f"total wall-clock {time.perf_counter() - start:.0f} s with {args.jobs} jobs")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        command = "benchmarks/particle.py " + " ".join(sys.argv[1:] if argv is None else argv)
        (args.out / "summary.json").write_text(json.dumps({"command": command, "env": ENV_ID,
                                                           "episodes": args.episodes, "table": lines,
                                                           "references": references, "runs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
