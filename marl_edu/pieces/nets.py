"""The networks: a small MLP, a discrete-action actor and a centralised critic (device-agnostic), the input of a
network the agents share, the one gradient step every learner takes on them (which refuses a non-finite loss), and
the check that a policy's output is finite before anyone acts on it."""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import LIMITS, finite, positive_int


def _tensor(x, name: str, spec: str) -> None:
    """A network takes torch tensors: a numpy array (or anything else) is a ValueError saying how to convert it."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: expected a torch tensor of shape {spec}, got {type(x).__name__}; "
                         f"torch.as_tensor(x) converts a numpy array")


def linear(in_dim: int, out_dim: int) -> nn.Linear:
    """``nn.Linear(in_dim, out_dim)``, every network's linear layer, refused with a ValueError before it is allocated
    when it would hold more than ``LIMITS["layer_weights"]`` weights (a centralised network on N*O inputs can ask for
    gigabytes with N and O each within their limits)."""
    weights = positive_int(in_dim, "in_dim") * positive_int(out_dim, "out_dim")
    if weights > LIMITS["layer_weights"]:
        raise ValueError(f"a layer of in_dim={in_dim:,} by {out_dim:,} outputs: {weights:,} weights in one layer, more "
                         f"than the {LIMITS['layer_weights']:,} a network may hold in one (smaller sizes)")
    return nn.Linear(in_dim, out_dim)


def gru_cell(in_dim: int, hidden: int) -> nn.GRUCell:
    """``nn.GRUCell(in_dim, hidden)``, refused as ``linear`` refuses a layer: its input-to-hidden and hidden-to-hidden
    weights are each three gates' worth, ``3 * hidden`` by ``in_dim`` and by ``hidden``, each bounded by
    ``LIMITS["layer_weights"]`` (a GRU of hidden=4,096, within the hidden bound, would hold 100,663,296 weights)."""
    for name, rows, cols in (("input", 3 * positive_int(hidden, "hidden"), positive_int(in_dim, "in_dim")),
                             ("hidden", 3 * hidden, hidden)):
        if rows * cols > LIMITS["layer_weights"]:
            raise ValueError(f"a GRU of {in_dim:,} inputs and hidden={hidden:,}: its {name}-to-hidden weights "
                             f"(3 gates x {hidden:,} by {cols:,}) are {rows * cols:,} weights in one layer, more "
                             f"than the {LIMITS['layer_weights']:,} a network may hold in one (a smaller hidden)")
    return nn.GRUCell(in_dim, hidden)


class MLP(nn.Module):
    """``in_dim -> hidden... -> out_dim`` with ReLU between layers. ``(B, in_dim) -> (B, out_dim)``."""

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int] = (64, 64)):
        super().__init__()
        sizes = [positive_int(in_dim, "in_dim"), *[positive_int(h, "hidden size") for h in hidden],
                 positive_int(out_dim, "out_dim")]
        layers: list[nn.Module] = []
        for k in range(len(sizes) - 1):
            layers.append(linear(sizes[k], sizes[k + 1]))
            if k < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)
        self.in_dim, self.out_dim = in_dim, out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _tensor(x, "x", f"(B, {self.in_dim})")
        check_shape(x, ("B", self.in_dim), "x", dtype="float")
        return self.net(x)  # (B, out_dim)


class Actor(nn.Module):
    """Agent i's policy network: its own observation ``(B, O)`` -> action logits ``(B, A)``."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: Sequence[int] = (64, 64)):
        super().__init__()
        self.mlp = MLP(obs_dim, n_actions, hidden)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mlp(obs)  # (B, A) logits


class Critic(nn.Module):
    """A centralised critic: a flat input ``(B, D)`` -> one value per row, ``(B,)`` (already squeezed,
    so it never meets a ``(B,)`` target as ``(B, 1)``)."""

    def __init__(self, in_dim: int, hidden: Sequence[int] = (64, 64)):
        super().__init__()
        self.mlp = MLP(in_dim, 1, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x).squeeze(1)  # (B, 1) -> (B,)


class RecurrentActor(nn.Module):
    """A GRU policy over one agent's own observation history, shared by all agents (COMA).

    One step: input ``(B, D)`` (the agent's observation and its one-hot id) and hidden ``(B, H)`` ->
    logits ``(B, A)`` and the new hidden ``(B, H)``. With ``recurrent=False`` the GRU is replaced by a
    linear layer and the hidden state is ignored: a feed-forward policy on the current input only.
    """

    def __init__(self, in_dim: int, n_actions: int, hidden: int = 64, recurrent: bool = True):
        super().__init__()
        self.in_dim, self.hidden = positive_int(in_dim, "in_dim"), positive_int(hidden, "hidden")
        self.recurrent = recurrent
        self.encode = linear(in_dim, hidden)
        self.memory = gru_cell(hidden, hidden) if recurrent else linear(hidden, hidden)
        self.head = linear(hidden, positive_int(n_actions, "n_actions"))

    def initial_hidden(self, batch: int, device: str | torch.device = "cpu") -> torch.Tensor:
        return torch.zeros(batch, self.hidden, device=device)  # (B, H)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _tensor(x, "x", f"(B, {self.in_dim})")
        dims = check_shape(x, ("B", self.in_dim), "x", dtype="float")
        check_shape(h, (dims["B"], self.hidden), "h", dtype="float")
        z = torch.relu(self.encode(x))  # (B, H)
        h_new = self.memory(z, h) if self.recurrent else torch.relu(self.memory(z))  # (B, H)
        return self.head(h_new), h_new  # (B, A), (B, H)

    def unroll(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Every step of whole sequences in one call: inputs ``(T, B, D)`` and the first hidden ``(B, H)`` -> logits
        ``(T, B, A)``, the values ``forward`` gives step by step. The GRU runs as one fused sequence op with the
        ``GRUCell``'s own weights, and the linear layers take all T*B rows at once, so sums run in another order than
        the step-by-step loop's: values and gradients agree up to float32 rounding, not always to the bit."""
        _tensor(x, "x", f"(T, B, {self.in_dim})")
        dims = check_shape(x, ("T", "B", self.in_dim), "x", dtype="float")
        check_shape(h, (dims["B"], self.hidden), "h", dtype="float")
        z = torch.relu(self.encode(x))  # (T, B, H)
        if not self.recurrent:
            return self.head(torch.relu(self.memory(z)))  # (T, B, A)
        cell = self.memory
        weights = [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh]  # what nn.GRU's one layer holds
        h_all, _ = torch.gru(z, h.unsqueeze(0), weights, True, 1, 0.0, self.training, False, False)  # (T, B, H)
        # (arguments: has_biases, num_layers, dropout, train, bidirectional, batch_first)
        return self.head(h_all)  # (T, B, A)


def shared_agent_input(obs: torch.Tensor, last_actions: torch.Tensor, n_actions: int,
                       last_action: bool = True) -> torch.Tensor:
    """The input of a network every agent shares (COMA's actor, the value-decomposition learners' agent network):
    ``[o_{i,t}, one_hot(a_{i,t-1}), one_hot(i)]`` for every agent i, so one set of weights can tell the agents apart.
    obs ``(B, N, O)``, last actions int ``(B, N)`` (-1 before the first step: an all-zero block) ->
    ``(B*N, O + A + N)``; without ``last_action`` (feed-forward networks) ``[o_{i,t}, one_hot(i)]``,
    ``(B*N, O + N)``."""
    B, N, O = obs.shape
    ids = torch.eye(N, device=obs.device).expand(B, N, N)  # (B, N, N)
    if not last_action:
        return torch.cat([obs, ids], dim=-1).reshape(B * N, O + N)  # (B*N, O+N)
    last = F.one_hot(last_actions.clamp(min=0), n_actions).float() * (last_actions >= 0).unsqueeze(-1)  # (B, N, A)
    return torch.cat([obs, last, ids], dim=-1).reshape(B * N, O + n_actions + N)  # (B*N, O+A+N)


def gradient_step(optimizer: torch.optim.Optimizer, net: nn.Module, loss: torch.Tensor, grad_clip: float,
                  name: str = "loss", update: int | None = None) -> float:
    """One step of every learner: zero the gradients, backpropagate ``loss`` (a 0-d tensor), clip the gradient
    norm of ``net``'s parameters to ``grad_clip`` (as the reference implementations do, so one bad batch cannot
    throw the weights far), and let ``optimizer`` step. Returns the loss value.

    A non-finite loss (before backpropagating) or gradient norm stops training before the optimiser steps, so this
    step leaves the weights as they were: ValueError ``"<name> is nan at update <update>: a learning rate or entropy
    coefficient too large? (lr=...); no step was taken"``
    (``name`` says which loss, ``update`` which of the learner's updates, counted from 1; the lr is the optimiser's).
    An optimiser step that overflows (Adam with a learning rate near float32's largest number) is a ValueError too."""
    value = loss.item()
    if not math.isfinite(value):
        raise ValueError(f"{name} is {value}{_too_large(optimizer, update)}; no step was taken")
    optimizer.zero_grad()
    loss.backward()
    norm = nn.utils.clip_grad_norm_(net.parameters(), grad_clip)  # the norm before clipping, 0-d
    if not torch.isfinite(norm):
        raise ValueError(f"{name}'s gradient norm is {norm.item()}{_too_large(optimizer, update)}; no step was taken")
    try:
        optimizer.step()
    except RuntimeError as error:  # e.g. Adam's lr / (1 - beta1) does not fit in a float32
        raise ValueError(f"{name}: the optimiser's step failed ({error}){_too_large(optimizer, update)}") from None
    return value


def _too_large(optimizer: torch.optim.Optimizer, update: int | None) -> str:
    """The end of gradient_step's messages: which update, and the likely cause with the optimiser's lr."""
    at = f" at update {update}" if update is not None else ""
    return f"{at}: a learning rate or entropy coefficient too large? (lr={optimizer.param_groups[0]['lr']:g})"


def check_policy_output(output: torch.Tensor, obs: torch.Tensor, net: nn.Module, what: str) -> None:
    """Acting never goes on silently with NaN: ``output`` (a policy's logits, probabilities or actions, any shape),
    computed by ``net`` from ``obs`` (any shape), must be finite. One reduction when it is; when it is not, the
    ValueError says why: NaN or infinity in the observations, in the named weights of ``net``, or (every weight
    finite) an activation that overflowed."""
    if torch.isfinite(output).all():
        return
    finite(obs, "the observations the policy got (B, N, O)")
    bad = [key for key, p in net.named_parameters() if not torch.isfinite(p).all()]
    cause = (f"the weights {bad[:3]}{' and more' if len(bad) > 3 else ''} hold NaN or infinity" if bad
             else "every weight is finite, so an activation overflowed")
    raise ValueError(f"{what} are not finite although the observations are: {cause} (trained with too large a "
                     f"learning rate, or loaded from a run that diverged?)")
