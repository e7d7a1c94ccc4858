"""A recurrent network the agents share, over whole episodes and during one: the replay of a batch of episodes from
their start (COMA's and PPO's actors, IPPO's value, the agent network of IQL, VDN and QMIX), and the policy that
carries its hidden state from step to step while an episode is played.

Agent i's input at step t is ``[o_{i,t}, one_hot(a_{i,t-1}), one_hot(i)]`` (``nets.shared_agent_input``), with no
last action at t = 0, and its hidden state starts at zero with every episode: the network reads the history
h_{i,t} = (o_{i,0}, a_{i,0}, ..., o_{i,t}).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import boolean
from marl_edu.pieces.nets import RecurrentActor, shared_agent_input


def previous_actions(actions: torch.Tensor) -> torch.Tensor:
    """The last action each agent saw at every step, a_{i,t-1}: actions int ``(B, T, N)`` -> ``(B, T, N)``, -1 at
    t = 0 (no action yet: an all-zero block in ``shared_agent_input``) and ``actions[:, t - 1]`` after."""
    dims = check_shape(actions, ("B", "T", "N"), "actions", dtype="int")
    no_action = torch.full((dims["B"], 1, dims["N"]), -1, dtype=actions.dtype, device=actions.device)  # (B, 1, N)
    return torch.cat([no_action, actions[:, :dims["T"] - 1]], dim=1)  # (B, T, N): a_{t-1}, none at t=0


def replay_episodes(net: RecurrentActor, obs: torch.Tensor, actions: torch.Tensor, n_actions: int,
                    last_action: bool) -> torch.Tensor:
    """``net``'s output at every step of whole episodes, each replayed from its start with a zero hidden state, in one
    fused ``RecurrentActor.unroll`` call.

    Args:
        net: the shared network, input ``O + A + N`` (``O + N`` without ``last_action``), K outputs.
        obs: float ``(B, T, N, O)``.
        actions: int ``(B, T, N)``, the actions taken; step t sees a_{i,t-1} (``previous_actions``), so the last
            index's action is never read.
        n_actions: A, the width of the one-hot last action.
        last_action: whether the input holds the last action (recurrent networks) or not (feed-forward ones).

    Returns:
        float ``(B, T, N, K)``: logits, Q-values or (K = 1) values, with the gradient of ``net``'s weights.
    """
    if not isinstance(net, RecurrentActor):
        raise ValueError(f"net must be a RecurrentActor (a network shared by the agents), got {type(net).__name__}")
    dims = check_shape(obs, ("B", "T", "N", "O"), "obs", dtype="float")
    check_shape(actions, (dims["B"], dims["T"], dims["N"]), "actions", dims, dtype="int")
    B, T, N, O = dims["B"], dims["T"], dims["N"], dims["O"]
    x = shared_agent_input(obs.transpose(0, 1).reshape(T * B, N, O),
                           previous_actions(actions).transpose(0, 1).reshape(T * B, N), n_actions,
                           boolean(last_action, "last_action"))  # (T*B*N, D), rows (t, b, i)
    out = net.unroll(x.reshape(T, B * N, -1), net.initial_hidden(B * N, obs.device))  # (T, B*N, K)
    return out.reshape(T, B, N, -1).transpose(0, 1)  # (B, T, N, K)


def episode_policy(step: Callable, h: torch.Tensor, n_agents: int, pick: Callable) -> Callable:
    """A policy for one episode (``rollout.run_episode``'s): obs ``(N, O)`` -> actions ``(N,)``, each call one step
    of every agent, the hidden state and the last actions kept between calls (so make a new one for every episode).

    Args:
        step: ``step(obs (1, N, O), last_actions int (1, N), h (N, H)) -> (probs (1, N, A), new h)``, a learner's
            ``policy_step`` at its epsilon.
        h: the hidden state before the first step, ``(N, H)``.
        n_agents: N.
        pick: ``probs (1, N, A) -> int (1, N)``, argmax or a sample.
    """
    check_shape(h, (n_agents, "H"), "h", dtype="float")
    last = torch.full((1, n_agents), -1, device=h.device)  # (1, N): no action yet

    @torch.no_grad()
    def policy(obs: np.ndarray) -> np.ndarray:
        nonlocal h, last
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=h.device)[None]  # (1, N, O)
        probs, h = step(obs_t, last, h)  # (1, N, A), (N, H)
        last = pick(probs)  # (1, N)
        return last[0].cpu().numpy()  # (N,)

    return policy
