"""Checks of arguments (counts, rates, probabilities, switches, index arrays, finite arrays, 0/1 flags, random
generators): one idiom and one message for each kind.

Every config's ``validate`` and the public functions that take counts and rates use these, so a learner's slip
reads the same way everywhere, ``ValueError: <name> must be <kind>, got <value>``. A bool is never a number here
(``True`` would pass as 1), NaN and infinity are never a rate, and numpy's integers and floats are accepted. Each
check returns the value as a plain Python int or float (so a config holding it saves and loads like any other).
(Checks of a bounded range with its own meaning, such as a GIF's scale in [1, 8], stay where they are.)
"""

from __future__ import annotations

import math

import numpy as np
import torch


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _size(values) -> int:
    """The number of entries of a numpy array (or numpy scalar) or tensor."""
    return values.numel() if isinstance(values, torch.Tensor) else int(np.size(values))


def _first(mask) -> tuple[int, ...]:
    """The index of the first True entry (row-major) of a boolean numpy array or tensor that has one."""
    mask = mask.cpu().numpy() if isinstance(mask, torch.Tensor) else np.asarray(mask)
    return tuple(int(i) for i in np.argwhere(mask)[0])


# Upper bounds of the configs' sizes and rates, far above any run of this course: a slip (an extra digit, 1e30) is a
# clear error naming the field, not an allocation of gigabytes or a NaN twenty updates later.
LIMITS = {"hidden": 4096, "n_envs": 4096, "batch_size": 65_536, "buffer_size": 10_000_000, "warmup_steps": 10_000_000,
          "n_step": 1000, "updates_per_step": 1000, "critic_steps": 1000, "target_update_every": 1_000_000,
          "n_subpolicies": 64, "learning_rate": 1.0, "temperature": 100.0, "grad_clip": 1e6, "coefficient": 100.0,
          "noise": 10.0, "n_agents": 64, "obs_dim": 100_000, "n_actions": 10_000, "layer_weights": 2**25}
# (n_agents, obs_dim, n_actions: a learner's N, O and A, each bounded alone, as a policy file's header; layer_weights:
# the weights of one linear layer a network may hold, 2**25 = 33,554,432, twice a 4,096 by 4,096 layer: the sizes
# each within their bounds can still ask for one layer of gigabytes, a centralised network's on N*O inputs)


def _at_most(value, at_most, name: str, kind: str):
    if at_most is not None and value > at_most:
        limit = f"{at_most:,}" if isinstance(at_most, int) else f"{at_most:g}"
        raise ValueError(f"{name} must be {kind} at most {limit}, got {value!r}")


def positive_int(value, name: str, at_most: int | None = None):
    """An int >= 1 (and <= ``at_most``, if given): a count of agents, episodes, env copies, hidden units, steps."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    _at_most(value, at_most, name, "a positive int")
    return int(value)


def learner_sizes(n_agents, obs_dim, n_actions, actions: str = "n_actions") -> tuple[int, int, int]:
    """A learner's N, O and A (``actions``: the name of A, ``"action_dim"`` for forces), each a positive int within
    ``LIMITS``, checked before any network is built: a slip is a ValueError naming the size, not the allocator's
    error for gigabytes."""
    return (positive_int(n_agents, "n_agents", LIMITS["n_agents"]), positive_int(obs_dim, "obs_dim", LIMITS["obs_dim"]),
            positive_int(n_actions, actions, LIMITS["n_actions"]))


def non_negative_int(value, name: str, at_most: int | None = None):
    """An int >= 0 (and <= ``at_most``, if given): a seed, a warm-up length."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    _at_most(value, at_most, name, "a non-negative int")
    return int(value)


def positive_number(value, name: str, at_most: float | None = None):
    """A finite number > 0 (and <= ``at_most``, if given): a learning rate, a temperature, a gradient-norm bound."""
    if not _is_number(value) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    _at_most(value, at_most, name, "a positive number")
    return float(value)


def non_negative_number(value, name: str, at_most: float | None = None):
    """A finite number >= 0 (and <= ``at_most``, if given): a noise scale, an entropy or regulariser coefficient."""
    if not _is_number(value) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    _at_most(value, at_most, name, "a non-negative number")
    return float(value)


def finite_number(value, name: str):
    """A real number, neither NaN nor infinite: a schedule's start or end value, a reward."""
    if not _is_number(value) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def unit_interval(value, name: str):
    """A number in [0, 1]: a discount, a lambda, an epsilon, a soft-update rate, a fraction of training."""
    if not _is_number(value) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def boolean(value, name: str):
    """True or False, nothing that merely behaves like one (1, "yes", None)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def index_range(values, n: int, name: str, meanings: list[str] | None = None) -> None:
    """Integer entries (a numpy array or tensor of any shape) that each index one of ``n`` things, in [0, n - 1]:
    actions (``meanings`` names them in the message), sub-policies, stored transitions. Checks the range only
    (the dtype and shape are ``shapes.check_shape``'s); a long array is reported by its extremes."""
    size = _size(values)
    if size == 0:
        return
    low, high = values.min().item(), values.max().item()
    if low < 0 or high >= n:
        named = f" ({', '.join(meanings)})" if meanings else ""
        got = values.tolist() if size <= 20 else f"min {low}, max {high}"
        raise ValueError(f"{name} must be in [0, {n - 1}]{named}, got {got}")


def finite(values, name: str) -> None:
    """Every entry of a numpy array or tensor (any shape) is a finite number, no NaN and no infinity: what enters a
    learner (observations, actions, rewards). One reduction when they are; a bad array is reported by its counts of
    NaN and infinite entries and the index of the first one."""
    is_finite = torch.isfinite(values) if isinstance(values, torch.Tensor) else np.isfinite(values)  # same shape
    if is_finite.all():
        return
    size, n_nan = _size(values), int((values != values).sum())  # NaN is the one value not equal to itself
    n_inf = size - int(is_finite.sum()) - n_nan
    raise ValueError(f"{name} must be finite, got {n_nan} NaN and {n_inf} infinite of {size} entries, "
                     f"the first at index {_first(~is_finite)}")


def zero_one(values, name: str) -> None:
    """Every entry of a numpy array or tensor (bool, int or float, any shape) is 0 or 1: a done flag, a mask, a
    one-hot entry. Two comparisons and one reduction when they are; otherwise the first other value is named."""
    other = (values != 0) & (values != 1)  # same shape; NaN is neither
    if not other.any():
        return
    index = _first(other)
    n_other, size = int(other.sum()), _size(values)
    raise ValueError(f"{name} must be 0 or 1 in every entry, got {values[index].item()} at index {index} "
                     f"({n_other} of {size} entries are neither)")


def generator(rng, name: str = "rng"):
    """A numpy ``Generator`` (``np.random.default_rng(seed)``), the only source of randomness sampling takes."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name} must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    return rng
