"""MADDPG against independent DDPG on the MADDPG paper's cooperative navigation (mpe2 simple_spread_v3), continuous
actions, several seeds, the paper's metrics. Prints a row per run, a table and one SUMMARY line per method.

    .venv/bin/python benchmarks/particle.py [--seeds 0 1 2 3 4] [--episodes 4000] [--jobs 2]
        [--out results/particle/simple_spread_v3]

Both learners train with ``loops.train`` with the same config, seeds and budget; they differ only in what each
critic sees (MADDPG: every agent's observation and action; independent DDPG: its own). ``--methods inferred`` trains
MADDPG whose critic targets use each agent's own approximations of the others' policies (``marl_edu.learners.inference``);
``--methods team`` MADDPG whose every critic learns the team reward (the sum over agents) instead of its own agent's.
Every run's final policy
(no noise) plays the same 100 evaluation episodes (``evaluate_particle``, start states from seed 10000), which also
score two reference policies: uniform random forces and standing still.

Figures per run: the mean team return (sum over the 3 agents and 25 steps), the landmark distance (sum over the 3
landmarks of the distance to the nearest agent) averaged over the steps and at the last step, and the collisions
(touching pairs) per step; beside them the sampled policy's mean team return over the same 100 episodes
(``sampled``, ``sampled_as``: MADDPG's kin with their last exploration noise, PPO drawing from its Gaussian;
``sampled_gap_se``: the standard error of its gap to the noise-free return, episode by episode) and its periodic
evaluations (``sampled_evaluations``, each on its noise-free evaluation's 10 episodes). With --out: each run's figures,
config and evaluations during training in <method>/seed<S>.json as it ends (the mark of a finished run), for the lowest
seed <method>/policy.pt (its final actors) and <method>/greedy.gif, and once every run has finished summary.json (the
table, the references and every run's record). ``--reuse`` keeps each run whose record is in --out (the same method,
seed, budget and config; anything else is refused), so a grid of hours goes over several sittings: Ctrl-C ends one
with a line saying how many finished runs' files are on disk and exit status 130.
The runs go where compare.py's go (``--runner``, ``--address``: ``marl_edu.runs.grid``), one torch thread each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import numpy as np

from marl_edu.base.files import atomic_write_text
from marl_edu.learners.continuous import ContinuousIDDPG, ContinuousMADDPG
from marl_edu.learners.inference import InferringMADDPG
from marl_edu.learners.ppo_continuous import ContinuousIPPO, ContinuousMAPPO
from marl_edu.learners.table import algo_name_of_class, config_class, config_with
from marl_edu.runs.grid import (add_runner_options, check_options, check_runner_options,
                                drop_runner_options, interrupted, keeps_files, open_out, read_record,
                                require_paired, run_files, run_grid, write_files)
from marl_edu.runs.seed import particle_figures, rounded, run_seed, save_artifacts
from marl_edu.envs.particle import PARTICLE_EVAL_SEED
from marl_edu.training.evaluation import evaluate_particle

ENV_ID = "simple_spread_v3"


def short_name(learner: type) -> str:
    """A continuous learner's method name here: its name in the table without ``_continuous`` (its discrete twin's)."""
    return algo_name_of_class(learner).removesuffix("_continuous")


METHODS = {  # short name -> (learners.LEARNERS key, config values other than the defaults)
    short_name(ContinuousMADDPG): (algo_name_of_class(ContinuousMADDPG), {}),
    short_name(ContinuousIDDPG): (algo_name_of_class(ContinuousIDDPG), {}),
    # MADDPG whose critics bootstrap from inferred policies (paper 4.2)
    "inferred": (algo_name_of_class(InferringMADDPG), {}),
    # MADDPG whose every critic learns the team's summed reward
    "team": (algo_name_of_class(ContinuousMADDPG), {"team_reward": True}),
    # PPO with a Gaussian policy and a centralised V(s), from whole episodes
    short_name(ContinuousMAPPO): (algo_name_of_class(ContinuousMAPPO), {}),
    short_name(ContinuousIPPO): (algo_name_of_class(ContinuousIPPO), {}),  # ... with each agent's V on its own obs
}
DEFAULT_METHODS = [short_name(ContinuousMADDPG), short_name(ContinuousIDDPG)]
EVAL_EPISODES = 100


def method_config(method: str, pairs: list[str] = ()):
    """The config ``method`` trains with: its learner's defaults, then the method's values, then ``pairs`` (``--set``'s
    ``field=value``), read by ``table.config_with`` (ValueError names a field the learner does not have or a value its
    field cannot take)."""
    algo, overrides = METHODS[method]
    return config_with(config_class(algo), [f"{key}={value}" for key, value in overrides.items()] + list(pairs))


def run_one(job: tuple) -> tuple[dict, dict[str, bytes]]:
    """Train one learner for one seed (one torch thread, ``marl_edu.runs.seed.run_seed``) and score its final policy
    (``evaluate_particle``). ``job``: ``(method, seed, episodes, keep_artifacts, pairs)``; ``pairs``: ``--set``'s
    field=value on top of the method's config. Returns its record (method, seed, the score's fields, counts, speed,
    config and evaluations during training: OUT/METHOD/seed<S>.json and a row of summary.json's runs) and, with
    ``keep_artifacts`` (the lowest seed, with --out: ``runs.grid.keeps_files``), its policy and GIF as bytes
    (``run_files``, ``save_artifacts``)."""
    method, seed, episodes, keep_artifacts, pairs = job
    algo, _ = METHODS[method]
    config = method_config(method, pairs)  # (the inferred learner's defaults add approx_lr and entropy_coef)
    run, figures = run_seed(algo, ENV_ID, episodes, config, seed, eval_every=200, threads=1)  # evaluations: 10
    # episodes each
    score = particle_figures(run.agent, ENV_ID, EVAL_EPISODES, PARTICLE_EVAL_SEED, threads=1)  # sampled: the same
    # episodes
    files = run_files(lambda folder: save_artifacts(run, ENV_ID, folder, threads=1)) if keep_artifacts else {}
    row = rounded({**figures, **{key: score[key] for key in ("sampled", "sampled_starts", "sampled_gap_se")}})
    return {"method": method, "seed": seed,
            **{key: score[key] for key in ("team_return", "landmark_distance", "final_landmark_distance",
                                           "collisions_per_step", "agent_returns")},
            **{key: row[key] for key in ("sampled", "sampled_starts", "sampled_gap_se", "sampled_as", "episodes",
                                         "env_steps", "updates", "wall_s", "steps_per_s")},
            "config": dataclasses.asdict(config), "evaluations": row["evaluations"],
            "sampled_evaluations": row["sampled_evaluations"]}, files


# a run's record as main writes it (OUT/METHOD/seed<S>.json): what --reuse trusts
RECORD = {"method": str, "seed": int, "team_return": float, "landmark_distance": float, "final_landmark_distance": float,
          "collisions_per_step": float, "agent_returns": list, "sampled": float, "sampled_starts": str,
          "sampled_gap_se": float, "sampled_as": str, "episodes": int, "env_steps": int,
          "updates": int, "wall_s": float, "steps_per_s": float, "config": dict, "evaluations": list,
          "sampled_evaluations": list}


def kept_record(out, method: str, seed: int, episodes: int, pairs: list[str]) -> dict | None:
    """The finished run of ``method`` with ``seed`` in ``out`` (``out/method/seed<S>.json``), or None if there is none.
    ValueError in one line (``runs.grid.read_record``) for a file there that is not this script's record of exactly
    that run: the same method, seed and config (the learner's, the method's and ``--set``'s values; the first field
    that differs is named), and a budget of ``episodes`` (a run of ``n_envs`` lock-step env copies may overshoot it by
    fewer than ``n_envs``)."""
    path = out / method / f"seed{seed}.json"
    if not path.exists():
        return None
    config = json.loads(json.dumps(dataclasses.asdict(method_config(method, pairs))))  # (as the record holds it)
    row = read_record(path, RECORD, {"method": method, "seed": seed})
    for field, value in config.items():
        if row["config"].get(field, "nothing") != value:
            raise ValueError(f"--reuse: {path} is another run's record: its config's {field!r} is "
                             f"{str(row['config'].get(field, 'nothing'))[:40]}, this run's {value}; move it away or run "
                             f"without --reuse")
    if not episodes <= row["episodes"] < episodes + config.get("n_envs", 1):
        raise ValueError(f"--reuse: {path} is another run's record: its 'episodes' is {row['episodes']}, this "
                         f"run's budget {episodes}; move it away or run without --reuse")
    require_paired(row, path)  # (its sampled figure on its noise-free figure's episodes, with the gap's se)
    return row


def reference_scores() -> dict[str, dict]:
    """The same 100 evaluation episodes played by uniform random forces and by standing still."""
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
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=DEFAULT_METHODS)
    parser.add_argument("--set", dest="pairs", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="config values on top of every method's (tuning: seeds 100+)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default: 2); with "
                                                             "--address, the cluster's CPUs decide")
    add_runner_options(parser)
    parser.add_argument("--out", type=str, default=None, help="write each run's record, summary.json, policies and "
                                                                  "GIFs here")
    parser.add_argument("--reuse", action="store_true", help="keep every run whose record is in --out (train the rest)")
    args = parser.parse_args(argv)
    check_options(parser, args)
    check_runner_options(parser, args)
    try:
        for method in args.methods:
            method_config(method, args.pairs)
    except ValueError as error:
        parser.error(f"--set {error}")
    if args.reuse and args.out is None:
        parser.error("--reuse needs --out, the folder whose finished runs it keeps")
    args.out, held = open_out(parser, args.out) if args.out is not None else (None, None)  # (held to the end)
    jobs = [(method, seed) for seed in args.seeds for method in args.methods]
    try:
        kept = {job: row for job in jobs if args.reuse
                and (row := kept_record(args.out, *job, args.episodes, args.pairs)) is not None}
    except ValueError as error:
        parser.error(str(error))
    start = time.perf_counter()
    print(f"{len(jobs) - len(kept)} runs of {len(jobs)} to do")
    print(f"{'method':>7} {'seed':>4} {'return':>7} {'distance':>8} {'final':>6} {'coll/step':>9} {'wall_s':>7}")
    rows = list(kept.values())
    todo = [(method, seed, args.episodes, bool(args.out) and keeps_files(args.out / method, seed, args.seeds),
             args.pairs) for method, seed in jobs if (method, seed) not in kept]
    try:  # each run as it ends (not in order: a finished run is written at once, not after the ones before it)
        for row, files in run_grid(run_one, todo, args.runner, args.jobs, args.address):
            if args.out:  # each atomically, the record last: the mark of a finished run
                record = (json.dumps(row) + "\n").encode()
                write_files(args.out / row["method"], {**files, f"seed{row['seed']}.json": record})
            rows.append(row)
            print(f"{row['method']:>7} {row['seed']:>4} {row['team_return']:7.1f} {row['landmark_distance']:8.3f} "
                  f"{row['final_landmark_distance']:6.3f} {row['collisions_per_step']:9.3f} {row['wall_s']:7.1f}",
                  flush=True)
    except KeyboardInterrupt:  # (Ctrl-C: one line, every finished run's record already written)
        if args.out is None:
            print(f"interrupted: {len(rows)} of {len(jobs)} runs finished; without --out nothing was written",
                  file=sys.stderr)
            return 130
        return interrupted(len(rows), args.out)
    rows.sort(key=lambda row: jobs.index((row["method"], row["seed"])))  # the summary lists them in the jobs' order
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
        given = sys.argv[1:] if argv is None else argv  # (--reuse and --jobs change no run's results)
        command = " ".join(["benchmarks/particle.py", *drop_runner_options([a for a in given if a != "--reuse"],
                                                                           also=("--jobs",))])
        atomic_write_text(args.out / "summary.json", json.dumps(
            {"command": command, "env": ENV_ID, "episodes": args.episodes, "table": lines, "references": references,
             "runs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
