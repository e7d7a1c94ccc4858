"""Evaluation of a trained learner: its greedy policy's team return (one exact episode where the env's family is
deterministic, else a mean over episodes), its sampled policy's returns, and a particle-env policy's score.

Greedy and sampled evaluate two policies. Greedy plays every agent's argmax (with forces: the noise-free policy);
sampled plays the policy that was trained: actions drawn from an actor's probabilities, or, for a learner that acts
greedily on Q-values (IQL, VDN, QMIX), epsilon-greedy with ``SAMPLED_EPSILON`` = 0.05, as the MARL textbook's runs
evaluate; with forces, continuous PPO's draws from its Gaussian, and the deterministic MADDPG family's adds the
Gaussian exploration noise it trains with at its last sigma, ``noise_end`` (an ensemble also draws every agent's
sub-policy per episode). ``sampled_as`` says which, for a run's record. A sampled evaluation draws its actions from
a generator of its own, seeded by its caller, never from the learner's: evaluating during training leaves training's
random stream as it was.

Where episodes start at random, a run's sampled figures play the greedy (or noise-free) figure's own episodes: the
greedy evaluation plays successive episodes of one env seeded the family's ``eval_seed`` and keeps where each began
(``Starts``); ``sampled_returns(..., starts=...)`` starts one env copy in each of those states. So the two figures
differ by the sampling alone, and their gap is measured episode by episode (``paired_gap``). Without ``starts``,
``sampled_returns`` plays episodes of its own (the first episode of env copies seeded ``seed``, ``seed + 1``, ...); on
Switch, where every episode starts alike, these are the greedy figure's episodes too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from marl_edu.base.threads import torch_threads
from marl_edu.base.validate import positive_int
from marl_edu.data.rollout import collect_episodes, run_episode
from marl_edu.envs.family import EVAL_EPISODES, FINAL_EVAL_EPISODES
from marl_edu.envs.make import VecEnv, family, make_env, make_vec_env, resolve
from marl_edu.envs.particle import PARTICLE_EVAL_SEED
from marl_edu.learners.table import algo_name, check_fits, entry

GREEDY_EPISODES = EVAL_EPISODES  # a periodic greedy evaluation where episodes are random (not Switch): this many
FINAL_GREEDY_EPISODES = FINAL_EVAL_EPISODES  # ... and a run's final greedy figure there (envs.family's numbers)
SAMPLED_EPISODES = 10  # a periodic sampled evaluation: the mean of this many episodes (on Switch too: sampled
# episodes differ where greedy ones do not)
SAMPLED_EPSILON = 0.05  # a value-based learner's sampled policy: epsilon-greedy with this epsilon (the textbook's)
SAMPLED_COPIES = 100  # at most this many env copies play sampled episodes at once (more episodes: in chunks)


def greedy_return(agent, env_id: str, record_frames: bool = False, threads: int | None = None):
    """Play one episode with every agent's argmax action; returns the ``Episode``. ValueError if the learner's sizes
    do not fit ``env_id`` (``learners.check_fits``)."""
    with torch_threads(threads):
        env = make_env(env_id, seed=0)
        check_fits(agent, env)
        return run_episode(env, agent.greedy_policy(), record_frames=record_frames)


def greedy_team_return(agent, env_id: str, episodes: int = GREEDY_EPISODES, threads: int | None = None) -> float:
    """The greedy policy's team return: where the env's family is deterministic (Switch) its one episode, exact;
    elsewhere the mean of ``greedy_returns``, ``episodes`` successive episodes of one env seeded the family's
    ``eval_seed``, the same episodes for the same policy."""
    positive_int(episodes, "episodes")
    if family(env_id).deterministic:
        return greedy_return(agent, env_id, threads=threads).team_return
    return float(np.mean(greedy_returns(agent, env_id, episodes, threads)))


@dataclass(frozen=True)
class Starts:
    """Where each of an evaluation's episodes began, for another policy to play the same episodes: an env ``env_id``
    made with ``seed`` played them one after another, and ``states[k]`` is its state just before episode k's reset
    (its ``get_state``; None for the first episode: the env as made). ``envs.make.VecEnv(env_id, K, seed, states)``
    starts K copies there."""

    env_id: str
    seed: int
    states: list = field(repr=False)


def play_in_a_row(env, new_policy, episodes: int, progress: bool = False, fresh: bool = True) -> tuple[list, Starts]:
    """Play ``episodes`` successive episodes of ``env`` (one of ``make_env``'s, made with its ``seed``; ``fresh``: as
    made, no episode played yet), each with a policy ``new_policy()`` makes for it (obs ``(N, O)`` -> actions
    ``(N,)`` or forces ``(N, A)``; a recurrent one starts each episode afresh). Returns the ``Episode`` of each and
    where each began (``Starts``)."""
    runs, states = [], []
    for k in tqdm(range(episodes), desc="evaluating", disable=not progress, leave=False):
        states.append(env.get_state() if k or not fresh else None)  # (None: the env as made)
        runs.append(run_episode(env, new_policy()))
    return runs, Starts(env.env_id, env.seed, states)


def greedy_episodes(agent, env_id: str, episodes: int = GREEDY_EPISODES,
                    threads: int | None = None) -> tuple[np.ndarray, Starts]:
    """Team returns ``(episodes,)`` of the greedy (noise-free) policy over ``episodes`` successive episodes of one env
    seeded the family's ``eval_seed`` (the episodes ``greedy_team_return`` averages), and where each began
    (``Starts``, for ``sampled_returns`` to play the same episodes)."""
    positive_int(episodes, "episodes")
    with torch_threads(threads):
        env = make_env(env_id, seed=family(env_id).eval_seed)
        check_fits(agent, env)
        runs, starts = play_in_a_row(env, agent.greedy_policy, episodes)  # (a fresh greedy policy per episode)
        return np.array([run.team_return for run in runs], dtype=np.float64), starts  # (episodes,)


def greedy_returns(agent, env_id: str, episodes: int = GREEDY_EPISODES, threads: int | None = None) -> np.ndarray:
    """Team returns ``(episodes,)`` of the greedy (noise-free) policy over ``episodes`` successive episodes of one env
    seeded the family's ``eval_seed``: the episodes ``greedy_team_return`` averages (``greedy_episodes``)."""
    return greedy_episodes(agent, env_id, episodes, threads)[0]


@dataclass(frozen=True)
class PairedGap:
    """The sampled policy against the greedy (noise-free) one on the same episodes: ``gap``, the mean of the paired
    differences (sampled minus greedy, episode by episode), and ``se``, its standard error (their standard deviation
    over sqrt(E), E episodes; NaN for one episode)."""

    gap: float
    se: float


def paired_gap(sampled: np.ndarray, greedy: np.ndarray) -> PairedGap:
    """``PairedGap`` of team returns ``sampled (E,)`` and ``greedy (E,)``, episode k of both the same episode
    (``sampled_returns`` with the greedy evaluation's ``Starts``). ValueError for other shapes or a non-finite
    return."""
    sampled, greedy = np.asarray(sampled, dtype=np.float64), np.asarray(greedy, dtype=np.float64)  # (E,), (E,)
    if sampled.ndim != 1 or sampled.shape != greedy.shape or not len(sampled):
        raise ValueError(f"paired_gap needs two (E,) arrays of the same episodes' team returns, E >= 1; got sampled "
                         f"{sampled.shape} and greedy {greedy.shape}")
    for name, returns in (("sampled", sampled), ("greedy", greedy)):
        if not np.isfinite(returns).all():
            bad = int(np.flatnonzero(~np.isfinite(returns))[0])
            raise ValueError(f"paired_gap: the {name} team return of episode {bad} is {returns[bad]} (not finite)")
    differences = sampled - greedy  # (E,)
    se = differences.std(ddof=1) / np.sqrt(len(differences)) if len(differences) > 1 else float("nan")
    return PairedGap(float(differences.mean()), float(se))


def acts_on_q_values(learner) -> bool:
    """Whether a learner (an agent, or a name of ``learners.LEARNERS``) acts greedily on Q-values (its row's loop
    ``"episode_replay"``: IQL, VDN, QMIX), so that its sampled policy is epsilon-greedy rather than drawn from an
    actor's probabilities."""
    return entry(learner if isinstance(learner, str) else algo_name(learner)).loop == "episode_replay"


def sampled_as(learner, config=None) -> str:
    """What a learner's (an agent's, or a name's with its ``config``, None: its row's defaults) sampled evaluation
    plays, in the words a run's record keeps (``"sampled_as"``)."""
    row = entry(learner if isinstance(learner, str) else algo_name(learner))
    if row.loop == "episode_replay":  # (acts_on_q_values)
        return f"epsilon-greedy, epsilon {SAMPLED_EPSILON}"
    if row.loop == "continuous":  # deterministic forces: the exploration noise of training's end
        sigma = (learner.config if not isinstance(learner, str) else config or row.config()).noise_end
        drawn = "every agent's sub-policy drawn per episode, " if row.policy.subpolicies else ""
        return f"{drawn}Gaussian noise, sigma {sigma}"
    if row.loop == "continuous_on_policy":
        return "forces drawn from the Gaussian policy"
    return "actions drawn from the policy"


def sampled_policy(agent):
    """A fresh sampled policy for ``run_episode``, one episode at a time (obs ``(N, O)`` -> actions ``(N,)`` or forces
    ``(N, A)``; make one per episode; ``sampled_returns`` plays many at once): a discrete learner's
    ``sampled_policy()``, epsilon-greedy with ``SAMPLED_EPSILON`` where it acts on Q-values; a continuous learner's
    ``sampled_actions`` for one env copy (an ensemble's sub-policies drawn for this episode)."""
    if entry(algo_name(agent)).continuous:
        act = agent.sampled_actions(1)
        return lambda obs: act(np.asarray(obs)[None])[0]  # (N, O) -> (1, N, O) -> (1, N, A) -> (N, A)
    return agent.sampled_policy(epsilon=SAMPLED_EPSILON) if acts_on_q_values(agent) else agent.sampled_policy()


@contextlib.contextmanager
def own_generator(agent, seed: int):
    """For the ``with`` block, ``agent`` draws its actions from a new generator seeded ``seed``; after it, the
    learner's own generator (training's stream) is back where it was, untouched."""
    training = agent.generator
    agent.generator = torch.Generator(device=training.device).manual_seed(int(seed))
    try:
        yield
    finally:
        agent.generator = training


def sampled_returns(agent, env_id: str, n_episodes: int = 100, seed: int = 0, threads: int | None = None,
                    starts: Starts | None = None) -> np.ndarray:
    """Team returns ``(n_episodes,)`` of ``n_episodes`` episodes of the sampled policy, the actions drawn from a
    generator seeded ``seed`` (``own_generator``): the same returns for the same policy and seed, and the learner's
    own generator untouched.

    ``starts``: where a greedy (or noise-free) evaluation's episodes began (``greedy_episodes``,
    ``particle_episodes``): episode k is then its episode k, played with the sampled policy (``n_episodes`` is its
    number of episodes). None: episodes of their own, the first episode of env copies seeded ``seed``, ``seed + 1``,
    ... (where every episode starts alike, on Switch, the same).

    Every learner plays them all at once, as its training does, on env copies (``make_vec_env``'s, or with ``starts``
    ``VecEnv``'s put in them): one network call per step for every episode (``first_sampled_returns``). More than
    ``SAMPLED_COPIES`` episodes are played in chunks of that many copies, seeded on (``seed + 100``, ... for the
    second chunk, or ``starts``' next 100), so that a final figure over thousands of episodes never holds thousands of
    envs at once (``paired_returns`` also keeps only one chunk's start states). Without ``starts``, where episodes
    start at random, these are not the greedy evaluation's episodes: compare the two as means only."""
    positive_int(n_episodes, "n_episodes")
    if starts is not None:
        if not isinstance(starts, Starts) or starts.env_id != resolve(env_id) or len(starts.states) != n_episodes:
            got = (f"{len(starts.states)} episodes of {starts.env_id}" if isinstance(starts, Starts)
                   else type(starts).__name__)
            raise ValueError(f"starts must be the Starts of {n_episodes} episodes of {resolve(env_id)} (a greedy "
                             f"evaluation's, greedy_episodes), got {got}")
    with torch_threads(threads):
        env = make_env(env_id, seed=seed)
        check_fits(agent, env)
        with own_generator(agent, seed):
            returns = []
            for start in range(0, n_episodes, SAMPLED_COPIES):
                copies = min(SAMPLED_COPIES, n_episodes - start)
                if starts is None:
                    venv = make_vec_env(env_id, copies, seed + start)  # copies seeded seed + start + k
                else:  # copy k where the greedy evaluation's episode start + k began
                    venv = VecEnv(env_id, copies, starts.seed, starts.states[start:start + copies])
                returns.extend(first_sampled_returns(agent, venv))  # (K,)
            return np.array(returns, dtype=np.float64)  # (n_episodes,)


def first_sampled_returns(agent, venv) -> np.ndarray:
    """The team return ``(K,)`` of each of ``venv``'s K copies' first episode, played with the sampled policy, its
    draws from ``agent.generator`` (``sampled_returns`` puts one of its own there): through ``collect_episodes``
    (epsilon ``SAMPLED_EPSILON`` where the learner acts on Q-values), an off-policy learner's ``act`` or a continuous
    learner's ``sampled_actions(K)`` (``first_episode_returns``)."""
    kind = entry(algo_name(agent)).loop
    if kind == "off_policy":
        return first_episode_returns(agent.act, venv)  # (K,)
    if kind.startswith("continuous"):
        return first_episode_returns(agent.sampled_actions(venv.n_envs), venv)  # (K,)
    epsilon = SAMPLED_EPSILON if acts_on_q_values(agent) else 0.0
    return np.asarray(collect_episodes(agent, venv, epsilon)[1], dtype=np.float64)  # (K,)


def paired_returns(agent, env_id: str, episodes: int = 100, seed: int = 0,
                   threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Team returns ``(episodes,)`` of the greedy policy and ``(episodes,)`` of the sampled one on the same episodes:
    ``greedy_episodes``' (successive episodes of one env seeded the family's ``eval_seed``), episode k of both
    starting alike, the sampled draws from a generator seeded ``seed`` (``own_generator``). The same figures as
    ``greedy_episodes`` followed by ``sampled_returns(..., starts=...)``, played ``SAMPLED_COPIES`` episodes at a
    time (each chunk greedy, then sampled from its start states), so that a final figure over many episodes holds one
    chunk's start states at once, not every episode's."""
    positive_int(episodes, "episodes")
    with torch_threads(threads):
        env = make_env(env_id, seed=family(env_id).eval_seed)
        check_fits(agent, env)
        greedy, sampled = [], []
        with own_generator(agent, seed):  # (the greedy policy draws nothing: one stream of draws for every chunk)
            for start in range(0, episodes, SAMPLED_COPIES):
                copies = min(SAMPLED_COPIES, episodes - start)
                runs, starts = play_in_a_row(env, agent.greedy_policy, copies, fresh=start == 0)
                greedy.extend(run.team_return for run in runs)
                sampled.extend(first_sampled_returns(agent, VecEnv(env_id, copies, starts.seed, starts.states)))
        return np.array(greedy, dtype=np.float64), np.array(sampled, dtype=np.float64)  # (episodes,), (episodes,)


def first_episode_returns(act, venv) -> np.ndarray:
    """The team return of each of the K copies' first episode, every copy stepped with ``act(obs (K, N, O))``'s
    actions ``(K, N)`` or forces ``(K, N, A)`` (an off-policy learner's ``act``, sampled without epsilon; a continuous
    learner's ``sampled_actions(K)``) until each has ended once (a copy that ends is reset by the vec env and plays
    on, not counted): ``(K,)``."""
    returns = np.full(venv.n_envs, np.nan)  # (K,) NaN until copy k's first episode ends
    obs = venv.reset()  # (K, N, O)
    while np.isnan(returns).any():
        obs, _, _, info = venv.step(act(obs))  # (K, N, O)
        ended = np.asarray(info["episode_done"]) & np.isnan(returns)  # (K,)
        returns[ended] = np.asarray(info["episode_team_return"], dtype=np.float64)[ended]
    return returns


def sampled_team_return(agent, env_id: str, episodes: int = SAMPLED_EPISODES, threads: int | None = None,
                        starts: Starts | None = None) -> float:
    """The sampled policy's mean team return over ``episodes`` episodes (``sampled_returns``), the actions drawn from a
    generator seeded the family's ``eval_seed``: a periodic evaluation's, the same draws at every evaluation.
    ``starts``: that evaluation's greedy episodes (``greedy_episodes``), to play the same ones; None: env copies seeded
    ``eval_seed``, ``eval_seed + 1``, ..., the same episodes at every evaluation."""
    return float(sampled_returns(agent, env_id, episodes, family(env_id).eval_seed, threads, starts).mean())


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
    return particle_episodes(policy, env_id, episodes, seed, progress, threads)[0]


def particle_episodes(policy, env_id: str = "simple_spread_v3", episodes: int = 100, seed: int = PARTICLE_EVAL_SEED,
                      progress: bool = False,
                      threads: int | None = None) -> tuple[ParticleScore, np.ndarray, Starts]:
    """``evaluate_particle``'s score, each episode's team return ``(episodes,)`` and where each began (``Starts``,
    for ``sampled_returns`` to play the same episodes)."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        if family(env_id).actions != "forces":
            raise ValueError(f"evaluate_particle needs a particle env (e.g. 'simple_spread_v3'), got {env_id!r}")
        env = make_env(env_id, seed=seed)
        runs, starts = play_in_a_row(env, lambda: policy, episodes, progress)  # (one policy for every episode)

        def mean(key: str, last: bool = False) -> float:  # a navigation figure, averaged over steps (or the last one)
            if key not in runs[0].metrics:
                return float("nan")
            return float(np.mean([run.metrics[key][-1] if last else run.metrics[key].mean() for run in runs]))

        returns = np.array([run.team_return for run in runs], dtype=np.float64)  # (episodes,)
        score = ParticleScore(
            team_return=float(np.mean(returns)),
            landmark_distance=mean("landmark_distance"),
            final_landmark_distance=mean("landmark_distance", last=True),
            collisions_per_step=mean("collisions"),
            episodes=episodes,
            agent_returns=np.mean([run.agent_returns for run in runs], axis=0).round(6).tolist())  # (N,)
        return score, returns, starts


