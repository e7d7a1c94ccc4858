"""Evaluation of a trained learner: its greedy policy's team return (one exact episode where the env's family is
deterministic, else a mean over episodes), its sampled policy's returns, and a particle-env policy's score."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from marl_edu.base.threads import torch_threads
from marl_edu.base.validate import positive_int
from marl_edu.data.rollout import run_episode
from marl_edu.envs.family import EVAL_EPISODES, FINAL_EVAL_EPISODES
from marl_edu.envs.make import family, make_env
from marl_edu.envs.particle import PARTICLE_EVAL_SEED
from marl_edu.learners.table import check_fits

GREEDY_EPISODES = EVAL_EPISODES  # a periodic greedy evaluation where episodes are random (not Switch): this many
FINAL_GREEDY_EPISODES = FINAL_EVAL_EPISODES  # ... and a run's final greedy figure there (envs.family's numbers)


def greedy_return(agent, env_id: str, record_frames: bool = False, threads: int | None = None):
    """Play one episode with every agent's argmax action; returns the ``Episode``. ValueError if the learner's sizes
    do not fit ``env_id`` (``learners.check_fits``)."""
    with torch_threads(threads):
        env = make_env(env_id, seed=0)
        check_fits(agent, env)
        return run_episode(env, agent.greedy_policy(), record_frames=record_frames)


def greedy_team_return(agent, env_id: str, episodes: int = GREEDY_EPISODES, threads: int | None = None) -> float:
    """The greedy policy's team return: where the env's family is deterministic (Switch) its one episode, exact;
    elsewhere the mean of ``episodes`` successive episodes of one env seeded the family's ``eval_seed``, the same
    episodes for the same policy."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        if family(env_id).deterministic:
            return greedy_return(agent, env_id, threads=threads).team_return
        env = make_env(env_id, seed=family(env_id).eval_seed)
        check_fits(agent, env)
        return float(np.mean([run_episode(env, agent.greedy_policy()).team_return for _ in range(episodes)]))


def sampled_returns(agent, env_id: str, n_episodes: int = 100, seed: int = 0, threads: int | None = None) -> np.ndarray:
    """Team returns of ``n_episodes`` episodes with actions sampled from the actors (no epsilon)."""
    positive_int(n_episodes, "n_episodes")
    with torch_threads(threads):
        env = make_env(env_id, seed=seed)
        check_fits(agent, env)
        return np.array([run_episode(env, agent.sampled_policy()).team_return for _ in range(n_episodes)])


@dataclass
class ParticleScore:
    """How a policy does on a particle env over ``episodes`` episodes (means over them): the team return (sum over
    agents and steps) and each agent's return ``agent_returns`` (N,); on cooperative navigation also the landmark
    distance (sum over landmarks of the distance to the nearest agent) averaged over the steps and at the last step,
    and the collisions (touching pairs) per step (NaN on the other envs, which do not report them)."""

    team_return: float
    landmark_distance: float
    final_landmark_distance: float
    collisions_per_step: float
    episodes: int
    agent_returns: list[float] = field(default_factory=list)


def evaluate_particle(policy, env_id: str = "simple_spread_v3", episodes: int = 100, seed: int = PARTICLE_EVAL_SEED,
                      progress: bool = False, threads: int | None = None) -> ParticleScore:
    """Run ``policy`` (obs ``(N, O)`` -> forces ``(N, 2)``) for ``episodes`` episodes of a particle env from ``seed``:
    the same start states for every policy given the same seed, so scores compare policies, not luck."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        if family(env_id).actions != "forces":
            raise ValueError(f"evaluate_particle needs a particle env (e.g. 'simple_spread_v3'), got {env_id!r}")
        env = make_env(env_id, seed=seed)
        runs = [run_episode(env, policy) for _ in tqdm(range(episodes), desc="evaluating", disable=not progress,
                                                       leave=False)]

        def mean(key: str, last: bool = False) -> float:  # a navigation figure, averaged over steps (or the last one)
            if key not in runs[0].metrics:
                return float("nan")
            return float(np.mean([run.metrics[key][-1] if last else run.metrics[key].mean() for run in runs]))

        return ParticleScore(
            team_return=float(np.mean([run.team_return for run in runs])),
            landmark_distance=mean("landmark_distance"),
            final_landmark_distance=mean("landmark_distance", last=True),
            collisions_per_step=mean("collisions"),
            episodes=episodes,
            agent_returns=np.mean([run.agent_returns for run in runs], axis=0).round(6).tolist())  # (N,)


