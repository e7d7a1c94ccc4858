"""MADDPG: the centralised critic's input (Part I); the losses and learner arrive with Part II.

MADDPG's critic for agent i is Q_i(x, a_1, ..., a_N): it sees every agent's observation and every
agent's action. In a batch those live in ``(B, N, O)`` and ``(B, N, A)``; the critic is an MLP that
wants one flat row per transition.
"""

from __future__ import annotations

import torch

from marl_edu.shapes import check_shape


def flatten_for_critic(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """The centralised critic's input ``x = [o_1, ..., o_N, a_1, ..., a_N]``.

    Args:
        obs: float ``(B, N, O)``, every agent's observation.
        actions: float ``(B, N, A)``, every agent's (one-hot or continuous) action.

    Returns:
        float ``(B, N*O + N*A)`` = ``(B, N*(O+A))``: row b holds all of transition b's observations
        (agent 0's first), then all of its actions. Only the trailing axes are merged, so the
        batch axis is never mixed with the agent axis.
    """
    dims = check_shape(obs, ("B", "N", "O"), "obs", dtype="float")
    check_shape(actions, ("B", "N", "A"), "actions", dims)
    if not actions.dtype.is_floating_point:
        raise ValueError(f"actions: expected float elements, got dtype {actions.dtype}; "
                         f"one-hot actions from F.one_hot are integers: call .float() on them")
    B, N, O, A = dims["B"], dims["N"], dims["O"], dims["A"]
    x_obs = obs.reshape(B, N * O)  # (B, N*O)
    x_act = actions.reshape(B, N * A)  # (B, N*A)
    return torch.cat([x_obs, x_act], dim=1)  # (B, N*(O+A))
