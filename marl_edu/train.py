"""Training loops with progress bars, evaluation of trained agents, and their policy files.

``train_maddpg`` runs MADDPG on K lock-step copies of an environment (``make_vec_env``), with
n-step returns of the **team reward** (Switch is cooperative: every critic learns the sum over agents).
``train_coma`` plays K whole episodes at a time with the current policy (on-policy) and makes one
COMA update from them, also with the team reward.
"""

from __future__ import annotations

import copy
import dataclasses
import pathlib
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from marl_edu.buffers import ReplayBuffer
from marl_edu.checkpoints import load_checkpoint, save_checkpoint
from marl_edu.coma import COMA, COMAConfig
from marl_edu.envs import VecEnv, make_env, make_vec_env
from marl_edu.maddpg import MADDPG, MADDPGConfig
from marl_edu.rollout import run_episode
from marl_edu.shapes import one_hot


@dataclass
class TrainResult:
    """What a training run produced: per-episode team returns (while exploring), periodic greedy
    evaluations ``(episode, greedy team return)``, counts and wall-clock time, and the learner."""

    agent: MADDPG | COMA
    episode_returns: list[float] = field(default_factory=list)
    evaluations: list[tuple[int, float]] = field(default_factory=list)
    best_state: dict | None = None      # the learner's weights at its best periodic greedy evaluation
    best_return: float = float("-inf")  # (latest wins ties); the env is deterministic, so that is exact
    env_steps: int = 0
    updates: int = 0
    seconds: float = 0.0


def greedy_return(agent, env_id: str, record_frames: bool = False):
    """Play one episode with every agent's argmax action (MADDPG or COMA); returns the ``Episode``."""
    env = make_env(env_id, seed=0)
    return run_episode(env, agent.greedy_policy(), record_frames=record_frames)


def sampled_returns(agent, env_id: str, n_episodes: int = 100, seed: int = 0) -> np.ndarray:
    """Team returns of ``n_episodes`` episodes with actions sampled from the actors (no epsilon)."""
    env = make_env(env_id, seed=seed)
    return np.array([run_episode(env, agent.sampled_policy()).team_return for _ in range(n_episodes)])


def _header(agent: MADDPG | COMA) -> dict:
    """A learner's config plus the sizes needed to rebuild it."""
    return {**dataclasses.asdict(agent.config), "n_agents": agent.n_agents, "obs_dim": agent.obs_dim,
            "n_actions": agent.n_actions}


def _rebuild(payload: dict, learner_class, config_class):
    """An untrained learner of the checkpoint's sizes and config."""
    header = dict(payload["config"])
    dims = [header.pop(key) for key in ("n_agents", "obs_dim", "n_actions")]
    return learner_class(*dims, config_class(**header))


def save_maddpg_policy(agent: MADDPG, env_id: str, path: str | pathlib.Path) -> pathlib.Path:
    """Save the actors (all a greedy or sampled evaluation needs; a few tens of kilobytes) with the config."""
    return save_checkpoint(path, "maddpg", env_id, _header(agent), {"actors": agent.actors.state_dict()})


def load_maddpg_policy(path: str | pathlib.Path, env_id: str | None = None) -> MADDPG:
    """A MADDPG learner whose actors (and target actors) hold the checkpoint's weights."""
    payload = load_checkpoint(path, algo="maddpg", env_id=env_id)
    agent = _rebuild(payload, MADDPG, MADDPGConfig)
    agent.actors.load_state_dict(payload["state"]["actors"])
    agent.target_actors.load_state_dict(payload["state"]["actors"])
    return agent


def save_coma_policy(agent: COMA, env_id: str, path: str | pathlib.Path) -> pathlib.Path:
    """Save COMA's shared actor (all an evaluation needs) with the config."""
    return save_checkpoint(path, "coma", env_id, _header(agent), {"actor": agent.actor.state_dict()})


def load_coma_policy(path: str | pathlib.Path, env_id: str | None = None) -> COMA:
    """A COMA learner whose actor holds the checkpoint's weights."""
    payload = load_checkpoint(path, algo="coma", env_id=env_id)
    agent = _rebuild(payload, COMA, COMAConfig)
    agent.actor.load_state_dict(payload["state"]["actor"])
    return agent


def _n_step_transitions(pending: deque, gamma: float, next_obs: np.ndarray, terminal: bool, flush: bool):
    """Emit n-step transitions from the pending steps of one env copy.

    pending holds ``(obs (N, O), actions (N,), team_reward)`` per step, oldest first. When it holds n
    steps, the oldest becomes ``(obs, actions, R = r_t + g r_{t+1} + ... + g^{n-1} r_{t+n-1}, next_obs,
    terminal)``. At the end of an episode (``flush``), a terminal episode also emits its shorter tail
    (nothing is bootstrapped after a terminal state). A time-limit end drops its tail: those returns
    would need a shorter discount g^k than the g^n every stored transition is assumed to have.
    """
    out = []
    n = pending.maxlen
    while pending and (len(pending) == n or (flush and terminal)):
        ret = sum(gamma ** k * step[2] for k, step in enumerate(pending))
        out.append((pending[0][0], pending[0][1], ret, next_obs, terminal))
        pending.popleft()
        if not flush:
            break
    if flush:
        pending.clear()
    return out


def train_maddpg(env_id: str = "Switch2-v2", episodes: int = 1500, config: MADDPGConfig | None = None,
                 seed: int = 0, eval_every: int = 100, progress: bool = True, device: str = "cpu") -> TrainResult:
    """Train MADDPG for ``episodes`` episodes (summed over the K env copies). Deterministic for a seed."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int, got {episodes!r}")
    config = (config or MADDPGConfig()).validate()
    np_rng = np.random.default_rng(seed)
    venv = make_vec_env(env_id, config.n_envs, seed)
    N, O, A, K = venv.n_agents, venv.obs_dim, venv.n_actions, venv.n_envs
    agent = MADDPG(N, O, A, config, seed=seed, device=device)
    buffer = ReplayBuffer(config.buffer_size, N, O, A)
    pending = [deque(maxlen=config.n_step) for _ in range(K)]
    result = TrainResult(agent=agent)
    start = time.perf_counter()
    obs = venv.reset()  # (K, N, O)
    bar = tqdm(total=episodes, desc=f"MADDPG {env_id} seed {seed}", disable=not progress, leave=False)
    next_eval = eval_every
    while len(result.episode_returns) < episodes:
        fraction = len(result.episode_returns) / max(config.epsilon_fraction * episodes, 1e-9)  # 0 -> no decay phase
        epsilon = config.epsilon_end + (config.epsilon_start - config.epsilon_end) * max(0.0, 1.0 - fraction)
        actions = agent.act(obs, epsilon)  # (K, N)
        next_obs, rewards, dones, info = venv.step(actions)  # (K, N, O), (K, N), (K, N)
        team_rewards = rewards.sum(axis=1)  # (K,) the cooperative objective
        for k in range(K):
            pending[k].append((obs[k], actions[k], float(team_rewards[k])))
            done = bool(info["episode_done"][k])
            terminal = bool(info["terminated"][k].all())  # the team is done only when every agent arrived
            for o, a, ret, o2, d in _n_step_transitions(pending[k], config.gamma, info["final_obs"][k], terminal, done):
                buffer.add(o, one_hot(a, A), np.full(N, ret, dtype=np.float32), o2, np.full(N, float(d)))
            if done:
                result.episode_returns.append(float(info["episode_team_return"][k]))
                bar.update(1)
        obs = next_obs
        result.env_steps += K
        if len(buffer) >= max(config.warmup_steps, config.batch_size):
            for _ in range(config.updates_per_step):
                agent.update(buffer.sample(config.batch_size, np_rng))
                result.updates += 1
        if len(result.episode_returns) >= next_eval:
            result.evaluations.append((len(result.episode_returns), greedy_return(agent, env_id).team_return))
            if result.evaluations[-1][1] >= result.best_return:
                result.best_return = result.evaluations[-1][1]
                result.best_state = copy.deepcopy(agent.state_dict())
            bar.set_postfix(greedy=f"{result.evaluations[-1][1]:.1f}", eps=f"{epsilon:.2f}")
            next_eval += eval_every
    bar.close()
    result.seconds = time.perf_counter() - start
    return result


# ----------------------------------------------------------------------------------------------
# COMA: on-policy batches of whole episodes
# ----------------------------------------------------------------------------------------------

def collect_episodes(agent: COMA, venv: VecEnv, epsilon: float) -> tuple[dict[str, torch.Tensor], list[float], int]:
    """Play one episode in each of the K env copies with the behaviour policy. Returns the batch for
    ``COMA.update`` (arrays ``(K, L+1, ...)`` / ``(K, L, ...)`` with L the longest of the K episodes, see
    there), the K team returns and the number of real env steps. Copies that finish early keep stepping
    (lock-step) but are not recorded."""
    K, N, O, T = venv.n_envs, venv.n_agents, venv.obs_dim, venv.max_steps
    obs_seq = np.zeros((K, T + 1, N, O), dtype=np.float32)  # (K, T+1, N, O)
    act_seq = np.zeros((K, T + 1, N), dtype=np.int64)  # (K, T+1, N)
    rewards = np.zeros((K, T, N), dtype=np.float32)  # (K, T, N) each agent's own reward
    dones = np.ones((K, T), dtype=np.float32)  # (K, T) padding counts as done: nothing flows back from it
    step_mask = np.zeros((K, T), dtype=np.float32)  # (K, T)
    agent_mask = np.zeros((K, T, N), dtype=np.float32)  # (K, T, N) agent a has not arrived yet
    returns = np.zeros(K)
    playing = np.ones(K, dtype=bool)  # copy k is still in its first episode
    just_ended = np.zeros(K, dtype=bool)  # copy k's episode ended at the previous step
    agent_alive = np.ones((K, N), dtype=bool)
    obs = venv.reset()  # (K, N, O)
    h = agent.actor.initial_hidden(K * N, agent.device)  # (K*N, H)
    last = torch.full((K, N), -1, device=agent.device)  # (K, N) no action before the first step
    with torch.no_grad():
        for t in range(T + 1):
            obs_t = torch.as_tensor(obs, dtype=torch.float32, device=agent.device)  # (K, N, O)
            probs, h = agent.policy_step(obs_t, last, h, epsilon)  # (K, N, A)
            last = agent.sample(probs)  # (K, N)
            actions = last.cpu().numpy()  # (K, N)
            # a copy that just ended was fed its end state: this action bootstraps a time-limit end
            act_seq[just_ended, t] = actions[just_ended]
            if not playing.any():
                break
            next_obs, step_rewards, step_dones, info = venv.step(actions)
            obs_seq[playing, t], act_seq[playing, t] = obs[playing], actions[playing]
            rewards[playing, t] = step_rewards[playing]  # COMA.update sums them into the team reward
            dones[playing, t] = info["terminated"][playing].all(axis=1)  # terminal only when everyone arrived
            step_mask[playing, t] = 1.0
            agent_mask[playing, t] = agent_alive[playing]
            agent_alive &= ~step_dones
            just_ended = playing & info["episode_done"]
            for k in np.flatnonzero(just_ended):
                obs_seq[k, t + 1] = next_obs[k] = info["final_obs"][k]  # the end state, shown to the policy next
                returns[k] = info["episode_team_return"][k]
            playing &= ~info["episode_done"]
            obs = next_obs
    L = int(step_mask.sum(axis=1).max())  # the longest episode: later columns are padding in every copy
    batch = {"obs": obs_seq[:, :L + 1], "actions": act_seq[:, :L + 1], "rewards": rewards[:, :L],
             "dones": dones[:, :L], "step_mask": step_mask[:, :L], "agent_mask": agent_mask[:, :L]}
    batch = {key: torch.as_tensor(value, device=agent.device) for key, value in batch.items()}
    return batch, returns.tolist(), int(step_mask.sum())


def train_coma(env_id: str = "Switch2-v0", episodes: int = 20000, config: COMAConfig | None = None, seed: int = 0,
               eval_every: int = 100, progress: bool = True, device: str = "cpu") -> TrainResult:
    """Train COMA for ``episodes`` episodes, K at a time (one batch). Deterministic for a seed."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int, got {episodes!r}")
    config = (config or COMAConfig()).validate()
    venv = make_vec_env(env_id, config.n_envs, seed)
    agent = COMA(venv.n_agents, venv.obs_dim, venv.n_actions, config, seed=seed, device=device)
    result = TrainResult(agent=agent)
    start = time.perf_counter()
    bar = tqdm(total=episodes, desc=f"COMA {env_id} seed {seed}", disable=not progress, leave=False)
    next_eval = eval_every
    while len(result.episode_returns) < episodes:
        fraction = min(1.0, len(result.episode_returns) / max(config.anneal_fraction * episodes, 1e-9))
        epsilon = config.epsilon_start + (config.epsilon_end - config.epsilon_start) * fraction
        entropy_coef = config.entropy_start * (1.0 - fraction)
        batch, returns, steps = collect_episodes(agent, venv, epsilon)
        agent.update(batch, epsilon, entropy_coef)
        result.episode_returns.extend(returns)
        result.env_steps += steps
        result.updates += 1
        bar.update(len(returns))
        if len(result.episode_returns) >= next_eval:
            result.evaluations.append((len(result.episode_returns), greedy_return(agent, env_id).team_return))
            bar.set_postfix(greedy=f"{result.evaluations[-1][1]:.1f}", eps=f"{epsilon:.2f}")
            next_eval += eval_every
    bar.close()
    result.seconds = time.perf_counter() - start
    return result
