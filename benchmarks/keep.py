"""Does a learner solve Switch fast, and does it keep what it learned? Issue 48's two figures, seed by seed.

    .venv/bin/python benchmarks/keep.py --algo vdn --seeds 100 101 102 [--env Switch2-v0] [--episodes 3000]
        [--eval-every 50] [--set lr=1e-3 target_update_every=200] [--diagnose] [--trace] [--nearest] [--profile 40]
        [--entropy-floor 0.01] [--lr-end 0.1]

Each seed trains the learner's defaults (``--set field=value`` changes them, as ``benchmarks/sweep.py``'s) for its
whole budget, one torch thread, with a greedy evaluation every ``--eval-every`` episodes. Per seed it prints:

- ``to_solve``: the wall-clock to the first greedy evaluation at 8.0 or more (within 0.3 of the optimum 8.3 on
  Switch2), in yardsticks: one yardstick is the time raw ma-gym takes for 200,000 random steps of Switch2-v0, timed in
  the same run (``speed.raw_ma_gym_speed``), so machines and loads compare; ``-`` if it never got there;
- ``final``: the final policy's greedy team return (Switch is deterministic: one episode is that policy's exact return,
  the mean of 100 would be the same) and ``kept``: whether it is still solved;
- ``late``: the share of the greedy evaluations in the last third of the budget that were solved, a steadier measure of
  keeping than the final one alone (a policy that flips between paths of 8.0 and 7.9 ends on either).

``--diagnose`` also records what every update saw and did (``Diagnosis``): the TD loss, Q_tot on the replayed steps,
QMIX's credit to each agent (dQ_tot/dQ_i, ``mixer_credit``), the gradient norm before clipping, the size of the step the
weights took, epsilon, and how many of the replay's episodes got every agent home; printed per evaluation window beside
the greedy return, so a collapse is seen as it happens. ``--trace`` (iql, vdn, qmix) prints each seed's final greedy
episode agent by agent, with how near a tie its best two Q-values were (``trace``). ``--nearest`` (any learner) prints
each seed's final greedy episode agent by agent and the best team return with only one agent's moves changed, then
two agents' (the others' replayed as played; ``nearest``): whether a path short of the optimum is one agent's
exploration away from it or needs several agents to change together. For COMA's family (coma, central_v,
iac; ``coma_figures``): the entropy weight beta, the mean |advantage| the actor's step used, the critic's loss, the
policy's entropy, the gradient norms and steps of the actor and the critic, and how many of the episodes played got
every agent home. For PPO (mappo, ippo, ``ppo_figures``): the critic's error on each fresh batch, the policy's entropy,
the approximate KL and clip fraction of the update, the gradient norms and steps of the actor and the critic, the
entropy weight beta, and how many of the episodes played got every agent home. ``--entropy-floor BETA`` and ``--lr-end
F`` (the on-policy learners: COMA's family and PPO's) train with two of the field's remedies (``Remedy``) in place of
the defaults' schedules. ``--profile N`` runs the first seed under cProfile and prints its N most costly functions.
``--time-updates`` only times the learner's update alone (no training): batches of 16, 32 and 64 replayed episodes of
the whole 50 steps (random actions: what every batch holds before the first solve), its milliseconds per update, and
cProfile's most costly functions for the default batch.

A SUMMARY line per invocation: median yardsticks to the first solve (a seed that never solved counts as never), how
many seeds solved at some point and how many ended solved. Tune on seeds 100-999, never the tables' 0-4 nor
the fresh seeds 1000-1019 that ``benchmarks/fresh.py`` measures the defaults on.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import itertools
import math
import pstats
import sys
import time

import numpy as np
import torch

from marl_edu.envs.make import make_env
from marl_edu.envs.planning import best_response_return, optimal_team_return
from marl_edu.learners.baselines import CentralQV
from marl_edu.learners.coma import COMA
from marl_edu.learners.ppo import MAPPO, gae_advantages
from marl_edu.learners.table import ALGORITHMS, config_class, config_with, entry
from marl_edu.learners.value_decomposition import QMixer
from marl_edu.pieces.masked import masked_mean
from marl_edu.pieces.policies import categorical_entropy
from marl_edu.pieces.targets import critic_rewards
from marl_edu.runs.grid import check_options
from marl_edu.runs.seed import LATE, late_solved, median_or_never, run_seed, solve_line
from marl_edu.training.evaluation import greedy_return, greedy_team_return
from marl_edu.training.loops import train
from speed import YARDSTICK_STEPS, yardstick_seconds

HOME = 5.0  # on Switch2 a team return above this got both agents home (each arrival pays +5, steps cost -0.1 each)


def home_line(n_agents: int) -> float:
    """A Switch team return above this got every one of ``n_agents`` agents home: with one agent left out the
    others' arrivals pay at most 5 (N - 1) and the one left out pays 0.1 for each of its 50 steps, 5 (N - 1) - 5 =
    5 N - 10 at most; never below ``HOME`` (Switch2's and Switch3's readouts: 5.0)."""
    return max(HOME, 5.0 * n_agents - 10.0)


def parameter_groups(agent) -> dict[str, list[torch.Tensor]]:
    """The weights a learner's update moves, by the network they belong to: a value-decomposition learner's one
    optimiser (``""``), MADDPG's critics and actors (``"critic"``, ``"actor"``)."""
    if hasattr(agent, "optimizer"):
        return {"": list(agent.optimizer.param_groups[0]["params"])}
    if hasattr(agent, "actor_optimizer"):  # PPO, COMA: one actor and one critic, each its own optimiser
        return {"actor": list(agent.actor.parameters()), "critic": list(agent.critic.parameters())}
    return {"critic": [p for net in agent.critics for p in net.parameters()],
            "actor": [p for net in agent.actors for p in net.parameters()]}


def weight_step(params: list[torch.Tensor], before: list[torch.Tensor]) -> float:
    """The norm of the change of all these weights since ``before`` (copies of them, in the same order)."""
    return float(torch.sqrt(sum(((p.detach() - b) ** 2).sum() for p, b in zip(params, before))))


def mixer_credit(agent, batch) -> dict[str, float]:
    """QMIX's credit to each agent after an update: dQ_tot/dQ_i = sum_e w_2,e elu'(.)_e W_1,ie (non-negative: the
    mixer is monotonic), the mean over the steps agent i acts in the batch, as ``credit0``, ``credit1``, ... An agent
    whose credit is near 0 gets almost no gradient from the team's TD error, whatever its Q_i: its greedy policy is
    then whatever its utilities happen to be. Computed from the learner's own functions, none drawing from its
    generator (training is the same with it or without)."""
    obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
    B, T1, N, O = obs.shape
    with torch.no_grad():
        q = agent.q_values(obs, actions)  # (B, T+1, N, A)
        q_taken = q[:, :-1].gather(-1, actions[:, :-1].unsqueeze(-1)).squeeze(-1)  # (B, T, N)
    q_taken = q_taken.reshape(B * (T1 - 1), N).requires_grad_()  # (B*T, N)
    state = obs[:, :-1].reshape(B * (T1 - 1), N * O)  # (B*T, S)
    with torch.enable_grad():
        credit, = torch.autograd.grad(agent.mixer(q_taken, state).sum(), q_taken)  # (B*T, N) dQ_tot/dQ_i per row
    acting = batch["agent_mask"].reshape(B * (T1 - 1), N)  # (B*T, N) 1 where agent i acts
    return {f"credit{i}": float((credit[:, i] * acting[:, i]).sum() / acting[:, i].sum().clamp_min(1.0))
            for i in range(N)}


def trace(agent, env_id: str) -> list[str]:
    """A value-decomposition learner's final greedy episode, agent by agent: its moves until it is home (the initials
    of the env's action meanings) and how far apart its best two Q_i(h_{i,t}, .) were over the steps it acted (the
    smallest and the median gap): where the two are nearly tied, the argmax flips with small changes of the weights,
    or walks in a loop. Returns 1 + N lines: the episode's team return and length, then one line per agent."""
    episode = greedy_return(agent, env_id, threads=1)  # obs (T, N, O), actions (T, N), terminated (T, N)
    env = make_env(env_id, seed=0)
    meanings = env.action_meanings
    env.close()
    obs = torch.as_tensor(np.concatenate([episode.obs, episode.next_obs[-1:]]))[None]  # (1, T+1, N, O)
    actions = torch.as_tensor(np.concatenate([episode.actions, episode.actions[-1:]]))[None]  # (1, T+1, N)
    with torch.no_grad():
        best_two = agent.q_values(obs, actions)[0, :-1].topk(2, dim=-1).values  # (T, N, 2)
    gaps = (best_two[..., 0] - best_two[..., 1]).numpy()  # (T, N)
    lines = [f"final greedy episode: team return {episode.team_return:.1f}, {len(episode.actions)} steps"]
    for i in range(agent.n_agents):
        steps, moves = agent_moves(episode, i, meanings)
        lines.append(f"{moves}; its best two Q-values apart by {gaps[:steps, i].min():.2f} at least, "
                     f"{np.median(gaps[:steps, i]):.2f} in the median step")
    return lines


def agent_moves(episode, i: int, meanings: list[str]) -> tuple[int, str]:
    """Agent ``i``'s moves in ``episode`` (actions ``(T, N)``, terminated ``(T, N)``) until it is home, as the initials
    of the env's action ``meanings``: ``(steps, "agent i: DRRU (home after 4 steps)")``, or all T steps and "never
    home"."""
    home = bool(episode.terminated[:, i].any())
    steps = int(np.argmax(episode.terminated[:, i])) + 1 if home else len(episode.actions)
    moves = "".join(meanings[a][0] for a in episode.actions[:steps, i])
    return steps, f"agent {i}: {moves} ({f'home after {steps} steps' if home else 'never home'})"


def nearest(agent, env_id: str) -> list[str]:
    """How far the final greedy episode is from the optimum when only some agents change their moves: the best team
    return with each one agent's moves free (the others' replayed as played, ``planning.best_response_return``), then
    with each two agents' free. A path kept a few steps short of the optimum that one agent's change reaches is what
    one agent's exploration can find while the others play on; one that needs two agents to change together, at the
    same steps, independent exploration rarely tries. Returns 2 + N lines: the episode, one line per agent's moves
    (the initials of the env's action meanings, until it is home), and the best returns."""
    episode = greedy_return(agent, env_id, threads=1)  # actions (T, N), terminated (T, N)
    env = make_env(env_id, seed=0)
    meanings = env.action_meanings
    env.close()
    n = agent.n_agents
    lines = [f"final greedy episode: team return {episode.team_return:.1f}, {len(episode.actions)} steps; the optimum "
             f"{optimal_team_return(env_id):.1f}"]
    lines += [agent_moves(episode, i, meanings)[1] for i in range(n)]
    best = []
    for k in (1, 2):
        for free in itertools.combinations(range(n), k):
            best.append(f"{'+'.join(map(str, free))} {best_response_return(env_id, episode.actions, free):.1f}")
    lines.append("the best team return with only these agents' moves changed: " + ", ".join(best))
    return lines


def coma_figures(agent, batch) -> dict[str, float]:
    """``agent.update(batch)`` of COMA (or central-V, IAC-V: the same update), and what it saw: the entropy weight
    beta of this update; ``|adv|``, the mean |advantage| the actor's step used, over the steps each agent acts (COMA's
    counterfactual advantage, central-V's and IAC-V's TD error), recorded from the update's own call; the critic's
    loss at its last step and the policy's entropy, as the update reports them. Nothing extra is computed, so the
    training is the same."""
    used = []
    advantage = agent.advantage  # the learner's own, called once per update after the critic's steps

    def recording(rows, batch_, pi):
        value = advantage(rows, batch_, pi)  # (B, T, N)
        used.append(value.detach())
        return value

    row = {"beta": float(agent.entropy_coef)}
    agent.advantage = recording
    try:
        figures = agent.update(batch)
    finally:
        del agent.advantage  # the class's method again
    row["|adv|"] = float(masked_mean(used[0].abs(), batch["agent_mask"], allow_empty=True))  # over (B, T, N)
    row["critic_loss"], row["entropy"] = figures["critic_loss"], figures["entropy"]
    return row


def ppo_figures(agent, batch) -> dict[str, float]:
    """``agent.update(batch)`` of a PPO learner (MAPPO, IPPO), and what it saw and did, each a mean over the steps
    agents act (the critic's: over the real steps), from the learner's own functions, none of them drawing from its
    generator (so training is the same with the diagnosis or without):

    - ``beta``: the entropy weight of this update (the loop's schedule sets it);
    - ``entropy``: H(pi_old) in nats, the policy that played the batch (log A at most: uniform);
    - ``v_err``: the critic's error on the fresh batch before it learns from it, mean (G_{i,t} - V_old(z_{i,t}))^2 =
      mean Adv^2 (GAE's lambda-returns, as ``ppo_update`` computes them); ``v_loss``: the update's own critic loss
      (its last minibatch, after ``epochs`` passes); ``|adv|``: the mean absolute advantage;
    - ``kl``: KL(pi_old || pi_new) of the whole update, sum_a pi_old (log pi_old - log pi_new) at each step;
      ``clipfrac``: the share of the steps whose ratio pi_new(a_t) / pi_old(a_t) ended outside [1 - c, 1 + c];
    - ``a_steps``: the actor's steps in the update (``epochs`` x ``minibatches``, fewer once ``target_kl`` stops it)."""
    c = agent.config
    obs, actions = batch["obs"], batch["actions"]  # (B, T+1, N, O), (B, T+1, N)
    B, T1, N, _ = obs.shape
    T, epsilon = T1 - 1, float(batch["epsilon"])
    acting = batch["agent_mask"]  # (B, T, N)
    real = batch["step_mask"].unsqueeze(-1).expand(B, T, N)  # (B, T, N)
    with torch.no_grad():
        pi_old = agent.replay_policy(obs[:, :T], actions[:, :T], epsilon)  # (B, T, N, A)
        advantages = gae_advantages(critic_rewards(batch["rewards"], c.team_reward), agent.values(obs, actions),
                                    batch["dones"], c.gamma, c.lam)  # (B, T, N)
    row = {"beta": float(agent.entropy_coef),
           "entropy": float(masked_mean(categorical_entropy(pi_old), acting, allow_empty=True)),
           "v_err": float(masked_mean(advantages ** 2, real, allow_empty=True)),
           "|adv|": float(masked_mean(advantages.abs(), acting, allow_empty=True))}
    stats = agent.update(batch)
    row["v_loss"], row["a_steps"] = stats["critic_loss"], stats["actor_steps"]
    with torch.no_grad():
        pi_new = agent.replay_policy(obs[:, :T], actions[:, :T], epsilon)  # (B, T, N, A)
        log_old, log_new = pi_old.clamp_min(1e-30).log(), pi_new.clamp_min(1e-30).log()  # (B, T, N, A)
        kl = (pi_old * (log_old - log_new)).sum(-1)  # (B, T, N)
        taken = actions[:, :T].unsqueeze(-1)  # (B, T, N, 1)
        ratio = (log_new.gather(-1, taken) - log_old.gather(-1, taken)).squeeze(-1).exp()  # (B, T, N)
        outside = ((ratio - 1.0).abs() > c.clip).float()  # (B, T, N)
    row["kl"] = float(masked_mean(kl, acting, allow_empty=True))
    row["clipfrac"] = float(masked_mean(outside, acting, allow_empty=True))
    return row


class Remedy:
    """Two of the field's remedies for an on-policy learner (COMA's family, PPO's) that loses what it learned or never
    leaves a path that gets some agents home, measured here before any default changes, made through ``train``'s
    update hook (``apply`` before each update), so the library trains as it did:

    - an entropy floor: the update's entropy weight is max(beta, ``entropy_floor``), beta the loop's schedule (which
      decays linearly to 0 over ``anneal_fraction`` of the budget); the MAPPO paper keeps a constant 0.01;
    - a learning-rate decay: every optimiser's learning rate (the actor's and the critic's; central-QV's value
      critic too, at the critic's rate) times 1 - (1 - ``lr_end``) u / U at update u of U = ``updates``, linear to
      ``lr_end`` times the config's at the end (PPO's paper anneals its step size to 0)."""

    def __init__(self, entropy_floor: float, lr_end: float, updates: int):
        self.entropy_floor, self.lr_end, self.updates = entropy_floor, lr_end, updates

    def apply(self, agent) -> None:
        agent.entropy_coef = max(agent.entropy_coef, self.entropy_floor)
        scale = 1.0 - (1.0 - self.lr_end) * min(1.0, agent.updates / self.updates)
        optimizers = [(agent.actor_optimizer, agent.config.actor_lr), (agent.critic_optimizer, agent.config.critic_lr)]
        if hasattr(agent, "value_optimizer"):  # central-QV's V critic, built with the critic's learning rate
            optimizers.append((agent.value_optimizer, agent.config.critic_lr))
        for optimizer, lr in optimizers:
            for group in optimizer.param_groups:
                group["lr"] = lr * scale


class Diagnosis:
    """What a learner's updates saw, one row per update, through ``train``'s ``update`` hook: the value-decomposition
    learners (iql, vdn, qmix), MADDPG's discrete family (maddpg, iddpg), COMA's (coma, central_v, iac:
    ``coma_figures``; central-QV's third network is not covered) and PPO's (mappo, ippo: ``ppo_figures``).

    Per update: ``td_loss`` and ``q_taken`` (the mean squared TD error and the mean Q taken on the batch: Q_i(h, a) of
    the value-decomposition learners, as they report them; MADDPG's critics' loss and Q_i(x_t, a_t) averaged over the
    agents; COMA's family: ``beta``, ``|adv|``, ``critic_loss`` and ``entropy``, ``coma_figures``), MADDPG's ``entropy``
    (the actors' policies softmax(logits) on the batch's observations, in nats, the mean over agents; the behaviour
    policy samples from them), QMIX's ``credit0``, ``credit1``, ... (``mixer_credit``: dQ_tot/dQ_i after the update, the
    mean over the steps agent i acts), and for each network (``parameter_groups``) the gradient's norm before
    ``gradient_step`` clips it (read from the clip; MADDPG: the mean over the agents' N networks) and ``step``, the norm
    of the change of all its weights. ``time``: when the update ended, which puts it in its evaluation window. What the
    replay holds comes from the run's episode returns afterwards (``windows``)."""

    def __init__(self):
        self.rows: list[dict] = []
        self._norms: list[float] = []
        self._clip = torch.nn.utils.clip_grad_norm_

    def __enter__(self):
        def recording_clip(parameters, max_norm, *args, **kwargs):  # gradient_step's clip, its norm kept
            norm = self._clip(parameters, max_norm, *args, **kwargs)
            self._norms.append(float(norm))
            return norm
        torch.nn.utils.clip_grad_norm_ = recording_clip
        return self

    def __exit__(self, *exc):
        torch.nn.utils.clip_grad_norm_ = self._clip

    def update(self, agent, batch) -> None:
        """``update(agent, batch)`` for ``train``: the learner's own update, measured."""
        groups = parameter_groups(agent)
        before = {name: [p.detach().clone() for p in params] for name, params in groups.items()}
        if isinstance(agent, MAPPO):
            first = len(self._norms)
            row = ppo_figures(agent, batch)
            # actor, critic, actor, critic, ...: a pair per minibatch while the actor steps (a_steps), then the critic's
            norms, a = self._norms[first:], row["a_steps"]
            split = {"actor": norms[0:2 * a:2], "critic": norms[1:2 * a:2] + norms[2 * a:]}
            for name, params in groups.items():  # (no actor step at all: no actor norm, None)
                row[f"{name}|g|"] = float(np.mean(split[name])) if split[name] else None
                row[f"{name}|g|max"] = float(np.max(split[name])) if split[name] else None  # of every minibatch's
                row[f"{name}_step"] = weight_step(params, before[name])
            self._keep(row)
            return
        if isinstance(agent, CentralQV):  # (main refuses it) its V critic's steps would be counted as the critic's
            raise ValueError("Diagnosis does not split central-QV's three networks' gradient norms")
        if isinstance(agent, COMA):  # its critic's critic_steps gradient steps, then the actor's one
            first = len(self._norms)
            row = coma_figures(agent, batch)
            norms = self._norms[first:]  # critic, critic, ..., actor
            row["critic|g|"], row["critic|g|max"] = float(np.mean(norms[:-1])), float(np.max(norms[:-1]))
            row["actor|g|"] = norms[-1]
            for name, params in groups.items():
                row[f"{name}_step"] = weight_step(params, before[name])
            self._keep(row)
            return
        row = {}
        if not groups.keys() == {""}:  # MADDPG: Q_i(x_t, a_t) and the actors' entropy on the batch, before the step
            with torch.no_grad():
                b = agent.checked_tensors(batch)
                row["q_taken"] = float(np.mean([agent.critics[i](agent.critic_input(i, b["obs"], b["actions"]))
                                                .mean() for i in range(agent.n_agents)]))
                log_pi = torch.log_softmax(agent.logits(b["obs"]), dim=-1)  # (B, N, A)
                row["entropy"] = float(-(log_pi.exp() * log_pi).sum(dim=-1).mean())
        first = len(self._norms)
        figures = agent.update(batch)
        norms = self._norms[first:]  # one per gradient_step, in its order: (value decomposition) or N critics, N actors
        row["td_loss"] = figures["td_loss"] if "td_loss" in figures else figures["critic_loss"]
        row.setdefault("q_taken", figures.get("q_taken"))
        if isinstance(getattr(agent, "mixer", None), QMixer):
            row.update(mixer_credit(agent, batch))
        for k, (name, params) in enumerate(groups.items()):
            share = norms[k * len(norms) // len(groups):(k + 1) * len(norms) // len(groups)]
            row[f"{name}|g|"] = float(np.mean(share))
            row[f"{name}_step".lstrip("_")] = weight_step(params, before[name])
        self._keep(row)

    def _keep(self, row: dict) -> None:
        """One update's row, stamped with the time it ended (which puts it in its evaluation window)."""
        row["time"] = time.perf_counter()
        self.rows.append(row)

    def windows(self, run, config, episodes: int) -> list[str]:
        """One line per evaluation window: its greedy return, epsilon at its end (the on-policy learners, PPO's and
        COMA's: none; their rows carry beta), the updates' figures in it (means, and each gradient norm's largest) and
        the share of the episodes that got every agent home (``home_line``): of the replay's (``home``; a replay of
        transitions holds the last ``buffer_size`` env steps: its episodes are counted as the last share buffer_size /
        env steps of those played, all of them while it is not full; on-policy: of the episodes played in the window)
        and of the last 50."""
        keys = [key for key in self.rows[0] if key != "time" and not key.endswith("|g|max")] if self.rows else []
        on_policy = not hasattr(config, "epsilon_fraction")  # PPO, COMA: no epsilon-greedy schedule, no replay
        header = [f"{'episode':>7} {'greedy':>6}" + ("" if on_policy else f" {'eps':>5}")]
        for key in keys:
            header.append(f"{key:>11}" + (f" {key + 'max':>11}" if key.endswith("|g|") else ""))
        lines = [" ".join(header) + f" {'home':>5} {'home50':>6}"]
        returns = np.array(run.episode_returns)
        line = home_line(run.agent.n_agents)
        start, previous = run.started, 0
        for (episode, greedy), seconds, steps in zip(run.evaluations, run.eval_seconds, run.eval_env_steps):
            end = run.started + seconds
            rows = [r for r in self.rows if start < r["time"] <= end]
            start = end
            text = [f"{episode:>7} {greedy:6.1f}"]
            if on_policy:
                held = returns[previous:episode]
            else:
                eps = max(config.epsilon_end, config.epsilon_start - (config.epsilon_start - config.epsilon_end)
                          * episode / (config.epsilon_fraction * episodes))
                text[0] += f" {eps:5.2f}"
                if hasattr(config, "buffer_episodes"):
                    held = returns[max(0, episode - config.buffer_episodes):episode]
                else:
                    held = returns[episode - max(1, round(episode * min(1.0, config.buffer_size / steps))):episode]
            previous = episode
            home = f"{(held > line).mean():5.2f} {(returns[max(0, episode - 50):episode] > line).mean():6.2f}"
            for key in keys:
                values = [r[key] for r in rows if r[key] is not None]
                text.append(f"{np.mean(values):11.4f}" if values else f"{'':>11}")
                if key.endswith("|g|"):
                    largest = [r.get(key + "max", r[key]) for r in rows if r[key] is not None]
                    text.append(f"{max(largest):11.3f}" if largest else f"{'':>11}")
            lines.append(" ".join(text) + f" {home}")
        return lines


def time_updates(algo: str, config, env_id: str, repeats: int = 30, shown: int = 15) -> None:
    """Milliseconds per ``update`` of ``algo``, then cProfile's ``shown`` most costly functions over ``repeats``
    updates with the config's own batch. The value-decomposition learners: batches of 16, 32 and 64 random 50-step
    episodes of Switch2-v0. MADDPG's family: batches of 128, 512 and 2,048 transitions of ``env_id`` from a replay
    filled by 200 episodes of its own training (a fresh learner, seed 0, updates each batch)."""
    from marl_edu.data.buffers import EpisodeReplay
    from marl_edu.data.rollout import collect_episodes
    from marl_edu.envs.make import make_vec_env

    rng = np.random.default_rng(0)
    if entry(algo).loop == "off_policy":
        replay = train(algo, env_id, 200, config, 0, 1000, False, threads=1).buffer
        sizes, field = sorted({128, 512, 2048, config.batch_size}), "batch_size"
        learner = lambda: entry(algo).learner(replay.n_agents, replay.obs_dim, replay.act_dim, config,  # noqa: E731
                                              seed=0)
        sample = lambda size: replay.sample(size, rng)  # noqa: E731
        unit = "transitions"
    else:
        venv = make_vec_env("Switch2-v0", 8, 0)
        sizes, field = sorted({16, 32, 64, config.batch_episodes}), "batch_episodes"
        learner = lambda: entry(algo).learner(venv.n_agents, venv.obs_dim, venv.n_actions, config,  # noqa: E731
                                              seed=0)
        replay = EpisodeReplay(64, venv.max_steps, venv.n_agents, venv.obs_dim, venv.n_actions)
        agent = learner()
        for _ in range(8):
            replay.add(collect_episodes(agent, venv, 1.0)[0])  # random actions: nobody gets home, 50 steps each
        sample = lambda size: replay.sample(size, rng)  # noqa: E731
        unit = "episodes x 50 steps"
    for size in sizes:
        agent = learner()
        batches = [sample(size) for _ in range(repeats)]
        agent.update(batches[0])  # the first call allocates
        tic = time.perf_counter()
        for batch in batches:
            agent.update(batch)
        print(f"update of {size} {unit}: {(time.perf_counter() - tic) / repeats * 1e3:.1f} ms", flush=True)
        if size == getattr(config, field):
            profiler = cProfile.Profile()
            profiler.enable()
            for batch in batches:
                agent.update(batch)
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(shown)
            profile = out.getvalue()
    print(profile)


def main(argv=None) -> int:
    """The command line (the module's docstring); Ctrl-C ends it with one line and exit status 130: the seeds whose
    lines are printed finished, and keep.py writes no file, so nothing else is lost."""
    try:
        return measure(argv)
    except KeyboardInterrupt:
        print("interrupted: the seeds printed above finished (keep.py writes no file); the seed in progress is lost",
              file=sys.stderr)
        return 130


def measure(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", required=True, choices=list(ALGORITHMS))
    parser.add_argument("--env", default=None, help="default: Switch2-v2 for the learners that replay transitions "
                                                    "(MADDPG's family: the clock helps a feed-forward actor), else "
                                                    "Switch2-v0")
    parser.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102])
    parser.add_argument("--episodes", type=int, default=None, help="default: the learner's budget (learner table)")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--set", dest="settings", nargs="*", default=[], help="field=value on top of the defaults")
    parser.add_argument("--diagnose", action="store_true", help="record every update (value decomposition, discrete "
                                                                "MADDPG, COMA's family but central-QV, PPO)")
    parser.add_argument("--entropy-floor", type=float, default=None, metavar="BETA",
                        help="COMA's family and PPO: the entropy weight never below BETA (max(beta, BETA))")
    parser.add_argument("--lr-end", type=float, default=None, metavar="F",
                        help="COMA's family and PPO: the learning rates decayed linearly to F times theirs over the "
                             "budget's updates")
    parser.add_argument("--trace", action="store_true", help="print each seed's final greedy episode agent by agent "
                        "with the gap between its best two Q-values (value decomposition: iql, vdn, qmix)")
    parser.add_argument("--nearest", action="store_true", help="print each seed's final greedy episode agent by agent "
                        "and the best team return with one agent's, or two agents', moves changed (``nearest``)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile the first seed: N functions")
    parser.add_argument("--time-updates", action="store_true", help="time the update alone (value decomposition)")
    args = parser.parse_args(argv)
    check_options(parser, args)  # (seeds, episodes, the evaluation period, the env: as every script's)
    env_id = args.env or ("Switch2-v2" if entry(args.algo).replay == "transitions" else "Switch2-v0")
    episodes = entry(args.algo).episodes if args.episodes is None else args.episodes
    for name, value in (("--episodes", episodes), ("--eval-every", args.eval_every)):
        if value < 1:
            parser.error(f"{name} must be a positive number of episodes, got {value}")
    if not args.time_updates and episodes // args.eval_every * args.eval_every <= episodes * LATE:
        parser.error(f"--eval-every {args.eval_every}: no greedy evaluation would fall in the last third of the "
                     f"{episodes} episodes (after episode {episodes * LATE:.0f}), where keeping a solve is judged")
    if args.time_updates and entry(args.algo).loop not in ("episode_replay", "off_policy"):
        parser.error("--time-updates measures the value-decomposition learners' updates (iql, vdn, qmix) and discrete "
                     "MADDPG's (maddpg, iddpg)")
    learner = entry(args.algo).learner
    if args.diagnose and not (entry(args.algo).loop in ("episode_replay", "off_policy")
                              or issubclass(learner, MAPPO)
                              or (issubclass(learner, COMA) and not issubclass(learner, CentralQV))):
        parser.error("--diagnose measures the value-decomposition learners' updates (iql, vdn, qmix), discrete "
                     "MADDPG's (maddpg, iddpg), PPO's (mappo, ippo) and COMA's (coma, central_v, iac)")
    if args.trace and entry(args.algo).loop != "episode_replay":
        parser.error("--trace reads the value-decomposition learners' Q-values (iql, vdn, qmix)")
    for flag, value in (("--entropy-floor", args.entropy_floor), ("--lr-end", args.lr_end)):
        if value is not None and entry(args.algo).loop != "on_policy":
            parser.error(f"{flag} changes the on-policy learners' schedules (coma and its baselines, mappo, ippo), "
                         f"not {args.algo}'s")
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= (1.0 if flag == "--lr-end" else 10.0)):
            parser.error(f"{flag} must be a number in [0, {1 if flag == '--lr-end' else 10}], got {value}")
    try:
        config = config_with(config_class(args.algo), args.settings)
    except ValueError as error:
        parser.error(f"--set {error}")
    try:
        optimum = optimal_team_return(env_id)
    except ValueError as error:
        parser.error(f"--env: {error}")
    torch.set_num_threads(1)
    if args.time_updates:
        time_updates(args.algo, config, env_id)
        return 0
    line = solve_line(optimum)
    changes = args.settings + [f"{flag}={value}" for flag, value in (("entropy_floor", args.entropy_floor),
                                                                      ("lr_end", args.lr_end)) if value is not None]
    yardstick = yardstick_seconds()
    print(f"{args.algo} on {env_id}, {episodes} episodes, set: {' '.join(changes) or 'the defaults'}; "
          f"yardstick {yardstick:.2f} s ({YARDSTICK_STEPS:,} raw ma-gym Switch2-v0 random steps, timed now)")
    print(f"{'seed':>5} {'to_solve':>8} {'episodes':>8} {'final':>6} {'kept':>5} {'late':>5} {'best':>5} {'wall_s':>7} "
          f"{'update_s':>8}", flush=True)
    remedy = None
    if args.entropy_floor is not None or args.lr_end is not None:
        remedy = Remedy(args.entropy_floor or 0.0, 1.0 if args.lr_end is None else args.lr_end,
                        -(-episodes // config.n_envs))
    results, late_share = [], []
    for index, seed in enumerate(args.seeds):
        profiler = cProfile.Profile() if args.profile and index == 0 else None
        diagnosis = Diagnosis() if args.diagnose else None
        if profiler is not None:
            profiler.enable()
        if diagnosis is not None or remedy is not None:
            learn = diagnosis.update if diagnosis is not None else (lambda agent, batch: agent.update(batch))
            hook = learn if remedy is None else (lambda agent, batch: (remedy.apply(agent), learn(agent, batch)))
            with diagnosis or contextlib.nullcontext():
                run = train(args.algo, env_id, episodes, config, seed, args.eval_every, False, threads=1,
                            update=hook)
            first = next((k for k, (_, g) in enumerate(run.evaluations) if g >= line), None)
            figures = {"greedy": greedy_team_return(run.agent, env_id, threads=1), "wall_s": run.seconds,
                       "episodes_to_solve": None if first is None else run.evaluations[first][0],
                       "seconds_to_solve": None if first is None else run.eval_seconds[first],
                       "evaluations": run.evaluations}
        else:
            run, figures = run_seed(args.algo, env_id, episodes, config, seed, args.eval_every, optimum, threads=1)
        figures["update_s"] = run.update_seconds
        if profiler is not None:
            profiler.disable()
        to_solve = None if figures["seconds_to_solve"] is None else figures["seconds_to_solve"] / yardstick
        kept = figures["greedy"] >= line
        best = max(g for _, g in figures["evaluations"])
        late = late_solved(figures["evaluations"], episodes, line)
        late_share.extend(late)
        results.append((to_solve, figures["episodes_to_solve"] is not None, kept))
        print(f"{seed:>5} {'-' if to_solve is None else f'{to_solve:.1f}':>8} "
              f"{str(figures['episodes_to_solve'] or '-'):>8} {figures['greedy']:6.2f} {'yes' if kept else 'no':>5} "
              f"{np.mean(late):5.2f} "
              f"{best:5.1f} {figures['wall_s']:7.1f} {figures['update_s']:8.1f}", flush=True)
        if diagnosis is not None:
            print("\n".join("      " + text for text in diagnosis.windows(run, config, episodes)))
        if args.trace:
            print("\n".join("      " + text for text in trace(run.agent, env_id)))
        if args.nearest:
            print("\n".join("      " + text for text in nearest(run.agent, env_id)))
        if profiler is not None:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.profile)
            print(out.getvalue())
    median = median_or_never([t for t, _, _ in results])
    print(f"SUMMARY algo={args.algo} env={env_id} episodes={episodes} set={','.join(changes) or 'defaults'} "
          f"seeds={len(results)} median_yardsticks_to_solve={'never' if median is None else f'{median:.1f}'} "
          f"solved_ever={sum(s for _, s, _ in results)}/{len(results)} "
          f"solved_at_end={sum(k for _, _, k in results)}/{len(results)} late_solved={np.mean(late_share):.2f} "
          f"yardstick_s={yardstick:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
