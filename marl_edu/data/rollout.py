"""Run episodes with any policy and keep what happened as arrays shaped ``(T, N, .)``.

A policy is any function ``policy(obs) -> actions`` from obs float32 ``(N, O)`` to int actions ``(N,)`` (ma-gym)
or float forces ``(N, 2)`` in [-1, 1] (the particle envs).

``collect_episodes`` plays K whole episodes in lock-step with an on-policy learner and returns them as the on-policy
batch, padded to the longest with its masks: the data path env -> rollout -> learner of COMA and its baselines.
``check_episode_batch`` is what their updates check such a batch with before using it. (The off-policy path is
env -> ``buffers.ReplayBuffer`` -> learner.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import torch
from tqdm.auto import tqdm

from marl_edu.base.shapes import check_shape
from marl_edu.base.threads import torch_threads
from marl_edu.base.validate import finite, generator, index_range, positive_int, unit_interval, zero_one
from marl_edu.envs.batched_switch import BatchedSwitch
from marl_edu.envs.make import VecEnv, family

Policy = Callable[[np.ndarray], np.ndarray]


@dataclass
class Episode:
    """One episode, T steps of N agents.

    obs, next_obs: float32 ``(T, N, O)``; actions: int64 ``(T, N)`` (or float32 ``(T, N, 2)`` forces);
    rewards: float32 ``(T, N)``; dones, terminated, truncated: bool ``(T, N)``; frames: T + 1 RGB frames when
    recorded, else None; metrics: the env's other per-step ``info`` figures stacked over time, ``(T, ...)`` each
    (the particle envs': ``landmark_distance`` ``(T,)``, ``agent_collisions`` ``(T, N)``, ``collisions`` ``(T,)``).
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    dones: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    frames: list[np.ndarray] | None = field(default=None, repr=False)
    metrics: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def length(self) -> int:
        """T, the number of steps."""
        return int(self.actions.shape[0])

    @property
    def agent_returns(self) -> np.ndarray:
        """Each agent's undiscounted return, ``(N,)``."""
        return self.rewards.sum(axis=0, dtype=np.float64)

    @property
    def team_return(self) -> float:
        """The cooperative objective: the sum of every agent's rewards over the episode."""
        return float(self.rewards.sum(dtype=np.float64))


def random_policy(n_agents: int, n_actions: int, rng: np.random.Generator) -> Policy:
    """A policy that picks each agent's action uniformly at random from ``rng``."""
    for value, name in ((n_agents, "n_agents"), (n_actions, "n_actions")):
        positive_int(value, name)
    generator(rng, "rng")

    def policy(obs: np.ndarray) -> np.ndarray:
        check_shape(obs, (n_agents, "O"), "obs")
        return rng.integers(0, n_actions, size=n_agents)  # (N,)

    return policy


def run_episode(env, policy: Policy, record_frames: bool = False,
                threads: int | None = None) -> Episode:
    """Reset ``env`` (one of ``envs.make.make_env``) and run ``policy`` until every agent is done. Returns an
    :class:`Episode`. ``threads``: torch threads for the policy (``threads.torch_threads``: by default one, or the
    enclosing loop's)."""
    with torch_threads(threads):
        if not callable(policy):
            raise ValueError(f"policy must be a function obs (N, O) -> actions (N,), got {type(policy).__name__}")
        obs = env.reset()  # (N, O)
        frames = [env.render_frame()] if record_frames else None
        steps: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "actions", "rewards", "next_obs", "dones",
                                                              "terminated", "truncated")}
        metrics: dict[str, list] = {}
        dones = np.zeros(env.n_agents, dtype=bool)
        while not dones.all():
            actions = np.asarray(policy(obs))  # (N,) or (N, 2)
            next_obs, rewards, dones, info = env.step(actions)
            for key, value in (("obs", obs), ("actions", actions), ("rewards", rewards), ("next_obs", next_obs),
                               ("dones", dones), ("terminated", info["terminated"]), ("truncated", info["truncated"])):
                steps[key].append(value)
            for key in sorted(info.keys() - {"terminated", "truncated", "step"}):
                if isinstance(info[key], (int, float, np.ndarray)):  # the figures, not ma-gym's other notes
                    metrics.setdefault(key, []).append(info[key])
            if frames is not None:
                frames.append(env.render_frame())
            obs = next_obs
        action_dtype = np.float32 if family(env.env_id).actions == "forces" else np.int64
        return Episode(
            obs=np.stack(steps["obs"]),  # (T, N, O)
            actions=np.stack(steps["actions"]).astype(action_dtype),  # (T, N) ints, or (T, N, 2) forces
            rewards=np.stack(steps["rewards"]),  # (T, N)
            next_obs=np.stack(steps["next_obs"]),  # (T, N, O)
            dones=np.stack(steps["dones"]),  # (T, N)
            terminated=np.stack(steps["terminated"]),  # (T, N)
            truncated=np.stack(steps["truncated"]),  # (T, N)
            frames=frames,
            metrics={key: np.stack(values) for key, values in metrics.items()},  # each (T, ...)
        )


def team_returns(env, policy: Policy, n_episodes: int, progress: bool = True) -> np.ndarray:
    """Run ``n_episodes`` episodes and return their team returns, ``(n_episodes,)`` float64."""
    n_episodes = positive_int(n_episodes, "n_episodes")
    episodes = tqdm(range(n_episodes), desc=f"{env.env_id} episodes", disable=not progress, leave=False)
    return np.array([run_episode(env, policy).team_return for _ in episodes])


def collect_episodes(agent, venv: VecEnv | BatchedSwitch, epsilon: float,
                     obs: np.ndarray | None = None) -> tuple[dict[str, torch.Tensor], list[float], int]:
    """Play one episode in each of the K lock-step env copies with a learner's behaviour policy (on the particle envs,
    ``collect_force_episodes``: a Gaussian learner, no epsilon).

    Args:
        agent: a learner with a recurrent behaviour policy: COMA, CentralV or IACV (on-policy), or IQL, VDN and QMIX
            (whose episodes go to a ``buffers.EpisodeReplay``): its ``policy_step``, ``sample``, ``initial_hidden``
            and ``device``.
        venv: ``make_vec_env``'s K copies of a ma-gym env with a time limit T (either backend).
        epsilon: the behaviour policy's exploration, ``(1 - eps) pi + eps / A`` (for the Q-learners pi is the greedy
            policy, one-hot on the argmax: epsilon-greedy).
        obs: particle envs only: the copies' current observations ``(K, N, O)`` to go on from (then overwritten in
            place with where the copies are after), or None to reset them first.

    Returns:
        The batch of episodes, the K team returns and the number of real env steps. The batch is the one
        structure every on-policy update takes (and ``buffers.EpisodeReplay`` stores), a dict of tensors with
        B = K episodes and L the longest of them
        (later columns would be padding in every episode):

        - ``obs`` float32 ``(B, L+1, N, O)`` and ``actions`` int64 ``(B, L+1, N)``: step t, and at index L' (an
          episode's length) its end state with the action the policy would take there (it bootstraps a time-limit
          end);
        - ``rewards`` float32 ``(B, L, N)``: each agent's own reward (``targets.critic_rewards`` decides what the
          critics learn from them);
        - ``dones`` float32 ``(B, L)``, d_t: 1 where the team is done for good (every agent arrived) and on padding;
        - ``step_mask`` float32 ``(B, L)``: 1 on real steps; ``agent_mask`` float32 ``(B, L, N)``: 1 while agent i
          has not arrived yet;
        - ``epsilon``, a float: the behaviour policy's exploration (the update replays that policy).

        Copies that finish early keep stepping (lock-step) but are not recorded.

    Runs on the enclosing loop's torch threads, or one (``threads.torch_threads``, as ``run_episode``).
    Raises ValueError when the env's observations or rewards hold NaN or infinity.
    """
    with torch_threads():  # the enclosing loop's threads, or one (as run_episode)
        epsilon = unit_interval(epsilon, "epsilon")
        if venv.continuous:
            return collect_force_episodes(agent, venv, obs)
        if obs is not None:
            raise ValueError("obs is for the particle envs' copies, which go on from where they are; a discrete "
                             "env's copies are reset for every batch (obs=None)")
        K, N, O, T = venv.n_envs, venv.n_agents, venv.obs_dim, venv.max_steps
        obs_seq = np.zeros((K, T + 1, N, O), dtype=np.float32)  # (K, T+1, N, O)
        act_seq = np.zeros((K, T + 1, N), dtype=np.int64)  # (K, T+1, N)
        rewards = np.zeros((K, T, N), dtype=np.float32)  # (K, T, N) each agent's own reward
        dones = np.ones((K, T), dtype=np.float32)  # (K, T) padding counts as done: nothing flows back from it
        step_mask = np.zeros((K, T), dtype=np.float32)  # (K, T)
        agent_mask = np.zeros((K, T, N), dtype=np.float32)  # (K, T, N) agent i has not arrived yet
        returns = np.zeros(K)
        playing = np.ones(K, dtype=bool)  # copy k is still in its first episode
        just_ended = np.zeros(K, dtype=bool)  # copy k's episode ended at the previous step
        agent_alive = np.ones((K, N), dtype=bool)
        obs = venv.reset()  # (K, N, O)
        h = agent.initial_hidden(K * N)  # (K*N, H)
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
        finite(obs_seq, "the env's observations (K, T+1, N, O)")  # once for the whole batch: a NaN would reach
        finite(rewards, "the env's rewards (K, T, N)")              # every critic target
        L = int(step_mask.sum(axis=1).max())  # the longest episode: later columns are padding in every copy
        batch = {"obs": obs_seq[:, :L + 1], "actions": act_seq[:, :L + 1], "rewards": rewards[:, :L],
                 "dones": dones[:, :L], "step_mask": step_mask[:, :L], "agent_mask": agent_mask[:, :L]}
        batch = {key: torch.as_tensor(value, device=agent.device) for key, value in batch.items()}
        batch["epsilon"] = float(epsilon)
        return batch, returns.tolist(), int(step_mask.sum())


def collect_force_episodes(agent, venv: VecEnv,
                           obs: np.ndarray | None = None) -> tuple[dict[str, torch.Tensor], list[float], int]:
    """``collect_episodes`` on a particle env: the K copies play one whole episode each with a Gaussian learner's
    ``act(obs (K, N, O)) -> (K, N, A)`` samples (the env receives them clipped to [-1, 1]); the particle envs end every
    episode at their time limit, all copies together. ``obs``: the copies' current observations ``(K, N, O)``,
    overwritten in place with their next episode's first ones (None: reset first).

    Returns the batch (tensors on ``agent.device``: obs ``(K, T+1, N, O)``, the last index the state each episode was
    cut in; actions ``(K, T, N, A)``, the samples themselves; rewards ``(K, T, N)``, each agent's own; dones float
    ``(K, T)``, 1 at a real end, a time limit is not one), the K team returns and the env steps. ValueError if the
    copies end at different steps."""
    current = venv.reset() if obs is None else obs  # (K, N, O)
    steps = {"obs": [], "actions": [], "rewards": [], "dones": []}  # one list entry per step of the episodes
    while True:
        actions = agent.act(current)  # (K, N, A) the Gaussian's samples
        next_obs, rewards, dones, info = venv.step(np.clip(actions, -1.0, 1.0))  # the env gets [-1, 1]
        steps["obs"].append(current)
        steps["actions"].append(actions)
        steps["rewards"].append(rewards)  # (K, N) each agent's own; the learner takes the team's if asked
        steps["dones"].append(info["terminated"].all(axis=1))  # (K,)
        ended = info["episode_done"]  # (K,)
        if ended.any():
            if not ended.all():
                raise ValueError(f"{venv.env_id}: the env copies ended their episodes at different steps; a batch "
                                 f"of forces needs episodes of one length")
            break
        current = next_obs
    device = agent.device
    batch = {"obs": torch.as_tensor(np.stack(steps["obs"] + [info["final_obs"]], axis=1), device=device),
             "actions": torch.as_tensor(np.stack(steps["actions"], axis=1), device=device),
             "rewards": torch.as_tensor(np.stack(steps["rewards"], axis=1), device=device),
             "dones": torch.as_tensor(np.stack(steps["dones"], axis=1), dtype=torch.float32, device=device)}
    # obs (K, T+1, N, O), actions (K, T, N, A), rewards (K, T, N), dones (K, T)
    if obs is not None:  # (after the batch is built: its first step holds the array obs was)
        obs[:] = next_obs  # (K, N, O) the copies have reset
    return batch, [float(r) for r in info["episode_team_return"]], len(steps["dones"]) * venv.n_envs


EPISODE_BATCH_KEYS = ("obs", "actions", "rewards", "dones", "step_mask", "agent_mask", "epsilon")


def check_episode_batch(batch: Mapping, n_agents: int, obs_dim: int, n_actions: int,
                        behaviour: bool = True) -> dict[str, int]:
    """Check a batch of whole episodes before a learner's update touches it: the one check of the on-policy batch
    (``collect_episodes``'s: COMA, CentralV and IACV) and of the episodes replayed from ``buffers.EpisodeReplay``
    (IQL, VDN and QMIX).

    Args:
        batch: a dict of tensors, obs float32 ``(B, T+1, N, O)``, actions int64 ``(B, T+1, N)`` in [0, A), rewards
            float32 ``(B, T, N)``, dones and step_mask float32 ``(B, T)``, agent_mask float32 ``(B, T, N)`` (0/1,
            at least one real step), and (with ``behaviour``) epsilon, a number in [0, 1]. Other keys are ignored.
        n_agents, obs_dim, n_actions: the learner's N, O and A.
        behaviour: the batch records the behaviour policy's epsilon (an on-policy batch, whose update replays that
            policy); False for replayed episodes, which an off-policy update learns from whatever played them.

    Returns:
        The sizes ``{"B": ..., "T+1": ..., "T": ..., "N": ..., "O": ..., "A": ...}``.

    The contract of padding (``collect_episodes`` pads so, and the learners' targets rely on it): every episode starts
    with a real step and its padding comes only after its end (no real step after a padded one); a padded step has
    d = 1 (nothing flows back from padding into the last real step's target) and no real step follows a done; an
    agent acts only on real steps and, once it has stopped, not again.

    Raises:
        ValueError naming the entry, what was expected and what came: a missing key, something other than a tensor,
        a wrong shape (B, T, N, O tied across the tensors) or dtype, B = 0 or T = 0, epsilon outside [0, 1],
        NaN or infinity in obs or rewards, masks or dones other than 0/1, padding that breaks the contract above
        (naming the episode and step), an action outside [0, A). A few reductions per tensor: cheap next to an
        update.
    """
    if not isinstance(batch, Mapping):
        raise ValueError(f"batch must be a dict of tensors (collect_episodes's), got {type(batch).__name__}")
    keys = EPISODE_BATCH_KEYS if behaviour else EPISODE_BATCH_KEYS[:-1]
    missing = [key for key in keys if key not in batch]
    if missing:
        kind = "an on-policy batch" if behaviour else "a batch of replayed episodes"
        raise ValueError(f"batch is missing {missing}: {kind} holds {', '.join(keys)}")
    specs = {"obs": (("B", "T+1", "N", "O"), torch.float32), "actions": (("B", "T+1", "N"), torch.int64),
             "rewards": (("B", "T", "N"), torch.float32), "dones": (("B", "T"), torch.float32),
             "step_mask": (("B", "T"), torch.float32), "agent_mask": (("B", "T", "N"), torch.float32)}
    dims = {"N": n_agents, "O": obs_dim}
    for key, (spec, dtype) in specs.items():
        value, name = batch[key], f"batch['{key}']"
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name}: expected a torch tensor (collect_episodes makes them), "
                             f"got {type(value).__name__}")
        check_shape(value, spec, name, dims)
        if value.dtype != dtype:
            meaning = " (action indices in [0, A))" if key == "actions" else ""
            raise ValueError(f"{name}: expected {dtype} elements{meaning}, got {value.dtype}")
        if key == "obs":  # the sizes every other tensor is tied to
            if dims["B"] < 1 or dims["T+1"] < 2:
                raise ValueError(f"{name}: expected B >= 1 episodes of T >= 1 steps (T+1 >= 2 observations: the "
                                 f"steps and the end state), got B = {dims['B']}, T+1 = {dims['T+1']}")
            dims["T"] = dims["T+1"] - 1
    dims["A"] = n_actions
    if behaviour:
        unit_interval(batch["epsilon"], "batch['epsilon']")  # the behaviour policy's (1 - eps) pi + eps / A
    finite(batch["obs"], "batch['obs']")
    finite(batch["rewards"], "batch['rewards']")
    for key in ("dones", "step_mask", "agent_mask"):
        zero_one(batch[key], f"batch['{key}']")
    if not batch["step_mask"].any():
        raise ValueError("batch['step_mask']: expected at least one real step (a 1), got all zeros")
    check_padding(batch["step_mask"], batch["dones"])
    agent_mask = batch["agent_mask"]  # (B, T, N)
    if (agent_mask > batch["step_mask"].unsqueeze(-1)).any():  # (B, T, N) against (B, T, 1)
        raise ValueError("batch['agent_mask']: 1 on a padded step (where batch['step_mask'] is 0); an agent can only "
                         "act on a real step")
    again = agent_mask[:, 1:] > agent_mask[:, :-1]  # (B, T-1, N) acting at t+1, not at t
    if again.any():
        b, t, i = (int(x) for x in again.nonzero()[0])
        raise ValueError(f"batch['agent_mask']: agent {i} acts again after its end (episode {b}, step {t + 1}): once "
                         f"an agent has stopped acting (arrived) its mask stays 0")
    index_range(batch["actions"], n_actions, "batch['actions']")
    return dims


def check_padding(step_mask: torch.Tensor, dones: torch.Tensor) -> None:
    """The contract of an episode batch's padding, ``check_episode_batch``'s: step_mask and dones float ``(B, T)``,
    0/1 (checked before). Every episode starts with a real step, padding comes only after an episode's end (no hole:
    real, padding, real), a padded step has d = 1 and no real step follows a done. ValueError naming the entry, the
    episode and the step."""
    if not (step_mask[:, 0] == 1).all():
        b = int((step_mask[:, 0] != 1).nonzero()[0, 0])
        raise ValueError(f"batch['step_mask']: episode {b} has no real step (every episode starts with one)")
    hole = step_mask[:, 1:] > step_mask[:, :-1]  # (B, T-1) real at t+1 after padding at t
    if hole.any():
        b, t = (int(x) for x in hole.nonzero()[0])
        raise ValueError(f"batch['step_mask']: a real step after padding (episode {b}, step {t + 1}): padding comes "
                         f"only after an episode's end")
    undone = (step_mask == 0) & (dones == 0)  # (B, T)
    if undone.any():
        b, t = (int(x) for x in undone.nonzero()[0])
        raise ValueError(f"batch['dones']: 0 on a padded step (episode {b}, step {t}): padding has d = 1, so no "
                         f"target carries it back into the episode's last real step")
    after = (dones[:, :-1] == 1) & (step_mask[:, 1:] == 1)  # (B, T-1) a done at t, a real step at t+1
    if after.any():
        b, t = (int(x) for x in after.nonzero()[0])
        raise ValueError(f"batch['dones']: a real step after a done (episode {b}, done at step {t}, step {t + 1} "
                         f"real): a done ends the episode, padding (step_mask 0) follows it")


FORCE_BATCH_KEYS = ("obs", "actions", "rewards", "dones")


def check_force_batch(batch: Mapping, n_agents: int, obs_dim: int, action_dim: int) -> dict[str, int]:
    """Check a batch of whole episodes with forces (``collect_force_episodes``'s) before a learner's update touches it:
    the one check of continuous PPO's batch.

    Args:
        batch: a dict of tensors, obs float32 ``(B, T+1, N, O)`` (the last index the state each episode was cut in),
            actions float32 ``(B, T, N, A)`` (the Gaussian's samples), rewards float32 ``(B, T, N)``, dones float32
            ``(B, T)`` 0/1; every step is real (the particle envs end all copies together), so no real step follows
            a done. Other keys are ignored.
        n_agents, obs_dim, action_dim: the learner's N, O and A.

    Returns:
        The sizes ``{"B": ..., "T+1": ..., "T": ..., "N": ..., "O": ..., "A": ...}``.

    Raises:
        ValueError naming the entry: a missing key, something other than a tensor, a wrong shape or dtype, B = 0 or
        T = 0, NaN or infinity in obs, actions or rewards, dones other than 0/1 or followed by a step.
    """
    if not isinstance(batch, Mapping):
        raise ValueError(f"batch must be a dict of tensors (collect_force_episodes's), got {type(batch).__name__}")
    missing = [key for key in FORCE_BATCH_KEYS if key not in batch]
    if missing:
        raise ValueError(f"batch is missing {missing}: a batch of episodes with forces holds "
                         f"{', '.join(FORCE_BATCH_KEYS)}")
    specs = {"obs": ("B", "T+1", "N", "O"), "actions": ("B", "T", "N", "A"), "rewards": ("B", "T", "N"),
             "dones": ("B", "T")}
    dims = {"N": n_agents, "O": obs_dim, "A": action_dim}
    for key, spec in specs.items():
        value, name = batch[key], f"batch['{key}']"
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name}: expected a torch tensor (collect_force_episodes makes them), "
                             f"got {type(value).__name__}")
        check_shape(value, spec, name, dims)
        if value.dtype != torch.float32:
            raise ValueError(f"{name}: expected torch.float32 elements, got {value.dtype}")
        if key == "obs":
            if dims["B"] < 1 or dims["T+1"] < 2:
                raise ValueError(f"{name}: expected B >= 1 episodes of T >= 1 steps (T+1 >= 2 observations), got "
                                 f"B = {dims['B']}, T+1 = {dims['T+1']}")
            dims["T"] = dims["T+1"] - 1
    for key in ("obs", "actions", "rewards"):
        finite(batch[key], f"batch['{key}']")
    dones = batch["dones"]  # (B, T)
    zero_one(dones, "batch['dones']")
    check_padding(torch.ones_like(dones), dones)  # every step real: a done only at an episode's last step
    return dims
