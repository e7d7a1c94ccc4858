"""Learning targets and target networks.

    y_t = r_t + gamma (1 - d_t) Q'_i(x_{t+1}, mu'(x_{t+1}))                      (td_target)
    y_t = r_t + gamma (1 - d_t) ((1 - lam) Q'(s_{t+1}, a_{t+1}) + lam y_{t+1})   (td_lambda_targets)
    psi' <- tau psi + (1 - tau) psi', theta' likewise                            (soft_update, "Polyak averaging")
    psi' <- psi                                                                  (hard_update)
    every C updates a hard copy, or a soft update at every update                (update_target: when)
    r_{i,t} in column i, or r_t = sum_j r_{j,t} in every column                  (critic_rewards: what critics learn)

A prime marks a target network and nothing else; the next step is written with its time index (symbols as in the
course's cheat sheet).

A target network is a frozen *copy* of a network, refreshed slowly or now and then, so the value the
critic chases does not move with every gradient step. ``make_target`` deep-copies: a second name for
the same module is not a copy, and its "target" would move with every step.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import boolean, finite, unit_interval, zero_one


def critic_rewards(rewards: np.ndarray | torch.Tensor, team_reward: bool) -> np.ndarray | torch.Tensor:
    """The reward each critic learns, the one place every training loop and COMA decide it.

    Args:
        rewards: float ``(..., N)``, each agent's own reward r_{i,t} in column i, with at least one leading axis
            (``(K, N)`` for one lock-step of K env copies, ``(B, T, N)`` for a batch of episodes); numpy or torch.
        team_reward: False: critic i learns its own r_{i,t} (the rewards unchanged). True: every critic learns the
            team's r_t = sum_j r_{j,t} (Switch is cooperative; MADDPG and COMA on Switch, and ``team_reward=True`` of
            the continuous learners).

    Returns:
        ``(..., N)`` of the same kind: the rewards, or each row's sum repeated in every agent's column.
    """
    if not isinstance(rewards, (np.ndarray, torch.Tensor)):
        raise ValueError(f"rewards must be a numpy array or torch.Tensor (..., N), got {type(rewards).__name__}")
    if rewards.ndim < 2:
        raise ValueError(f"rewards: expected (..., N) with a leading axis, such as (K, N) or (B, T, N), got shape "
                         f"{tuple(rewards.shape)}: a single (N,) row is ambiguous")
    check_shape(rewards, (*rewards.shape[:-1], "N"), "rewards", dtype="float")  # (any leading axes: the dtype)
    finite(rewards, "rewards")
    boolean(team_reward, "team_reward")
    if not team_reward:
        return rewards
    if isinstance(rewards, torch.Tensor):
        return rewards.sum(dim=-1, keepdim=True).expand_as(rewards)  # (..., N) N views of each sum
    return np.repeat(rewards.sum(axis=-1, keepdims=True), rewards.shape[-1], axis=-1)  # (..., N) N copies


def _check_alike(spec: tuple, rewards: torch.Tensor, dones: torch.Tensor, values: torch.Tensor,
                 values_name: str) -> dict[str, int]:
    """A target's three inputs share one shape ``spec`` (rewards and ``values`` float, dones any dtype, each 0 or 1)
    and hold finite numbers; ValueError naming the first that does not. Returns the sizes by name (``check_shape``'s)."""
    dims = check_shape(rewards, spec, "rewards", dtype="float")
    check_shape(dones, spec, "dones", dims)
    check_shape(values, spec, values_name, dims, dtype="float")
    for tensor, name in ((rewards, "rewards"), (values, values_name)):
        finite(tensor, name)
    zero_one(dones, "dones")  # d_t: 1 at a real terminal state, else 0 (0.5 would half-bootstrap)
    return dims


def td_target(rewards: torch.Tensor, dones: torch.Tensor, q_next: torch.Tensor, gamma: float) -> torch.Tensor:
    """The one-step TD target ``y_t = r_t + gamma (1 - d_t) q_next``, with no gradient through ``q_next``.

    Args:
        rewards: float ``(B,)`` (or any shape) rewards r_t.
        dones: ``(B,)`` d_t: 1 where the next state is a real terminal state (not a time-limit end), else 0.
        q_next: ``(B,)`` the target critic's value of the next state, such as MADDPG's Q'_i(x_{t+1}, mu'(x_{t+1})).
        gamma: discount in [0, 1].
    All three tensors must have exactly the same shape: ``(B,)`` against ``(B, 1)`` would broadcast
    to ``(B, B)``, so it is a ValueError here.

    Returns:
        ``y_t``, same shape as ``rewards``, detached (a target is a constant for the loss).
    """
    gamma = float(unit_interval(gamma, "gamma"))
    for tensor, name in ((rewards, "rewards"), (dones, "dones"), (q_next, "q_next")):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    spec = (("B", "N") + tuple(f"d{k}" for k in range(2, rewards.dim())))[: rewards.dim()]  # (B,) or (B, N) ...
    _check_alike(spec, rewards, dones, q_next, "q_next")
    with torch.no_grad():
        return rewards + gamma * (1.0 - dones.float()) * q_next  # same shape as rewards


def td_lambda_targets(rewards: torch.Tensor, dones: torch.Tensor, next_values: torch.Tensor, gamma: float,
                      lam: float) -> torch.Tensor:
    """TD(lambda) targets of whole episodes, by the backward recursion (lam is lambda)

        y_t = r_t + gamma (1 - d_t) ((1 - lam) Q'(s_{t+1}, a_{t+1}) + lam y_{t+1}),
        y_{T-1} = r_{T-1} + gamma (1 - d_{T-1}) Q'(s_T, a_T)

    Args:
        rewards: float ``(..., T)`` r_t.
        dones: ``(..., T)`` d_t = 1 where the state after step t is a real terminal state. A time-limit end
            has d = 0: its last step bootstraps from Q' of the state it was cut in, as it should (the
            episode did not end, it was stopped). Steps after a terminal step (padding) cannot leak into
            earlier targets, because d_t = 1 cuts the recursion.
        next_values: float ``(..., T)``: ``next_values[..., t]`` is the target critic's value of what follows
            step t, Q'(s_{t+1}, a_{t+1}) for COMA (for a state-value critic, V'(s_{t+1})).
        gamma, lam: in [0, 1]. lam = 0 gives TD(0) targets, lam = 1 the discounted Monte Carlo return
            (bootstrapped only at a time-limit end).

    Returns:
        y, float ``(..., T)``, detached.
    """
    gamma = float(unit_interval(gamma, "gamma"))
    lam = float(unit_interval(lam, "lam"))
    if not isinstance(rewards, torch.Tensor) or rewards.dim() < 1:
        raise ValueError(f"rewards must be a torch.Tensor (..., T), got {type(rewards).__name__}")
    spec = tuple(f"d{k}" for k in range(rewards.dim() - 1)) + ("T",)  # (..., T)
    dims = _check_alike(spec, rewards, dones, next_values, "next_values")
    if dims["T"] < 1:
        raise ValueError(f"rewards: expected at least one step, T >= 1, got shape {tuple(rewards.shape)}")
    with torch.no_grad():
        not_done = 1.0 - dones.float()  # (..., T)
        targets = torch.empty_like(rewards)  # (..., T)
        g_next = next_values[..., -1]  # (...,) the last step bootstraps fully from Q'(s_T, a_T)
        for t in reversed(range(dims["T"])):
            mixed = (1.0 - lam) * next_values[..., t] + lam * g_next  # (...,)
            targets[..., t] = rewards[..., t] + gamma * not_done[..., t] * mixed  # (...,)
            g_next = targets[..., t]
        return targets


def make_target(net: nn.Module) -> nn.Module:
    """A deep copy of ``net`` with gradients switched off: the target network."""
    if not isinstance(net, nn.Module):
        raise ValueError(f"net must be a torch.nn.Module, got {type(net).__name__}")
    target = copy.deepcopy(net)
    for parameter in target.parameters():
        parameter.requires_grad_(False)
    return target


def _paired_parameters(target: nn.Module, source: nn.Module):
    target_params, source_params = dict(target.named_parameters()), dict(source.named_parameters())
    if target_params.keys() != source_params.keys():
        raise ValueError("target and source have different parameters; make the target with make_target(source)")
    for name, t in target_params.items():
        if t is source_params[name]:
            raise ValueError(f"target and source share the tensor {name!r}: the target is not a copy "
                             f"(use make_target(source), which deep-copies)")
        if t.shape != source_params[name].shape:
            raise ValueError(f"parameter {name!r}: target {tuple(t.shape)} vs source {tuple(source_params[name].shape)}")
        yield t, source_params[name]


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging, in place: ``target <- tau * source + (1 - tau) * target``, tau in [0, 1]."""
    tau = float(unit_interval(tau, "tau"))
    with torch.no_grad():
        for t, s in _paired_parameters(target, source):
            t.mul_(1.0 - tau).add_(s, alpha=tau)


def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copy every parameter of ``source`` into ``target``, in place."""
    with torch.no_grad():
        for t, s in _paired_parameters(target, source):
            t.copy_(s)


def update_target(target: nn.Module, source: nn.Module, updates: int, every: int | None = None,
                  tau: float | None = None) -> bool:
    """When a target network follows its source, the one place every learner decides it, after its ``updates``-th
    update (counted from 1, this one included). Exactly one of:

        every=C: a hard copy psi' <- psi when ``updates`` is a multiple of C, else nothing (DQN's schedule: COMA's
            critic, central-QV's value, the agent network and mixer of IQL, VDN and QMIX);
        tau: a soft update psi' <- tau psi + (1 - tau) psi' at every update (DDPG's: MADDPG and its relatives).

    target and source: modules with the same parameters (``make_target(source)``). Returns whether the target
    changed."""
    if isinstance(updates, bool) or not isinstance(updates, int) or updates < 1:
        raise ValueError(f"updates must be the number of updates so far, an int >= 1 (this one included), "
                         f"got {updates!r}")
    if (every is None) == (tau is None):
        raise ValueError(f"update_target: give exactly one of every (a hard copy every C updates) and tau (a soft "
                         f"update at every one), got every={every!r}, tau={tau!r}")
    if tau is not None:
        soft_update(target, source, tau)
        return True
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be an int >= 1 (updates between hard copies), got {every!r}")
    if updates % every != 0:
        return False
    hard_update(target, source)
    return True
