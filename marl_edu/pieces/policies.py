"""A policy's log-probabilities, entropy and samples, for the two kinds of policy the learners have:

    categorical over A actions:   log pi(a) = log(pi_a + 1e-10),      H(pi) = -sum_k pi_k log(pi_k + 1e-10)
    diagonal Gaussian over A entries, a ~ N(m, diag(sigma^2)), sigma = exp(log_sigma):
        log pi(a) = sum_j -(a_j - m_j)^2 / (2 sigma_j^2) - log sigma_j - log(2 pi) / 2
        H         = sum_j log sigma_j + (1 + log(2 pi)) / 2

The categorical's 1e-10 keeps log 0 finite for an action the policy no longer plays (its gradient then vanishes
instead of becoming NaN). Symbols as in the cheat sheet.
"""

from __future__ import annotations

import math

import torch

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import index_range

LOG_2PI = math.log(2 * math.pi)


def _check_probs(probs: torch.Tensor) -> dict[str, int]:
    """probs a float tensor ``(..., A)`` without a negative entry; returns its sizes (``A`` the last)."""
    if not isinstance(probs, torch.Tensor) or probs.dim() < 1:
        raise ValueError(f"probs: expected a float tensor of probabilities (..., A), got {type(probs).__name__}"
                         f"{tuple(probs.shape) if isinstance(probs, torch.Tensor) else ''}")
    dims = check_shape(probs, (*probs.shape[:-1], "A"), "probs", dtype="float")  # (..., A)
    if (probs < 0).any():  # NaN is not: left to gradient_step, which names the update and the learning rate
        raise ValueError(f"probs must be probabilities, non-negative (softmax(logits), not the logits), got "
                         f"{probs.min().item():g}")
    return dims


def categorical_log_prob(probs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``log pi(a) = log(pi_a + 1e-10)`` of the actions taken: probs float ``(..., A)`` (a policy's probabilities, with
    its gradient if it has one), actions int ``(...)`` in [0, A) -> ``(...)``. NaN in probs gives NaN (a loss that
    ``nets.gradient_step`` refuses, naming the update)."""
    dims = _check_probs(probs)
    check_shape(actions, tuple(probs.shape[:-1]), "actions", dtype="int")  # (...) probs' leading axes
    index_range(actions, dims["A"], "actions")
    return torch.log(probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1) + 1e-10)  # (...)


def categorical_entropy(probs: torch.Tensor) -> torch.Tensor:
    """``H(pi) = -sum_k pi_k log(pi_k + 1e-10)``: probs float ``(..., A)`` -> ``(...)``, log A at most (uniform)."""
    _check_probs(probs)
    return -(probs * torch.log(probs + 1e-10)).sum(-1)  # (...)


def seeded_generator(seed: int, device: torch.device) -> torch.Generator:
    """The torch generator a learner draws its samples with, seeded with ``seed``, on ``device``; on the meta device
    (a learner built there has its shapes and no memory: ``training.checkpoints`` counts the weights a policy file
    would build that way, before building it) a CPU one, since the meta device has no generator."""
    return torch.Generator(device="cpu" if torch.device(device).type == "meta" else device).manual_seed(seed)


def sample_categorical(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One action per row from probabilities ``(B, N, A)`` -> int ``(B, N)``, drawn with ``generator`` (the learner's
    own, so acting is reproducible). NaN, infinite or negative entries, or a row without weight: a ValueError."""
    dims = check_shape(probs, ("B", "N", "A"), "probs", dtype="float")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator (the learner's), got {type(generator).__name__}")
    flat = probs.reshape(-1, dims["A"])  # (B*N, A)
    try:
        return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])  # (B, N)
    except RuntimeError as error:  # NaN, infinite or negative entries, or a row without any weight
        raise ValueError(f"probs must be probabilities (B, N, A): finite, non-negative, each row with a positive "
                         f"sum; torch.multinomial says: {error}") from None


def _check_gaussian(mean: torch.Tensor, log_std: torch.Tensor) -> dict[str, int]:
    for tensor, name in ((mean, "mean"), (log_std, "log_std")):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{name}: expected a torch tensor, got {type(tensor).__name__}")
    dims = check_shape(log_std, ("A",), "log_std", dtype="float")  # (A,) one per action entry
    check_shape(mean, (*mean.shape[:-1], dims["A"]), "mean", dtype="float")  # (..., A)
    if mean.dim() < 1:
        raise ValueError(f"mean: expected (..., {dims['A']}), got a 0-d tensor")
    return dims


def gaussian_log_prob(mean: torch.Tensor, log_std: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """log N(a; m, diag(sigma^2)) summed over the A entries, sigma = exp(log_std): mean float ``(..., A)``, log_std
    float ``(A,)`` (the same for every row), actions float ``(..., A)`` (the samples themselves, unclipped) ->
    ``(...)``. ``log N = -(a - m)^2 / (2 sigma^2) - log sigma - log(2 pi) / 2`` per entry."""
    dims = _check_gaussian(mean, log_std)
    check_shape(actions, tuple(mean.shape), "actions", dims, dtype="float")  # (..., A) mean's shape
    z = (actions - mean) / log_std.exp()  # (..., A) standardised
    return (-0.5 * z ** 2 - log_std - 0.5 * LOG_2PI).sum(-1)  # (...)


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """H of a diagonal Gaussian, ``sum_j log sigma_j + (1 + log(2 pi)) / 2``: log_std float ``(A,)`` -> a 0-d tensor
    (the same for every state: sigma does not depend on it)."""
    if not isinstance(log_std, torch.Tensor):
        raise ValueError(f"log_std: expected a torch tensor, got {type(log_std).__name__}")
    check_shape(log_std, ("A",), "log_std", dtype="float")  # (A,)
    return (log_std + 0.5 * (1.0 + LOG_2PI)).sum()
