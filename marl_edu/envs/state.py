"""An environment's state as plain data, so that a run in progress can be saved and resumed to the same bits.

A backend's world lives in Python objects (ma-gym's dicts of positions, lbforaging's players, mpe2's entities) and
random generators. ``to_plain`` turns such values into plain data a ``weights_only`` checkpoint holds (numpy arrays,
Python numbers and strings, lists and str-keyed dicts), tagging what plain data cannot say by itself (a tuple, a numpy
scalar, a dict with other keys, a generator's state, an image) so that ``from_plain`` rebuilds the very values:

    to_plain((3, np.int64(4)))  -> {"tuple": [3, {"scalar": "int64", "value": 4}]}
    from_plain(that)            -> (3, np.int64(4))

``attributes_state`` / ``restore_attributes`` do this for every attribute of an object but the ones named as fixed
at construction (spaces, windows). Objects of the few backend classes that hold only such values (``RECORDS``:
Lumberjacks' ``Agent``, an id and a position) are saved attribute by attribute and rebuilt as objects of that class;
anything else raises TypeError naming it: nothing is silently left out of a saved state.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

TAGS = ("tuple", "scalar", "pairs", "random_state", "generator", "python_random", "image", "record")


def records() -> dict[str, type]:
    """The backend classes whose objects are saved attribute by attribute, by the name a saved state gives them. A
    saved state names its class from this table only: a file can never make ``from_plain`` build another class."""
    from ma_gym.envs.lumberjacks.lumberjacks import Agent  # a lumberjack: its id and its (row, col)

    return {"ma_gym.Lumberjacks.Agent": Agent}


def to_plain(value: Any, where: str = "value") -> Any:
    """``value`` as plain data (a copy: later changes to ``value`` do not reach it); TypeError naming ``where`` for
    a value of another kind (an object of a class of the backend's)."""
    from PIL import Image

    if value is None or isinstance(value, (bool, int, float, str)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, np.generic):  # np.int64(4), np.str_("U"): the type survives
        return {"scalar": value.dtype.str, "value": value.item()}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"{where}: an array of dtype {value.dtype} cannot be saved")
        return value.copy()
    if isinstance(value, tuple):
        return {"tuple": [to_plain(item, f"{where}[{k}]") for k, item in enumerate(value)]}
    if isinstance(value, list):
        return [to_plain(item, f"{where}[{k}]") for k, item in enumerate(value)]
    if isinstance(value, dict):
        if all(isinstance(key, str) and key not in TAGS for key in value):
            return {key: to_plain(item, f"{where}[{key!r}]") for key, item in value.items()}
        return {"pairs": [[to_plain(key, where), to_plain(item, f"{where}[{key!r}]")] for key, item in value.items()]}
    if isinstance(value, np.random.RandomState):  # ma-gym's generators: MT19937's 624 words and position
        name, words, pos, has_gauss, gauss = value.get_state()
        return {"random_state": [name, words.astype(np.int64), int(pos), int(has_gauss), float(gauss)]}
    if isinstance(value, np.random.Generator):  # lbforaging's and mpe2's
        return {"generator": value.bit_generator.state}
    if isinstance(value, random.Random):  # Python's Mersenne Twister (envs.magym: TrafficJunction's own)
        version, words, gauss = value.getstate()
        return {"python_random": [version, np.array(words, dtype=np.int64), gauss]}
    if isinstance(value, Image.Image):  # ma-gym's picture of the grid
        return {"image": np.asarray(value).copy(), "mode": value.mode}
    names = {cls: name for name, cls in records().items()}
    if type(value) in names:
        return {"record": names[type(value)],
                "attributes": {key: to_plain(item, f"{where}.{key}") for key, item in vars(value).items()}}
    raise TypeError(f"{where}: a {type(value).__name__} cannot be saved")


def from_plain(value: Any) -> Any:
    """``to_plain``'s inverse: the values back with their types (new objects; generators with the saved state).
    Accepts lists where ``to_plain`` gave tuples' items (what a checkpoint round trip returns)."""
    from PIL import Image

    if isinstance(value, list):
        return [from_plain(item) for item in value]
    if not isinstance(value, dict):
        return value.copy() if isinstance(value, np.ndarray) else value
    if "tuple" in value:
        return tuple(from_plain(item) for item in value["tuple"])
    if "scalar" in value:
        return np.dtype(value["scalar"]).type(value["value"])
    if "pairs" in value:
        return {from_plain(key): from_plain(item) for key, item in value["pairs"]}
    if "random_state" in value:
        name, words, pos, has_gauss, gauss = value["random_state"]
        generator = np.random.RandomState()
        generator.set_state((name, np.asarray(words, dtype=np.uint32), int(pos), int(has_gauss), float(gauss)))
        return generator
    if "generator" in value:
        state = value["generator"]
        generator = np.random.Generator(getattr(np.random, state["bit_generator"])())
        generator.bit_generator.state = state
        return generator
    if "python_random" in value:
        version, words, gauss = value["python_random"]
        generator = random.Random()
        generator.setstate((int(version), tuple(int(word) for word in words), gauss))
        return generator
    if "image" in value:
        return Image.fromarray(np.asarray(value["image"], dtype=np.uint8), mode=value["mode"])
    if "record" in value:
        known = records()
        if value["record"] not in known:
            raise ValueError(f"a saved state names the class {str(value['record'])[:80]!r}, which is not one of "
                             f"envs.state.records(): {', '.join(known)}")
        obj = known[value["record"]].__new__(known[value["record"]])
        vars(obj).update({key: from_plain(item) for key, item in value["attributes"].items()})
        return obj
    return {key: from_plain(item) for key, item in value.items()}


def attributes_state(obj: Any, fixed: tuple[str, ...] = ()) -> dict:
    """Every attribute of ``obj`` but those named in ``fixed`` (made at construction and never changed: spaces,
    windows, fonts), as plain data. TypeError naming the attribute for one that ``to_plain`` cannot save."""
    return {name: to_plain(value, f"{type(obj).__name__}.{name}") for name, value in vars(obj).items()
            if name not in fixed}


def restore_attributes(obj: Any, state: dict, fixed: tuple[str, ...] = (), what: str = "env",
                       transient: tuple[str, ...] = ()) -> None:
    """Put ``attributes_state(obj, fixed)``'s ``state`` back into ``obj`` (built the same way), in place. ValueError
    naming the attributes when the saved ones and ``obj``'s differ (a state of another env or version), but for those
    named in ``transient``, which the backend sets and deletes as it steps (set if saved, deleted if not)."""
    expected = set(vars(obj)) - set(fixed) - set(transient)
    if not isinstance(state, dict) or set(state) - set(transient) != expected:
        differ = sorted((set(state) - set(transient)) ^ expected) if isinstance(state, dict) else "all"
        raise ValueError(f"the saved {what} state does not fit this {type(obj).__name__}: attributes {differ} differ")
    for name in transient:
        if name not in state and name in vars(obj):
            delattr(obj, name)
    for name, saved in state.items():
        setattr(obj, name, from_plain(saved))
