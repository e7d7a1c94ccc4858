"""The command line, ``python -m marl_edu.train``: arguments checked before training, one run per seed, reporting.

Any of the five discrete learners (``checkpoints.ALGORITHMS``) on a ma-gym env, or of the four continuous ones
(``checkpoints.CONTINUOUS_ALGORITHMS``) on a particle env (cooperative navigation, physical deception), with every
figure saved in ``--out``: ``runs.json`` (each seed's figures and periodic evaluations, the config, the command, the
run's status), ``returns.csv``, ``curve.png``, and per seed ``policy.pt`` and ``greedy.gif``. Nothing is lost: every
argument and the output folder are checked before training, each seed's files are written (atomically) when it
finishes, Ctrl-C saves the seed in progress (``resume``; the Switch envs only) and ``--resume OUT`` continues it to the
same result. ``--replay POLICY`` plays a saved policy without training: its figures and, with ``--gif``, a GIF.

``run_seed`` trains and measures one seed, for the command line and for every script of ``benchmarks/`` (each adds
only its own figures and files); ``rounded`` gives its figures as the files record them. ``METHODS`` and
``method_config`` name the variants ``benchmarks/compare.py`` and ``benchmarks/speed.py`` train.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re
import signal
import sys

import numpy as np
import torch

from marl_edu.checkpoints import (ALGORITHMS, CONTINUOUS_ALGORITHMS, ON_POLICY, algo_name, check_fits,
                                  config_class, save_policy)
from marl_edu.competition import DECEPTION
from marl_edu.ensembles import EnsembleMADDPG
from marl_edu.envs import PARTICLE_ENVS, is_deterministic, make_env, steps_as_arrays
from marl_edu.train import (FINAL_GREEDY_EPISODES, PARTICLE_EVAL_SEED, TrainResult, evaluate_particle,
                            greedy_return, greedy_team_return, sampled_returns,
                            train_coma, train_continuous, train_maddpg)
from marl_edu.validate import LIMITS as CONFIG_LIMITS

SOLVED_MARGIN = 0.3  # "solved": a greedy team return within 0.3 of the exact optimum (8.0 on Switch2, optimum 8.3)

# "<algo>-<variant>": an on-policy learner with the GRU actor over the agent's history ("gru") or a feed-forward
# actor on the current observation ("ff"); an off-policy learner, whose actors are feed-forward MLPs ("mlp")
METHODS = ["coma-gru", "coma-ff", "central_v-gru", "central_v-ff", "iac-gru", "iac-ff", "maddpg-mlp", "iddpg-mlp",
           "central_qv-gru"]


# every learner's budget (the committed results': benchmarks/learning.py, compare.py, particle.py, competition.py) and
# how often it is evaluated (discrete: one greedy episode; continuous: 10 noise-free episodes)
DEFAULT_EPISODES = {"maddpg": 1500, "iddpg": 1500, "coma": 6000, "central_qv": 6000, "central_v": 6000, "iac": 6000,
                    **{algo: 4000 for algo in CONTINUOUS_ALGORITHMS}}
DEFAULT_EVAL_EVERY = {"maddpg": 50, "iddpg": 50, "coma": 200, "central_qv": 200, "central_v": 200, "iac": 200,
                      **{algo: 200 for algo in CONTINUOUS_ALGORITHMS}}
DEFAULT_ENV = {"discrete": "Switch2-v0", "continuous": "simple_spread_v3"}
SCORE_EPISODES = 100  # a continuous learner's final score: evaluate_particle over these episodes (benchmarks' too)


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
    the learner's defaults; ``eval_every``: None for ``DEFAULT_EVAL_EVERY``; ``env_backend``: how a discrete
    learner's env copies are stepped (``envs.make_vec_env``; the same transitions); ``checkpoint``: a
    ``resume.RunCheckpoint`` that saves a discrete run in progress (and resumes it), or None.

    Returns ``(run, figures)``: the ``TrainResult`` and its figures, exact (``rounded`` gives them as the files
    record them), in this order: ``seed``; for a discrete learner ``greedy`` (the final policy's greedy team return:
    one episode on Switch, which is deterministic, else the mean of 100, ``train.greedy_team_return``) and
    ``sampled`` (mean team return of 100 episodes with sampled actions, env seeded with ``seed``); ``episodes``,
    ``env_steps``, ``wall_s`` (training's wall-clock), ``steps_per_s``, ``updates``; for a discrete learner
    ``episodes_to_solve`` and ``seconds_to_solve`` (when a periodic greedy evaluation first reached
    ``solved_threshold(optimum)``; None if never, or if ``optimum`` is None); ``evaluations``, the periodic
    ``(episode, value)`` of ``run.evaluations``. (A continuous learner's final score is ``particle_figures``.)
    """
    if algo in CONTINUOUS_ALGORITHMS:
        if stop_at is not None:
            raise ValueError(f"stop_at applies to the discrete learners only, not {algo}")
        run = train_continuous(env_id, episodes, config, seed=seed, eval_every=eval_every or DEFAULT_EVAL_EVERY[algo],
                               progress=progress, device=device, learner=CONTINUOUS_ALGORITHMS[algo])
        return run, {"seed": seed, **_counts(run), "evaluations": list(run.evaluations)}
    run = train(algo, env_id, episodes, config, seed, eval_every, progress, device, stop_at, env_backend, checkpoint)
    greedy = greedy_team_return(run.agent, env_id, FINAL_GREEDY_EPISODES)
    sampled = float(sampled_returns(run.agent, env_id, n_episodes=100, seed=seed).mean())
    target = float("inf") if optimum is None else solved_threshold(optimum) - 1e-6
    first = next((k for k, (_, g) in enumerate(run.evaluations) if g >= target), None)
    return run, {"seed": seed, "greedy": greedy, "sampled": sampled, **_counts(run),
                 "episodes_to_solve": None if first is None else run.evaluations[first][0],
                 "seconds_to_solve": None if first is None else run.eval_seconds[first],
                 "evaluations": list(run.evaluations)}


def noise_free_policies(agent) -> list:
    """What a continuous learner plays without exploration noise, obs ``(N, O)`` -> forces ``(N, 2)``: its policy,
    or for a policy ensemble one policy per sub-policy m = 0..M-1, every agent playing its sub-policy m."""
    if isinstance(agent, EnsembleMADDPG):
        return [agent.policy(np.full(agent.n_agents, m)) for m in range(agent.n_subpolicies)]
    return [agent.greedy_policy()]


def particle_figures(agent, env_id: str, episodes: int = SCORE_EPISODES, seed: int = PARTICLE_EVAL_SEED,
                     progress: bool = False) -> dict:
    """A continuous learner's score on a particle env, ``evaluate_particle`` of its noise-free policy over
    ``episodes`` episodes from ``seed`` (an ensemble's: the mean over its sub-policies, each over those episodes):
    ``team_return``; on cooperative navigation ``landmark_distance`` (mean over steps), ``final_landmark_distance``
    and ``collisions_per_step`` (other envs do not report them: left out); ``agent_returns``, one per agent (on
    physical deception the adversary's first, then the good agents')."""
    scores = [evaluate_particle(policy, env_id, episodes, seed, progress) for policy in noise_free_policies(agent)]
    figures = {key: float(np.mean([getattr(score, key) for score in scores]))
               for key in ("team_return", "landmark_distance", "final_landmark_distance", "collisions_per_step")}
    figures = {key: value for key, value in figures.items() if not np.isnan(value)}
    return {**figures, "agent_returns": np.mean([score.agent_returns for score in scores], axis=0).tolist()}


DIGITS = {"greedy": 2, "sampled": 3, "team_return": 2, "landmark_distance": 3, "final_landmark_distance": 3,
          "collisions_per_step": 3, "wall_s": 1, "steps_per_s": None, "seconds_to_solve": 1}  # None: a whole int


def rounded(figures: dict) -> dict:
    """``run_seed``'s figures (with ``particle_figures``' if any) as the files record them, with the same keys in the
    same order: ``greedy``, ``team_return``, every agent's return and every evaluation to 0.01 (every Switch reward
    is a multiple of 0.1), ``sampled`` and the particle distances and collisions to 0.001, ``wall_s`` and
    ``seconds_to_solve`` to 0.1 s, ``steps_per_s`` to a whole int; the others (and Nones) as they are."""
    row = dict(figures)
    for key, digits in DIGITS.items():
        if row.get(key) is not None:
            row[key] = round(row[key], digits)
    if "agent_returns" in row:
        row["agent_returns"] = [round(value, 2) for value in row["agent_returns"]]
    if "evaluations" in row:
        row["evaluations"] = [(episode, round(value, 2)) for episode, value in figures["evaluations"]]
    return row


def save_artifacts(run: TrainResult, env_id: str, folder: pathlib.Path) -> None:
    """The final policy (``policy.pt``) and a GIF of one episode of it (``greedy.gif``, ``write_gif``) in
    ``folder``, each written atomically (``files.atomic_write``)."""
    folder.mkdir(parents=True, exist_ok=True)
    save_policy(run.agent, env_id, folder / "policy.pt")
    write_gif(run.agent, env_id, folder / "greedy.gif")


def write_gif(agent, env_id: str, path: pathlib.Path) -> pathlib.Path:
    """A GIF of one episode of ``agent``'s final policy from the env seeded 0, written atomically (``viz.save_gif``):
    a discrete learner's greedy episode (``greedy_return``), a continuous learner's noise-free one (an ensemble's:
    sub-policy 0 of every agent), its frames a quarter of the particle envs' 700 x 700 at 8 per second."""
    from marl_edu.viz import save_gif

    if algo_name(agent) not in CONTINUOUS_ALGORITHMS:
        return save_gif(greedy_return(agent, env_id, record_frames=True).frames, path)
    from marl_edu.rollout import run_episode
    from marl_edu.viz import downscale

    frames = run_episode(make_env(env_id, seed=0), noise_free_policies(agent)[0], record_frames=True).frames
    return save_gif([downscale(frame, 4) for frame in frames], path, fps=8, scale=1)


def write_curve(rows: list[dict], optimum: float | None, title: str, path: pathlib.Path,
                ylabel: str | None = None) -> None:
    """The runs' periodic evaluations (against the exact optimum if known), as a PNG (written atomically);
    ``ylabel``: what the evaluations are, if not the greedy team return."""
    import matplotlib.pyplot as plt

    from marl_edu.files import atomic_write
    from marl_edu.viz import plot_seed_evaluations

    fig, ax = plt.subplots(figsize=(6, 3.4))
    plot_seed_evaluations(rows, optimal=optimum, ax=ax, title=title)
    if ylabel:
        ax.set_ylabel(ylabel)
    fig.tight_layout()
    atomic_write(path, lambda file: fig.savefig(file, dpi=100, format="png"))
    plt.close(fig)


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments stop with one line on stderr and exit status 2 (argparse would print the usage too)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


EPILOG = """\
outputs in --out: runs.json (every seed's figures and periodic evaluations, the config and the command),
returns.csv (every training episode's team return), curve.png (the periodic evaluations; on Switch against the
exact optimum), seed<S>/policy.pt (the final actors) and seed<S>/greedy.gif (one episode of them, greedy or without
noise), each written when its seed finishes. A discrete learner's row: the greedy and sampled team returns; a
continuous learner's: the noise-free score over 100 episodes (team return; on cooperative navigation the landmark
distance and collisions; every agent's return; an ensemble's: the mean over its sub-policies).
Ctrl-C stops with exit status 130, the finished seeds on disk. On the Switch envs the seed in progress is saved
(seed<S>/run.pt) and --resume OUT continues it to the same result; on the other envs (the particle envs of the
continuous learners among them) its state cannot be saved, and --resume OUT restarts it from scratch.
examples:
  python -m marl_edu.train --algo coma --env Switch2-v0 --seeds 0 1 2 --out results/tmp/coma
  python -m marl_edu.train --algo maddpg_continuous --env simple_spread_v3 --out results/tmp/navigation
  python -m marl_edu.train --algo maddpg_ensemble --env simple_adversary_v3 --out results/tmp/deception
  python -m marl_edu.train --replay results/tmp/coma/seed0/policy.pt --gif coma.gif"""


def _parser() -> argparse.ArgumentParser:
    continuous = ", ".join(CONTINUOUS_ALGORITHMS)
    p = _OneLineParser(prog="python -m marl_edu.train", formatter_class=argparse.RawDescriptionHelpFormatter,
                       allow_abbrev=False,  # (an abbreviated option would slip past --resume's and --replay's checks)
                       description="Train one of the course's learners, one run per seed: a discrete one on a ma-gym "
                                   "environment or a continuous one on a particle environment; or replay a saved "
                                   "policy without training (--replay).", epilog=EPILOG)
    p.add_argument("--algo", choices=[*ALGORITHMS, *CONTINUOUS_ALGORITHMS],
                   help="maddpg and iddpg (independent DDPG: each critic sees its own agent only) learn off-policy "
                        "from a replay buffer; coma, central_qv (COMA's Q less a learned V(s)), central_v (a "
                        "centralised V(s) critic) and iac (IAC-V: each agent's V on its own observation) learn "
                        "on-policy from whole episodes. On the particle envs, "
                        f"with continuous forces: {continuous} (MADDPG, independent DDPG, MADDPG inferring the "
                        "others' policies, MADDPG with policy ensembles)")
    p.add_argument("--env", default=None,
                   help="a ma-gym environment id for the discrete learners (default: Switch2-v0; Switch2-v2 adds the "
                        "step count to every observation), a particle one for the continuous learners: "
                        "simple_spread_v3 (cooperative navigation, the default) or simple_adversary_v3 (physical "
                        "deception); with --replay: the env to play (default: the policy's own)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per seed (default: 0)")
    p.add_argument("--episodes", type=int, default=None,
                   help="training episodes per run (default: 1500 for maddpg/iddpg, 6000 for coma/central_qv/central_v/iac, "
                        "4000 for the continuous learners; on-policy runs round up to whole batches of --n-envs "
                        "episodes); with --replay: the episodes played (default: 100)")
    p.add_argument("--out", default=None, help="output folder (default: results/tmp/ALGO-ENV); one that holds another "
                                                "run is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (its runs.json, returns.csv, curve.png and seed folders; "
                        "nothing else there is touched)")
    p.add_argument("--resume", metavar="OUT", default=None,
                   help="continue the interrupted run in folder OUT with its own arguments: finished seeds are kept, "
                        "the seed in progress continues from its checkpoint to the same result as an uninterrupted "
                        "run (on the Switch envs; on the others, the particle envs among them, it restarts from "
                        "scratch); give no other option but --no-progress and --threads")
    p.add_argument("--checkpoint-every", type=float, default=None, metavar="SECONDS",
                   help="save the seed in progress at most this often, and on Ctrl-C (default: 60; Switch envs only)")
    p.add_argument("--gamma", type=float, default=None, help="discount in [0, 1] (default: 0.99 coma/central_qv/central_v/iac, "
                                                             "0.95 others)")
    p.add_argument("--actor-lr", type=float, default=None,
                   help="actor learning rate (default: 3e-3 maddpg/iddpg, 2e-3 coma/central_qv/central_v/iac, 1e-3 continuous)")
    p.add_argument("--critic-lr", type=float, default=None,
                   help="critic learning rate (default: 2e-3 maddpg/iddpg, 3e-3 coma/central_qv/central_v/iac, 1e-3 continuous)")
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
    p.add_argument("--batch-size", type=int, default=None,
                   help="maddpg/iddpg and the continuous learners: transitions per update (default: 512)")
    p.add_argument("--warmup", type=int, default=None,
                   help="maddpg/iddpg and the continuous learners: env steps collected before the first update "
                        "(default: 1000 maddpg/iddpg, 2000 continuous)")
    p.add_argument("--team-reward", action="store_true",
                   help="continuous learners: every critic learns the team reward (the sum over agents) instead of "
                        "its own agent's")
    p.add_argument("--noise-start", type=float, default=None,
                   help="continuous learners: the exploration noise's starting standard deviation (default: 0.5)")
    p.add_argument("--noise-end", type=float, default=None,
                   help="continuous learners: its final one, reached linearly after 70%% of the episodes "
                        "(default: 0.05)")
    p.add_argument("--subpolicies", type=int, default=None,
                   help="maddpg_ensemble: sub-policies per agent, M (default: 3)")
    p.add_argument("--eval-every", type=int, default=None,
                   help="episodes between evaluations: one greedy episode for the discrete learners, the mean of 10 "
                        "noise-free ones for the continuous learners (default: 50 maddpg/iddpg, 200 others)")
    p.add_argument("--replay", metavar="POLICY", default=None,
                   help="play a saved policy.pt without training and print its figures: discrete, the greedy team "
                        "return (one episode, exact) and the mean sampled one over --episodes; continuous, the "
                        "noise-free score over --episodes (as training's final score); takes --env, --episodes, "
                        "--seed, --gif")
    p.add_argument("--seed", type=int, default=None,
                   help="with --replay: the seed of the sampled episodes and actions (discrete, default 0) or of the "
                        f"start states (continuous, default {PARTICLE_EVAL_SEED}, the ones training's final score "
                        "uses)")
    p.add_argument("--gif", metavar="OUT.gif", default=None,
                   help="with --replay: write a GIF of one greedy (or noise-free) episode here, the episode "
                        "training's greedy.gif shows")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run (default: 1; more rarely helps "
                                                          "networks this small)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


# options that apply to some learners only: option -> (those learners, how a refusal names them)
OFF_POLICY = ("maddpg", "iddpg", *CONTINUOUS_ALGORITHMS)
ONLY = {"feed_forward": (ON_POLICY, "coma, central_qv, central_v and iac"), "lam": (ON_POLICY, "coma, central_qv, central_v and iac"),
        "entropy": (ON_POLICY, "coma, central_qv, central_v and iac"), "per_agent_reward": (ON_POLICY, "coma, central_qv, central_v and iac"),
        "actor_gradient": (("maddpg", "iddpg"), "maddpg and iddpg"),
        "batch_size": (OFF_POLICY, "maddpg, iddpg and the continuous learners"),
        "warmup": (OFF_POLICY, "maddpg, iddpg and the continuous learners"),
        "team_reward": (tuple(CONTINUOUS_ALGORITHMS), "the continuous learners"),
        "noise_start": (tuple(CONTINUOUS_ALGORITHMS), "the continuous learners"),
        "noise_end": (tuple(CONTINUOUS_ALGORITHMS), "the continuous learners"),
        "subpolicies": (("maddpg_ensemble",), "maddpg_ensemble")}


def config_from_args(args: argparse.Namespace):
    """The learner's config with the options given on the command line; ValueError names a bad value or an option
    that does not apply to ``args.algo`` (``ONLY``)."""
    for name, (learners, family) in ONLY.items():
        given = getattr(args, name) is not None and getattr(args, name) is not False  # (0 is given)
        if given and args.algo not in learners:
            raise ValueError(f"--{name.replace('_', '-')} applies to {family} only, not {args.algo}")
    if args.algo in ("central_v", "central_qv") and args.per_agent_reward:
        raise ValueError(f"--per-agent-reward does not apply to {args.algo}: its one V(s) has no agent id")
    values = {"gamma": args.gamma, "actor_lr": args.actor_lr, "critic_lr": args.critic_lr, "hidden": args.hidden,
              "n_envs": args.n_envs}
    if args.algo in ON_POLICY:
        values.update(lam=args.lam, entropy_start=args.entropy, recurrent=not args.feed_forward,
                      team_reward=not args.per_agent_reward)
    else:
        values.update(actor_gradient=args.actor_gradient, batch_size=args.batch_size, warmup_steps=args.warmup)
    if args.algo in CONTINUOUS_ALGORITHMS:
        values.update(team_reward=args.team_reward or None, noise_start=args.noise_start, noise_end=args.noise_end,
                      n_subpolicies=args.subpolicies)
    try:
        return config_class(args.algo)(**{k: v for k, v in values.items() if v is not None}).validate()
    except ValueError as error:  # the config names its field: say the option the user typed instead
        field, _, rest = str(error).partition(" ")
        raise ValueError(f"{OPTION_OF_FIELD.get(field, field)} {rest}") from None


# the config fields the command line sets, by the option that sets them (for the configs' own messages)
OPTION_OF_FIELD = {"gamma": "--gamma", "actor_lr": "--actor-lr", "critic_lr": "--critic-lr", "hidden": "--hidden",
                   "n_envs": "--n-envs", "lam": "--lam", "entropy_start": "--entropy", "batch_size": "--batch-size",
                   "warmup_steps": "--warmup", "noise_start": "--noise-start", "noise_end": "--noise-end",
                   "n_subpolicies": "--subpolicies"}


# Bounds far above any run this course makes, so that a typo fails in one line instead of allocating or waiting for
# ever: the command line's own, and the configs' (validate.LIMITS) under the options' names
LIMITS = {"seeds": 2**31 - 1, "episodes": 10_000_000, "threads": 256, "replay episodes": 100_000,
          "n_envs": CONFIG_LIMITS["n_envs"], "hidden": CONFIG_LIMITS["hidden"],
          "batch_size": CONFIG_LIMITS["batch_size"], "warmup": CONFIG_LIMITS["warmup_steps"],
          "subpolicies": CONFIG_LIMITS["n_subpolicies"], "learning rate": CONFIG_LIMITS["learning_rate"],
          "entropy": CONFIG_LIMITS["coefficient"], "noise": CONFIG_LIMITS["noise"]}
RUN_FILES = ("runs.json", "returns.csv", "curve.png")  # with the seed<S>/ folders: what a run writes in --out


def check_limits(args: argparse.Namespace) -> None:
    """ValueError naming an argument outside ``LIMITS`` (the configs' own checks cover the rest)."""
    if len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0 or max(args.seeds) > LIMITS["seeds"]:
        raise ValueError(f"--seeds must be distinct ints in [0, {LIMITS['seeds']}], got {args.seeds}")
    for name in ("episodes", "threads", "n_envs", "hidden", "batch_size", "warmup", "subpolicies"):
        value = getattr(args, name)
        if value is not None and value > LIMITS[name]:
            raise ValueError(f"--{name.replace('_', '-')} must be at most {LIMITS[name]:,}, got {value:,}")
    for name in ("actor_lr", "critic_lr"):
        value = getattr(args, name)
        if value is not None and value > LIMITS["learning rate"]:
            raise ValueError(f"--{name.replace('_', '-')} must be a learning rate in (0, 1], got {value}")
    for name, limit in (("entropy", LIMITS["entropy"]), ("noise_start", LIMITS["noise"]),
                        ("noise_end", LIMITS["noise"])):
        value = getattr(args, name)
        if value is not None and value > limit:
            raise ValueError(f"--{name.replace('_', '-')} must be at most {limit}, got {value}")
    if args.checkpoint_every is not None and not args.checkpoint_every > 0:
        raise ValueError(f"--checkpoint-every must be a positive number of seconds, got {args.checkpoint_every}")


def check_env(algo: str, env: str | None) -> str:
    """The env ``algo`` trains (or a policy of it plays) on: ``env`` resolved (``"ma_gym:Switch2-v0"`` ->
    ``"Switch2-v0"``), or ``DEFAULT_ENV`` if None. ValueError for an unknown id, a particle env for a discrete
    learner, or a ma-gym env for a continuous one."""
    from marl_edu.envs import resolve_env_id

    continuous = algo in CONTINUOUS_ALGORITHMS
    if env is None:
        return DEFAULT_ENV["continuous" if continuous else "discrete"]
    particle = env.startswith("simple_")  # mpe2's ids
    if continuous and not particle:
        raise ValueError(f"{algo} acts with continuous forces on the particle envs ({', '.join(PARTICLE_ENVS)}), "
                         f"not on {env}")
    if particle and not continuous:
        raise ValueError(f"{algo} acts with discrete actions on the ma-gym envs; {env} is a particle env with "
                         f"continuous forces (its learners: {', '.join(CONTINUOUS_ALGORITHMS)})")
    if particle and env not in PARTICLE_ENVS:
        raise ValueError(f"unknown particle environment {env!r}; choose one of {', '.join(PARTICLE_ENVS)}")
    return env if particle else resolve_env_id(env)


def resumable(env_id: str) -> bool:
    """Whether a run on ``env_id`` can be saved in progress and resumed: the batched Switch envs' state can."""
    return steps_as_arrays(env_id)


def check_budget(args: argparse.Namespace) -> tuple[int, int]:
    """``(episodes, eval_every)``: the options or the learner's defaults; ValueError if out of range."""
    episodes = DEFAULT_EPISODES[args.algo] if args.episodes is None else args.episodes
    if episodes < 1:
        raise ValueError(f"--episodes must be a positive number of episodes, got {episodes}")
    eval_every = min(DEFAULT_EVAL_EVERY[args.algo], episodes) if args.eval_every is None else args.eval_every
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


def _probe(folder: pathlib.Path) -> None:
    """Make ``folder`` (and its parents) and prove it writable with a probe file, created and removed."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
        pass


def check_out(out: str, overwrite: bool, resume: bool) -> pathlib.Path:
    """The output folder, proven writable (a probe file created and removed). ValueError for an empty name, a file,
    a folder that cannot be written, or one holding another run (``RUN_FILES`` or seed folders) unless ``overwrite``
    (or ``resume``: continuing that run). Nothing in it is removed here."""
    if not out.strip():
        raise ValueError("--out must name a folder, got an empty string")
    folder = pathlib.Path(out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {folder} is a file, not a folder")
    if not resume and not overwrite and _run_files(folder):
        raise ValueError(f"--out {folder} holds another run ({_run_files(folder)[0].name}); give --overwrite to "
                         f"replace it or --resume {folder} to continue it")
    try:
        _probe(folder)
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
        ylabel = (None if self.header["algo"] not in CONTINUOUS_ALGORITHMS
                  else "noise-free team return\n(mean of 10 episodes)")
        write_curve(self.rows, self.optimum, f"{self.header['algo']} on {self.header['env']}", self.out / "curve.png",
                    ylabel)

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
    old.no_progress, old.out = args.no_progress, args.resume
    if any(arg.split("=")[0] == "--threads" for arg in argv):  # (else the run's own: torch's sums depend on it)
        old.threads = args.threads
    return old, saved


@dataclasses.dataclass
class _Plan:
    """A training run's checked arguments: the learner, env, config, budget, device, output folder, the exact optimum
    (Switch envs; else None), and the runs.json of the run ``--resume`` continues (else None)."""

    args: argparse.Namespace
    env_id: str
    config: object
    episodes: int
    eval_every: int
    device: torch.device
    out: pathlib.Path
    optimum: float | None
    saved: dict | None

    @property
    def continuous(self) -> bool:
        return self.args.algo in CONTINUOUS_ALGORITHMS


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
        if args.algo in ON_POLICY and make_env(env_id).max_steps is None:
            raise ValueError(f"{args.algo} plays whole episodes and needs an env with a time limit; {env_id} has none")
        if args.checkpoint_every is not None and not resumable(env_id):
            raise ValueError(f"--checkpoint-every applies to the Switch envs only: a run on {env_id} cannot be saved "
                             f"in progress")
        out = check_out(f"results/tmp/{args.algo}-{env_id}" if args.out is None else args.out, args.overwrite,
                        saved is not None)
    except (ValueError, RuntimeError, OSError) as error:
        parser.error(_one_line(error))
    return _Plan(args, env_id, config, episodes, eval_every, device, out, known_optimum(env_id), saved)


def known_optimum(env_id: str) -> float | None:
    """The exact optimal team return of ``env_id`` (exact planning knows the Switch envs only), else None."""
    from marl_edu.planning import optimal_team_return

    if env_id in PARTICLE_ENVS:
        return None
    try:
        return optimal_team_return(env_id)
    except ValueError:
        return None


HEADER = ("command", "argv", "algo", "env", "episodes", "optimal", "score_episodes", "score_seed", "config")


def _open_run(plan: _Plan, argv: list[str]) -> _Run:
    """A new run's outputs (``--overwrite`` first removes only what a run of this command line writes), or for
    ``--resume`` the interrupted one's: its header, finished rows and returns."""
    import shlex
    import shutil

    if plan.saved is not None:  # (only the finished seeds' returns: a crash may have come between the two files)
        finished = {str(row["seed"]) for row in plan.saved["seeds"]}
        lines = (plan.out / "returns.csv").read_text().splitlines()[1:] if (plan.out / "returns.csv").exists() else []
        header = {key: plan.saved[key] for key in HEADER if key in plan.saved}
        run_log = _Run(plan.out, header, plan.optimum, plan.saved["seeds"],
                       [line for line in lines if line.split(",")[0] in finished])
        run_log.write("running")
        return run_log
    if plan.args.overwrite:
        for path in _run_files(plan.out):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    header = {"command": "python -m marl_edu.train " + shlex.join(argv), "argv": argv, "algo": plan.args.algo,
              "env": plan.env_id, "episodes": plan.episodes, "optimal": plan.optimum}
    if plan.continuous:  # what each row's final score is: evaluate_particle over these episodes, no noise
        header.update(score_episodes=SCORE_EPISODES, score_seed=PARTICLE_EVAL_SEED)
    run_log = _Run(plan.out, {**header, "config": dataclasses.asdict(plan.config)}, plan.optimum)
    run_log.write("running")  # from now on the folder holds this run: --resume continues it even after a kill
    return run_log


def main(argv: list[str] | None = None) -> int:
    """``python -m marl_edu.train``: see ``--help``. Every argument and the output folder are checked before any
    training starts (one line on stderr, exit status 2); each seed's outputs are written when it finishes; Ctrl-C
    exits with status 130 (on the Switch envs saving the seed in progress, which ``--resume OUT`` continues);
    ``--replay POLICY`` plays a saved policy instead."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.replay is not None:
        return replay(parser, args)
    plan = _plan(parser, args, argv)
    torch.set_num_threads(plan.args.threads)
    run_log = _open_run(plan, argv)
    _print_start(plan, run_log)
    return _train_seeds(plan, run_log)


def _columns(plan: _Plan) -> list[tuple[str, int, object]]:
    """The per-seed table's columns: ``(title, width, row -> text)``: a discrete learner's greedy and sampled returns
    and when it solved; a continuous learner's final score (navigation: distances and collisions; deception: the
    adversary's and a good agent's return); then the wall-clock and speed."""
    if not plan.continuous:
        solved_at = lambda r: "-" if r["episodes_to_solve"] is None else f"{r['episodes_to_solve']} ep"  # noqa: E731
        columns = [("greedy", 7, lambda r: f"{r['greedy']:.2f}"), ("sampled", 8, lambda r: f"{r['sampled']:.2f}"),
                   ("solved at", 10, solved_at)]
    else:
        columns = [("return", 7, lambda r: f"{r['team_return']:.2f}")]
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


def _print_start(plan: _Plan, run_log: _Run) -> None:
    """What is trained and where it goes, the table's titles and the rows of the seeds a resumed run finished."""
    if plan.continuous:
        measure = f"scored without noise on {SCORE_EPISODES} episodes"
    else:
        measure = f"exact optimum {'unknown' if plan.optimum is None else f'{plan.optimum:.2f}'}"
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
                  f"{int((returns >= solved_threshold(plan.optimum) - 1e-6).sum())}/{len(rows)}")
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
                            checkpoint=checkpoint)
    if run.updates == 0 and plan.args.algo not in ON_POLICY:
        print(f"warning: seed {seed} made no update ({run.env_steps} env steps, fewer than the warm-up "
              f"{plan.config.warmup_steps} or a batch of {plan.config.batch_size}): the policy is untrained")
    if plan.continuous:
        figures = {"seed": seed, **particle_figures(run.agent, plan.env_id), **figures}
    return run, rounded(figures)


class _CtrlC:
    """The SIGINT (Ctrl-C) and SIGTERM handler while seeds train. While outputs are being written (``protect``) it
    only notes the request, so every file stays whole and the run stops once they are written; while a seed trains
    with a ``RunCheckpoint``, the first request asks it to save and stop at the end of the current step; otherwise
    (a run that cannot be saved in progress, or a second request) it stops at once."""

    def __init__(self):
        self.checkpoint, self.protect, self.signum = None, False, None  # signum: the first request's signal

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def __call__(self, signum, frame):
        first = not self.requested
        self.signum = self.signum or signum
        if self.protect:
            return
        if first and self.checkpoint is not None:
            self.checkpoint.request_stop()
            return
        raise KeyboardInterrupt


def _checkpoint(plan: _Plan, seed: int):
    """The seed's ``RunCheckpoint`` (seed<S>/run.pt, holding the state a resumed run left if any) on the Switch
    envs; None on the others, whose runs cannot be saved in progress."""
    from marl_edu.resume import RunCheckpoint, load_run_state

    if not resumable(plan.env_id):
        return None
    path = plan.out / f"seed{seed}" / "run.pt"
    header = {"env": plan.env_id, "seed": seed, "algo": plan.args.algo, "episodes": plan.episodes,
              "eval_every": plan.eval_every, "config": dataclasses.asdict(plan.config)}
    state = None
    if plan.saved is not None and path.exists():  # the run --resume continues: its seed's state, from this run?
        saved_header, state = load_run_state(path)
        differ = [key for key in header if saved_header.get(key) != header[key]]
        if differ:
            raise ValueError(f"{path} was saved by another run ({', '.join(differ)} differ): delete it to train seed "
                             f"{seed} again from its start")
    every = 60.0 if plan.args.checkpoint_every is None else plan.args.checkpoint_every
    return RunCheckpoint(path, every, resume=state, header=header)


def _train_seeds(plan: _Plan, run_log: _Run) -> int:
    """Train every seed not finished yet, writing each one's outputs when it finishes; the exit status: 0 when all
    finished (then the SUMMARY line), 130 on Ctrl-C (``_interrupted``), 1 on an error during training."""
    from marl_edu.resume import TrainingInterrupted

    ctrl_c, current = _CtrlC(), None  # current: the seed in progress
    finished = {row["seed"] for row in run_log.rows}
    previous = {signum: signal.signal(signum, ctrl_c) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            for seed in [seed for seed in plan.args.seeds if seed not in finished]:
                current, ctrl_c.checkpoint = seed, _checkpoint(plan, seed)
                run, row = _train_one(plan, seed, ctrl_c.checkpoint)
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
            print(f"python -m marl_edu.train: error: seed {current}: {_one_line(error)}", file=sys.stderr)
            return 1
        ctrl_c.protect = True
        run_log.write("complete")
        print(_summary(plan, run_log.rows))
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _interrupted(plan: _Plan, run_log: _Run, seed: int | None, stopped: BaseException, status: int) -> int:
    """After Ctrl-C (or SIGTERM): runs.json says the run was interrupted and what ``--resume`` will do with the seed
    in progress (continue it from its run.pt, or restart it from scratch); one line on stderr; returns ``status``
    (130 for Ctrl-C, 143 for SIGTERM)."""
    from marl_edu.resume import TrainingInterrupted

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
            why = "not saved yet" if resumable(plan.env_id) else f"a run on {plan.env_id} cannot be saved in progress"
            note = f"; seed {seed} restarts from scratch ({why})"
    run_log.write("interrupted", in_progress)
    done = f"seeds {finished} finished" if finished else "no seed finished"
    print(f"interrupted: {done}{note}; continue with python -m marl_edu.train --resume {plan.out}", file=sys.stderr)
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
        return self.algo in CONTINUOUS_ALGORITHMS


def load_replay_policy(path: str):
    """The learner in the policy file ``path`` and the env it was trained on: ``(agent, env_id)``. ValueError in one
    line for a missing file, one that is not a checkpoint, a run in progress (``seed<S>/run.pt``: continue it with
    ``--resume``), any other checkpoint that is not a policy, or weights holding NaN or infinity."""
    from marl_edu.checkpoints import load_checkpoint, load_policy
    from marl_edu.resume import KIND

    if pathlib.Path(path).is_dir():
        raise ValueError(f"{path} is a folder, not a policy file: give one of its seed<S>/policy.pt")
    payload = load_checkpoint(path)
    if payload["algo"] == KIND:
        raise ValueError(f"{path} is a run in progress saved by Ctrl-C, not a policy: finish it with --resume OUT "
                         f"(its run's folder), then replay seed<S>/policy.pt")
    agent = load_policy(path)  # (which refuses damaged headers, mismatched tensors and NaN weights)
    return agent, payload["env"]


def check_gif(name: str) -> pathlib.Path:
    """The GIF file ``--gif`` names, its folder made and proven writable (nothing written there yet). ValueError
    for a name not ending in .gif, a folder, or a folder that cannot be written."""
    path = pathlib.Path(name)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"--gif must name a .gif file, got {name!r}")
    if path.is_dir():
        raise ValueError(f"--gif {name} is a folder, not a file")
    try:
        _probe(path.absolute().parent)
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
    agent, trained_on = load_replay_policy(args.replay)
    algo = algo_name(agent)
    env_id = check_env(algo, trained_on if args.env is None else args.env)
    check_fits(agent, make_env(env_id))
    episodes = 100 if args.episodes is None else args.episodes
    if not 1 <= episodes <= LIMITS["replay episodes"]:
        raise ValueError(f"--episodes must be between 1 and {LIMITS['replay episodes']:,} with --replay, "
                         f"got {episodes:,}")
    default_seed = PARTICLE_EVAL_SEED if algo in CONTINUOUS_ALGORITHMS else 0
    seed = default_seed if args.seed is None else args.seed
    if not 0 <= seed <= LIMITS["seeds"]:
        raise ValueError(f"--seed must be an int in [0, {LIMITS['seeds']}], got {seed}")
    if not 1 <= args.threads <= LIMITS["threads"]:
        raise ValueError(f"--threads must be between 1 and {LIMITS['threads']}, got {args.threads}")
    gif = None if args.gif is None else check_gif(args.gif)
    return _Replay(agent, algo, trained_on, env_id, episodes, seed, gif)


def replay_figures(agent, env_id: str, episodes: int = 100, seed: int = 0, progress: bool = False) -> dict:
    """A saved policy's figures, as runs.json records a training run's (``rounded``): discrete, ``greedy``
    (``greedy_team_return``: one episode on Switch, exact; else the mean of 100) and ``sampled`` (mean team return of
    ``episodes`` episodes with actions sampled from the actors, the env and the sampling generator seeded with
    ``seed``); continuous, ``particle_figures`` over ``episodes`` episodes from ``seed``."""
    if algo_name(agent) in CONTINUOUS_ALGORITHMS:
        return rounded(particle_figures(agent, env_id, episodes, seed, progress))
    greedy = greedy_team_return(agent, env_id, FINAL_GREEDY_EPISODES)
    agent.generator.manual_seed(seed)  # the actors' samples: the replay's own stream (training's is not saved)
    sampled = float(sampled_returns(agent, env_id, n_episodes=episodes, seed=seed).mean())
    return rounded({"greedy": greedy, "sampled": sampled})


def replay(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--replay POLICY``: play a saved policy without training, print its figures (a ``REPLAY`` line of
    ``key=value``, values as runs.json records them) and write ``--gif``. A bad argument or policy stops in one line
    with exit status 2 before anything is played; Ctrl-C exits with status 130."""
    try:
        plan = _check_replay(parser, args)
    except (ValueError, RuntimeError, OSError) as error:
        parser.error(_one_line(error))
    torch.set_num_threads(args.threads)
    what = (f"without noise, {plan.episodes} episodes from seed {plan.seed}" if plan.continuous else
            f"greedy ({'one episode' if is_deterministic(plan.env_id) else f'{FINAL_GREEDY_EPISODES} episodes'}) and "
            f"sampled ({plan.episodes} episodes, seed {plan.seed})")
    print(f"{plan.algo} policy {args.replay} (trained on {plan.trained_on}) played on {plan.env_id}: {what}",
          flush=True)
    try:
        figures = replay_figures(plan.agent, plan.env_id, plan.episodes, plan.seed, progress=not args.no_progress)
        values = " ".join(f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}"
                          for key, value in figures.items())  # agent_returns: comma-separated
        print(f"REPLAY algo={plan.algo} env={plan.env_id} episodes={plan.episodes} seed={plan.seed} {values}",
              flush=True)
        if plan.gif is not None:
            write_gif(plan.agent, plan.env_id, plan.gif)
            print(f"GIF written to {args.gif}")
    except KeyboardInterrupt:
        print("interrupted: nothing more played or written", file=sys.stderr)
        return 130
    except (ValueError, OSError) as error:
        print(f"python -m marl_edu.train: error: {_one_line(error)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # python -m marl_edu.cli works too; the README's entry point is python -m marl_edu.train
    raise SystemExit(main())
