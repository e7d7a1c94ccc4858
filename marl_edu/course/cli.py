"""The command line, ``python -m marl_edu``: arguments checked before training, one run per seed, reporting.

Any learner of ``learners.LEARNERS``, a discrete one on a ma-gym env or a continuous one on a particle env
(cooperative navigation, physical deception), with every figure saved in ``--out``: ``runs.json`` (each seed's figures
and periodic evaluations, the config, the command, the run's status), ``returns.csv``, ``curve.png``, and per seed
``policy.pt`` and ``greedy.gif``. Nothing is lost: every argument and the output folder are checked before training,
each seed's files are written (atomically) when it finishes, Ctrl-C saves the seed in progress (``resume``; the Switch
envs only) and ``--resume OUT`` continues it to the same result. ``--replay POLICY`` plays a saved policy without
training: its figures and, with ``--gif``, a GIF.

One seed's training, figures and files are ``runs``' (which the benchmarks and widgets share); this module is the
command line only: its arguments, the run folder's log, Ctrl-C and ``--resume``, the console table and ``--replay``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import pathlib
import shlex
import signal
import sys
import typing
from typing import IO

import numpy as np
import torch

from marl_edu.base.threads import MAX_THREADS
from marl_edu.envs.make import family
from marl_edu.envs.particle import PARTICLE_EVAL_SEED
from marl_edu.learners.table import LEARNERS, algo_name, check_env, config_class, entry
from marl_edu.runs.folder import RunLog, open_folder, overwritten, probe_writable, remove_run, remove_temporaries
from marl_edu.runs.seed import (SCORE_EPISODES, known_optimum, load_replay_policy, particle_figures, replay_figures,
                           rounded, run_seed, solve_line, write_gif)
from marl_edu.training.competition import DECEPTION
from marl_edu.training.evaluation import sampled_as
from marl_edu.training.loops import TrainResult
from marl_edu.training.resume import BeforeTraining, StopOnSignal, TrainingInterrupted, seed_checkpoint


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments stop with one line on stderr and exit status 2 (argparse would print the usage too)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


EPILOG = """\
outputs in --out: runs.json (every seed's figures and periodic evaluations, the config and the command), returns.csv
(every training episode's team return), curve.png (the periodic evaluations; on Switch against the exact optimum),
seed<S>/policy.pt (the final actors) and seed<S>/greedy.gif (one episode of them, greedy or without noise), each
written when its seed finishes. A discrete learner's row: the greedy and sampled team returns (where episodes start at
random, both on the same episodes, with the standard error of their gap); a continuous learner's: the noise-free score
over 100 episodes (team return; on cooperative navigation the landmark distance and collisions; every agent's return;
an ensemble's: the mean over its sub-policies) and the sampled team return on the same episodes (MADDPG's kin with
their last exploration noise, continuous PPO drawing from its Gaussian). Ctrl-C stops with exit status 130, the
finished seeds on disk. The seed in progress is saved (seed<S>/run.pt) and --resume OUT continues it to the same
result, on every environment.
examples:
  python -m marl_edu --algo coma --env Switch2-v0 --seeds 0 1 2 --out results/tmp/coma
  python -m marl_edu --algo maddpg_continuous --env simple_spread_v3 --out results/tmp/navigation
  python -m marl_edu --algo maddpg_ensemble --env simple_adversary_v3 --out results/tmp/deception
  python -m marl_edu --replay results/tmp/coma/seed0/policy.pt --gif coma.gif"""


@dataclasses.dataclass(frozen=True)
class ConfigOption:
    """One of the learners' options: it sets the field ``field`` of the config of every learner in ``takers``
    (the learner's config dataclass owns the default and the check). An option takes a value (``kind``: int, float
    or a tuple of choices); a switch (``sets`` not None) takes none and sets the field to ``sets``."""

    option: str
    field: str
    kind: type | tuple
    sets: object
    about: str
    takers: tuple[str, ...]


def config_options() -> list[ConfigOption]:
    """The learners' options, from their config dataclasses' fields (``learners.LEARNERS``, in its order): a field
    whose metadata has a ``"help"`` is an option ``--field-name`` (or metadata ``"option"``) of the field's type (or
    metadata ``"choices"``); with a ``"switch"`` (a bool field) it is that switch, setting the field to the other
    value than the config's default. An option applies to the learners whose config declares it."""
    found: dict[str, ConfigOption] = {}
    for algo, row in LEARNERS.items():
        kinds = typing.get_type_hints(row.config)
        for field in dataclasses.fields(row.config):
            if "help" not in field.metadata:
                continue
            switch = field.metadata.get("switch")
            option = switch or field.metadata.get("option", "--" + field.name.replace("_", "-"))
            kind = tuple(field.metadata["choices"]) if "choices" in field.metadata else kinds[field.name]
            seen = found.get(option)
            takers = (*seen.takers, algo) if seen else (algo,)
            found[option] = ConfigOption(option, field.name, kind, None if switch is None else not field.default,
                                         field.metadata["help"], takers)
    return list(found.values())


def _dest(option: str) -> str:
    return option[2:].replace("-", "_")


def _defaults(algo: str) -> dict:
    """Learner ``algo``'s config defaults, by field."""
    return {field.name: getattr(entry(algo).config(), field.name) for field in dataclasses.fields(entry(algo).config)}


def _continuous_learners() -> list[str]:
    return [algo for algo, row in LEARNERS.items() if row.continuous]


def _who(algos) -> str:
    """``["maddpg", "iddpg", <every continuous learner>]`` -> ``"maddpg, iddpg and the continuous learners"``; the
    continuous learners of MADDPG's family (forces, from a replay of transitions) together are "the continuous
    MADDPG learners"."""
    every = _continuous_learners()
    maddpg_family = [algo for algo in every if entry(algo).replay == "transitions"]
    continuous = [algo for algo in algos if algo in every]
    group = (["the continuous learners"] if continuous == every else
             ["the continuous MADDPG learners"] if continuous == maddpg_family else continuous)
    names = [algo for algo in algos if algo not in every] + group
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _grouped(value_of: dict[str, object]) -> str:
    """Learners' values, grouped: ``"0.99 coma/central_qv/central_v/iac, 0.95 others"`` (the commonest last)."""
    by_value: dict = {}
    for algo, value in value_of.items():
        by_value.setdefault(value, []).append(algo)
    values = sorted(by_value, key=lambda value: len(by_value[value]))
    if len(values) == 1:
        return str(values[0])
    return ", ".join([f"{value} {'/'.join(by_value[value])}" for value in values[:-1]] + [f"{values[-1]} others"])


def _option_help(option: ConfigOption) -> str:
    """An option's help: what it is, whom it applies to (unless all) and, for a value, the configs' defaults."""
    whom = "" if len(option.takers) == len(LEARNERS) else f"{_who(option.takers)}: "
    defaults = {algo: _defaults(algo)[option.field] for algo in option.takers}
    default = "" if option.sets is not None else f" (default: {_grouped(defaults)})"
    return (whom + option.about + default).replace("%", "%%")


def _parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="python -m marl_edu", formatter_class=argparse.RawDescriptionHelpFormatter,
                       allow_abbrev=False,  # (an abbreviated option would slip past --resume's and --replay's checks)
                       description="Train one of the course's learners, one run per seed: a discrete one on a ma-gym "
                                   "environment or a continuous one on a particle environment; or replay a saved "
                                   "policy without training (--replay).", epilog=EPILOG)
    p.add_argument("--algo", choices=list(LEARNERS),
                   help="; ".join(f"{algo}: {row.about}" for algo, row in LEARNERS.items()))
    p.add_argument("--env", default=None,
                   help="a ma-gym environment id for the discrete learners (default: Switch2-v0; Switch2-v2 adds the "
                        "step count to every observation), a particle one for the continuous learners: "
                        "simple_spread_v3 (cooperative navigation, the default) or simple_adversary_v3 (physical "
                        "deception); with --replay: the env to play (default: the policy's own)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per seed (default: 0)")
    budgets = _grouped({algo: row.episodes for algo, row in LEARNERS.items()})
    p.add_argument("--episodes", type=int, default=None,
                   help=f"training episodes per run (default: {budgets}; on-policy runs round up to whole batches of "
                        "--n-envs episodes); with --replay: the episodes played (default: 100)")
    p.add_argument("--out", default=None, help="output folder (default: results/tmp/ALGO-ENV); one that holds another "
                                                "run is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out: remove the files its runs.json says it wrote (runs.json, "
                        "returns.csv, curve.png, and policy.pt, greedy.gif and run.pt in its seeds' folders); "
                        "nothing else there is touched")
    p.add_argument("--resume", metavar="OUT", default=None,
                   help="continue the interrupted run in folder OUT with its own arguments: finished seeds are kept, "
                        "the seed in progress continues from its checkpoint to the same result as an uninterrupted "
                        "run; give no other option but --no-progress (and --threads, which must be the "
                        "run's own)")
    p.add_argument("--checkpoint-every", type=float, default=None, metavar="SECONDS",
                   help="save the seed in progress at most this often, and on Ctrl-C (default: 60)")
    options = config_options()
    for option in (option for option in options if option.sets is None):
        typed = {"choices": list(option.kind)} if isinstance(option.kind, tuple) else {"type": option.kind}
        p.add_argument(option.option, default=None, help=_option_help(option), **typed)
    for option in (option for option in options if option.sets is not None):
        p.add_argument(option.option, action="store_true", help=_option_help(option))
    evaluations = _grouped({algo: row.eval_every for algo, row in LEARNERS.items()})
    p.add_argument("--eval-every", type=int, default=None,
                   help="episodes between evaluations: one greedy episode for the discrete learners, the mean of 10 "
                        "noise-free ones for the continuous learners, each beside the mean of 10 sampled ones "
                        f"(default: {evaluations})")
    p.add_argument("--final-episodes", type=int, default=None, metavar="N",
                   help=f"episodes the final figures of each seed average over (default: {SCORE_EPISODES}): the "
                        "sampled team return (and off Switch the greedy one) of a discrete learner, the noise-free "
                        "score and the sampled team return of a continuous one")
    p.add_argument("--replay", metavar="POLICY", default=None,
                   help="play a saved policy.pt without training and print its figures: discrete, the greedy team "
                        "return (one episode, exact) and the mean sampled one over --episodes; continuous, the "
                        "noise-free score and the sampled team return over --episodes (as training's final "
                        "figures); takes --env, --episodes, --seed, --gif")
    p.add_argument("--seed", type=int, default=None,
                   help="with --replay: the seed of the sampled actions (discrete, default 0; where episodes start "
                        "at random they are the greedy figure's, from the task's evaluation seed) or of the start "
                        f"states and draws (continuous, default {PARTICLE_EVAL_SEED}, the ones training's final "
                        "figures use)")
    p.add_argument("--gif", metavar="OUT.gif", default=None,
                   help="with --replay: write a GIF of one greedy (or noise-free) episode here, the episode "
                        "training's greedy.gif shows")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run (default: 1; more rarely helps "
                                                          "networks this small)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def config_from_args(args: argparse.Namespace):
    """The learner's config with the options given on the command line (``config_options``); ValueError names a bad
    value (by the option the user typed) or an option that does not apply to ``args.algo``."""
    values, options = {}, config_options()
    for option in options:
        given = getattr(args, _dest(option.option))
        if given is None or given is False:  # (0 is given)
            continue
        if args.algo not in option.takers:
            raise ValueError(f"{option.option} applies to {_who(option.takers)} only, not {args.algo}")
        values[option.field] = given if option.sets is None else option.sets
    if args.per_agent_reward and entry(args.algo).learner.team_reward_only:
        raise ValueError(f"--per-agent-reward does not apply to {args.algo}: its one V(s) has no agent id")
    try:
        return config_class(args.algo)(**values).validate()
    except ValueError as error:  # the config names its field: say the option the user typed instead
        field, _, rest = str(error).partition(" ")
        option = next((option.option for option in options if option.field == field and option.sets is None), field)
        raise ValueError(f"{option} {rest}") from None


# Bounds of the command line's own numbers, far above any run this course makes, so that a typo fails in one line
# instead of allocating or waiting for ever (the configs bound their own fields: validate.LIMITS)
LIMITS = {"seeds": 2**31 - 1, "episodes": 10_000_000, "threads": MAX_THREADS, "replay episodes": 100_000,
          "final episodes": 100_000}


def check_limits(args: argparse.Namespace) -> None:
    """ValueError naming a seed, episode count or thread count outside ``LIMITS`` (the configs check the rest)."""
    if len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0 or max(args.seeds) > LIMITS["seeds"]:
        raise ValueError(f"--seeds must be distinct ints in [0, {LIMITS['seeds']}], got {args.seeds}")
    for name in ("episodes", "threads"):
        value = getattr(args, name)
        if value is not None and value > LIMITS[name]:
            raise ValueError(f"--{name} must be at most {LIMITS[name]:,}, got {value:,}")
    if args.final_episodes is not None and not 1 <= args.final_episodes <= LIMITS["final episodes"]:
        raise ValueError(f"--final-episodes must be between 1 and {LIMITS['final episodes']:,}, got "
                         f"{args.final_episodes:,}")
    if args.checkpoint_every is not None and not args.checkpoint_every > 0:
        raise ValueError(f"--checkpoint-every must be a positive number of seconds, got {args.checkpoint_every}")


def check_budget(args: argparse.Namespace) -> tuple[int, int]:
    """``(episodes, eval_every)``: the options or the learner's defaults; ValueError if out of range."""
    episodes = entry(args.algo).episodes if args.episodes is None else args.episodes
    if episodes < 1:
        raise ValueError(f"--episodes must be a positive number of episodes, got {episodes}")
    eval_every = min(entry(args.algo).eval_every, episodes) if args.eval_every is None else args.eval_every
    if not 1 <= eval_every <= episodes:
        raise ValueError(f"--eval-every must be between 1 and --episodes ({episodes}), got {eval_every}")
    return episodes, eval_every


def check_device(name: str) -> torch.device:
    """The torch device ``name`` if this machine has it (cpu, cuda[:k], mps), else ValueError saying what it has."""
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    available = ["cpu"] + [f"cuda:{k}" for k in range(torch.cuda.device_count())]
    available += ["mps"] if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available() else []
    if device is not None and device.type == "cuda" and torch.cuda.device_count() > (device.index or 0):
        return device
    if device is not None and str(device) in available:
        return device
    raise ValueError(f"--device {name}: not a device this machine has; choose one of {', '.join(available)}")


def _recorded_seeds(parser: argparse.ArgumentParser, folder: pathlib.Path) -> list[int]:
    """The seeds of the run recorded in ``folder``'s runs.json (its --seeds and every seed it has a row for): what
    ``--overwrite`` may remove the files of. [] without a runs.json; ValueError for one that cannot be read."""
    path = folder / "runs.json"
    if not path.is_file():
        return []
    try:
        saved = json.loads(path.read_text())
        with contextlib.redirect_stderr(io.StringIO()):  # (a bad argv would print argparse's message)
            seeds = parser.parse_args(saved["argv"]).seeds
        return sorted(set(seeds) | {int(row["seed"]) for row in saved["seeds"]})
    except (OSError, ValueError, KeyError, TypeError, SystemExit) as error:
        why = "bad arguments" if isinstance(error, SystemExit) else _one_line(error)
        raise ValueError(f"--out {path} is not a run's record that can be read ({why}), so --overwrite removes "
                         f"nothing there; move it or choose another --out") from None


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _resume_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]):
    """For ``--resume OUT``: the interrupted run's own arguments (from its runs.json) with this call's --no-progress
    and --threads, and the state it left: ``(args, runs.json's dict)``."""
    given = {arg.split("=")[0] for arg in argv if arg.startswith("--")} - {"--resume", "--no-progress", "--threads"}
    if given:
        raise ValueError(f"--resume takes the run's own arguments from its runs.json; got also "
                         f"{', '.join(sorted(given))}")
    path = pathlib.Path(args.resume) / "runs.json"
    try:
        saved = json.loads(path.read_text())
        old = parser.parse_args(saved["argv"])
    except (OSError, ValueError, KeyError, TypeError, SystemExit) as error:
        raise ValueError(f"--resume {args.resume}: no run of this command line to continue there ({path}: "
                         f"{_one_line(error) if not isinstance(error, SystemExit) else 'bad arguments'})") from None
    if saved.get("status") == "complete":
        raise ValueError(f"--resume {args.resume}: that run is complete; nothing to continue")
    old.no_progress, old.out = args.no_progress, args.resume
    if any(arg.split("=")[0] == "--threads" for arg in argv) and args.threads != old.threads:
        raise ValueError(f"--resume {args.resume}: the run trains with --threads {old.threads}, and torch's sums "
                         f"depend on the thread count, so --threads {args.threads} would change its results; leave "
                         f"--threads out")
    return old, saved


@dataclasses.dataclass
class _Plan:
    """A training run's checked arguments: the learner, env, config, budget, device, output folder, the exact optimum
    (Switch envs; else None), the runs.json of the run ``--resume`` continues (else None), the folder's lock and what
    ``--overwrite`` removes."""

    args: argparse.Namespace
    env_id: str
    config: object
    episodes: int
    eval_every: int
    final_episodes: int  # the episodes each seed's final figures average over
    device: torch.device
    out: pathlib.Path
    optimum: float | None
    saved: dict | None
    lock: IO | None  # the output folder's lock, held for the whole run
    removals: list[pathlib.Path]  # with --overwrite: the old run's files, removed before the new run writes

    @property
    def continuous(self) -> bool:
        return entry(self.args.algo).continuous


def _plan(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> _Plan:
    """Every argument and the output folder checked before any training: a bad one stops here in one line on
    stderr with exit status 2."""
    saved = None
    try:
        if args.resume is not None:
            args, saved = _resume_arguments(parser, args, argv)
        elif args.algo is None:
            raise ValueError("the following arguments are required: --algo (or --resume OUT, or --replay POLICY)")
        for name in ("seed", "gif"):
            if getattr(args, name) is not None:
                raise ValueError(f"--{name} applies to --replay only")
        env_id = check_env(args.algo, args.env)
        check_limits(args)
        config = config_from_args(args)
        episodes, eval_every = check_budget(args)
        if args.threads < 1:
            raise ValueError(f"--threads must be positive, got {args.threads}")
        device = check_device(args.device)
        out, held = open_folder(f"results/tmp/{args.algo}-{env_id}" if args.out is None else args.out,
                              args.overwrite, saved is not None)
        try:  # with --overwrite, only the old run's files, all checked before any is removed
            removals = [] if saved or not args.overwrite else overwritten(out, _recorded_seeds(parser, out), args.seeds)
        except ValueError:
            if held is not None:
                held.close()
            raise
    except (ValueError, RuntimeError, OSError) as error:
        parser.error(_one_line(error))
    final_episodes = SCORE_EPISODES if args.final_episodes is None else args.final_episodes
    return _Plan(args, env_id, config, episodes, eval_every, final_episodes, device, out, known_optimum(env_id), saved,
                 held, removals)


HEADER = ("command", "argv", "algo", "env", "episodes", "optimal", "final_episodes", "score_episodes", "score_seed",
          "config")


def _open_run(plan: _Plan, argv: list[str]) -> RunLog:
    """A new run's outputs (``--overwrite`` first removes only what a run of this command line writes), or for
    ``--resume`` the interrupted one's: its header, finished rows and returns."""
    if plan.saved is not None:  # (only the finished seeds' returns: a crash may have come between the two files)
        remove_temporaries(plan.out)  # what a kill between a write and its rename left
        finished = {str(row["seed"]) for row in plan.saved["seeds"]}
        for seed in (seed for seed in finished if seed.isdigit()):  # a kill after a seed was recorded, before its
            (plan.out / f"seed{seed}" / "run.pt").unlink(missing_ok=True)  # run.pt was removed
        lines = (plan.out / "returns.csv").read_text().splitlines()[1:] if (plan.out / "returns.csv").exists() else []
        header = {key: plan.saved[key] for key in HEADER if key in plan.saved}
        run_log = RunLog(plan.out, header, plan.optimum, plan.saved["seeds"],
                         [line for line in lines if line.split(",")[0] in finished], plan.args.threads)
        if finished:
            run_log.draw_curve()  # (a run saved by an earlier version may have recorded a seed before drawing it)
        run_log.write("running")
        return run_log
    remove_run(plan.out, plan.removals)
    remove_temporaries(plan.out)  # a run killed before its first runs.json, started again: its half-written files
    header = {"command": "python -m marl_edu " + shlex.join(argv), "argv": argv, "algo": plan.args.algo,
              "env": plan.env_id, "episodes": plan.episodes, "optimal": plan.optimum,
              "final_episodes": plan.final_episodes}
    if plan.continuous:  # what each row's final score is: evaluate_particle over these episodes, no noise
        header.update(score_episodes=plan.final_episodes, score_seed=PARTICLE_EVAL_SEED)
    run_log = RunLog(plan.out, {**header, "config": dataclasses.asdict(plan.config)}, plan.optimum,
                   threads=plan.args.threads)
    run_log.write("running")  # from now on the folder holds this run: --resume continues it even after a kill
    return run_log


def main(argv: list[str] | None = None) -> int:
    """``python -m marl_edu``: see ``--help``. Every argument and the output folder are checked before any
    training starts (one line on stderr, exit status 2); each seed's outputs are written when it finishes; Ctrl-C
    exits with status 130 (saving the seed in progress, which ``--resume OUT``
    continues);
    ``--replay POLICY`` plays a saved policy instead."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.replay is not None:
        return replay(parser, args)
    before = BeforeTraining()  # Ctrl-C or SIGTERM while the arguments are checked and the run's folder opened
    previous = {signum: signal.signal(signum, before) for signum in (signal.SIGINT, signal.SIGTERM)}
    plan = run_log = None
    try:
        plan = _plan(parser, args, argv)
        before.protect = True  # (--overwrite's removal and the run's first runs.json, whole)
        run_log = _open_run(plan, argv)
        before.protect = False
        before.stop_if_requested()
        _print_start(plan, run_log)
        return _train_seeds(plan, run_log)
    except OSError as error:  # a full disk or a folder gone read-only while the run's first files were written
        print(f"python -m marl_edu: error: {_one_line(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if run_log is None:
            print("interrupted before training started: nothing was written", file=sys.stderr)
        else:
            run_log.write("interrupted")
            print(f"interrupted before training started; start it with python -m marl_edu --resume "
                  f"{plan.out}", file=sys.stderr)
        return 128 + (before.signum or signal.SIGINT)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if plan is not None and plan.lock is not None:
            plan.lock.close()


def _columns(plan: _Plan) -> list[tuple[str, int, object]]:
    """The per-seed table's columns: ``(title, width, row -> text)``: a discrete learner's greedy and sampled returns
    and when it solved; a continuous learner's final noise-free and sampled team returns (navigation: distances and
    collisions; deception: the adversary's and a good agent's return); then the wall-clock and speed."""
    if not plan.continuous:
        solved_at = lambda r: "-" if r["episodes_to_solve"] is None else f"{r['episodes_to_solve']} ep"  # noqa: E731
        columns = [("greedy", 7, lambda r: f"{r['greedy']:.2f}"), ("sampled", 8, lambda r: f"{r['sampled']:.2f}"),
                   ("solved at", 10, solved_at)]
    else:
        columns = [("return", 7, lambda r: f"{r['team_return']:.2f}"), ("sampled", 8, lambda r: f"{r['sampled']:.2f}")]
        if plan.env_id == "simple_spread_v3":
            columns += [("distance", 8, lambda r: f"{r['landmark_distance']:.3f}"),
                        ("final", 6, lambda r: f"{r['final_landmark_distance']:.3f}"),
                        ("coll/step", 9, lambda r: f"{r['collisions_per_step']:.3f}")]
        if plan.env_id == DECEPTION:
            columns += [("adversary", 9, lambda r: f"{r['agent_returns'][0]:.2f}"),
                        ("good", 6, lambda r: f"{r['agent_returns'][1]:.2f}")]
    return [("seed", 4, lambda r: str(r["seed"])), *columns, ("wall_s", 7, lambda r: f"{r['wall_s']:.1f}"),
            ("steps/s", 8, lambda r: str(r["steps_per_s"]))]


def _print_row(plan: _Plan, row: dict | None = None) -> None:
    """One line of the per-seed table: a seed's row, or (None) the titles."""
    print(" ".join(f"{title if row is None else text(row):>{width}}" for title, width, text in _columns(plan)),
          flush=True)


def _print_start(plan: _Plan, run_log: RunLog) -> None:
    """What is trained and where it goes, the table's titles and the rows of the seeds a resumed run finished."""
    if plan.continuous:
        measure = (f"scored without noise and sampled ({sampled_as(plan.args.algo, plan.config)}) on "
                   f"{plan.final_episodes} episodes")
    else:
        measure = (f"exact optimum {'unknown' if plan.optimum is None else f'{plan.optimum:.2f}'}, sampled: "
                   f"{sampled_as(plan.args.algo)}")
    finished = sorted(row["seed"] for row in run_log.rows)
    print(f"{plan.args.algo} on {plan.env_id}, {plan.episodes} episodes per seed, {measure}, outputs in {plan.out}"
          + (f" (resumed: seeds {finished} already finished)" if plan.saved is not None and finished else ""))
    _print_row(plan)
    for row in run_log.rows:
        _print_row(plan, row)


def _summary(plan: _Plan, rows: list[dict]) -> str:
    """The SUMMARY line: median and min over seeds of the final return (greedy, or the noise-free score's), and
    what applies: how many seeds solved and the optimum (Switch), the mean landmark distance and collisions
    (navigation), the mean adversary's and good agent's return (deception)."""
    key = "team_return" if plan.continuous else "greedy"
    returns = np.array([row[key] for row in rows])
    parts = [f"median_return={np.median(returns):.2f}", f"min_return={returns.min():.2f}"]
    if not plan.continuous:
        solved = ("-" if plan.optimum is None else
                  f"{int((returns >= solve_line(plan.optimum)).sum())}/{len(rows)}")
        parts += [f"solved={solved}", f"optimal={'unknown' if plan.optimum is None else f'{plan.optimum:.2f}'}"]
    if plan.continuous and "landmark_distance" in rows[0]:
        parts += [f"landmark_distance={np.mean([row['landmark_distance'] for row in rows]):.3f}",
                  f"collisions_per_step={np.mean([row['collisions_per_step'] for row in rows]):.3f}"]
    if plan.continuous and plan.env_id == DECEPTION:
        parts += [f"adversary_return={np.mean([row['agent_returns'][0] for row in rows]):.2f}",
                  f"good_return={np.mean([row['agent_returns'][1] for row in rows]):.2f}"]
    return f"SUMMARY algo={plan.args.algo} env={plan.env_id} " + " ".join(parts)


def _train_one(plan: _Plan, seed: int, checkpoint) -> tuple[TrainResult, dict]:
    """Train one seed (``run_seed``) and measure it: its row as runs.json records it (``rounded``), a continuous
    learner's with its final noise-free score (``particle_figures``) after the seed."""
    run, figures = run_seed(plan.args.algo, plan.env_id, plan.episodes, plan.config, seed, plan.eval_every,
                            plan.optimum, progress=not plan.args.no_progress, device=plan.device,
                            checkpoint=checkpoint, threads=plan.args.threads, final_episodes=plan.final_episodes)
    replay = entry(plan.args.algo).replay  # (a learner without a replay updates on every batch it plays)
    if run.updates == 0 and replay == "episodes":
        print(f"warning: seed {seed} made no update ({len(run.episode_returns)} episodes, fewer than a batch of "
              f"{plan.config.batch_episodes}): the policy is untrained")
    elif run.updates == 0 and replay == "transitions":
        print(f"warning: seed {seed} made no update ({run.env_steps} env steps, fewer than the warm-up "
              f"{plan.config.warmup_steps} or a batch of {plan.config.batch_size}): the policy is untrained")
    if plan.continuous:
        figures = {"seed": seed, **particle_figures(run.agent, plan.env_id, plan.final_episodes,
                                                    threads=plan.args.threads), **figures}
    return run, rounded(figures)


def _checkpoint(plan: _Plan, seed: int):
    """The seed's ``RunCheckpoint`` (seed<S>/run.pt), holding the state a resumed run left if any
    (``resume.seed_checkpoint``)."""
    header = {"env": plan.env_id, "seed": seed, "algo": plan.args.algo, "episodes": plan.episodes,
              "eval_every": plan.eval_every, "config": dataclasses.asdict(plan.config)}
    every = 60.0 if plan.args.checkpoint_every is None else plan.args.checkpoint_every
    return seed_checkpoint(plan.out / f"seed{seed}" / "run.pt", header, every, resuming=plan.saved is not None)


def _train_seeds(plan: _Plan, run_log: RunLog) -> int:
    """Train every seed not finished yet, writing each one's outputs when it finishes; the exit status: 0 when all
    finished (then the SUMMARY line), 130 on Ctrl-C (``_interrupted``), 1 on an error during training."""
    ctrl_c, current = StopOnSignal(), None  # current: the seed in progress
    finished = {row["seed"] for row in run_log.rows}
    previous = {signum: signal.signal(signum, ctrl_c) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            for seed in [seed for seed in plan.args.seeds if seed not in finished]:
                current, ctrl_c.checkpoint = seed, _checkpoint(plan, seed)
                try:
                    run, row = _train_one(plan, seed, ctrl_c.checkpoint)
                except (IndexError, KeyError, TypeError, RuntimeError, AttributeError) as error:
                    if ctrl_c.checkpoint is None or ctrl_c.checkpoint.resume is None:
                        raise  # (a bug of marl_edu's: its traceback is what a report needs)
                    raise ValueError(f"continuing from {ctrl_c.checkpoint.path} failed ({type(error).__name__}: "
                                     f"{_one_line(error)}): a file altered by hand? Delete it to train the seed "
                                     f"from its start") from None
                ctrl_c.protect, ctrl_c.checkpoint = True, None  # the seed's files are written whole, come what may
                run_log.finish_seed(run, row)
                (plan.out / f"seed{seed}" / "run.pt").unlink(missing_ok=True)  # finished: no run in progress left
                current = None
                _print_row(plan, row)
                ctrl_c.protect = False
                if ctrl_c.requested:  # asked while the seed was measured or written: stop before the next seed
                    raise KeyboardInterrupt
        except (TrainingInterrupted, KeyboardInterrupt) as stopped:
            ctrl_c.protect = True
            return _interrupted(plan, run_log, current, stopped, 128 + (ctrl_c.signum or signal.SIGINT))
        except (ValueError, OSError) as error:  # a non-finite loss, a full disk: what finished so far is on disk
            ctrl_c.protect = True
            run_log.write("interrupted")
            print(f"python -m marl_edu: error: seed {current}: {_one_line(error)}", file=sys.stderr)
            return 1
        ctrl_c.protect = True
        run_log.write("complete")
        print(_summary(plan, run_log.rows))
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _interrupted(plan: _Plan, run_log: RunLog, seed: int | None, stopped: BaseException, status: int) -> int:
    """After Ctrl-C (or SIGTERM): runs.json says the run was interrupted and what ``--resume`` will do with the seed
    in progress (continue it from its run.pt, or restart it from scratch); one line on stderr; returns ``status``
    (130 for Ctrl-C, 143 for SIGTERM)."""
    finished = sorted(row["seed"] for row in run_log.rows)
    path = plan.out / f"seed{seed}" / "run.pt"
    in_progress, note = None, ""
    if seed is not None and seed not in finished:
        saved = path.exists()
        in_progress = {"seed": seed, "checkpoint": str(path.relative_to(plan.out)) if saved else None,
                       "episodes": stopped.episodes if isinstance(stopped, TrainingInterrupted) else None}
        if isinstance(stopped, TrainingInterrupted):
            note = f"; seed {seed} saved after {stopped.episodes} episodes"
        elif saved:
            note = f"; seed {seed} continues from its last save"
        else:
            note = f"; seed {seed} restarts from scratch (not saved yet)"
    run_log.write("interrupted", in_progress)
    done = f"seeds {finished} finished" if finished else "no seed finished"
    print(f"interrupted: {done}{note}; continue with python -m marl_edu --resume {plan.out}", file=sys.stderr)
    return status


# -- --replay: a saved policy played without training ----------------------------------------------------------------

REPLAY_OPTIONS = ("replay", "env", "episodes", "seed", "gif", "threads", "no_progress")  # what --replay takes


@dataclasses.dataclass
class _Replay:
    """A replay's checked arguments: the loaded learner, its name, the env it was trained on and the one it plays,
    the episodes, the seed and the GIF to write (or None)."""

    agent: object
    algo: str
    trained_on: str
    env_id: str
    episodes: int
    seed: int
    gif: pathlib.Path | None

    @property
    def continuous(self) -> bool:
        return entry(self.algo).continuous


def check_gif(name: str) -> pathlib.Path:
    """The GIF file ``--gif`` names, its folder made and proven writable (nothing written there yet). ValueError
    for a name not ending in .gif, a folder, or a folder that cannot be written."""
    path = pathlib.Path(name)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"--gif must name a .gif file, got {name!r}")
    if path.is_dir():
        raise ValueError(f"--gif {name} is a folder, not a file")
    try:
        probe_writable(path.absolute().parent)
    except OSError as error:
        raise ValueError(f"--gif {name}: its folder cannot be written: {error.strerror or error}") from None
    return path.absolute()  # (viz.save_gif puts a bare file name into media/)


def _check_replay(parser: argparse.ArgumentParser, args: argparse.Namespace) -> _Replay:
    """--replay's arguments checked before anything is played: only ``REPLAY_OPTIONS`` given, the policy loaded,
    the env fitting it, the numbers in range, the GIF's folder writable."""
    others = [f"--{dest.replace('_', '-')}" for dest in vars(args)
              if dest not in REPLAY_OPTIONS and getattr(args, dest) != parser.get_default(dest)]
    if others:
        raise ValueError(f"--replay plays a saved policy without training: {', '.join(others)} "
                         f"{'does' if len(others) == 1 else 'do'} not apply")
    agent, trained_on, env_id = load_replay_policy(args.replay, args.env)  # (the env's fit checked before building)
    algo = algo_name(agent)
    episodes = 100 if args.episodes is None else args.episodes
    if not 1 <= episodes <= LIMITS["replay episodes"]:
        raise ValueError(f"--episodes must be between 1 and {LIMITS['replay episodes']:,} with --replay, "
                         f"got {episodes:,}")
    default_seed = PARTICLE_EVAL_SEED if entry(algo).continuous else 0
    seed = default_seed if args.seed is None else args.seed
    if not 0 <= seed <= LIMITS["seeds"]:
        raise ValueError(f"--seed must be an int in [0, {LIMITS['seeds']}], got {seed}")
    if not 1 <= args.threads <= LIMITS["threads"]:
        raise ValueError(f"--threads must be between 1 and {LIMITS['threads']}, got {args.threads}")
    gif = None if args.gif is None else check_gif(args.gif)
    return _Replay(agent, algo, trained_on, env_id, episodes, seed, gif)


def replay(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--replay POLICY``: play a saved policy without training, print its figures (a ``REPLAY`` line of
    ``key=value``, values as runs.json records them) and write ``--gif``. A bad argument or policy stops in one line
    with exit status 2 before anything is played; Ctrl-C exits with status 130."""
    try:
        plan = _check_replay(parser, args)
    except (ValueError, RuntimeError, OSError) as error:
        parser.error(_one_line(error))
    what = (f"without noise and sampled ({sampled_as(plan.agent)}), {plan.episodes} episodes from seed {plan.seed}"
            if plan.continuous else
            f"greedy ({'one episode' if family(plan.env_id).deterministic else f'{plan.episodes} episodes'}) and "
            f"sampled ({sampled_as(plan.agent)}, {plan.episodes} episodes"
            f"{'' if family(plan.env_id).deterministic else ', the same ones'}, draws seeded {plan.seed})")
    print(f"{plan.algo} policy {args.replay} (trained on {plan.trained_on}) played on {plan.env_id}: {what}",
          flush=True)
    try:
        figures = replay_figures(plan.agent, plan.env_id, plan.episodes, plan.seed, progress=not args.no_progress,
                                 threads=args.threads)
        values = " ".join(f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}"
                          for key, value in figures.items())  # agent_returns: comma-separated
        print(f"REPLAY algo={plan.algo} env={plan.env_id} episodes={plan.episodes} seed={plan.seed} {values}",
              flush=True)
        if plan.gif is not None:
            write_gif(plan.agent, plan.env_id, plan.gif, args.threads)
            print(f"GIF written to {args.gif}")
    except KeyboardInterrupt:
        print("interrupted: nothing more played or written", file=sys.stderr)
        return 130
    except (ValueError, OSError) as error:
        print(f"python -m marl_edu: error: {_one_line(error)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # python -m marl_edu works too; the README's entry point is python -m marl_edu
    raise SystemExit(main())
