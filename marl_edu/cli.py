"""The command line, ``python -m marl_edu.train``: arguments checked before training, one run per seed, reporting.

Any of the five discrete learners (``checkpoints.ALGORITHMS``) on any ma-gym env, with every figure saved in
``--out``: ``runs.json`` (each seed's figures and periodic greedy evaluations, the config, the command, the run's
status), ``returns.csv``, ``curve.png``, and per seed ``policy.pt`` and ``greedy.gif``. Nothing is lost: every argument
and the output folder are checked before training, each seed's files are written (atomically) when it finishes, Ctrl-C
saves the seed in progress (``resume``) and ``--resume OUT`` continues it to the same result.

``run_seed`` trains and measures one seed, for the command line and for every script of ``benchmarks/`` (each adds
only its own figures and files); ``rounded`` gives its figures as the files record them. ``METHODS`` and
``method_config`` name the variants ``benchmarks/compare.py`` and ``benchmarks/speed.py`` train.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re

import numpy as np
import torch

from marl_edu.checkpoints import ALGORITHMS, CONTINUOUS_ALGORITHMS, ON_POLICY, config_class, save_policy
from marl_edu.envs import make_env
from marl_edu.train import TrainResult, greedy_return, sampled_returns, train_coma, train_continuous, train_maddpg

SOLVED_MARGIN = 0.3  # "solved": a greedy team return within 0.3 of the exact optimum (8.0 on Switch2, optimum 8.3)

# "<algo>-<variant>": an on-policy learner with the GRU actor over the agent's history ("gru") or a feed-forward
# actor on the current observation ("ff"); an off-policy learner, whose actors are feed-forward MLPs ("mlp")
METHODS = ["coma-gru", "coma-ff", "central_v-gru", "central_v-ff", "iac-gru", "iac-ff", "maddpg-mlp", "iddpg-mlp"]


# the discrete learners' budgets (the committed results') and how often their greedy policy is evaluated
DEFAULT_EPISODES = {"maddpg": 1500, "iddpg": 1500, "coma": 6000, "central_v": 6000, "iac": 6000}
DEFAULT_EVAL_EVERY = {"maddpg": 50, "iddpg": 50, "coma": 200, "central_v": 200, "iac": 200}


def train(algo: str, env_id: str, episodes: int, config=None, seed: int = 0, eval_every: int | None = None,
          progress: bool = True, device: str = "cpu", stop_at: float | None = None,
          env_backend: str = "batched", checkpoint=None) -> TrainResult:
    """Train one of the discrete ``ALGORITHMS`` by name with its training loop: ``train_coma`` (whole-episode
    batches) for the on-policy learners, ``train_maddpg`` (a replay buffer) for the others."""
    loop = train_coma if algo in ON_POLICY else train_maddpg
    config = config or config_class(algo)()
    return loop(env_id, episodes, config, seed=seed, eval_every=eval_every or DEFAULT_EVAL_EVERY[algo],
                progress=progress, device=device, learner=ALGORITHMS[algo], stop_at=stop_at, env_backend=env_backend,
                checkpoint=checkpoint)


def solved_threshold(optimum: float) -> float:
    return round(optimum - SOLVED_MARGIN, 6)


def split(method: str) -> tuple[str, str]:
    """``"central_v-gru"`` -> ``("central_v", "gru")``."""
    algo, variant = method.rsplit("-", 1)
    return algo, variant


def method_config(method: str):
    """A method of ``METHODS`` -> ``(algo, config)``: its learner's name and default config, with a GRU (``-gru``,
    ``recurrent=True``) or feed-forward (``-ff``, ``recurrent=False``) actor for the on-policy learners; ``-mlp``
    learners keep the default config. ValueError names a method not in ``METHODS``."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    algo, variant = split(method)
    return algo, config_class(algo)(recurrent=variant == "gru") if variant != "mlp" else config_class(algo)()


def _counts(run: TrainResult) -> dict:
    """Every run's counts and speed: ``episodes``, ``env_steps``, ``wall_s``, ``steps_per_s``, ``updates``."""
    return {"episodes": len(run.episode_returns), "env_steps": run.env_steps, "wall_s": run.seconds,
            "steps_per_s": run.env_steps / run.seconds, "updates": run.updates}


def run_seed(algo: str, env_id: str, episodes: int, config=None, seed: int = 0, eval_every: int | None = None,
             optimum: float | None = None, stop_at: float | None = None, progress: bool = False,
             device: str = "cpu", env_backend: str = "batched", checkpoint=None) -> tuple[TrainResult, dict]:
    """Train one seed of ``algo``: a discrete learner (``ALGORITHMS``) with ``train``, which stops early when a
    periodic greedy evaluation reaches ``stop_at``, or a continuous one (``CONTINUOUS_ALGORITHMS``) with
    ``train_continuous``, whose evaluations are the mean team return of 10 noise-free episodes. ``config``: None for
    the learner's defaults; ``eval_every``: None for ``DEFAULT_EVAL_EVERY`` (discrete learners only);
    ``env_backend``: how a discrete learner's env copies are stepped (``envs.make_vec_env``; the same transitions);
    ``checkpoint``: a ``resume.RunCheckpoint`` that saves the run in progress (and resumes it), or None.

    Returns ``(run, figures)``: the ``TrainResult`` and its figures, exact (``rounded`` gives them as the files
    record them), in this order: ``seed``; for a discrete learner ``greedy`` (the final policy's greedy team return,
    one episode: exact on Switch, which is deterministic) and ``sampled`` (mean team return of 100 episodes with
    sampled actions, env seeded with ``seed``); ``episodes``, ``env_steps``, ``wall_s`` (training's wall-clock),
    ``steps_per_s``, ``updates``; for a discrete learner ``episodes_to_solve`` and ``seconds_to_solve`` (when a
    periodic greedy evaluation first reached ``solved_threshold(optimum)``; None if never, or if ``optimum`` is None);
    ``evaluations``, the periodic ``(episode, value)`` of ``run.evaluations``.
    """
    if algo in CONTINUOUS_ALGORITHMS:
        if stop_at is not None:
            raise ValueError(f"stop_at applies to the discrete learners only, not {algo}")
        run = train_continuous(env_id, episodes, config, seed=seed, eval_every=eval_every, progress=progress,
                               device=device, learner=CONTINUOUS_ALGORITHMS[algo])
        return run, {"seed": seed, **_counts(run), "evaluations": list(run.evaluations)}
    run = train(algo, env_id, episodes, config, seed, eval_every, progress, device, stop_at, env_backend, checkpoint)
    greedy = greedy_return(run.agent, env_id).team_return
    sampled = float(sampled_returns(run.agent, env_id, n_episodes=100, seed=seed).mean())
    target = float("inf") if optimum is None else solved_threshold(optimum) - 1e-6
    first = next((k for k, (_, g) in enumerate(run.evaluations) if g >= target), None)
    return run, {"seed": seed, "greedy": greedy, "sampled": sampled, **_counts(run),
                 "episodes_to_solve": None if first is None else run.evaluations[first][0],
                 "seconds_to_solve": None if first is None else run.eval_seconds[first],
                 "evaluations": list(run.evaluations)}


DIGITS = {"greedy": 2, "sampled": 3, "wall_s": 1, "steps_per_s": None, "seconds_to_solve": 1}  # None: a whole int


def rounded(figures: dict) -> dict:
    """``run_seed``'s figures as the files record them, with the same keys in the same order: ``greedy`` and every
    evaluation to 0.01 (every Switch reward is a multiple of 0.1), ``sampled`` to 0.001, ``wall_s`` and
    ``seconds_to_solve`` to 0.1 s, ``steps_per_s`` to a whole int; the others (and Nones) as they are."""
    row = dict(figures)
    for key, digits in DIGITS.items():
        if row.get(key) is not None:
            row[key] = round(row[key], digits)
    row["evaluations"] = [(episode, round(value, 2)) for episode, value in figures["evaluations"]]
    return row


def save_artifacts(run: TrainResult, env_id: str, folder: pathlib.Path) -> None:
    """The final policy (``policy.pt``) and a GIF of its greedy episode (``greedy.gif``) in ``folder``, each written
    atomically (``files.atomic_write``)."""
    from marl_edu.viz import save_gif

    folder.mkdir(parents=True, exist_ok=True)
    save_policy(run.agent, env_id, folder / "policy.pt")
    save_gif(greedy_return(run.agent, env_id, record_frames=True).frames, folder / "greedy.gif")


def write_curve(rows: list[dict], optimum: float | None, title: str, path: pathlib.Path) -> None:
    """The runs' periodic greedy evaluations against the exact optimum, as a PNG (written atomically)."""
    import matplotlib.pyplot as plt

    from marl_edu.files import atomic_write
    from marl_edu.viz import plot_seed_evaluations

    fig, ax = plt.subplots(figsize=(6, 3.4))
    plot_seed_evaluations(rows, optimal=optimum, ax=ax, title=title)
    fig.tight_layout()
    atomic_write(path, lambda file: fig.savefig(file, dpi=100, format="png"))
    plt.close(fig)


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments stop with one line on stderr and exit status 2 (argparse would print the usage too)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="python -m marl_edu.train", formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Train one of the course's learners on a ma-gym environment, one run per seed.",
                       epilog="outputs in --out: runs.json (every seed's figures and periodic greedy evaluations, "
                              "the config and the command),\nreturns.csv (every training episode's team return), "
                              "curve.png (the greedy evaluations against the exact optimum),\n"
                              "seed<S>/policy.pt (the final actors) and seed<S>/greedy.gif (their greedy episode),\n"
                              "each written when its seed finishes. Ctrl-C stops with exit status 130 and saves the "
                              "seed in progress\n(seed<S>/run.pt) for --resume OUT.\n"
                              "example: python -m marl_edu.train --algo coma --env Switch2-v0 --seeds 0 1 2 "
                              "--episodes 6000 --out results/tmp/coma")
    p.add_argument("--algo", choices=list(ALGORITHMS),
                   help="maddpg and iddpg (independent DDPG: each critic sees its own agent only) learn off-policy "
                        "from a replay buffer; coma, central_v (a centralised V(s) critic) and iac (IAC-V: each "
                        "agent's V on its own observation) learn on-policy from whole episodes")
    p.add_argument("--env", default="Switch2-v0", help="a ma-gym environment id (default: Switch2-v0; Switch2-v2 "
                                                       "adds the step count to every observation)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per seed (default: 0)")
    p.add_argument("--episodes", type=int, default=None,
                   help="training episodes per run (default: 1500 for maddpg/iddpg, 6000 for the others; "
                        "on-policy runs round up to whole batches of --n-envs episodes)")
    p.add_argument("--out", default=None, help="output folder (default: results/tmp/ALGO-ENV); one that holds another "
                                                "run is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (its runs.json, returns.csv, curve.png and seed folders; "
                        "nothing else there is touched)")
    p.add_argument("--resume", metavar="OUT", default=None,
                   help="continue the interrupted run in folder OUT with its own arguments: finished seeds are kept, "
                        "the seed in progress continues from its checkpoint to the same result as an uninterrupted "
                        "run (give no other option but --no-progress and --threads)")
    p.add_argument("--checkpoint-every", type=float, default=60.0, metavar="SECONDS",
                   help="save the seed in progress at most this often, and on Ctrl-C (default: 60)")
    p.add_argument("--gamma", type=float, default=None, help="discount in [0, 1] (default: 0.95 maddpg/iddpg, "
                                                             "0.99 others)")
    p.add_argument("--actor-lr", type=float, default=None,
                   help="actor learning rate (default: 3e-3 maddpg/iddpg, 2e-3 others)")
    p.add_argument("--critic-lr", type=float, default=None,
                   help="critic learning rate (default: 2e-3 maddpg/iddpg, 3e-3 others)")
    p.add_argument("--hidden", type=int, default=None, help="hidden units per layer (default: 64)")
    p.add_argument("--n-envs", type=int, default=None, help="environment copies stepped in lock-step (default: 16); "
                                                            "for the on-policy learners, episodes per update")
    p.add_argument("--feed-forward", action="store_true",
                   help="on-policy learners: a feed-forward actor on [o_t, id] instead of the GRU over the history")
    p.add_argument("--lam", type=float, default=None, help="on-policy learners: TD(lambda) of the critic targets "
                                                           "(default: 0.8)")
    p.add_argument("--entropy", type=float, default=None,
                   help="on-policy learners: starting entropy bonus, decayed to 0 (default: 0.2)")
    p.add_argument("--per-agent-reward", action="store_true",
                   help="on-policy learners: critic row a learns agent a's own reward, not the team reward")
    p.add_argument("--actor-gradient", choices=["expected", "gumbel"], default=None,
                   help="maddpg/iddpg: the actor's gradient, exact over its own actions or a Gumbel-softmax sample "
                        "(default: expected)")
    p.add_argument("--batch-size", type=int, default=None, help="maddpg/iddpg: transitions per update (default: 512)")
    p.add_argument("--warmup", type=int, default=None,
                   help="maddpg/iddpg: env steps collected before the first update (default: 1000)")
    p.add_argument("--eval-every", type=int, default=None,
                   help="episodes between greedy evaluations (default: 50 maddpg/iddpg, 200 others)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run (default: 1; more rarely helps "
                                                          "networks this small)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def config_from_args(args: argparse.Namespace):
    """The learner's config with the options given on the command line; ValueError names a bad value."""
    on_policy = args.algo in ON_POLICY
    only = {"feed_forward": True, "lam": True, "entropy": True, "per_agent_reward": True, "actor_gradient": False,
            "batch_size": False, "warmup": False}
    for name, needs_on_policy in only.items():
        given = getattr(args, name) is not None and getattr(args, name) is not False  # (0 is given)
        if given and needs_on_policy != on_policy:
            family = "coma, central_v and iac" if needs_on_policy else "maddpg and iddpg"
            raise ValueError(f"--{name.replace('_', '-')} applies to {family} only, not {args.algo}")
    values = {"gamma": args.gamma, "actor_lr": args.actor_lr, "critic_lr": args.critic_lr, "hidden": args.hidden,
              "n_envs": args.n_envs}
    if args.algo == "central_v" and args.per_agent_reward:
        raise ValueError("--per-agent-reward does not apply to central_v: its one V(s) has no agent id")
    if on_policy:
        values.update(lam=args.lam, entropy_start=args.entropy, recurrent=not args.feed_forward,
                      team_reward=not args.per_agent_reward)
    else:
        values.update(actor_gradient=args.actor_gradient, batch_size=args.batch_size, warmup_steps=args.warmup)
    return config_class(args.algo)(**{k: v for k, v in values.items() if v is not None}).validate()


# Bounds far above any run this course makes, so that a typo fails in one line instead of allocating or waiting for ever
LIMITS = {"seeds": 2**31 - 1, "episodes": 10_000_000, "threads": 256, "n_envs": 4096, "hidden": 4096,
          "batch_size": 65_536, "warmup": 10_000_000, "learning rate": 1.0, "entropy": 100.0}
RUN_FILES = ("runs.json", "returns.csv", "curve.png")  # with the seed<S>/ folders: what a run writes in --out


def check_limits(args: argparse.Namespace) -> None:
    """ValueError naming an argument outside ``LIMITS`` (the configs' own checks cover the rest)."""
    if len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0 or max(args.seeds) > LIMITS["seeds"]:
        raise ValueError(f"--seeds must be distinct ints in [0, {LIMITS['seeds']}], got {args.seeds}")
    for name in ("episodes", "threads", "n_envs", "hidden", "batch_size", "warmup"):
        value = getattr(args, name)
        if value is not None and value > LIMITS[name]:
            raise ValueError(f"--{name.replace('_', '-')} must be at most {LIMITS[name]:,}, got {value:,}")
    for name in ("actor_lr", "critic_lr"):
        value = getattr(args, name)
        if value is not None and value > LIMITS["learning rate"]:
            raise ValueError(f"--{name.replace('_', '-')} must be a learning rate in (0, 1], got {value}")
    if args.entropy is not None and args.entropy > LIMITS["entropy"]:
        raise ValueError(f"--entropy must be at most {LIMITS['entropy']}, got {args.entropy}")
    if not args.checkpoint_every > 0:
        raise ValueError(f"--checkpoint-every must be a positive number of seconds, got {args.checkpoint_every}")


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


def check_out(out: str, overwrite: bool, resume: bool) -> pathlib.Path:
    """The output folder, proven writable (a probe file created and removed). ValueError for an empty name, a file,
    a folder that cannot be written, or one holding another run (``RUN_FILES`` or seed folders) unless ``overwrite``
    (or ``resume``: continuing that run). Nothing in it is removed here."""
    import tempfile

    if not out.strip():
        raise ValueError("--out must name a folder, got an empty string")
    folder = pathlib.Path(out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {folder} is a file, not a folder")
    if not resume and not overwrite and _run_files(folder):
        raise ValueError(f"--out {folder} holds another run ({_run_files(folder)[0].name}); give --overwrite to "
                         f"replace it or --resume {folder} to continue it")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as error:
        raise ValueError(f"--out {folder} cannot be written: {error.strerror or error}") from None
    return folder


def _run_files(folder: pathlib.Path) -> list[pathlib.Path]:
    """What a run of this command line left in ``folder``: its ``RUN_FILES`` and ``seed<S>`` folders."""
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir()
                  if path.name in RUN_FILES or (path.is_dir() and re.fullmatch(r"seed\d+", path.name)))


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


class _Run:
    """One command line run's outputs in ``out``, written as it goes: each finished seed's row, returns and files, and
    ``runs.json`` with the run's status (running, interrupted, complete) and the arguments ``--resume`` replays."""

    def __init__(self, out: pathlib.Path, header: dict, optimum: float | None, rows=(), returns=()):
        self.out, self.header, self.optimum = out, header, optimum
        self.rows, self.returns = list(rows), list(returns)  # rows: rounded figures; returns: "seed,episode,R" lines

    def finish_seed(self, run: TrainResult, row: dict) -> None:
        save_artifacts(run, self.header["env"], self.out / f"seed{row['seed']}")
        self.rows.append(row)
        self.returns += [f"{row['seed']},{k + 1},{r:.2f}" for k, r in enumerate(run.episode_returns)]
        self.write("running")
        write_curve(self.rows, self.optimum, f"{self.header['algo']} on {self.header['env']}", self.out / "curve.png")

    def write(self, status: str, in_progress: dict | None = None) -> None:
        import json

        from marl_edu.files import atomic_write_text

        atomic_write_text(self.out / "returns.csv", "\n".join(["seed,episode,team_return", *self.returns]) + "\n")
        summary = {**self.header, "status": status, "in_progress": in_progress, "seeds": self.rows}
        atomic_write_text(self.out / "runs.json", json.dumps(summary, indent=1) + "\n")


def _resume_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]):
    """For ``--resume OUT``: the interrupted run's own arguments (from its runs.json) with this call's --no-progress
    and --threads, and the state it left: ``(args, runs.json's dict)``."""
    import json

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
    old.no_progress, old.threads, old.out = args.no_progress, args.threads, args.resume
    return old, saved


def main(argv: list[str] | None = None) -> int:
    """``python -m marl_edu.train``: see ``--help``. Every argument and the output folder are checked before any
    training starts (one line on stderr, exit status 2); each seed's outputs are written when it finishes; Ctrl-C
    saves the seed in progress and exits with status 130; ``--resume OUT`` continues it."""
    import shlex
    import signal
    import sys

    from marl_edu.envs import resolve_env_id
    from marl_edu.planning import optimal_team_return
    from marl_edu.resume import RunCheckpoint, TrainingInterrupted, load_run_state

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    saved = None
    try:
        if args.resume is not None:
            args, saved = _resume_arguments(parser, args, argv)
        elif args.algo is None:
            raise ValueError("the following arguments are required: --algo (or --resume OUT)")
        env_id = resolve_env_id(args.env)
        check_limits(args)
        config = config_from_args(args)
        episodes = DEFAULT_EPISODES[args.algo] if args.episodes is None else args.episodes
        if episodes < 1:
            raise ValueError(f"--episodes must be a positive number of episodes, got {episodes}")
        eval_every = min(DEFAULT_EVAL_EVERY[args.algo], episodes) if args.eval_every is None else args.eval_every
        if not 1 <= eval_every <= episodes:
            raise ValueError(f"--eval-every must be between 1 and --episodes ({episodes}), got {eval_every}")
        if args.threads < 1:
            raise ValueError(f"--threads must be positive, got {args.threads}")
        device = check_device(args.device)
        if args.algo in ON_POLICY and make_env(env_id).max_steps is None:
            raise ValueError(f"{args.algo} plays whole episodes and needs an env with a time limit; {env_id} has none")
        out = check_out(f"results/tmp/{args.algo}-{env_id}" if args.out is None else args.out, args.overwrite,
                        saved is not None)
    except (ValueError, RuntimeError, OSError) as error:
        parser.error(_one_line(error))
    try:
        optimum = optimal_team_return(env_id)
    except ValueError:  # exact planning knows the Switch envs only
        optimum = None
    torch.set_num_threads(args.threads)
    resumable = env_id.removeprefix("ma_gym:").startswith("Switch")  # the batched Switch's state can be saved
    if saved is None:
        if args.overwrite:  # only what a run of this command line writes
            import shutil

            for path in _run_files(out):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        header = {"command": "python -m marl_edu.train " + shlex.join(argv), "argv": argv, "algo": args.algo,
                  "env": env_id, "episodes": episodes, "optimal": optimum, "config": dataclasses.asdict(config)}
        run_log = _Run(out, header, optimum)
    else:
        header = {key: saved[key] for key in ("command", "argv", "algo", "env", "episodes", "optimal", "config")}
        lines = (out / "returns.csv").read_text().splitlines()[1:] if (out / "returns.csv").exists() else []
        run_log = _Run(out, header, optimum, saved["seeds"], lines)
    known = "unknown" if optimum is None else f"{optimum:.2f}"
    finished = {row["seed"] for row in run_log.rows}
    print(f"{args.algo} on {env_id}, {episodes} episodes per seed, exact optimum {known}, outputs in {out}"
          + (f" (resumed: seeds {sorted(finished)} already finished)" if saved is not None and finished else ""))
    print(f"{'seed':>4} {'greedy':>7} {'sampled':>8} {'solved at':>10} {'wall_s':>7} {'steps/s':>8}")
    for row in run_log.rows:
        _print_row(row)
    checkpoint = None

    def stop(signum, frame):  # first Ctrl-C: save at the end of the current step; a second one stops at once
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if checkpoint is not None:
            checkpoint.request_stop()
        else:
            raise KeyboardInterrupt

    previous_handler = signal.signal(signal.SIGINT, stop)
    try:
        for seed in [seed for seed in args.seeds if seed not in finished]:
            path = out / f"seed{seed}" / "run.pt"
            state = load_run_state(path)[1] if saved is not None and path.exists() else None
            checkpoint = (RunCheckpoint(path, args.checkpoint_every, resume=state, header={"env": env_id, "seed": seed})
                          if resumable else None)
            run, figures = run_seed(args.algo, env_id, episodes, config, seed, eval_every, optimum,
                                    progress=not args.no_progress, device=device, checkpoint=checkpoint)
            stop_requested, checkpoint = checkpoint is not None and checkpoint.stop_requested, None
            if run.updates == 0 and args.algo not in ON_POLICY:
                print(f"warning: seed {seed} made no update ({run.env_steps} env steps, fewer than the warm-up "
                      f"{config.warmup_steps} or a batch of {config.batch_size}): the policy is untrained")
            row = rounded(figures)
            run_log.finish_seed(run, row)
            path.unlink(missing_ok=True)  # the seed is finished: its run in progress is no longer needed
            _print_row(row)
            if stop_requested:  # Ctrl-C after the seed's last step: stop before the next seed
                raise KeyboardInterrupt
    except (TrainingInterrupted, KeyboardInterrupt) as stopped:
        in_progress = ({"seed": seed, "checkpoint": str(stopped.path.relative_to(out)), "episodes": stopped.episodes}
                       if isinstance(stopped, TrainingInterrupted) else None)
        run_log.write("interrupted", in_progress)
        done = f"seeds {sorted(row['seed'] for row in run_log.rows)} finished" if run_log.rows else "no seed finished"
        saved_at = (f"; seed {seed} saved after {stopped.episodes} episodes" if in_progress else "")
        print(f"interrupted: {done}{saved_at}; continue with python -m marl_edu.train --resume {out}",
              file=sys.stderr)
        return 130
    except (ValueError, OSError) as error:  # a non-finite loss, a full disk: what finished so far is on disk
        run_log.write("interrupted")
        print(f"python -m marl_edu.train: error: seed {seed}: {_one_line(error)}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, previous_handler)
    run_log.write("complete")
    greedy = np.array([row["greedy"] for row in run_log.rows])
    solved = ("-" if optimum is None else
              f"{int((greedy >= solved_threshold(optimum) - 1e-6).sum())}/{len(run_log.rows)}")
    print(f"SUMMARY algo={args.algo} env={env_id} median_return={np.median(greedy):.2f} min_return={greedy.min():.2f} "
          f"solved={solved} optimal={known}")
    return 0


def _print_row(row: dict) -> None:
    solved_at = "-" if row["episodes_to_solve"] is None else f"{row['episodes_to_solve']} ep"
    print(f"{row['seed']:>4} {row['greedy']:7.2f} {row['sampled']:8.2f} {solved_at:>10} {row['wall_s']:7.1f} "
          f"{row['steps_per_s']:8d}", flush=True)


if __name__ == "__main__":  # python -m marl_edu.cli works too; the README's entry point is python -m marl_edu.train
    raise SystemExit(main())
