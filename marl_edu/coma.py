"""COMA: the centralised Q critic's input, the counterfactual baseline and the advantage.

COMA's critic answers, for agent a: "what is the team's return if every other agent does what it did,
u^{-a}, and agent a does action k?", for every k at once: Q(s, u^{-a}, k), a row of A numbers. The
counterfactual baseline averages that row over agent a's own policy, so the advantage

    A^a(s, u) = Q(s, u) - sum_k pi^a(k | tau^a) Q(s, (u^{-a}, k))

credits agent a only with what its own choice changed.
"""

from __future__ import annotations

import torch

from marl_edu.shapes import check_shape


def build_critic_input(state: torch.Tensor, obs: torch.Tensor, actions_onehot: torch.Tensor) -> torch.Tensor:
    """One critic row per agent: ``[state, obs[a], every agent's one-hot action with a's own block zeroed, one_hot(a)]``.

    Args:
        state: float ``(B, S)``. Switch has no global state: pass the concatenated observations.
        obs: float ``(B, N, O)``.
        actions_onehot: float ``(B, N, A)``, the joint action u.

    Returns:
        float ``(B, N, S + O + N*A + N)``. Row a does not depend on agent a's own action: the critic
        outputs Q(s, u^{-a}, k) for every k of agent a, so a's action must not already be in its input.
    """
    dims = check_shape(state, ("B", "S"), "state", dtype="float")
    check_shape(obs, ("B", "N", "O"), "obs", dims, dtype="float")
    check_shape(actions_onehot, ("B", "N", "A"), "actions_onehot", dims, dtype="float")
    B, N, A = dims["B"], dims["N"], dims["A"]
    eye = torch.eye(N, device=obs.device, dtype=obs.dtype)  # (N, N)
    state_rows = state.unsqueeze(1).expand(B, N, dims["S"])  # (B, N, S) the same state for every row
    others = actions_onehot.unsqueeze(1).expand(B, N, N, A)  # (B, N rows, N agents, A)
    others = others * (1.0 - eye).view(1, N, N, 1)  # (B, N, N, A): row a has agent a's block zeroed
    ids = eye.unsqueeze(0).expand(B, N, N)  # (B, N, N) one-hot agent id per row
    return torch.cat([state_rows, obs, others.reshape(B, N, N * A), ids], dim=-1)  # (B, N, S+O+N*A+N)


def _check_policy(q: torch.Tensor, pi: torch.Tensor) -> None:
    if not isinstance(q, torch.Tensor) or not q.dtype.is_floating_point or q.dim() < 1:
        raise ValueError(f"q must be a float tensor (..., A), got {getattr(q, 'dtype', type(q))}")
    if not isinstance(pi, torch.Tensor) or pi.shape != q.shape:
        raise ValueError(f"pi must have q's shape {tuple(q.shape)} (..., A), got {tuple(getattr(pi, 'shape', ()))}")
    if (pi < 0).any() or not torch.allclose(pi.sum(-1), torch.ones((), dtype=pi.dtype), atol=1e-4):
        raise ValueError("pi must be probabilities over the last axis (non-negative, summing to 1); "
                         "pass softmax(logits), not the logits")


def counterfactual_baseline(q: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """``b = sum_k pi(k) Q(s, (u^{-a}, k))``: q and pi ``(..., A)`` -> ``(...)``."""
    _check_policy(q, pi)
    return (pi * q).sum(dim=-1)  # (...)


def coma_advantage(q: torch.Tensor, pi: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``A = Q(s, u) - b``: q and pi ``(..., A)``, actions int ``(...)`` (agent a's action taken) -> ``(...)``."""
    _check_policy(q, pi)
    if not isinstance(actions, torch.Tensor) or actions.dtype.is_floating_point or actions.shape != q.shape[:-1]:
        raise ValueError(f"actions must be an int tensor of shape {tuple(q.shape[:-1])}, got "
                         f"{getattr(actions, 'dtype', type(actions))} {tuple(getattr(actions, 'shape', ()))}")
    n_actions = q.shape[-1]
    if actions.numel() and (actions.min() < 0 or actions.max() >= n_actions):
        raise ValueError(f"actions must be in [0, {n_actions - 1}], got {actions.min().item()}..{actions.max().item()}")
    q_taken = q.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)  # (...)
    return q_taken - counterfactual_baseline(q, pi)  # (...)
