"""validate: one check per kind of scalar argument, each rejecting bools, NaN and infinity, and naming the value."""

import math
import re

import numpy as np
import torch
import pytest

from marl_edu.validate import (boolean, non_negative_int, non_negative_number, positive_int, positive_number,
                               unit_interval)


@pytest.mark.parametrize("check, good, bad, kind", [
    (positive_int, [1, 7, np.int64(3)], [0, -2, 1.0, 2.5, True, "3", None], "a positive int"),
    (non_negative_int, [0, 5, np.int32(0)], [-1, 0.0, False, np.float64(2.0)], "a non-negative int"),
    (positive_number, [1e-4, 3, np.float32(0.5)], [0, -1e-3, math.nan, math.inf, True, "0.1"], "a positive number"),
    (non_negative_number, [0, 0.0, 2.5], [-0.1, math.nan, math.inf, False], "a non-negative number"),
    (unit_interval, [0, 1, 0.95, np.float64(0.5)], [-0.01, 1.01, math.nan, True, None], "a number in \\[0, 1\\]"),
    (boolean, [True, False], [1, 0, "yes", None, np.bool_(True)], "True or False"),
])
def test_each_kind_accepts_and_refuses_by_hand(check, good, bad, kind):
    for value in good:
        assert check(value, "x") == value
    for value in bad:
        with pytest.raises(ValueError, match=rf"^x must be {kind}, got {re.escape(repr(value))}$"):
            check(value, "x")


def test_ints_come_back_as_python_ints():
    assert type(positive_int(np.int64(4), "n")) is int and type(non_negative_int(np.uint8(0), "seed")) is int


def test_indices_accepts_every_index_below_n_and_names_the_bad_ones():
    from marl_edu.validate import index_range

    index_range(np.array([[0, 4], [2, 3]]), 5, "actions")  # A = 5: 0..4 are the five actions
    index_range(torch.tensor([0, 1, 2]), 3, "subpolicies")  # M = 3 sub-policies, a tensor works too
    index_range(np.zeros((0, 2), dtype=np.int64), 5, "actions")  # nothing to check
    with pytest.raises(ValueError, match=r"^actions must be in \[0, 4\] \(DOWN, NOOP\), got \[0, 5\]$"):
        index_range(np.array([0, 5]), 5, "actions", meanings=["DOWN", "NOOP"])
    with pytest.raises(ValueError, match=r"^subpolicies must be in \[0, 2\], got \[-1, 0\]$"):
        index_range(np.array([-1, 0]), 3, "subpolicies")
    big = np.arange(100)  # a long array is summarised by its extremes
    with pytest.raises(ValueError, match=r"^indices must be in \[0, 49\], got min 0, max 99$"):
        index_range(big, 50, "indices")


@pytest.mark.parametrize("bad", [np.random.RandomState(0), 0, None, torch.Generator()])
def test_generator_refuses_anything_but_a_numpy_generator(bad):
    from marl_edu.validate import generator

    rng = np.random.default_rng(0)
    assert generator(rng, "rng") is rng
    with pytest.raises(ValueError, match=r"^rng must be a numpy Generator \(np.random.default_rng\(seed\)\), got "):
        generator(bad, "rng")
