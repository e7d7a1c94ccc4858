"""One training loop for every learner of the table, with its progress bar (evaluating a trained agent: ``evaluation``).

``train(learner, env_id, episodes)`` reads the learner's row of ``learners.LEARNERS`` (its loop kind ``Entry.loop``,
and what its updates learn from, ``Entry.replay``) and runs one skeleton, the same for every learner: **collect**
(the K env copies act), **store**, **update**, **evaluate** (every ``eval_every`` episodes; a run stops early once an
evaluation reaches ``stop_at``), **checkpoint** (with a ``resume.RunCheckpoint``: saved at every iteration's end,
resumed to the same bits) and **progress** (a bar whose total is what the loop really runs). Only the data path
differs, one short class each:

- ``WholeEpisodes`` (no replay: ``"on_policy"``, ``"continuous_on_policy"``): K whole episodes with the current
  policy (``rollout.collect_episodes``), one update from them, then forgotten: COMA and its baselines, PPO,
  continuous PPO;
- ``Transitions`` (transitions: ``"off_policy"``, ``"continuous"``): one step of the K copies at a time into a
  ``ReplayBuffer`` (n-step **team** returns on the discrete envs, where every critic learns the team's reward; each
  agent's own one-step reward on the particle envs, as in the MADDPG paper; an ensemble's ``SubpolicyReplayBuffer``
  also keeps which sub-policy played), ``updates_per_step`` sampled batches per step: MADDPG, IDDPG and their kin;
- ``ReplayedEpisodes`` (episodes: ``"episode_replay"``): K whole episodes played epsilon-greedily into an
  ``EpisodeReplay``, ``updates_per_collection`` batches of ``batch_episodes`` replayed episodes: IQL, VDN, QMIX.

The contract between the loop and a learner, the one place it is written (ARCHITECTURE.md repeats it):

- built as ``learner(N, O, A, config, seed=seed, device=device)``; ``config`` is its row's dataclass (None: the row's
  defaults), ``config.validate()`` is called once; every kind reads ``config.n_envs`` (K), and by kind:
  on-policy ``anneal_fraction``, ``entropy_start``, ``epsilon_start``, ``epsilon_end`` (continuous on-policy: none);
  off-policy ``buffer_size``, ``batch_size``, ``warmup_steps``, ``updates_per_step`` and on the discrete envs
  ``n_step``, ``gamma``, ``epsilon_start``, ``epsilon_end``, ``epsilon_fraction``, on the particle envs
  ``team_reward``, ``noise_at(fraction_done)`` (an ensemble: ``n_subpolicies``); episode replay ``buffer_episodes``,
  ``batch_episodes``, ``updates_per_collection``, ``epsilon_start``, ``epsilon_end``, ``epsilon_fraction``.
- each iteration the loop computes the exploration (``exploration``): epsilon (discrete) or the noise's sigma
  (particle off-policy) is passed to the learner's acting (``act(obs, epsilon | noise)``, or ``policy_step`` through
  ``collect_episodes``); the on-policy learners' entropy weight is SET on the learner, ``agent.entropy_coef``, before
  the update of the episodes it collected. Nothing else of the learner is written by the loop.
- ``agent.update(batch)`` (or the caller's ``update(agent, batch)``) receives: on-policy ``collect_episodes``'s batch;
  off-policy ``ReplayBuffer.sample``'s (an ensemble's: with ``subpolicies``); episode replay ``EpisodeReplay.sample``'s.
  What it returns (a dict of losses) is not read.
- acting: ``act`` (off-policy, continuous on-policy) or ``policy_step``/``sample``/``initial_hidden`` (discrete whole
  episodes); ``end_episode(k)`` when copy k's episode ends (particle off-policy); evaluation: ``greedy_policy()`` (an
  ensemble: ``policy(subpolicies)``) and the sampled policy (``evaluation.sampled_returns``, K env copies at once:
  the discrete whole-episode learners' ``policy_step``/``sample``, IQL's kin's with ``epsilon``; the discrete
  off-policy learners' ``act``; the continuous learners' ``sampled_actions(K)``; one episode at a time, a
  discrete learner's ``sampled_policy()``), its draws from a generator the evaluation puts in ``agent.generator``
  for the while (``evaluation.own_generator``).

Every loop and evaluation here runs on ``threads`` torch threads (default 1: networks this small run fastest on one,
and two fight any other work on the machine) and gives the caller's count back after (``threads.torch_threads``).
Policy files are in ``checkpoints``; one seed with its figures (``runs.run_seed``, which the command line and the
benchmarks share) in ``runs``; the command line (``python -m marl_edu``) in ``course.cli``.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, replace

import numpy as np
from tqdm.auto import tqdm

from marl_edu.base.schedules import linear
from marl_edu.base.shapes import one_hot
from marl_edu.base.threads import torch_threads
from marl_edu.base.validate import non_negative_int, positive_int
from marl_edu.data.buffers import EpisodeReplay, ReplayBuffer, n_step_transitions
from marl_edu.data.rollout import collect_episodes
from marl_edu.envs.make import family, make_vec_env
from marl_edu.learners.ensembles import SubpolicyReplayBuffer
from marl_edu.learners.table import algo_name, algo_name_of_class, check_env, entry
from marl_edu.pieces.targets import critic_rewards
from marl_edu.training.evaluation import (SAMPLED_EPISODES, Starts, greedy_episodes, greedy_team_return,
                                         particle_episodes, sampled_team_return)
from marl_edu.training.resume import RunCheckpoint


@dataclass
class TrainResult:
    """What a training run produced: per-episode team returns (while exploring), periodic evaluations ``(episode,
    greedy team return)`` (particle envs: the noise-free policy's mean team return) and, at the same episodes,
    ``(episode, sampled policy's mean team return)`` (``evaluation.sampled_team_return``), counts and
    wall-clock time, the learner and, off-policy, its replay at the end."""

    agent: object
    episode_returns: list[float] = field(default_factory=list)
    evaluations: list[tuple[int, float]] = field(default_factory=list)
    sampled_evaluations: list[tuple[int, float]] = field(default_factory=list)  # [] if switched off
    eval_seconds: list[float] = field(default_factory=list)  # wall-clock since the start, per evaluation
    eval_env_steps: list[int] = field(default_factory=list)  # env steps so far, per evaluation
    env_steps: int = 0
    updates: int = 0
    seconds: float = 0.0
    update_seconds: float = 0.0  # of which spent in the learner's update (the rest: acting, stepping, evaluating)
    started: float = field(default_factory=time.perf_counter, repr=False)  # time.perf_counter() at the start
    buffer: ReplayBuffer | EpisodeReplay | None = field(default=None, repr=False)  # an off-policy run's replay


@dataclass
class LoopState:
    """What the loop carries from one iteration to the next beside the learner, its buffer and the env copies: with
    them, everything a resumed run needs. ``resume.RunCheckpoint`` saves and restores it whole, so a value added here
    is never left out of a checkpoint. A data path uses the fields it needs (the others stay None or empty)."""

    next_eval: int  # the episode count at which the next evaluation is due
    rng: np.random.Generator  # samples the replay batches
    obs: np.ndarray | None = None  # (K, N, O) the copies' current observations, where a path continues from them
    pending: list[deque] = field(default_factory=list)  # K deques: each copy's last n_step steps not yet stored


class WholeEpisodes:
    """On-policy: K whole episodes with the current policy (``collect_episodes``), used for one update, then gone."""

    def __init__(self, agent, venv, config, state: LoopState):
        self.agent, self.venv, self.state, self.buffer, self.batch = agent, venv, state, None, None
        if venv.continuous:  # a particle env's copies go on from where they are (all reset at their time limit)
            state.obs = venv.reset()  # (K, N, O)

    def collect(self, explore: dict) -> tuple[list[float], int]:
        if "entropy_coef" in explore:  # the entropy bonus's weight for the update of these episodes
            self.agent.entropy_coef = explore["entropy_coef"]
        self.batch, returns, steps = collect_episodes(self.agent, self.venv, explore.get("epsilon", 0.0),
                                                      self.state.obs)
        return returns, steps

    def batches(self):
        return [self.batch]


class Transitions:
    """Off-policy: one step of the K copies at a time, stored as transitions; ``updates_per_step`` batches sampled
    from the replay after every step once it holds ``warmup_steps`` (and a batch)."""

    def __init__(self, agent, venv, config, state: LoopState):
        self.agent, self.venv, self.config, self.state = agent, venv, config, state
        N, O = venv.n_agents, venv.obs_dim
        if not venv.continuous:
            self.buffer = ReplayBuffer(config.buffer_size, N, O, venv.n_actions)
            state.pending = [deque(maxlen=config.n_step) for _ in range(venv.n_envs)]
        elif entry(algo_name(agent)).policy.subpolicies:  # which sub-policy each agent played: m learns its slice
            self.buffer = SubpolicyReplayBuffer(config.buffer_size, N, O, venv.action_dim, config.n_subpolicies)
        else:
            self.buffer = ReplayBuffer(config.buffer_size, N, O, venv.action_dim)
        state.obs = venv.reset()  # (K, N, O)

    def collect(self, explore: dict) -> tuple[list[float], int]:
        agent, venv, state = self.agent, self.venv, self.state
        actions = agent.act(state.obs, explore["noise" if venv.continuous else "epsilon"])  # (K, N) or (K, N, A)
        next_obs, rewards, dones, info = venv.step(actions)  # (K, N, O), (K, N), (K, N)
        rewards = critic_rewards(rewards, team_reward=not venv.continuous or self.config.team_reward)  # (K, N)
        returns = []
        for k in range(venv.n_envs):  # store
            if venv.continuous:
                self.store_force_step(k, actions, rewards, info)
            else:
                self.store_team_step(k, actions, rewards, info)
            if info["episode_done"][k]:
                returns.append(float(info["episode_team_return"][k]))
                if venv.continuous:
                    agent.end_episode(k)  # an ensemble draws copy k's sub-policies for its next episode
        state.obs = next_obs
        return returns, venv.n_envs

    def store_team_step(self, k: int, actions, rewards, info) -> None:
        """Copy k's n-step transitions of the team reward, shared by every critic (Switch is cooperative)."""
        N, A, pending = self.venv.n_agents, self.venv.n_actions, self.state.pending[k]
        pending.append((self.state.obs[k], actions[k], float(rewards[k, 0])))  # the team reward, sum_j r_j
        terminal = bool(info["terminated"][k].all())  # the team is done only when every agent arrived
        for o, a, ret, o2, d in n_step_transitions(pending, self.config.gamma, info["final_obs"][k], terminal,
                                                   bool(info["episode_done"][k])):
            self.buffer.add(o, one_hot(a, A), np.full(N, ret, dtype=np.float32), o2, np.full(N, float(d)))

    def store_force_step(self, k: int, actions, rewards, info) -> None:
        """Copy k's one-step transition; each critic learns its own agent's reward (``config.team_reward``: the
        team's). A time-limit end is not terminal: ``terminated`` is stored (all False on spread), bootstrapped."""
        transition = (self.state.obs[k], actions[k], rewards[k], info["final_obs"][k], info["terminated"][k])
        if isinstance(self.buffer, SubpolicyReplayBuffer):
            self.buffer.add(*transition, subpolicies=self.agent.playing[k])
        else:
            self.buffer.add(*transition)

    def batches(self):
        c = self.config
        if len(self.buffer) < max(c.warmup_steps, c.batch_size):
            return []
        return (self.buffer.sample(c.batch_size, self.state.rng) for _ in range(c.updates_per_step))


class ReplayedEpisodes:
    """Episode replay: K whole episodes played epsilon-greedily (``collect_episodes``) kept in an ``EpisodeReplay``;
    ``updates_per_collection`` batches of ``batch_episodes`` replayed episodes once it holds that many."""

    def __init__(self, agent, venv, config, state: LoopState):
        self.agent, self.venv, self.config, self.state = agent, venv, config, state
        self.buffer = EpisodeReplay(config.buffer_episodes, venv.max_steps, venv.n_agents, venv.obs_dim,
                                    venv.n_actions)

    def collect(self, explore: dict) -> tuple[list[float], int]:
        batch, returns, steps = collect_episodes(self.agent, self.venv, explore["epsilon"])
        self.buffer.add(batch)
        return returns, steps

    def batches(self):
        c = self.config
        if len(self.buffer) < c.batch_episodes:
            return []
        return (self.buffer.sample(c.batch_episodes, self.state.rng, self.agent.device)
                for _ in range(c.updates_per_collection))


PATHS = {None: WholeEpisodes, "transitions": Transitions, "episodes": ReplayedEpisodes}  # Entry.replay -> its path


def exploration(loop: str, config, done: int, episodes: int) -> dict[str, float]:
    """How the learner explores after ``done`` of ``episodes`` episodes (with an env-step budget: ``done`` of
    ``episodes`` env steps; the schedules read only the fraction done) and what the progress bar shows: on-policy,
    the entropy weight ``entropy_coef`` and, if its schedule is not all zero, ``epsilon``, decayed linearly together
    over the first ``anneal_fraction``; particle off-policy, the noise's sigma; continuous on-policy, nothing (the
    Gaussian's own spread); otherwise ``epsilon``, ``epsilon_start`` to ``epsilon_end`` over ``epsilon_fraction``."""
    if loop == "on_policy":
        anneal = config.anneal_fraction * episodes
        explore = {"entropy_coef": linear(config.entropy_start, 0.0, done, anneal)}
        if config.epsilon_start or config.epsilon_end:
            explore["epsilon"] = linear(config.epsilon_start, config.epsilon_end, done, anneal)
        return explore
    if loop == "continuous":
        return {"noise": config.noise_at(done / episodes)}
    if loop == "continuous_on_policy":
        return {}
    return {"epsilon": linear(config.epsilon_start, config.epsilon_end, done, config.epsilon_fraction * episodes)}


def train(learner, env_id: str | None = None, episodes: int | None = None, config=None, seed: int = 0,
          eval_every: int | None = None, progress: bool = True, device: str = "cpu", stop_at: float | None = None,
          env_backend: str = "batched", checkpoint: RunCheckpoint | None = None, threads: int | None = None,
          update=None, eval_episodes: int | None = None, sampled_episodes: int | None = None,
          env_steps: int | None = None) -> TrainResult:
    """Train ``learner`` (a name of ``learners.LEARNERS`` or its class) on K lock-step copies of ``env_id`` (None: its
    default, ``learners.check_env``; ``make_vec_env``'s, stepped by ``env_backend``: the same transitions) for
    ``episodes`` episodes (None: its row's budget), or until a periodic evaluation reaches ``stop_at``. Deterministic
    for a seed.

    ``env_steps``: a budget in env steps instead of episodes (give one of them, not both): the run stops at the end of
    the first collection whose env steps, counted over every copy, reach ``env_steps`` (that iteration's update,
    evaluation and checkpoint included), so it overshoots by less than one collection (one step of the K copies, or K
    whole episodes); the exploration schedules then run over env steps (epsilon decays over ``epsilon_fraction`` of the
    env steps, say). Envs whose episodes end early (Level-Based Foraging) count their budget this way.

    ``config``: the learner's config (None: its row's defaults); ``eval_every``: episodes between evaluations (None:
    its row's); an evaluation plays the greedy policy (``greedy_team_return``) or, with forces, the noise-free one
    (``evaluate_particle``; an ensemble's evaluation e plays every agent's sub-policy e mod M), as the env's family
    says (``envs.family.EnvFamily``: one episode where it is deterministic, else the mean of ``eval_episodes``, None:
    the family's, on an env seeded its ``eval_seed``); each evaluation also plays the sampled policy
    (``sampled_team_return``: the mean of ``sampled_episodes`` episodes, None: ``SAMPLED_EPISODES``, 0: not played;
    where episodes start at random, the greedy evaluation's first ``sampled_episodes``, at most ``eval_episodes``,
    None: all of them;
    ``evaluation.sampled_as`` says what it plays), its draws from a generator of its own, so training is the same
    with it or without. ``checkpoint``: a
    ``resume.RunCheckpoint`` that saves the run at every iteration's end and continues a saved one to the same bits
    (every family's vec env saves its state).
    ``update``: a function ``update(agent, batch)`` called for each batch in place of ``agent.update(batch)`` (the
    capstones pass the learner's own update). The contract with the learner is this module's docstring."""
    with torch_threads(threads):
        name = learner if isinstance(learner, str) else algo_name_of_class(learner)
        row, env_id = entry(name), check_env(name, env_id)  # (env_id None: the learner's default env)
        if env_steps is not None and episodes is not None:
            raise ValueError(f"give a budget of episodes or of env_steps, not both (got episodes={episodes!r}, "
                             f"env_steps={env_steps!r})")
        by_steps = env_steps is not None
        episodes = row.episodes if episodes is None else positive_int(episodes, "episodes")
        budget = positive_int(env_steps, "env_steps") if by_steps else episodes  # what the loop counts down
        eval_every = row.eval_every if eval_every is None else positive_int(eval_every, "eval_every")
        found = family(env_id)
        eval_episodes = found.eval_episodes if eval_episodes is None else positive_int(eval_episodes, "eval_episodes")
        if sampled_episodes is None:  # (where episodes start at random: every episode the greedy evaluation plays)
            sampled_episodes = SAMPLED_EPISODES if found.deterministic else eval_episodes
        non_negative_int(sampled_episodes, "sampled_episodes")
        if not found.deterministic and sampled_episodes > eval_episodes:
            raise ValueError(f"sampled_episodes must be at most eval_episodes ({eval_episodes}) on {env_id}, whose "
                             f"episodes start at random: a sampled evaluation plays the greedy one's episodes; got "
                             f"{sampled_episodes}")
        if update is not None and not callable(update):
            raise ValueError(f"update must be None (the learner's own agent.update) or a function update(agent, "
                             f"batch), got {type(update).__name__}")
        config = (config or row.config()).validate()
        venv = make_vec_env(env_id, config.n_envs, seed, env_backend)
        A = venv.action_dim if venv.continuous else venv.n_actions
        agent = row.learner(venv.n_agents, venv.obs_dim, A, config, seed=seed, device=device)
        state = LoopState(next_eval=eval_every, rng=np.random.default_rng(seed))
        path = PATHS[row.replay](agent, venv, config, state)
        result = TrainResult(agent=agent, buffer=path.buffer)
        if checkpoint is not None:  # the whole state of the run: resumed from it, saved at every iteration's end
            parts = {"agent": agent, "venv": venv, "loop": state}
            if path.buffer is not None:
                parts["buffer"] = path.buffer
            checkpoint.restore(result, parts)
        whole = isinstance(path, (WholeEpisodes, ReplayedEpisodes))  # K episodes an iteration: the total rounds up
        total = -(-episodes // venv.n_envs) * venv.n_envs if whole and not by_steps else budget
        done = (lambda: result.env_steps) if by_steps else (lambda: len(result.episode_returns))  # budget's count
        bar = tqdm(total=total, initial=done(), desc=f"{row.learner.__name__} {env_id} seed {seed}"
                   + (" (env steps)" if by_steps else ""), disable=not progress, leave=False)
        while done() < budget:
            explore = exploration(row.loop, config, done(), budget)
            returns, steps = path.collect(explore)  # collect and store
            result.episode_returns.extend(returns)
            result.env_steps += steps
            counted = steps if by_steps else len(returns)
            if bar.n + counted > bar.total:  # copies that end together past the budget: counted, not hidden
                bar.total = bar.n + counted
            bar.update(counted)
            tic = time.perf_counter()
            for batch in path.batches():  # update
                agent.update(batch) if update is None else update(agent, batch)
                result.updates += 1
            result.update_seconds += time.perf_counter() - tic
            if len(result.episode_returns) >= state.next_eval:  # evaluate
                state.next_eval += eval_every
                value, starts = _evaluate(agent, env_id, eval_episodes, len(result.evaluations), threads)
                result.evaluations.append((len(result.episode_returns), value))
                if sampled_episodes:  # (where episodes start at random: the greedy evaluation's first ones)
                    starts = None if starts is None else replace(starts, states=starts.states[:sampled_episodes])
                    sampled = sampled_team_return(agent, env_id, sampled_episodes, threads, starts)
                    result.sampled_evaluations.append((len(result.episode_returns), sampled))
                result.eval_seconds.append(time.perf_counter() - result.started)
                result.eval_env_steps.append(result.env_steps)
                shown = {"sampled": f"{result.sampled_evaluations[-1][1]:.1f}"} if sampled_episodes else {}
                bar.set_postfix(eval=f"{value:.1f}", **shown, **{SHOWN[key]: f"{v:.2f}" for key, v in explore.items()})
                if stop_at is not None and value >= stop_at - 1e-6:
                    break
            if checkpoint is not None:
                checkpoint.save(result, parts)
        bar.close()
        result.seconds = time.perf_counter() - result.started
        return result


SHOWN = {"epsilon": "eps", "entropy_coef": "beta", "noise": "noise"}  # the progress bar's names of the exploration


def _evaluate(agent, env_id: str, episodes: int, index: int, threads: int | None) -> tuple[float, Starts | None]:
    """Evaluation ``index`` of a run: the greedy team return, or with forces the noise-free policy's mean team return
    (an ensemble's: every agent's sub-policy ``index`` mod M; no draw, so training's stream stays), and where its
    episodes began (``evaluation.Starts``; None where every episode starts alike: Switch's one exact episode)."""
    found = family(env_id)
    if found.deterministic:
        return greedy_team_return(agent, env_id, episodes, threads), None
    if found.actions == "discrete":
        returns, starts = greedy_episodes(agent, env_id, episodes, threads)  # (episodes,)
        return float(np.mean(returns)), starts
    if entry(algo_name(agent)).policy.subpolicies:  # an ensemble
        policy = agent.policy(np.full(agent.n_agents, index % agent.n_subpolicies))
    else:
        policy = agent.greedy_policy()
    score, _, starts = particle_episodes(policy, env_id, episodes, found.eval_seed, threads=threads)
    return score.team_return, starts
