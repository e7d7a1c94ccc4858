"""Resuming training: what a run in progress saves so that it can continue bit for bit, when it saves, and Ctrl-C.

The training loop (``loops.train``) given a ``RunCheckpoint`` calls ``checkpoint.save(...)`` at the end of every
iteration (one env step of the K copies, or one collection of K whole episodes). That saves, at most every
``every_seconds`` and always once a stop was requested, everything the rest of the run depends on:

- the learner: every network, target network and optimiser (state dicts), its random generators and counters;
- the replay buffer (off-policy) with its write position, and the env copies mid-episode (their vec env's
  ``get_state``: every copy's world and random generator, any family);
- the loop's own state (``loops.LoopState``, one for every data path): the numpy generator that samples batches, the
  current observations, the n-step steps waiting to be stored, when the next evaluation is due; and the run's
  returns, evaluations and counts so far (its ``TrainResult``);
- torch's global random state.

A stop requested with ``request_stop`` (the command line's Ctrl-C handler calls it) is honoured at the next iteration
end: the state is saved and ``TrainingInterrupted`` raised, so nothing is lost halfway through an update. A loop that is
given the loaded state (``RunCheckpoint(path, resume=load_run_state(path))``) rebuilds its learner, buffer and envs
as usual and then ``restore``s them: the rest of the run is the same, to the bit, as if it had never stopped.

The file is an ordinary checkpoint (``checkpoints.save_checkpoint``: a header and plain data, loaded with
``weights_only=True``); numpy arrays are stored as tensors and turned back into arrays of the same dtype.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
from collections import deque

import numpy as np
import torch

from marl_edu.learners.table import LEARNERS, recorded_config
from marl_edu.training.checkpoints import load_checkpoint, save_checkpoint

KIND = "run-in-progress"  # the checkpoint header's "algo" field says what the file is; "config" names the learner


class TrainingInterrupted(Exception):
    """A stop was requested (Ctrl-C); the run's state is saved in ``path``, after ``episodes`` finished episodes."""

    def __init__(self, path: pathlib.Path, episodes: int):
        super().__init__(f"training interrupted after {episodes} episodes; state saved in {path}")
        self.path, self.episodes = path, episodes


def _encode(value):
    """Plain data ``torch.load(weights_only=True)`` reads: arrays become tensors, deques lists, numpy scalars Python."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, deque)):
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        return {key: _encode(item) for key, item in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot save a {type(value).__name__} in a run checkpoint")


def _decode(value):
    """``_encode``'s inverse for loop data: tensors back to numpy arrays of the same dtype."""
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict):
        return {key: _decode(item) for key, item in value.items()}
    return value


def _decode_like(saved, current):
    """``_decode`` of ``saved``, with deques (and lists of deques) rebuilt like ``current``'s, bound included."""
    if isinstance(current, deque):
        return deque(_decode(saved), maxlen=current.maxlen)
    if isinstance(current, list) and current and isinstance(current[0], deque):
        return [_decode_like(item, now) for item, now in zip(saved, current, strict=True)]
    return _decode(saved)


def object_state(obj) -> dict:
    """Every attribute of a learner, buffer, env copies or a loop's state object as plain data: networks and
    optimisers by their state dicts (lists of them too), torch and numpy generators by their states, arrays and numbers by value. Its config (any
    dataclass attribute) and device are not saved: the resumed run rebuilds the object from the same ones, which the
    command line checks against the file's header. An attribute of any other type raises TypeError, so nothing is
    silently left out. A vec env (``envs.make.make_vec_env``'s, any family) saves what its own ``get_state`` gives."""
    if hasattr(obj, "get_state") and hasattr(obj, "set_state"):  # a vec env: its copies' worlds and generators
        return {"vec_env": _encode(obj.get_state())}
    state = {}
    for name, value in vars(obj).items():
        if dataclasses.is_dataclass(value) or isinstance(value, torch.device):
            continue
        if isinstance(value, (torch.nn.Module, torch.optim.Optimizer)):
            state[name] = value.state_dict()
        elif isinstance(value, list) and value and isinstance(value[0], (torch.nn.Module, torch.optim.Optimizer)):
            state[name] = [item.state_dict() for item in value]
        elif isinstance(value, torch.Generator):
            state[name] = value.get_state()
        elif isinstance(value, np.random.Generator):
            state[name] = value.bit_generator.state
        else:
            try:
                state[name] = _encode(value)
            except TypeError as error:
                raise TypeError(f"{type(obj).__name__}.{name}: {error}") from None
    return state


# What an object is built with, the same in every run of the same arguments (which the command line checks against the
# file's header): a saved value that differs is refused, not restored.
SIZES = ("n_agents", "obs_dim", "n_actions", "action_dim", "n_envs", "max_steps", "last_action_dim", "clock",
         "full_observable", "continuous")


def _check_like(saved, current, where: str) -> None:
    """A decoded saved value checked as fresh input is: the same kind as the freshly built object's ``current``
    (arrays: the same dtype and shape; a bool a bool, an int or float a number, a string a string; lists: the same
    length, item by item where ``current`` has items), floats and float arrays finite. ValueError naming ``where``."""
    if isinstance(current, np.ndarray):
        if not isinstance(saved, np.ndarray) or saved.dtype != current.dtype or saved.shape != current.shape:
            got = f"{saved.dtype} {saved.shape}" if isinstance(saved, np.ndarray) else type(saved).__name__
            raise ValueError(f"{where}: expected a {current.dtype} array of shape {current.shape}, got {got}")
        if saved.dtype.kind == "f" and not np.isfinite(saved).all():
            raise ValueError(f"{where}: holds NaN or infinity")
    elif isinstance(current, (list, deque)):
        if not isinstance(saved, (list, deque)) or (current and len(saved) != len(current)):
            raise ValueError(f"{where}: expected a list of {len(current)} items, got {type(saved).__name__}"
                             f"{f' of {len(saved)}' if isinstance(saved, (list, deque)) else ''}")
        for index, item in enumerate(saved):
            _check_like(item, current[index] if current else item, f"{where}[{index}]")
    elif isinstance(current, tuple):
        _check_like(list(saved) if isinstance(saved, (list, tuple)) else saved, list(current), where)
    elif isinstance(current, (bool, int, float)):  # a flag stays a flag; a count may have become a float
        if isinstance(current, bool) != isinstance(saved, bool) or not isinstance(saved, (int, float)):
            raise ValueError(f"{where}: expected {'a bool' if isinstance(current, bool) else 'a number'}, got "
                             f"{type(saved).__name__}")
    elif current is not None and not isinstance(current, dict) and type(saved) is not type(current):
        raise ValueError(f"{where}: expected {type(current).__name__}, got {type(saved).__name__}")
    if isinstance(saved, float) and not np.isfinite(saved):
        raise ValueError(f"{where}: is {saved}")


def _check_finite(value, where: str) -> None:
    """ValueError naming ``where`` if a float (or float array) anywhere in ``value``'s dicts and lists is NaN or
    infinite: a vec env's saved state is checked as fresh input before its own ``set_state`` checks its shapes."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_finite(item, f"{where}[{index}]")
    elif isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.isfinite(value).all():
        raise ValueError(f"{where}: holds NaN or infinity")
    elif isinstance(value, float) and not np.isfinite(value):
        raise ValueError(f"{where}: is {value}")


def restore_object(obj, state: dict, what: str) -> None:
    """Put ``object_state``'s ``state`` back into a freshly built ``obj`` of the same kind and sizes, in place. Plain
    values are checked as fresh input (``_check_like``; ``SIZES`` must equal the object's). ValueError names an
    attribute the file and the object do not share (a checkpoint of another version) or a value that is not what the
    object holds."""
    if hasattr(obj, "get_state") and hasattr(obj, "set_state"):  # a vec env checks its own state (ValueError)
        if set(state) != {"vec_env"}:
            raise ValueError(f"the saved {what} is not a vec env's state (envs' get_state)")
        saved = _decode(state["vec_env"])
        _check_finite(saved, what)
        obj.set_state(saved)
        return
    expected = set(object_state(obj))
    if set(state) != expected:
        raise ValueError(f"the saved {what} does not match this marl_edu's: attributes "
                         f"{sorted(set(state) ^ expected)} differ")
    for name, saved in state.items():
        value = getattr(obj, name)
        if name in SIZES and _decode(saved) != value:
            raise ValueError(f"the saved {what}.{name} is {_decode(saved)!r}; this run's is {value!r}")
        if isinstance(value, (torch.nn.Module, torch.optim.Optimizer)):
            value.load_state_dict(saved)
        elif isinstance(value, list) and value and isinstance(value[0], (torch.nn.Module, torch.optim.Optimizer)):
            for item, item_state in zip(value, saved, strict=True):
                item.load_state_dict(item_state)
        elif isinstance(value, torch.Generator):
            value.set_state(saved)
        elif isinstance(value, np.random.Generator):
            value.bit_generator.state = saved
        else:
            restored = _decode_like(saved, value)
            _check_like(restored, value, f"the saved {what}.{name}")
            setattr(obj, name, restored)


class RunCheckpoint:
    """When and where a training loop saves its run in progress, and whether a stop was requested.

    Args:
        path: the checkpoint file (written atomically; the previous one stays until the new one is complete).
        every_seconds: the least time between two periodic saves (``math.inf``: only when a stop is requested).
        resume: the state of an interrupted run (``load_run_state``) for the loop to continue from, or None.
        header: what the file's header records (the command line stores the run's arguments here).
    """

    def __init__(self, path: str | pathlib.Path, every_seconds: float = 60.0, resume: dict | None = None,
                 header: dict | None = None):
        if not every_seconds > 0:
            raise ValueError(f"every_seconds must be positive (math.inf: only on a stop), got {every_seconds!r}")
        self.path, self.every_seconds = pathlib.Path(path), every_seconds
        self.resume, self.header = resume, dict(header or {})
        self.stop_requested = False
        self.saves = 0
        self._last = time.monotonic()

    def request_stop(self) -> None:
        """Ask the loop to save and stop at the end of its current iteration (a signal handler may call this)."""
        self.stop_requested = True

    def save(self, result, parts: dict) -> None:
        """At an iteration's end: save when a stop was requested or ``every_seconds`` passed, then raise
        ``TrainingInterrupted`` if a stop was requested. ``result``: the loop's ``TrainResult``; ``parts``: the
        objects whose attributes are the state, by name: the learner, buffer and env copies, and the loop's own state
        object (``loops.LoopState``: generators, arrays, numbers, lists and deques of them)."""
        if not self.stop_requested and time.monotonic() - self._last < self.every_seconds:
            return
        state = {"parts": {name: object_state(obj) for name, obj in parts.items()},
                 "result": _result_state(result), "torch_rng": torch.get_rng_state()}
        save_checkpoint(self.path, KIND, self.header.get("env", ""), self.header, state)
        self.saves += 1
        self._last = time.monotonic()
        if self.stop_requested:
            raise TrainingInterrupted(self.path, len(result.episode_returns))

    def restore(self, result, parts: dict) -> None:
        """Continue from ``self.resume`` (if any): restore ``parts`` in place (the loop's state object among them),
        and fill ``result`` and torch's global random state. Without a state to resume, nothing changes. First,
        before any training: ValueError naming a part that could not be saved (env copies stepped one by one, say)."""
        for name, obj in parts.items():
            try:
                object_state(obj)
            except TypeError as error:
                raise ValueError(f"this run cannot be checkpointed or resumed: its {name} cannot be saved ({error}); "
                                 f"a family's batched env copies can (make_vec_env's backend='batched')") from None
        if self.resume is None:
            return
        try:
            self._restore(self.resume, result, parts)
        except (KeyError, TypeError, RuntimeError, ValueError) as error:  # another version's file, another learner
            raise ValueError(f"{self.path} cannot be resumed here ({type(error).__name__}: "
                             f"{str(error).strip().splitlines()[0] if str(error).strip() else 'no detail'}): delete it "
                             f"to train that seed again from its start") from None

    def _restore(self, saved: dict, result, parts: dict) -> None:
        if set(saved["parts"]) != set(parts):
            raise ValueError(f"it was saved by another training loop (parts {sorted(saved['parts'])}; this "
                             f"loop's: {sorted(parts)})")
        for name, obj in parts.items():
            restore_object(obj, saved["parts"][name], name)
        _restore_result(result, saved["result"])
        torch.set_rng_state(saved["torch_rng"])


def _result_state(result) -> dict:
    return {"episode_returns": list(result.episode_returns), "evaluations": [list(e) for e in result.evaluations],
            "sampled_evaluations": [list(e) for e in result.sampled_evaluations],
            "eval_seconds": list(result.eval_seconds), "eval_env_steps": list(result.eval_env_steps),
            "env_steps": result.env_steps, "updates": result.updates,
            "update_seconds": result.update_seconds, "elapsed": time.perf_counter() - result.started}


def _restore_result(result, saved: dict) -> None:
    saved = {"sampled_evaluations": [], **saved}  # (a run saved before sampled evaluations were kept: none)
    for name in ("episode_returns", "evaluations", "sampled_evaluations", "eval_seconds", "eval_env_steps"):
        values = np.asarray(saved[name], dtype=np.float64)  # (ValueError for what is not numbers)
        if not np.isfinite(values).all():
            raise ValueError(f"the saved {name} hold NaN or infinity")
    if not len(saved["evaluations"]) == len(saved["eval_seconds"]) == len(saved["eval_env_steps"]):
        raise ValueError("the saved evaluations, eval_seconds and eval_env_steps differ in length")
    for name in ("env_steps", "updates"):
        if type(saved[name]) is not int or saved[name] < 0:
            raise ValueError(f"the saved {name} is {saved[name]!r}, not a count")
    for name in ("update_seconds", "elapsed"):
        if not isinstance(saved[name], float) or not 0 <= saved[name] < float("inf"):
            raise ValueError(f"the saved {name} is {saved[name]!r}, not a number of seconds")
    result.episode_returns[:] = saved["episode_returns"]
    result.evaluations[:] = [tuple(e) for e in saved["evaluations"]]
    result.sampled_evaluations[:] = [tuple(e) for e in saved["sampled_evaluations"]]
    result.eval_seconds[:] = saved["eval_seconds"]
    result.eval_env_steps[:] = saved["eval_env_steps"]
    result.env_steps, result.updates = saved["env_steps"], saved["updates"]
    result.update_seconds = saved["update_seconds"]
    result.started = time.perf_counter() - saved["elapsed"]  # the wall-clock goes on from where it stopped


def load_run_state(path: str | pathlib.Path) -> tuple[dict, dict]:
    """A run-in-progress checkpoint's ``(header, state)``; ValueError if the file is not one (a policy file, say)."""
    payload = load_checkpoint(path)
    if payload["algo"] != KIND:
        raise ValueError(f"{path} is a {payload['algo']} checkpoint, not a run in progress")
    return payload["config"], payload["state"]


def seed_checkpoint(path: pathlib.Path, header: dict, every_seconds: float, resuming: bool) -> RunCheckpoint:
    """The ``RunCheckpoint`` of one seed of a run at ``path``; when ``resuming`` a run and ``path`` exists, holding
    its saved state to continue from. ValueError if that file was saved by another run (a key of ``header`` differs;
    a saved config's fields added to the learner's config since take their defaults, ``table.recorded_config``),
    naming the keys, or is not a run in progress."""
    state = None
    if resuming and path.exists():
        saved_header, state = load_run_state(path)
        algo = header.get("algo", header.get("method"))  # (the command line's header, foraging.py's)
        if algo in LEARNERS and isinstance(saved_header.get("config"), dict):  # saved before a field was added
            saved_header = {**saved_header, "config": recorded_config(algo, saved_header["config"])}
        differ = [key for key in header if saved_header.get(key) != header[key]]
        if differ:
            raise ValueError(f"{path} was saved by another run ({', '.join(differ)} differ): delete it to train seed "
                             f"{header.get('seed')} again from its start")
    return RunCheckpoint(path, every_seconds, resume=state, header=header)


class StopOnSignal:
    """The command line's SIGINT (Ctrl-C) and SIGTERM handler while seeds train. While outputs are being written
    (``protect``) it only notes the request, so every file stays whole and the run stops once they are written; while
    a seed trains with a ``RunCheckpoint``, the first request asks it to save and stop at the end of the current
    step; otherwise (a run that cannot be saved in progress, or a second request) it stops at once."""

    def __init__(self):
        self.checkpoint, self.protect, self.signum = None, False, None  # signum: the first request's signal

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def __call__(self, signum, frame):
        first = not self.requested
        self.signum = self.signum or signum
        if self.protect:
            return
        if first and self.checkpoint is not None:
            self.checkpoint.request_stop()
            return
        raise KeyboardInterrupt


class BeforeTraining:
    """The command line's SIGINT (Ctrl-C) and SIGTERM handler until the seeds start (then ``StopOnSignal``'s): either
    stops at once with KeyboardInterrupt, except while ``protect`` (then at ``stop_if_requested``)."""

    def __init__(self):
        self.signum, self.protect = None, False

    def __call__(self, signum, frame):
        self.signum = self.signum or signum
        if not self.protect:
            raise KeyboardInterrupt

    def stop_if_requested(self) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
