"""Checkpoints: state dicts with a small header, written atomically, loaded with ``weights_only=True`` and checked.

A checkpoint is one ``torch.save`` of a plain dict::

    {"format": 1, "marl_edu": "0.1.0", "algo": "maddpg", "env": "Switch2-v2",
     "config": {...hyperparameters...}, "state": {...state dicts...}}

Only tensors, numbers, strings, lists and dicts go in, so ``torch.load(..., weights_only=True)`` can read
it without running any code from the file. Saving stores numpy numbers as Python ones, refuses anything else that
could not be read back and any tensor holding NaN or infinity (NaN weights are never saved), and writes through
``files.atomic_write`` (a unique temporary, synced, renamed: the old file stays whole until the new one is).
Loading costs time and memory bounded by the file's size: the archive is checked before ``torch.load`` reads it (every
record stored uncompressed, as ``torch.save`` writes them, so nothing inflates), the loaded containers are walked once
each however often they are referenced, at most ``MAX_DEPTH`` deep, and an untrusted value is never printed whole. It
checks the header's fields and types and refuses non-finite tensors; a file that cannot be read says why (truncated,
or what ``weights_only`` refused).

Policy files (``save_policy``, ``load_policy``) are checkpoints of a learner's policy networks (its row's ``Policy``
in ``learners.table.LEARNERS`` says which, and how they are rebuilt), under the name the learner is known by, with the
config and sizes to rebuild it. Before building
anything, ``load_policy`` bounds the sizes (``SIZE_BOUNDS``, ``MAX_CRITIC_WEIGHTS``), compares them with the tensors
stored (shapes and dtype) and with the environment's, and counts the weights of every network the learner would build
(its critics, mixers, hypernetworks, target copies: the whole learner built on the meta device, ``learner_weights``)
against ``MAX_LEARNER_WEIGHTS``, so a damaged or hand-edited file is a ValueError naming the field or tensor, never a
12.8 GB allocation or a deep traceback from ``load_state_dict``; ``learners.check_fits`` says whether a policy's sizes
fit an environment.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import pathlib
import pickle
import re
import reprlib
import zipfile
from typing import Iterator

import numpy as np
import torch
from torch import nn

import marl_edu
from marl_edu.base.files import atomic_write
from marl_edu.learners.table import LEARNERS, algo_name, check_fits, config_class, entry

FORMAT = 1
HEADER = {"format": int, "marl_edu": str, "algo": str, "env": str, "config": dict, "state": dict}  # field: type

MAX_DEPTH = 32  # containers in containers a checkpoint may nest (the course's own nest a few levels)
MAX_TEXT = 200  # characters of a header's name (algo, env, version) or a policy's config string: the course's are short

_LEAVES = (bool, int, float, str, bytes, type(None))  # what weights_only reads back besides tensors and containers
_CONTAINERS = (dict, collections.OrderedDict, list, tuple)


def save_checkpoint(path: str | pathlib.Path, algo: str, env_id: str, config: dict, state: dict) -> pathlib.Path:
    """Write a checkpoint to ``path`` through ``files.atomic_write``: a crash or a full disk never leaves a
    half-written checkpoint under the real name, nor harms the one already there.

    Args:
        path: the file to write (its folder is made if missing); an existing checkpoint there is replaced.
        algo: the learner's name (``algo_name``); env_id: the environment it was trained on.
        config: the header's values (hyperparameters, sizes): numbers, strings, bools, None, lists and dicts of
            them. numpy numbers are stored as Python ones.
        state: state dicts: tensors, numbers, strings, lists and dicts, e.g. ``{"actors": actors.state_dict()}``.
    Returns ``path``.
    Raises ValueError naming the entry (``config.hidden``, ``state.actors.0.mlp.net.0.weight``) for a value that
    ``torch.load(weights_only=True)`` could not read back or a tensor holding NaN or infinity, before anything is
    written; OSError ``could not write <path>: <cause>`` when the file cannot be written.
    """
    path = pathlib.Path(path)
    for name, value in (("algo", algo), ("env_id", env_id)):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a str, got {type(value).__name__} {_short(value)}")
    for key in config:
        if not isinstance(key, str):
            raise ValueError(f"config keys must be str (field names), got {key!r}")
    payload = {"format": FORMAT, "marl_edu": marl_edu.__version__, "algo": algo, "env": env_id,
               "config": _plain(dict(config), "config"), "state": _plain(state, "state")}
    for name, tensor in _tensors(payload["state"], "state"):
        _check_finite(tensor, name, "NaN weights are never saved")
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda file: torch.save(payload, file))


def load_checkpoint(path: str | pathlib.Path, algo: str | None = None, env_id: str | None = None) -> dict:
    """Read a checkpoint written by ``save_checkpoint``; check its header, its tensors, and its algo and env if given.

    Args:
        path: the checkpoint file.
        algo, env_id: if given, the learner's name and the environment the checkpoint must have been written for.
    Returns the checkpoint's dict (``format``, ``marl_edu``, ``algo``, ``env``, ``config``, ``state``).
    Raises ValueError naming the problem for a missing file, one that cannot be read (truncated, or what
    ``weights_only`` refused), a header with a missing or mistyped field, a format this version cannot read, a
    tensor holding NaN or infinity, or a checkpoint of another algorithm or environment.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint at {path}")
    _check_archive(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:  # a file weights_only will not read: say what it refused
        raise ValueError(f"{path} is not a readable checkpoint: {_refusal(error)}") from error
    except Exception as error:  # a truncated or non-torch file: say so, not a deep unpickling traceback
        raise ValueError(f"{path} is not a readable checkpoint (truncated, or not written by torch.save): "
                         f"{_first_line(error)}") from error
    if not isinstance(payload, dict) or "format" not in payload or "state" not in payload:
        raise ValueError(f"{path} is a torch file but not a marl_edu checkpoint (no header)")
    if type(payload["format"]) is not int or payload["format"] != FORMAT:
        raise ValueError(f"{path} has checkpoint format {_short(payload['format'])}; this marl_edu "
                         f"({marl_edu.__version__}) reads format {FORMAT}")
    try:
        for _ in _walk(payload, "the file"):  # (nesting bounded before anything else looks inside)
            pass
        _check_header(payload)
        for name, tensor in _tensors(payload["state"], "state"):
            _check_dense(tensor, name)
            _check_finite(tensor, name, "a checkpoint holding NaN weights is refused")
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    if algo is not None and payload["algo"] != algo:
        raise ValueError(f"{path} is a {_name(payload['algo'])} checkpoint, expected {algo}")
    if env_id is not None and payload["env"] != env_id:
        raise ValueError(f"{path} was trained on {_name(payload['env'])}, expected {env_id}")
    return payload


def _check_archive(path: pathlib.Path) -> None:
    """ValueError unless ``path`` is a zip archive whose every record is stored uncompressed, as ``torch.save`` writes
    it: then ``torch.load`` reads at most the file's size (a deflated record of zeros would inflate 1,000-fold before
    any other check). A file that is not a zip archive at all is one torch.save did not write, or a truncated one."""
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise ValueError(f"{path} is not a readable checkpoint (truncated, or not written by torch.save): "
                         f"{_first_line(error)}") from None
    size = path.stat().st_size
    for record in records:
        if record.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{path} is not a checkpoint torch.save wrote: its record {_short(record.filename)} is "
                             f"compressed ({record.file_size:,} bytes in {record.compress_size:,}); torch.save stores "
                             f"every record as it is, so that loading reads no more than the file holds")
        if record.file_size > size:
            raise ValueError(f"{path} is not a readable checkpoint: its record {_short(record.filename)} claims "
                             f"{record.file_size:,} bytes, more than the whole file's {size:,}")


def _walk(value, where: str) -> Iterator[tuple[str, object]]:
    """Every entry of nested dicts, lists and tuples with its dotted name (``state.actors.0.mlp.net.0.weight``), depth
    first in order, each container and tensor once however often it is referenced: a crafted file of a few KB can
    hold a list that holds itself twice, 60 levels deep, whose paths a plain walk would follow 2^60 times. ValueError
    past ``MAX_DEPTH`` levels. Iterative, so no nesting reaches Python's recursion limit; linear in the file's size."""
    seen, stack = set(), [(where, value, 0)]
    while stack:
        name, item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"{where} nests containers more than {MAX_DEPTH} levels deep: not a file marl_edu writes")
        if isinstance(item, (dict, list, tuple, torch.Tensor)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        yield name, item
        if isinstance(item, dict):
            stack.extend((f"{name}.{_name(key)}", child, depth + 1) for key, child in reversed(item.items()))
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{name}.{k}", child, depth + 1) for k, child in reversed(list(enumerate(item))))


def _plain(value, where: str):
    """``value`` as ``torch.load(weights_only=True)`` reads it back: numpy numbers become Python ones (a container
    is copied only if something in it changed); anything else that is not a tensor, a number, a string, None, a
    list, a tuple or a dict (str or int keys) is a ValueError naming ``where`` (``config.hidden``)."""
    if isinstance(value, torch.Tensor) or type(value) in _LEAVES:
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()  # bool, int or float
    if isinstance(value, dict) and type(value) in _CONTAINERS:
        for key in value:
            if type(key) not in (str, int):
                raise ValueError(f"{where} has the key {key!r}: keys must be str or int")
        plain = {key: _plain(item, f"{where}.{key}") for key, item in value.items()}
        if all(plain[key] is item for key, item in value.items()):
            return value  # unchanged: the very object (a module's state dict keeps its metadata)
        copied = copy.copy(value)  # (copy.copy keeps a state dict's metadata; dict.copy would not)
        copied.update(plain)
        return copied
    if type(value) in _CONTAINERS:  # a list or a tuple
        plain = [_plain(item, f"{where}.{k}") for k, item in enumerate(value)]
        return value if all(new is old for new, old in zip(plain, value)) else type(value)(plain)
    hint = " (torch.as_tensor(...) makes a tensor of an array)" if isinstance(value, np.ndarray) else ""
    raise ValueError(f"{where} is a {type(value).__name__}, which torch.load(weights_only=True) cannot read back: "
                     f"store tensors, numbers, strings, lists and dicts{hint}")


def _tensors(value, where: str) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor in nested dicts, lists and tuples, with its dotted name (``state.actors.0.mlp.net.0.weight``),
    each once (``_walk``)."""
    return ((name, item) for name, item in _walk(value, where) if isinstance(item, torch.Tensor))


def _check_dense(tensor: torch.Tensor, name: str) -> None:
    """ValueError naming the tensor unless it is a plain dense tensor with its data (as every state dict of the
    course): a meta tensor has no values, a sparse, nested or quantized one is none a network of the course holds."""
    kind = ("a meta tensor (shapes without values)" if tensor.device.type == "meta" else
            "a nested tensor" if tensor.is_nested else
            f"a {str(tensor.layout).removeprefix('torch.')} tensor" if tensor.layout != torch.strided else
            "a quantized tensor" if tensor.is_quantized else None)
    if kind is not None:
        raise ValueError(f"tensor {name} is {kind}: a checkpoint holds plain dense tensors, as torch.save writes a "
                         f"network's state dict")


def _check_finite(tensor: torch.Tensor, name: str, why: str) -> None:
    """ValueError naming the tensor if a floating-point ``tensor`` holds NaN or infinity (integer tensors, such as
    counters and random-generator states, are finite by construction)."""
    if tensor.is_floating_point() or tensor.is_complex():
        bad = int((~torch.isfinite(tensor)).sum())
        if bad:
            raise ValueError(f"{name} holds non-finite values ({bad} of {tensor.numel()}): {why}")


def _check_header(payload: dict) -> None:
    """Each of ``HEADER``'s fields present with its type, its names (algo, env, version) at most ``MAX_TEXT``
    characters, and the config's keys strings (ValueError naming it)."""
    for key, kind in HEADER.items():
        if key not in payload:
            raise ValueError(f"the header has no {key!r} field (a format-{FORMAT} checkpoint has "
                             f"{', '.join(HEADER)})")
        value = payload[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"header field {key!r} must be a {kind.__name__}, got {type(value).__name__} "
                             f"{_short(value)}")
    for key in (key for key, kind in HEADER.items() if kind is str):  # (an env id of 50 MB went whole into a message)
        if len(payload[key]) > MAX_TEXT:
            raise ValueError(f"header field {key!r} is a string of {len(payload[key]):,} characters "
                             f"({_short(payload[key])}), longer than any name of the course ({MAX_TEXT})")
    for key in payload["config"]:
        if not isinstance(key, str):
            raise ValueError(f"config keys must be str (field names), got {_short(key)}")


class _ShortRepr(reprlib.Repr):
    """``reprlib``'s bounded repr (a few levels, a few items of each container, long strings cut), which also keeps a
    huge int and a tensor short."""

    def __init__(self):
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxdict, self.maxstring = 2, 4, 4, 4, 60

    def repr_int(self, x, level):
        return repr(x) if x.bit_length() <= 64 else f"<an int of {x.bit_length()} bits>"

    def repr_Tensor(self, x, level):
        return f"<a {str(x.dtype).removeprefix('torch.')} tensor of shape {tuple(x.shape)}>"


def _name(key) -> str:
    """A dict key as a dotted name's part: a str as it is (cut to 40 characters), anything else as ``_short``."""
    return (key if len(key) <= 40 else key[:37] + "...") if isinstance(key, str) else _short(key, 40)


def _short(value, width: int = 60) -> str:
    """A repr of ``value`` at most ``width`` characters long, at a cost bounded whatever ``value`` holds (a file's
    values are untrusted: the full repr of a list that holds itself twice, 26 levels deep, takes seconds and GBs)."""
    text = _ShortRepr().repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def _first_line(error: BaseException | str) -> str:
    """The first sentence of an error's first line, after its type: ``RuntimeError: PytorchStreamReader failed
    reading zip archive: failed finding central directory``."""
    text = str(error).strip()
    sentence = text.splitlines()[0].split(". ")[0] if text else ""
    if isinstance(error, str):
        return sentence
    return f"{type(error).__name__}: {sentence}" if sentence else type(error).__name__


def _refusal(error: pickle.UnpicklingError) -> str:
    """What ``weights_only`` refused: ``weights_only load refused GLOBAL posix.system`` (a function or class the file
    asks to call), else the unpickler's own words."""
    text = str(error)
    found = re.search(r"GLOBAL ([\w.]+)", text)
    if found:
        return (f"weights_only load refused GLOBAL {found.group(1)} (it loads tensors, numbers, strings, lists and "
                f"dicts, and runs no code)")
    after = text.split("WeightsUnpickler error:", 1)[-1].strip()
    return f"weights_only load refused it: {_first_line(after)}"


def save_policy(agent, env_id: str, path: str | pathlib.Path) -> pathlib.Path:
    """Save what a greedy or sampled evaluation needs (the policy's networks, its row's ``Policy.attribute``: tens of
    kilobytes) with the config and the sizes to rebuild the learner. MADDPG and IDDPG keep N actors, the on-policy
    learners one shared actor, IQL, VDN and QMIX their shared agent network (acting greedily on its Q-values).

    Args:
        agent: one of the learners of ``learners.LEARNERS``.
        env_id: the environment it was trained on (``load_policy`` checks it).
        path: the file to write (``save_checkpoint``: atomic, and refused before writing if a weight is NaN).
    Returns ``path``.
    """
    algo = algo_name(agent)
    header = {**dataclasses.asdict(agent.config), "n_agents": agent.n_agents, "obs_dim": agent.obs_dim,
              "n_actions": agent.n_actions}
    key = entry(algo).policy.attribute  # "actor", "actors" or "q_net"
    return save_checkpoint(path, algo, env_id, header, {key: getattr(agent, key).state_dict()})


# the sizes a policy file's header gives to rebuild its learner (n_actions: A, the number of actions or the action
# width), and with the config's sizes, the bounds that keep a tampered header from asking for gigabytes (N=50,000,000
# actors: 12.8 GB): far above any real use
POLICY_SIZES = ("n_agents", "obs_dim", "n_actions")
SIZE_BOUNDS = {"n_agents": 64, "obs_dim": 100_000, "n_actions": 10_000}  # the config bounds the rest
# Sizes each within its bound can still ask for gigabytes together: MADDPG with N=64, O=200, hidden 256 (an 87 KB file)
# builds 64 critics on N*(O+A) = 13,120 inputs, with their targets 1.95 GB. The largest layer any learner builds is
# its centralised critics' first: N*M critics (M sub-policies per agent, else 1) of N*(O+A) inputs by hidden units.
# The course's largest (PredatorPrey7x7, N=4, O=28, A=5, hidden 128) has 67,584 such weights.
MAX_CRITIC_WEIGHTS = 20_000_000
# Loading a policy builds its whole learner (critics, mixers and target copies untrained): its networks' weights
# together, counted before anything is built, stay under 50 million (200 MB of float32). A 4 KB QMIX file whose header
# asked for mixer_embed=4096 and hyper_hidden=4096 once built 101 million (1.2 GB); the course's largest learners
# have under 160,000 (the inferred-policy MADDPG on cooperative navigation: 147,906; MADDPG on PredatorPrey7x7:
# 152,624).
MAX_LEARNER_WEIGHTS = 50_000_000


def learner_weights(algo: str, N: int, O: int, A: int, config) -> int:
    """How many weights (parameters and buffers) every network of learner ``algo`` built with N agents, O obs dims, A
    actions and ``config`` holds: its policy's, critics', mixers' and hypernetworks', their target copies'. Counted on
    the learner built on the meta device (shapes, no memory) and the global torch generator left as it was, so it
    costs microseconds whatever the sizes."""
    with torch.random.fork_rng(devices=[]), torch.device("meta"):  # (a learner seeds the global generator)
        agent = LEARNERS[algo].learner(N, O, A, config, device="meta")
    seen, total = set(), 0
    for value in vars(agent).values():
        for item in (value if isinstance(value, (list, tuple)) else [value]):
            tensors = ([item] if isinstance(item, torch.Tensor) else
                       [*item.parameters(), *item.buffers()] if isinstance(item, nn.Module) else [])
            for tensor in tensors:
                if id(tensor) not in seen:
                    seen.add(id(tensor))
                    total += tensor.numel()
    return total


def load_policy(path: str | pathlib.Path, algo: str | None = None, env_id: str | None = None,
                plays_on: str | None = None):
    """The learner saved by ``save_policy``, its policy's networks holding the checkpoint's weights (critics and
    mixers untrained).

    Args:
        path: the policy file.
        algo: if given, the learner's name the file must hold.
        env_id: if given, the environment the file must have been trained on; the policy's sizes must also fit
            ``make_env(env_id)``'s (``check_fits``).
        plays_on: if given, an environment the policy's sizes must fit (any, not only the one it was trained on:
            ``--replay --env``).
    Raises ValueError naming the field or tensor, before any network is built, for anything ``load_checkpoint``
    refuses, a learner this version does not know, sizes out of ``SIZE_BOUNDS`` or ``MAX_CRITIC_WEIGHTS``, a missing
    size, unknown or mistyped config fields, stored tensors that are missing, unexpected, not float32 or shaped
    otherwise than the header's sizes call for, and a policy that does not fit ``env_id`` or ``plays_on``.
    """
    if not isinstance(path, (str, pathlib.PurePath)):
        raise ValueError(f"path must be a policy file's path (str or pathlib.Path), got {type(path).__name__}")
    return policy_from_payload(load_checkpoint(path, algo=algo, env_id=env_id), path, env_id, plays_on)


def policy_from_payload(payload: dict, path: str | pathlib.Path, env_id: str | None = None,
                        plays_on: str | None = None):
    """``load_policy``'s learner from a payload ``load_checkpoint(path)`` returned (for a caller that read the header
    first, so the file is read once); ``path`` names it in messages; ``env_id`` and ``plays_on`` as in
    ``load_policy``."""
    path = pathlib.Path(path)
    name = payload["algo"]
    if name not in LEARNERS:
        raise ValueError(f"{path} holds a {_short(name)} checkpoint, not one of {sorted(LEARNERS)}")
    policy = entry(name).policy
    try:
        sizes, config = _policy_header(name, dict(payload["config"]))
        stored = _policy_state(name, payload["state"])
        _check_shapes(_expected_shapes(name, sizes, config), stored, sizes, config, policy)  # before building anything
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    for env in dict.fromkeys(e for e in (env_id, plays_on) if e is not None):  # the sizes, before building anything
        _check_fits_env(_Sizes(sizes["n_agents"], sizes["obs_dim"], sizes["n_actions"]), env, path)
    weights = learner_weights(name, sizes["n_agents"], sizes["obs_dim"], sizes["n_actions"], config)
    if weights > MAX_LEARNER_WEIGHTS:  # (the policy's networks fit the file; a critic, mixer or target may not)
        changed = [f"{field.name}={getattr(config, field.name)}" for field in dataclasses.fields(config)
                   if type(field.default) is int and getattr(config, field.name) != field.default]
        said = ", ".join([f"N={sizes['n_agents']}", f"O={sizes['obs_dim']}", f"A={sizes['n_actions']}",
                          f"hidden={config.hidden}", *[item for item in changed if not item.startswith("hidden=")]][:10])
        raise ValueError(f"{path}: the header's sizes ({said}) ask for {weights:,} weights in the {name} learner's "
                         f"networks (critics, mixers and target copies included), more than {MAX_LEARNER_WEIGHTS:,}")
    agent = LEARNERS[name].learner(sizes["n_agents"], sizes["obs_dim"], sizes["n_actions"], config)
    key = policy.attribute
    try:  # what the learner built is what was expected (so load_state_dict cannot fail deep inside torch)
        _check_shapes({key: _shapes(getattr(agent, key))}, stored, sizes, config, policy)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    getattr(agent, key).load_state_dict(stored[key])
    target = getattr(agent, f"target_{key}", None)  # MADDPG's target actors, VDN's target network: a copy
    if target is not None:
        target.load_state_dict(stored[key])
    return agent


@dataclasses.dataclass
class _Sizes:
    """A policy's sizes, for ``check_fits`` before its learner is built."""

    n_agents: int
    obs_dim: int
    n_actions: int


def _check_fits_env(agent, env_id: str, path: pathlib.Path) -> None:
    """``check_fits`` of ``agent`` (a learner, or its ``_Sizes``) against a fresh ``make_env(env_id)``, the file's name
    in front of the message."""
    from marl_edu.envs.make import make_env

    env = make_env(env_id)
    try:
        check_fits(agent, env)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    finally:
        env.close()


def _bounded_int(value, name: str) -> int:
    """An int in [1, SIZE_BOUNDS[name]] (a bool is not one): a size a learner is built with."""
    bound = SIZE_BOUNDS[name]
    if type(value) is not int or not 1 <= value <= bound:
        raise ValueError(f"the header's {name} must be an int in [1, {bound}], got {_short(value)}")
    return value


def _policy_header(algo: str, header: dict):
    """A policy file's header checked: its sizes ``{"n_agents": N, "obs_dim": O, "n_actions": A}`` (bounded) and
    its config (known fields, each of its default's type, then the config's own ``validate``, which bounds hidden
    units and sub-policies). Fields a file of an older version lacks take their defaults."""
    sizes = {}
    for key in POLICY_SIZES:
        if key not in header:
            raise ValueError(f"the header has no {key!r} (a policy file's sizes: {', '.join(POLICY_SIZES)})")
        sizes[key] = _bounded_int(header.pop(key), key)
    kind = config_class(algo)
    defaults = {field.name: field.default for field in dataclasses.fields(kind)}
    unknown = sorted(key for key in header if key not in defaults)
    if unknown:
        named = ", ".join(map(_short, unknown[:5])) + (" and more" if len(unknown) > 5 else "")
        raise ValueError(f"unknown config field{'s' if len(unknown) > 1 else ''} {named} for {kind.__name__} (its "
                         f"fields: {', '.join(defaults)})")
    for key, value in header.items():
        default = defaults[key]
        expected = type(default)
        if default is dataclasses.MISSING or default is None:
            continue
        if not (type(value) is expected or (expected is float and type(value) is int)):
            raise ValueError(f"config field {_short(key)} must be {expected.__name__} (its default is {default!r}), "
                             f"got {_short(value)}")
        if expected is str and len(value) > MAX_TEXT:  # (the config's own check would print it whole)
            raise ValueError(f"config field {_short(key)} is a string of {len(value):,} characters "
                             f"({_short(value)}), longer than any setting of the course ({MAX_TEXT})")
    config = kind(**header).validate()  # (which bounds hidden units and sub-policies: validate.LIMITS)
    n, o, a = (sizes[key] for key in POLICY_SIZES)
    critics = n * (config.n_subpolicies if entry(algo).policy.subpolicies else 1)
    if critics * n * (o + a) * config.hidden > MAX_CRITIC_WEIGHTS:
        raise ValueError(f"the header's sizes (N={n}, O={o}, A={a}, hidden={config.hidden}) ask for "
                         f"{critics * n * (o + a) * config.hidden:,} weights in the critics' first layers alone, "
                         f"more than {MAX_CRITIC_WEIGHTS:,}: {critics} critics of N*(O+A) = {n * (o + a):,} inputs")
    return sizes, config


def _policy_state(algo: str, state: dict) -> dict[str, dict[str, torch.Tensor]]:
    """The state of a policy file: ``{key: a dict of tensors}`` and nothing else, ``key`` the attribute of its
    learner's ``Policy``: ``"actor"`` (on-policy learners), ``"q_net"`` (IQL, VDN, QMIX) or ``"actors"`` (the
    others)."""
    policy = entry(algo).policy
    key = policy.attribute
    if key not in state:
        raise ValueError(f"state has no {key!r} (where a {algo} policy file keeps its {policy.what} weights)")
    extra = [entry for entry in state if entry != key]
    if extra:
        raise ValueError(f"unexpected entry {_short(extra[0])} in state (a {algo} policy file holds {key!r} only)")
    if not isinstance(state[key], dict):
        raise ValueError(f"state.{key} must be a dict of tensors, got {type(state[key]).__name__}")
    for name, value in state[key].items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"state.{key}.{_name(name)} is a {type(value).__name__}, not a tensor")
        if value.dtype != torch.float32:  # (load_state_dict would cast uint8 or bool weights and play garbage)
            raise ValueError(f"tensor state.{key}.{_name(name)} is {str(value.dtype).removeprefix('torch.')}, "
                             f"not float32 as every network of the course")
    return {key: state[key]}


def _shapes(module: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    """A module's state dict as name -> shape."""
    return {name: tuple(tensor.shape) for name, tensor in module.state_dict().items()}


def _expected_shapes(algo: str, sizes: dict, config) -> dict[str, dict[str, tuple[int, ...]]]:
    """The tensors a policy file of ``algo`` with these sizes holds, ``{attribute: {name: shape}}``: its row's
    ``Policy.network`` built on the meta device (shapes, no memory)."""
    policy = entry(algo).policy
    with torch.device("meta"):
        network = policy.network(sizes["n_agents"], sizes["obs_dim"], sizes["n_actions"], config)
    return {policy.attribute: _shapes(network)}


def _check_shapes(expected: dict, stored: dict, sizes: dict, config, policy) -> None:
    """Every tensor ``expected`` names (``{"actors": {name: shape}}``) is in ``stored`` with that shape, and no other;
    ValueError naming the first tensor that is missing, unexpected or shaped otherwise (and the sizes ``policy``'s
    networks are built with)."""
    said = ", ".join(f"{short}={sizes[key]}" for short, key in zip("NOA", POLICY_SIZES))
    said += f", hidden={config.hidden}" + (f", M={config.n_subpolicies}" if policy.subpolicies else "")
    said += f", recurrent={config.recurrent}" if policy.recurrent else ""
    for key, shapes in expected.items():
        tensors = stored[key]
        count = f"call for {len(shapes)} tensors in state.{key}, the file holds {len(tensors)}"
        missing = [name for name in shapes if name not in tensors]
        if missing:
            raise ValueError(f"tensor state.{key}.{missing[0]} is missing: the header's sizes ({said}) {count}")
        unexpected = [name for name in tensors if name not in shapes]
        if unexpected:
            raise ValueError(f"unexpected tensor state.{key}.{unexpected[0]}: the header's sizes ({said}) {count}")
        for name, shape in shapes.items():
            if tuple(tensors[name].shape) != shape:
                raise ValueError(f"tensor state.{key}.{name} has shape {tuple(tensors[name].shape)}, but the header's "
                                 f"sizes ({said}) call for {shape}")
