"""The masked mean: a loss averaged over the entries a mask keeps (the real steps of padded episodes, the steps at
which an agent acts), every learner's one way to leave padding out of a loss.

    masked_mean(x, m) = sum m x / sum m

The sum is taken, then divided by the count, in that order (the arithmetic every learner had; a sum then a divide
is not always the same float as ``mean``).
"""

from __future__ import annotations

import torch

from marl_edu.base.shapes import check_shape
from marl_edu.base.validate import boolean, finite_number, zero_one


def masked_mean(x: torch.Tensor, mask: torch.Tensor, allow_empty: bool = False, coef: float | None = None,
                name: str = "x") -> torch.Tensor:
    """``sum m x / sum m``: the mean of ``x`` over the entries where ``mask`` is 1, a 0-d tensor with ``x``'s gradient.

    Args:
        x: float ``(...)``, such as squared TD errors ``(B, T)`` or surrogate terms ``(B, T, N)``.
        mask: float ``(...)``, exactly x's shape (no broadcasting: ``(B, T)`` against ``(B, T, N)`` is a
            ValueError, expand it first), every entry 0 or 1.
        allow_empty: what an all-zero mask means. True: nothing to average, the mean is 0 (the count is clamped to
            at least 1), so a minibatch in which no agent acts adds nothing to a loss (PPO's and COMA's actor
            losses). False: a ValueError, for a mask that always holds a real step (a whole batch's step_mask,
            which ``check_episode_batch`` checks).
        coef: a coefficient beta for the sum, ``beta (sum m x) / sum m``, multiplied in before the division (PPO's
            entropy bonus has always been computed so; ``beta * masked_mean(...)`` can differ in the last bit).
        name: x's name in the messages.

    Returns:
        A 0-d tensor. NaN or infinity in ``x`` is not refused here: it makes the mean non-finite even under a 0 of
        the mask (0 * inf is NaN), and ``nets.gradient_step`` then refuses the loss naming the update and the
        learning rate, the likelier cause.

    Raises:
        ValueError: x or mask not a float tensor, their shapes differing, a mask entry other than 0 or 1 (NaN
        included), or (``allow_empty=False``) a mask without a 1.
    """
    for tensor, what in ((x, name), (mask, f"{name}'s mask")):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{what}: expected a torch tensor, got {type(tensor).__name__}")
    check_shape(x, tuple(x.shape), name, dtype="float")  # (...) any shape, float elements
    check_shape(mask, tuple(x.shape), f"{name}'s mask", dtype="float")  # (...) x's shape exactly
    zero_one(mask, f"{name}'s mask")
    total = (x * mask).sum()  # 0-d
    if coef is not None:
        total = finite_number(coef, "coef") * total  # beta sum m x
    count = mask.sum()  # 0-d, the entries kept
    if not boolean(allow_empty, "allow_empty"):
        if not count > 0:
            raise ValueError(f"{name}'s mask is all zero: no entry to average over (a batch without a real step?)")
        return total / count
    return total / count.clamp(min=1.0)
