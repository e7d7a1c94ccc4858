"""Checkpoints: state dicts with a small header, written atomically, loaded with ``weights_only=True``.

A checkpoint is one ``torch.save`` of a plain dict::

    {"format": 1, "marl_edu": "0.1.0", "algo": "maddpg", "env": "Switch2-v2",
     "config": {...hyperparameters...}, "state": {...state dicts...}}

Only tensors, numbers, strings, lists and dicts go in, so ``torch.load(..., weights_only=True)`` can read
it without running any code from the file.
"""

from __future__ import annotations

import os
import pathlib

import torch

import marl_edu

FORMAT = 1


def save_checkpoint(path: str | pathlib.Path, algo: str, env_id: str, config: dict, state: dict) -> pathlib.Path:
    """Write a checkpoint to ``path``: first to a temporary file beside it, then renamed over ``path``,
    so a crash never leaves a half-written checkpoint under the real name."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": FORMAT, "marl_edu": marl_edu.__version__, "algo": algo, "env": env_id,
               "config": dict(config), "state": state}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | pathlib.Path, algo: str | None = None, env_id: str | None = None) -> dict:
    """Read a checkpoint written by ``save_checkpoint``; check its algo and env if given.

    Raises ValueError naming the problem for a missing, truncated or foreign file, a format this version
    cannot read, or a checkpoint of another algorithm or environment.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated or non-torch file: say so, not a deep unpickling traceback
        raise ValueError(f"{path} is not a readable checkpoint (truncated or not written by torch.save): "
                         f"{type(error).__name__}") from error
    if not isinstance(payload, dict) or "format" not in payload or "state" not in payload:
        raise ValueError(f"{path} is a torch file but not a marl_edu checkpoint (no header)")
    if payload["format"] != FORMAT:
        raise ValueError(f"{path} has checkpoint format {payload['format']!r}; this marl_edu "
                         f"({marl_edu.__version__}) reads format {FORMAT}")
    if algo is not None and payload["algo"] != algo:
        raise ValueError(f"{path} is a {payload['algo']} checkpoint, expected {algo}")
    if env_id is not None and payload["env"] != env_id:
        raise ValueError(f"{path} was trained on {payload['env']}, expected {env_id}")
    return payload
