"""Shape bookkeeping: check a tensor's shape against a symbolic spec, and one-hot encode actions.

Every public function of marl_edu checks its inputs with :func:`check_shape`, so a learner's
mistake surfaces as one ValueError that names the tensor, the expected and the actual shape,
never as a broadcast that silently builds a (B, B) matrix deep inside torch.

Symbols: B batch, T time (L: a batch's longest episode), N agents, O obs dim, S state dim, A number of actions (or
action dim), K env copies, M sub-policies per agent, D a critic's input width, H hidden units, P joint states.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from marl_edu.base.validate import positive_int

Dim = int | str

_DTYPE_KINDS = ("float", "int", "bool")


def _format_spec(spec: Sequence[Dim], bound: Mapping[str, int]) -> str:
    parts = [f"{d}={bound[d]}" if isinstance(d, str) and d in bound else str(d) for d in spec]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _dtype_kind(x: Any) -> str:
    """'float', 'int', 'bool' or 'other' for a numpy array or torch tensor."""
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bool:
            return "bool"
        if x.dtype.is_floating_point:
            return "float"
        if x.dtype.is_complex:
            return "other"
        return "int"
    dtype = np.asarray(x).dtype
    if dtype == np.bool_:
        return "bool"
    if np.issubdtype(dtype, np.floating):
        return "float"
    if np.issubdtype(dtype, np.integer):
        return "int"
    return "other"


def check_shape(
    x: Any,
    spec: Sequence[Dim],
    name: str,
    dims: dict[str, int] | None = None,
    dtype: str | None = None,
) -> dict[str, int]:
    """Check that ``x`` (numpy array or torch tensor) has the shape ``spec``.

    Args:
        x: the array or tensor to check; anything without ``.shape`` is rejected.
        spec: a tuple of ints (exact sizes) and symbols such as ``"B"``, ``"N"``, ``"O"``. A symbol
            used twice in one spec must have the same size both times, e.g. ``("N", "N")``.
        name: the tensor's name, used in the error message.
        dims: optional symbol sizes already known (``{"N": 2}``). Symbols bound here must match;
            new symbols found in ``x`` are added to this dict in place, so one dict can be passed
            to several calls to tie their shapes together.
        dtype: optional kind the elements must have: ``"float"``, ``"int"`` or ``"bool"``.

    Returns:
        The dict of symbol sizes (``dims`` itself when given).

    Raises:
        ValueError: naming the tensor, the expected and the actual shape (or dtype).
    """
    if dims is None:
        dims = {}
    if not isinstance(spec, (tuple, list)):
        raise ValueError(f"check_shape: spec must be a tuple of sizes and symbols such as ('B', 'N'), got {spec!r}")
    if not hasattr(x, "shape"):
        raise ValueError(f"{name}: expected an array or tensor of shape {_format_spec(spec, dims)}, "
                         f"got {type(x).__name__}")
    shape = tuple(int(s) for s in x.shape)
    if len(shape) != len(spec):
        raise ValueError(f"{name}: expected shape {_format_spec(spec, dims)} ({len(spec)} dims), "
                         f"got {shape} ({len(shape)} dims)")
    bound = dict(dims)
    for axis, (want, got) in enumerate(zip(spec, shape)):
        if isinstance(want, str):
            if want in bound and bound[want] != got:
                raise ValueError(f"{name}: expected shape {_format_spec(spec, dims)}, got {shape}: "
                                 f"axis {axis} ({want}) is {got} but {want}={bound[want]}")
            bound[want] = got
        elif want != got:  # (the message shows the sizes known before this call, e.g. (B, N=2, O))
            raise ValueError(f"{name}: expected shape {_format_spec(spec, dims)}, got {shape}: axis {axis} should be "
                             f"{want}")
    if dtype is not None:
        if dtype not in _DTYPE_KINDS:
            raise ValueError(f"check_shape: dtype must be one of {_DTYPE_KINDS}, got {dtype!r}")
        kind = _dtype_kind(x)
        if kind != dtype:
            raise ValueError(f"{name}: expected {dtype} elements, got dtype {x.dtype}")
    dims.update(bound)
    return dims


def one_hot(actions: np.ndarray | torch.Tensor, n_actions: int) -> np.ndarray | torch.Tensor:
    """One-hot encode integer actions: shape ``(...,)`` -> ``(..., A)`` float32.

    Works on numpy arrays (returns numpy) and torch tensors (returns torch, same device).
    Raises ValueError for non-integer actions or actions outside ``[0, n_actions)``.
    """
    positive_int(n_actions, "one_hot: n_actions")
    if not hasattr(actions, "shape"):
        actions = np.asarray(actions)
    if _dtype_kind(actions) != "int":
        raise ValueError(f"one_hot: actions must be integers, got dtype {actions.dtype}")
    if actions.numel() if isinstance(actions, torch.Tensor) else actions.size:
        low, high = int(actions.min()), int(actions.max())
        if low < 0 or high >= n_actions:
            raise ValueError(f"one_hot: actions must be in [0, {n_actions - 1}], got values from {low} to {high}")
    if isinstance(actions, torch.Tensor):
        return torch.nn.functional.one_hot(actions.long(), int(n_actions)).float()  # (..., A)
    out = np.zeros((*actions.shape, n_actions), dtype=np.float32)  # (..., A): no A x A identity for a large A
    np.put_along_axis(out, actions[..., None].astype(np.int64), 1.0, axis=-1)
    return out


def describe(x: Any, name: str) -> str:
    """One line for a learner: name, dtype, shape and values (rounded to 3 places; only the first
    entry along axis 0 when there are more than 12), e.g.
    ``obs        float32  (2, 2)     [[0.0, 0.17], [0.0, 0.83]]``."""
    if isinstance(x, torch.Tensor):
        dtype, values = str(x.dtype).removeprefix("torch."), x.detach().cpu().numpy()
    else:
        values = np.asarray(x)
        dtype = str(values.dtype)
    shape = "(" + ", ".join(str(s) for s in values.shape) + ("," if values.ndim == 1 else "") + ")"
    if values.dtype.kind == "f":
        values = np.round(values.astype(np.float64), 3)  # float32 0.17 would print as 0.17000000178813934
    if values.size > 12:
        shown = f"{values.size} values; [0] = {values[0].tolist()}"
    else:
        shown = str(values.tolist())
    return f"{name:<10} {dtype:<8} {shape:<10} {shown}"


def flatten_for_critic(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """The centralised critic's input row ``[x_t, a_t] = [o_0, ..., o_{N-1}, a_0, ..., a_{N-1}]``.

    Args:
        obs: float ``(B, N, O)``, every agent's observation (a tensor, or a replay batch's numpy array).
        actions: float ``(B, N, A)``, every agent's (one-hot or continuous) action (likewise).

    Returns:
        float ``(B, N*O + N*A)`` = ``(B, N*(O+A))``: row b holds all of transition b's observations
        (agent 0's first), then all of its actions. Only the trailing axes are merged, so the
        batch axis is never mixed with the agent axis.
    """
    obs, actions = (torch.from_numpy(x) if isinstance(x, np.ndarray) else x for x in (obs, actions))
    dims = check_shape(obs, ("B", "N", "O"), "obs", dtype="float")
    check_shape(actions, ("B", "N", "A"), "actions", dims)
    if not actions.dtype.is_floating_point:
        raise ValueError(f"actions: expected float elements, got dtype {actions.dtype}; "
                         f"one-hot actions from F.one_hot are integers: call .float() on them")
    B, N, O, A = dims["B"], dims["N"], dims["O"], dims["A"]
    x_obs = obs.reshape(B, N * O)  # (B, N*O)
    x_act = actions.reshape(B, N * A)  # (B, N*A)
    return torch.cat([x_obs, x_act], dim=1)  # (B, N*(O+A))
