"""The command line, ``python -m marl_edu.train``: arguments checked before training, one run per seed, reporting.

Any of the five discrete learners (``checkpoints.ALGORITHMS``) on any ma-gym env, with every figure saved in
``--out``: ``runs.json`` (each seed's figures and periodic greedy evaluations, the config, the command),
``returns.csv``, ``curve.png``, and per seed ``policy.pt`` and ``greedy.gif``.

``run_seed`` trains and measures one seed, for the command line and for every script of ``benchmarks/`` (each adds
only its own figures and files); ``rounded`` gives its figures as the files record them. ``METHODS`` and
``method_config`` name the variants ``benchmarks/compare.py`` and ``benchmarks/speed.py`` train.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib

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
          env_backend: str = "batched") -> TrainResult:
    """Train one of the discrete ``ALGORITHMS`` by name with its training loop: ``train_coma`` (whole-episode
    batches) for the on-policy learners, ``train_maddpg`` (a replay buffer) for the others."""
    loop = train_coma if algo in ON_POLICY else train_maddpg
    config = config or config_class(algo)()
    return loop(env_id, episodes, config, seed=seed, eval_every=eval_every or DEFAULT_EVAL_EVERY[algo],
                progress=progress, device=device, learner=ALGORITHMS[algo], stop_at=stop_at, env_backend=env_backend)


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
             device: str = "cpu", env_backend: str = "batched") -> tuple[TrainResult, dict]:
    """Train one seed of ``algo``: a discrete learner (``ALGORITHMS``) with ``train``, which stops early when a
    periodic greedy evaluation reaches ``stop_at``, or a continuous one (``CONTINUOUS_ALGORITHMS``) with
    ``train_continuous``, whose evaluations are the mean team return of 10 noise-free episodes. ``config``: None for
    the learner's defaults; ``eval_every``: None for ``DEFAULT_EVAL_EVERY`` (discrete learners only);
    ``env_backend``: how a discrete learner's env copies are stepped (``envs.make_vec_env``; the same transitions).

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
    run = train(algo, env_id, episodes, config, seed, eval_every, progress, device, stop_at, env_backend)
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
    """The final policy (``policy.pt``) and a GIF of its greedy episode (``greedy.gif``) in ``folder``."""
    from marl_edu.viz import save_gif

    folder.mkdir(parents=True, exist_ok=True)
    save_policy(run.agent, env_id, folder / "policy.pt")
    save_gif(greedy_return(run.agent, env_id, record_frames=True).frames, folder / "greedy.gif")


def write_curve(rows: list[dict], optimum: float | None, title: str, path: pathlib.Path) -> None:
    """The runs' periodic greedy evaluations against the exact optimum, as a PNG."""
    import matplotlib.pyplot as plt

    from marl_edu.viz import plot_seed_evaluations

    fig, ax = plt.subplots(figsize=(6, 3.4))
    plot_seed_evaluations(rows, optimal=optimum, ax=ax, title=title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
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
                              "seed<S>/policy.pt (the final actors) and seed<S>/greedy.gif (their greedy episode).\n"
                              "example: python -m marl_edu.train --algo coma --env Switch2-v0 --seeds 0 1 2 "
                              "--episodes 6000 --out results/tmp/coma")
    p.add_argument("--algo", required=True, choices=list(ALGORITHMS),
                   help="maddpg and iddpg (independent DDPG: each critic sees its own agent only) learn off-policy "
                        "from a replay buffer; coma, central_v (a centralised V(s) critic) and iac (IAC-V: each "
                        "agent's V on its own observation) learn on-policy from whole episodes")
    p.add_argument("--env", default="Switch2-v0", help="a ma-gym environment id (default: Switch2-v0; Switch2-v2 "
                                                       "adds the step count to every observation)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per seed (default: 0)")
    p.add_argument("--episodes", type=int, default=None,
                   help="training episodes per run (default: 1500 for maddpg/iddpg, 6000 for the others; "
                        "on-policy runs round up to whole batches of --n-envs episodes)")
    p.add_argument("--out", type=pathlib.Path, default=None, help="output folder (default: results/tmp/ALGO-ENV)")
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


def main(argv: list[str] | None = None) -> int:
    """``python -m marl_edu.train``: see ``--help``. Every argument is checked before any training starts."""
    import json
    import shlex
    import sys

    from marl_edu.envs import resolve_env_id
    from marl_edu.planning import optimal_team_return

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        env_id = resolve_env_id(args.env)
        config = config_from_args(args)
        episodes = DEFAULT_EPISODES[args.algo] if args.episodes is None else args.episodes
        if episodes < 1:
            raise ValueError(f"--episodes must be a positive number of episodes, got {episodes}")
        eval_every = min(DEFAULT_EVAL_EVERY[args.algo], episodes) if args.eval_every is None else args.eval_every
        if not 1 <= eval_every <= episodes:
            raise ValueError(f"--eval-every must be between 1 and --episodes ({episodes}), got {eval_every}")
        if args.threads < 1:
            raise ValueError(f"--threads must be positive, got {args.threads}")
        if len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0:
            raise ValueError(f"--seeds must be distinct non-negative ints, got {args.seeds}")
        device = torch.device(args.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"--device {args.device}: torch sees no CUDA device here")
        if args.algo in ON_POLICY and make_env(env_id).max_steps is None:
            raise ValueError(f"{args.algo} plays whole episodes and needs an env with a time limit; {env_id} has none")
        out = args.out or pathlib.Path("results/tmp") / f"{args.algo}-{env_id}"
        out.mkdir(parents=True, exist_ok=True)
    except (ValueError, RuntimeError, OSError) as error:
        parser.error(str(error).splitlines()[0])
    try:
        optimum = optimal_team_return(env_id)
    except ValueError:  # exact planning knows the Switch envs only
        optimum = None
    torch.set_num_threads(args.threads)
    known = "unknown" if optimum is None else f"{optimum:.2f}"
    print(f"{args.algo} on {env_id}, {episodes} episodes per seed, exact optimum {known}, outputs in {out}")
    print(f"{'seed':>4} {'greedy':>7} {'sampled':>8} {'solved at':>10} {'wall_s':>7} {'steps/s':>8}")
    rows, csv_lines = [], ["seed,episode,team_return"]
    for seed in args.seeds:
        run, figures = run_seed(args.algo, env_id, episodes, config, seed, eval_every, optimum,
                                progress=not args.no_progress, device=device)
        if run.updates == 0 and args.algo not in ON_POLICY:
            print(f"warning: seed {seed} made no update ({run.env_steps} env steps, fewer than the warm-up "
                  f"{config.warmup_steps} or a batch of {config.batch_size}): the policy is untrained")
        row = rounded(figures)
        rows.append(row)
        csv_lines += [f"{seed},{k + 1},{r:.2f}" for k, r in enumerate(run.episode_returns)]
        save_artifacts(run, env_id, out / f"seed{seed}")
        solved_at = "-" if row["episodes_to_solve"] is None else f"{row['episodes_to_solve']} ep"
        print(f"{seed:>4} {row['greedy']:7.2f} {row['sampled']:8.2f} {solved_at:>10} {row['wall_s']:7.1f} "
              f"{row['steps_per_s']:8d}", flush=True)
    greedy = np.array([row["greedy"] for row in rows])
    solved = "-" if optimum is None else f"{int((greedy >= solved_threshold(optimum) - 1e-6).sum())}/{len(rows)}"
    print(f"SUMMARY algo={args.algo} env={env_id} median_return={np.median(greedy):.2f} min_return={greedy.min():.2f} "
          f"solved={solved} optimal={known}")
    command = "python -m marl_edu.train " + shlex.join(sys.argv[1:] if argv is None else argv)
    (out / "runs.json").write_text(json.dumps({"command": command, "algo": args.algo, "env": env_id,
                                               "episodes": episodes, "optimal": optimum,
                                               "config": dataclasses.asdict(config), "seeds": rows}, indent=1) + "\n")
    (out / "returns.csv").write_text("\n".join(csv_lines) + "\n")
    write_curve(rows, optimum, f"{args.algo} on {env_id}", out / "curve.png")
    return 0


if __name__ == "__main__":  # python -m marl_edu.cli works too; the README's entry point is python -m marl_edu.train
    raise SystemExit(main())
