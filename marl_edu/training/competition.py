"""Playing one team's trained policies against another's, on the MADDPG paper's physical deception
(mpe2 ``simple_adversary_v3``: agent 0 is the adversary, agents 1.. the good agents).

In a competitive game a policy's score depends on whom it plays. Training pits each learner's adversary against its
own good agents (self-play); ``play_matchup`` takes the adversary from one learner and the good agents from another,
which is how one asks whether a policy is robust to opponents it never trained with (section 4.3 of the paper) and
whether an ensemble of sub-policies makes it so.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from marl_edu.base.validate import boolean, positive_int
from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import family, make_env
from marl_edu.learners.continuous import ContinuousMADDPG
from marl_edu.learners.ensembles import EnsembleMADDPG
from marl_edu.learners.table import algo_name, entry
from marl_edu.training.evaluation import own_generator

DECEPTION = "simple_adversary_v3"
MATCHUP_SEED = 20_000  # matchups start from their own stream of start states, never one training or evaluation used


@dataclass
class MatchupScore:
    """Means over ``episodes`` episodes: the adversary's return and one good agent's return (the good agents share
    their reward), and at the last step the adversary's distance to the goal landmark and the nearest good agent's."""

    adversary_return: float
    good_return: float
    adversary_distance: float
    good_distance: float
    episodes: int


def episode_policy(learner: ContinuousMADDPG | EnsembleMADDPG, rng: np.random.Generator):
    """The noise-free policy ``learner`` plays for one episode, obs ``(N, O)`` -> forces ``(N, 2)``: an ensemble
    draws each agent's sub-policy uniformly from ``rng``, once for the whole episode (its row's
    ``Policy.subpolicies``)."""
    if entry(algo_name(learner)).policy.subpolicies:
        return learner.policy(rng.integers(0, learner.n_subpolicies, size=learner.n_agents))  # (N,) sub-policies
    return learner.greedy_policy()


def _maddpg_family(learner) -> bool:
    """Whether ``learner`` is one of the table's learners with forces from a replay of transitions: continuous MADDPG,
    its independent and inferring variants, the ensembles."""
    try:
        row = entry(algo_name(learner))
    except ValueError:  # not a learner of the table
        return False
    return row.continuous and row.replay == "transitions"


def sampled_episode_policy(learner: ContinuousMADDPG | EnsembleMADDPG):
    """The policy ``learner`` explores with at the end of training, for one episode, obs ``(N, O)`` -> forces
    ``(N, 2)``: its ``sampled_actions`` for one env copy (its last exploration noise; an ensemble draws the episode's
    sub-policies), every draw from the learner's generator."""
    act = learner.sampled_actions(1)  # obs (1, N, O) -> (1, N, 2)
    return lambda obs: act(obs[None])[0]  # (N, O) -> (1, N, O) -> (1, N, 2) -> (N, 2)


def play_matchup(adversary: ContinuousMADDPG | EnsembleMADDPG, good: ContinuousMADDPG | EnsembleMADDPG,
                 env_id: str = DECEPTION, episodes: int = 50, seed: int = MATCHUP_SEED,
                 sampled: bool = False) -> MatchupScore:
    """``adversary``'s actor for agent 0 against ``good``'s actors for agents 1..N-1 (the same learner for both
    is self-play) over ``episodes`` episodes from ``seed``: the same start states for every pairing. Noise-free
    (``episode_policy``), or with ``sampled`` each learner as it explores at the end of training
    (``sampled_episode_policy``), its draws from a generator of the matchup's own (``evaluation.own_generator``:
    ``seed`` for the adversary's learner, ``seed + 1`` for the good agents'; in self-play the one learner draws
    once per step for all agents, as in training), its own generator left untouched."""
    positive_int(episodes, "episodes")
    boolean(sampled, "sampled")
    env = make_env(env_id, seed=seed)
    if family(env_id).actions != "forces" or env.teams[0] != "adversary" or "adversary" in env.teams[1:]:
        raise ValueError(f"play_matchup needs one adversary (agent 0) against good agents, as {DECEPTION!r}; "
                         f"got {env_id!r}")
    for learner, role in ((adversary, "adversary"), (good, "good")):
        if not _maddpg_family(learner):
            raise ValueError(f"a matchup needs continuous MADDPG learners (or ensembles); the {role} learner is a "
                             f"{type(learner).__name__}")
        if (learner.n_agents, learner.obs_dim) != (env.n_agents, env.obs_dim):
            raise ValueError(f"the {role} learner was built for N={learner.n_agents} agents with O={learner.obs_dim}, "
                             f"but {env_id} has N={env.n_agents}, O={env.obs_dim}")
    rng = np.random.default_rng(seed)
    runs = []
    with contextlib.ExitStack() as generators:
        if sampled:
            generators.enter_context(own_generator(adversary, seed))
            if good is not adversary:
                generators.enter_context(own_generator(good, seed + 1))
        for _ in range(episodes):
            if sampled:
                play_adversary = sampled_episode_policy(adversary)
                play_good = play_adversary if good is adversary else sampled_episode_policy(good)
            else:
                play_adversary, play_good = episode_policy(adversary, rng), episode_policy(good, rng)

            def policy(obs: np.ndarray) -> np.ndarray:  # obs (N, O) -> (N, 2): row 0 from one learner, the rest the other
                if play_good is play_adversary:  # sampled self-play: one call, one draw of noise per step
                    return play_adversary(obs)
                return np.concatenate([play_adversary(obs)[:1], play_good(obs)[1:]])

            runs.append(run_episode(env, policy))
    final = np.array([run.metrics["goal_distance"][-1] for run in runs])  # (episodes, N)
    return MatchupScore(adversary_return=float(np.mean([run.agent_returns[0] for run in runs])),
                        good_return=float(np.mean([run.agent_returns[1] for run in runs])),
                        adversary_distance=float(final[:, 0].mean()),
                        good_distance=float(final[:, 1:].min(axis=1).mean()),
                        episodes=episodes)
