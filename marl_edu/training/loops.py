"""Training loops with progress bars, and evaluation of trained agents.

``train_maddpg`` runs MADDPG on K lock-step copies of an environment (``make_vec_env``), with
n-step returns of the **team reward** (Switch is cooperative: every critic learns the sum over agents).
``train_coma`` plays K whole episodes at a time with the current policy (on-policy) and makes one
COMA update from them, also with the team reward. ``train_value_decomposition`` plays K whole episodes at a time
epsilon-greedily, keeps them in an episode replay and learns from B replayed episodes (IQL, VDN, QMIX).
``train_continuous`` runs MADDPG with continuous actions on the particle envs, where each critic learns its own
agent's reward, as in the MADDPG paper; ``train_continuous_ppo`` plays K whole particle-env episodes at a time with a
Gaussian policy and makes one PPO update from them (continuous MAPPO and IPPO).

Every loop and evaluation here runs on ``threads`` torch threads (default 1: networks this small run fastest on one,
and two fight any other work on the machine) and gives the caller's count back after (``threads.torch_threads``).

Policy files are in ``checkpoints``; training a learner by name and measuring one seed (``runs.run_seed``, which the
command line and the benchmarks share) in ``runs``; the command line (``python -m marl_edu``) in ``cli``.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from marl_edu.envs.batched_switch import BatchedSwitch
from marl_edu.data.buffers import EpisodeReplay, ReplayBuffer, n_step_transitions
from marl_edu.learners.table import algo_name_of_class, check_fits, config_class
from marl_edu.learners.coma import COMA
from marl_edu.learners.continuous import ContinuousMADDPG, ContinuousMADDPGConfig
from marl_edu.learners.ensembles import EnsembleMADDPG, SubpolicyReplayBuffer
from marl_edu.envs.magym import is_switch
from marl_edu.envs.make import make_env, make_vec_env
from marl_edu.envs.particle import ParticleEnv
from marl_edu.learners.maddpg import MADDPG, MADDPGConfig
from marl_edu.learners.ppo_continuous import ContinuousMAPPO, ContinuousPPOConfig
from marl_edu.training.resume import RunCheckpoint
from marl_edu.data.rollout import collect_episodes, run_episode
from marl_edu.base.schedules import linear
from marl_edu.base.shapes import one_hot
from marl_edu.pieces.targets import critic_rewards
from marl_edu.base.threads import torch_threads
from marl_edu.base.validate import positive_int
from marl_edu.learners.value_decomposition import IQL, VDN, ValueDecompositionConfig


@dataclass
class TrainResult:
    """What a training run produced: per-episode team returns (while exploring), periodic greedy
    evaluations ``(episode, greedy team return)``, counts and wall-clock time, and the learner."""

    agent: MADDPG | COMA | IQL
    episode_returns: list[float] = field(default_factory=list)
    evaluations: list[tuple[int, float]] = field(default_factory=list)
    eval_seconds: list[float] = field(default_factory=list)  # wall-clock since the start, per evaluation
    eval_env_steps: list[int] = field(default_factory=list)  # env steps so far, per evaluation
    env_steps: int = 0
    updates: int = 0
    seconds: float = 0.0
    update_seconds: float = 0.0  # of which spent in the learner's update (the rest: acting, stepping, evaluating)
    started: float = field(default_factory=time.perf_counter, repr=False)  # time.perf_counter() at the start
    buffer: ReplayBuffer | EpisodeReplay | None = field(default=None, repr=False)  # an off-policy run's replay at the end


def greedy_return(agent, env_id: str, record_frames: bool = False, threads: int | None = None):
    """Play one episode with every agent's argmax action (MADDPG or COMA); returns the ``Episode``. ValueError if the
    learner's sizes do not fit ``env_id`` (``learners.check_fits``)."""
    with torch_threads(threads):
        env = make_env(env_id, seed=0)
        check_fits(agent, env)
        return run_episode(env, agent.greedy_policy(), record_frames=record_frames)


GREEDY_EPISODES = 10  # a periodic greedy evaluation where episodes are random (not Switch): the mean of this many
FINAL_GREEDY_EPISODES = 100  # ... and a run's final greedy figure there


def greedy_team_return(agent, env_id: str, episodes: int = GREEDY_EPISODES, threads: int | None = None) -> float:
    """The greedy policy's team return: on Switch (``envs.is_switch``) its one episode, exact; elsewhere the
    mean of ``episodes`` successive episodes of one env seeded 0, the same episodes for the same policy."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        if is_switch(env_id):
            return greedy_return(agent, env_id, threads=threads).team_return
        env = make_env(env_id, seed=0)
        check_fits(agent, env)
        return float(np.mean([run_episode(env, agent.greedy_policy()).team_return for _ in range(episodes)]))


def sampled_returns(agent, env_id: str, n_episodes: int = 100, seed: int = 0, threads: int | None = None) -> np.ndarray:
    """Team returns of ``n_episodes`` episodes with actions sampled from the actors (no epsilon)."""
    positive_int(n_episodes, "n_episodes")
    with torch_threads(threads):
        env = make_env(env_id, seed=seed)
        check_fits(agent, env)
        return np.array([run_episode(env, agent.sampled_policy()).team_return for _ in range(n_episodes)])


def _update_from_replay(agent, buffer: ReplayBuffer, config, rng: np.random.Generator, result: TrainResult,
                        update=None) -> None:
    """Once the buffer holds the warm-up (and a batch): ``updates_per_step`` gradient steps on batches sampled from
    ``buffer`` (``agent.update(batch)``, or ``update(agent, batch)`` when given), counted and timed in ``result``."""
    if len(buffer) < max(config.warmup_steps, config.batch_size):
        return
    tic = time.perf_counter()
    for _ in range(config.updates_per_step):
        batch = buffer.sample(config.batch_size, rng)  # (an ensemble's buffer also draws from every slice)
        if update is None:
            agent.update(batch)
        else:
            update(agent, batch)
        result.updates += 1
    result.update_seconds += time.perf_counter() - tic


def _record_evaluation(result: TrainResult, value: float) -> None:
    """Append a periodic evaluation ``(episodes so far, value)``, the wall-clock time since the run started and the env
    steps so far."""
    result.evaluations.append((len(result.episode_returns), value))
    result.eval_seconds.append(time.perf_counter() - result.started)
    result.eval_env_steps.append(result.env_steps)


def _check_update(update) -> None:
    """ValueError unless ``update`` is None or a callable ``update(agent, batch)``."""
    if update is not None and not callable(update):
        raise ValueError(f"update must be None (the learner's own agent.update) or a function update(agent, batch), "
                         f"got {type(update).__name__}")


def _finish(result: TrainResult, bar) -> TrainResult:
    """Close a loop's progress bar and record its wall-clock."""
    bar.close()
    result.seconds = time.perf_counter() - result.started
    return result


def _greedy_evaluation(result: TrainResult, env_id: str, bar, stop_at: float | None, threads: int | None = None,
                       **shown) -> bool:
    """Play the greedy policy (once on Switch, exact; else ``GREEDY_EPISODES`` episodes: ``greedy_team_return``),
    record ``(episodes so far, team return)`` and the time, show it on the progress bar; True when it reached
    ``stop_at``."""
    value = greedy_team_return(result.agent, env_id, threads=threads)
    _record_evaluation(result, value)
    bar.set_postfix(greedy=f"{value:.1f}", **shown)
    return stop_at is not None and value >= stop_at - 1e-6


@dataclass
class OffPolicyLoop:
    """What ``train_maddpg``'s loop carries from one env step to the next beside the learner, the replay buffer and
    the env copies: with them, everything a resumed run needs. ``resume.RunCheckpoint`` saves and restores it whole,
    so a value added here is never left out of a checkpoint."""

    rng: np.random.Generator  # samples the replay batches
    obs: np.ndarray  # (K, N, O) the copies' current observations
    pending: list[deque]  # K deques: each copy's last n_step steps, not yet stored as n-step transitions
    next_eval: int  # the episode count at which the next greedy evaluation is due


@dataclass
class OnPolicyLoop:
    """What ``train_coma``'s loop carries from one batch to the next beside the learner and the env copies (see
    ``OffPolicyLoop``): only when the next evaluation is due, as each batch starts from fresh episodes."""

    next_eval: int  # the episode count at which the next greedy evaluation is due


def train_maddpg(env_id: str = "Switch2-v2", episodes: int = 1500, config: MADDPGConfig | None = None,
                 seed: int = 0, eval_every: int = 100, progress: bool = True, device: str = "cpu",
                 learner: type[MADDPG] = MADDPG, stop_at: float | None = None,
                 env_backend: str = "batched", checkpoint: RunCheckpoint | None = None,
                 threads: int | None = None, update=None) -> TrainResult:
    """Train MADDPG (or ``learner=IDDPG``) for ``episodes`` episodes (summed over the K env copies), or until
    a periodic greedy evaluation reaches ``stop_at``. Deterministic for a seed, and the same with either
    ``env_backend`` (``make_vec_env``'s). With a ``checkpoint`` (``resume.RunCheckpoint``; batched Switch only) the
    run in progress is saved at the end of an env step and continues from a saved state to the same bits.
    ``update``: a function ``update(agent, batch)`` called for each replay batch (``ReplayBuffer.sample``'s) in place
    of ``agent.update(batch)`` (None, the default: ``agent.update``); the capstones pass the learner's own update."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        positive_int(eval_every, "eval_every")
        _check_update(update)
        config = (config or MADDPGConfig()).validate()
        venv = make_vec_env(env_id, config.n_envs, seed, env_backend)
        N, O, A, K = venv.n_agents, venv.obs_dim, venv.n_actions, venv.n_envs
        agent = learner(N, O, A, config, seed=seed, device=device)
        buffer = ReplayBuffer(config.buffer_size, N, O, A)
        result = TrainResult(agent=agent, buffer=buffer)
        loop = OffPolicyLoop(rng=np.random.default_rng(seed), obs=venv.reset(),
                             pending=[deque(maxlen=config.n_step) for _ in range(K)], next_eval=eval_every)
        if checkpoint is not None:  # the whole state of the run: resumed from it, saved at every step's end
            parts = {"agent": agent, "buffer": buffer, "venv": _resumable(venv), "loop": loop}
            checkpoint.restore(result, parts)
        bar = tqdm(total=episodes, initial=len(result.episode_returns), desc=f"{learner.__name__} {env_id} seed {seed}",
                   disable=not progress, leave=False)
        while len(result.episode_returns) < episodes:
            epsilon = linear(config.epsilon_start, config.epsilon_end, len(result.episode_returns),
                             config.epsilon_fraction * episodes)  # decayed over the first epsilon_fraction of training
            actions = agent.act(loop.obs, epsilon)  # collect: (K, N)
            next_obs, rewards, dones, info = venv.step(actions)  # (K, N, O), (K, N), (K, N)
            team_rewards = critic_rewards(rewards, team_reward=True)[:, 0]  # (K,) the cooperative objective
            for k in range(K):  # store: each copy's n-step transitions, shared by every critic
                loop.pending[k].append((loop.obs[k], actions[k], float(team_rewards[k])))
                done = bool(info["episode_done"][k])
                terminal = bool(info["terminated"][k].all())  # the team is done only when every agent arrived
                for o, a, ret, o2, d in n_step_transitions(loop.pending[k], config.gamma, info["final_obs"][k],
                                                           terminal, done):
                    buffer.add(o, one_hot(a, A), np.full(N, ret, dtype=np.float32), o2, np.full(N, float(d)))
                if done:
                    result.episode_returns.append(float(info["episode_team_return"][k]))
                    bar.update(1)
            loop.obs = next_obs
            result.env_steps += K
            _update_from_replay(agent, buffer, config, loop.rng, result, update)  # update
            if len(result.episode_returns) >= loop.next_eval:  # evaluate
                loop.next_eval += eval_every
                if _greedy_evaluation(result, env_id, bar, stop_at, threads, eps=f"{epsilon:.2f}"):
                    break
            if checkpoint is not None:
                checkpoint.save(result, parts)
        return _finish(result, bar)


def _resumable(venv):
    """``venv`` if its state can be saved mid-episode (the batched Switch's arrays), else ValueError."""
    if not isinstance(venv, BatchedSwitch):
        raise ValueError(f"runs on {venv.env_id} cannot be checkpointed or resumed: only the batched Switch envs' "
                         f"state can be saved (env_backend='batched' and a Switch id)")
    return venv


# ----------------------------------------------------------------------------------------------
# MADDPG with continuous actions on the particle environments
# ----------------------------------------------------------------------------------------------

PARTICLE_EVAL_SEED = 10_000  # evaluation episodes start from their own stream, never one training used


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


def evaluate_particle(policy, env_id: str = "simple_spread_v3", episodes: int = 100,
                      seed: int = PARTICLE_EVAL_SEED, progress: bool = False, threads: int | None = None) -> ParticleScore:
    """Run ``policy`` (obs ``(N, O)`` -> forces ``(N, 2)``) for ``episodes`` episodes of a particle env from ``seed``:
    the same start states for every policy given the same seed, so scores compare policies, not luck."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        env = make_env(env_id, seed=seed)
        if not isinstance(env, ParticleEnv):
            raise ValueError(f"evaluate_particle needs a particle env (e.g. 'simple_spread_v3'), got {env_id!r}")
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


def train_continuous(env_id: str = "simple_spread_v3", episodes: int = 3000,
                     config: ContinuousMADDPGConfig | None = None, seed: int = 0, eval_every: int = 100,
                     eval_episodes: int = 10, progress: bool = True, device: str = "cpu",
                     learner: type[ContinuousMADDPG] = ContinuousMADDPG, threads: int | None = None) -> TrainResult:
    """Train continuous MADDPG (or ``learner=ContinuousIDDPG``) on K lock-step copies of a particle env for
    ``episodes`` episodes (summed over the copies). Every ``eval_every`` episodes the noise-free policy plays
    ``eval_episodes`` episodes from the same start states (``evaluate_particle``); ``evaluations`` holds
    ``(episode, mean team return)``. Each critic learns its own agent's reward r_i, as in the paper (or, with
    ``config.team_reward``, the team's sum_j r_j). Deterministic for a seed."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        positive_int(eval_every, "eval_every")
        if config is None:
            config = config_class(algo_name_of_class(learner))()
        config = config.validate()
        np_rng = np.random.default_rng(seed)
        venv = make_vec_env(env_id, config.n_envs, seed)
        if not venv.continuous:
            raise ValueError(f"train_continuous needs a particle env with continuous actions "
                             f"(e.g. 'simple_spread_v3'), "
                             f"got {env_id!r}: train_maddpg trains on the discrete ma-gym envs")
        N, O, A, K = venv.n_agents, venv.obs_dim, venv.action_dim, venv.n_envs
        agent = learner(N, O, A, config, seed=seed, device=device)
        ensemble = isinstance(agent, EnsembleMADDPG)  # its agents play one of M sub-policies per episode
        buffer = (SubpolicyReplayBuffer(config.buffer_size, N, O, A, config.n_subpolicies) if ensemble
                  else ReplayBuffer(config.buffer_size, N, O, A))
        result = TrainResult(agent=agent, buffer=buffer)
        obs = venv.reset()  # (K, N, O)
        bar = tqdm(total=episodes, desc=f"{learner.__name__} {env_id} seed {seed}", disable=not progress, leave=False)
        next_eval = eval_every
        while len(result.episode_returns) < episodes:
            noise = config.noise_at(len(result.episode_returns) / episodes)  # sigma, decayed linearly
            actions = agent.act(obs, noise)  # collect: (K, N, A) in [-1, 1] (an ensemble: agent.playing's sub-policies)
            next_obs, rewards, dones, info = venv.step(actions)  # (K, N, O), (K, N), (K, N)
            rewards = critic_rewards(rewards, config.team_reward)  # (K, N) what each critic learns
            for k in range(K):  # store
                # a time-limit end is not terminal: store terminated (all False on spread), bootstrap through it
                transition = (obs[k], actions[k], rewards[k], info["final_obs"][k], info["terminated"][k])
                if ensemble:  # and which sub-policy each agent played, (N,): sub-policy m learns from its slice
                    buffer.add(*transition, subpolicies=agent.playing[k])
                else:
                    buffer.add(*transition)
                if info["episode_done"][k]:
                    result.episode_returns.append(float(info["episode_team_return"][k]))
                    bar.update(1)
                    agent.end_episode(k)  # an ensemble draws copy k's sub-policies for its next episode
            obs = next_obs
            result.env_steps += K
            _update_from_replay(agent, buffer, config, np_rng, result)  # update
            if len(result.episode_returns) >= next_eval:  # evaluate
                if ensemble:  # evaluation e plays every agent's sub-policy e mod M (no draw: training's stream stays)
                    policy = agent.policy(np.full(N, len(result.evaluations) % config.n_subpolicies))
                else:
                    policy = agent.greedy_policy()
                score = evaluate_particle(policy, env_id, eval_episodes, threads=threads)
                _record_evaluation(result, score.team_return)
                bar.set_postfix(eval=f"{score.team_return:.1f}", noise=f"{noise:.2f}")
                next_eval += eval_every
        return _finish(result, bar)


def train_continuous_ppo(env_id: str = "simple_spread_v3", episodes: int = 4000,
                         config: ContinuousPPOConfig | None = None, seed: int = 0, eval_every: int = 100,
                         eval_episodes: int = 10, progress: bool = True, device: str = "cpu",
                         learner: type[ContinuousMAPPO] = ContinuousMAPPO, threads: int | None = None) -> TrainResult:
    """Train continuous MAPPO (or ``learner=ContinuousIPPO``) on K lock-step copies of a particle env for
    ``episodes`` episodes (summed over the copies), on-policy: the K copies play one whole episode each with the
    current Gaussian policy (the particle envs end every episode at their time limit, all copies together), the env
    receiving the samples clipped to [-1, 1]; then one ``agent.update`` of that batch, and the next K episodes.
    Every ``eval_every`` episodes the noise-free policy plays ``eval_episodes`` episodes from the same start states
    (``evaluate_particle``); ``evaluations`` holds ``(episode, mean team return)``. Deterministic for a seed."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        positive_int(eval_every, "eval_every")
        config = (config or ContinuousPPOConfig()).validate()
        venv = make_vec_env(env_id, config.n_envs, seed)
        if not venv.continuous:
            raise ValueError(f"train_continuous_ppo needs a particle env with continuous actions (e.g. "
                             f"'simple_spread_v3'), got {env_id!r}: train_coma trains MAPPO on the discrete envs")
        agent = learner(venv.n_agents, venv.obs_dim, venv.action_dim, config, seed=seed, device=device)
        result = TrainResult(agent=agent)
        obs = venv.reset()  # (K, N, O)
        bar = tqdm(total=episodes, desc=f"{learner.__name__} {env_id} seed {seed}", disable=not progress, leave=False)
        next_eval = eval_every
        while len(result.episode_returns) < episodes:
            steps = {"obs": [], "actions": [], "rewards": [], "dones": []}  # one list entry per step of the episodes
            while True:  # collect: K whole episodes with the current policy
                actions = agent.act(obs)  # (K, N, A) the Gaussian's samples
                next_obs, rewards, dones, info = venv.step(np.clip(actions, -1.0, 1.0))  # the env gets [-1, 1]
                steps["obs"].append(obs)
                steps["actions"].append(actions)
                steps["rewards"].append(rewards)  # (K, N) each agent's own; the learner takes the team's if asked
                steps["dones"].append(info["terminated"].all(axis=1))  # (K,) a real end; a time limit is not one
                result.env_steps += venv.n_envs
                ended = info["episode_done"]  # (K,)
                if ended.any():
                    if not ended.all():
                        raise ValueError(f"{env_id}: the env copies ended their episodes at different steps; "
                                         f"train_continuous_ppo needs episodes of one length")
                    final_obs = info["final_obs"]  # (K, N, O) the state each episode was cut in
                    result.episode_returns.extend(float(r) for r in info["episode_team_return"])
                    bar.update(venv.n_envs)
                    break
                obs = next_obs
            obs = next_obs  # (the copies have reset)
            batch = {"obs": torch.as_tensor(np.stack(steps["obs"] + [final_obs], axis=1), device=device),
                     "actions": torch.as_tensor(np.stack(steps["actions"], axis=1), device=device),
                     "rewards": torch.as_tensor(np.stack(steps["rewards"], axis=1), device=device),
                     "dones": torch.as_tensor(np.stack(steps["dones"], axis=1), dtype=torch.float32, device=device)}
            # obs (K, T+1, N, O), actions (K, T, N, A), rewards (K, T, N), dones (K, T)
            agent.update(batch)
            result.updates += 1
            if len(result.episode_returns) >= next_eval:  # evaluate
                score = evaluate_particle(agent.greedy_policy(), env_id, eval_episodes, threads=threads)
                _record_evaluation(result, score.team_return)
                bar.set_postfix(eval=f"{score.team_return:.1f}")
                next_eval += eval_every
        return _finish(result, bar)


# ----------------------------------------------------------------------------------------------
# COMA: on-policy batches of whole episodes (rollout.collect_episodes)
# ----------------------------------------------------------------------------------------------

def train_coma(env_id: str = "Switch2-v0", episodes: int = 6000, config=None, seed: int = 0,
               eval_every: int = 100, progress: bool = True, device: str = "cpu",
               learner: type = COMA, stop_at: float | None = None,
               env_backend: str = "batched", checkpoint: RunCheckpoint | None = None,
               threads: int | None = None, update=None) -> TrainResult:
    """Train COMA (or ``learner=CentralV``, ``IACV``, ``CentralQV``, ``MAPPO`` or ``IPPO``, with its config:
    ``COMAConfig`` or ``PPOConfig``, None for the learner's defaults) for ``episodes`` episodes, K at a time (one
    batch), or until a periodic greedy evaluation reaches ``stop_at``. Deterministic for a seed, and the same with either
    ``env_backend`` (``make_vec_env``'s). With a ``checkpoint`` (``resume.RunCheckpoint``; batched Switch only) the
    run in progress is saved after a batch's update and continues from a saved state to the same bits.
    ``update``: a function ``update(agent, batch)`` called for each batch of episodes (``collect_episodes``'s) in place
    of ``agent.update(batch)`` (None, the default: ``agent.update``); the capstones pass the learner's own update."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        positive_int(eval_every, "eval_every")
        _check_update(update)
        config = (config or config_class(algo_name_of_class(learner))()).validate()  # None: the learner's defaults
        venv = make_vec_env(env_id, config.n_envs, seed, env_backend)
        agent = learner(venv.n_agents, venv.obs_dim, venv.n_actions, config, seed=seed, device=device)
        result = TrainResult(agent=agent)
        loop = OnPolicyLoop(next_eval=eval_every)
        if checkpoint is not None:  # the whole state of the run: resumed from it, saved after every batch
            parts = {"agent": agent, "venv": _resumable(venv), "loop": loop}
            checkpoint.restore(result, parts)
        bar = tqdm(total=episodes, initial=len(result.episode_returns), desc=f"{learner.__name__} {env_id} seed {seed}",
                   disable=not progress, leave=False)
        while len(result.episode_returns) < episodes:
            anneal = config.anneal_fraction * episodes  # both decay over the first anneal_fraction of training
            epsilon = linear(config.epsilon_start, config.epsilon_end, len(result.episode_returns), anneal)
            agent.entropy_coef = linear(config.entropy_start, 0.0, len(result.episode_returns), anneal)
            batch, returns, steps = collect_episodes(agent, venv, epsilon)  # collect K whole episodes (no store:
            tic = time.perf_counter()                                        # on-policy, the batch is used once)
            if update is None:  # update
                agent.update(batch)
            else:
                update(agent, batch)
            result.update_seconds += time.perf_counter() - tic
            result.episode_returns.extend(returns)
            result.env_steps += steps
            result.updates += 1
            bar.update(len(returns))
            if len(result.episode_returns) >= loop.next_eval:  # evaluate
                loop.next_eval += eval_every
                if _greedy_evaluation(result, env_id, bar, stop_at, threads, eps=f"{epsilon:.2f}"):
                    break
            if checkpoint is not None:
                checkpoint.save(result, parts)
        return _finish(result, bar)


# ----------------------------------------------------------------------------------------------
# IQL, VDN and QMIX: whole episodes played epsilon-greedily, kept in an episode replay, learned from B at a time
# ----------------------------------------------------------------------------------------------

@dataclass
class EpisodeReplayLoop:
    """What ``train_value_decomposition``'s loop carries from one collection to the next beside the learner, the
    episode replay and the env copies (see ``OffPolicyLoop``)."""

    rng: np.random.Generator  # samples the replayed episodes
    next_eval: int  # the episode count at which the next greedy evaluation is due


def train_value_decomposition(env_id: str = "Switch2-v0", episodes: int = 2000,
                              config: ValueDecompositionConfig | None = None, seed: int = 0, eval_every: int = 100,
                              progress: bool = True, device: str = "cpu", learner: type[IQL] = VDN,
                              stop_at: float | None = None, env_backend: str = "batched",
                              checkpoint: RunCheckpoint | None = None, threads: int | None = None,
                              update=None) -> TrainResult:
    """Train VDN (or ``learner=IQL`` or ``QMIX``) for ``episodes`` episodes, or until a periodic greedy evaluation
    reaches ``stop_at``: play K = ``n_envs`` whole episodes epsilon-greedily (``collect_episodes``), store them in an
    ``EpisodeReplay``, then make ``updates_per_collection`` updates, each from ``batch_episodes`` replayed episodes
    (once the replay holds that many). Epsilon decays linearly from ``epsilon_start`` to ``epsilon_end`` over the
    first ``epsilon_fraction`` of the episodes. Deterministic for a seed; ``checkpoint`` and ``update`` as in
    ``train_coma`` (``update(agent, batch)`` gets each replayed batch)."""
    with torch_threads(threads):
        positive_int(episodes, "episodes")
        positive_int(eval_every, "eval_every")
        _check_update(update)
        config = (config or ValueDecompositionConfig()).validate()
        venv = make_vec_env(env_id, config.n_envs, seed, env_backend)
        N, O, A = venv.n_agents, venv.obs_dim, venv.n_actions
        agent = learner(N, O, A, config, seed=seed, device=device)
        replay = EpisodeReplay(config.buffer_episodes, venv.max_steps, N, O, A)
        result = TrainResult(agent=agent, buffer=replay)
        loop = EpisodeReplayLoop(rng=np.random.default_rng(seed), next_eval=eval_every)
        if checkpoint is not None:  # the whole state of the run: resumed from it, saved after every collection
            parts = {"agent": agent, "buffer": replay, "venv": _resumable(venv), "loop": loop}
            checkpoint.restore(result, parts)
        bar = tqdm(total=episodes, initial=len(result.episode_returns), desc=f"{learner.__name__} {env_id} seed {seed}",
                   disable=not progress, leave=False)
        while len(result.episode_returns) < episodes:
            epsilon = linear(config.epsilon_start, config.epsilon_end, len(result.episode_returns),
                             config.epsilon_fraction * episodes)
            batch, returns, steps = collect_episodes(agent, venv, epsilon)  # collect K whole episodes
            replay.add(batch)  # store them
            result.episode_returns.extend(returns)
            result.env_steps += steps
            bar.update(len(returns))
            if len(replay) >= config.batch_episodes:  # update, from B replayed episodes at a time
                tic = time.perf_counter()
                for _ in range(config.updates_per_collection):
                    replayed = replay.sample(config.batch_episodes, loop.rng, agent.device)
                    if update is None:
                        agent.update(replayed)
                    else:
                        update(agent, replayed)
                    result.updates += 1
                result.update_seconds += time.perf_counter() - tic
            if len(result.episode_returns) >= loop.next_eval:  # evaluate
                loop.next_eval += eval_every
                if _greedy_evaluation(result, env_id, bar, stop_at, threads, eps=f"{epsilon:.2f}"):
                    break
            if checkpoint is not None:
                checkpoint.save(result, parts)
        return _finish(result, bar)

