"""validate: one check per kind of scalar argument, each rejecting bools, NaN and infinity, and naming the value."""

import math
import re

import numpy as np
import torch
import pytest

from marl_edu.base.validate import (boolean, non_negative_int, non_negative_number, positive_int, positive_number,
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
    from marl_edu.base.validate import index_range

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
    from marl_edu.base.validate import generator

    rng = np.random.default_rng(0)
    assert generator(rng, "rng") is rng
    with pytest.raises(ValueError, match=r"^rng must be a numpy Generator \(np.random.default_rng\(seed\)\), got "):
        generator(bad, "rng")


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_finite_accepts_numbers_and_names_the_first_nan_or_infinity(kind):
    from marl_edu.base.validate import finite

    as_kind = (lambda x: np.asarray(x, dtype=np.float32)) if kind == "numpy" else torch.tensor
    finite(as_kind([[0.0, -1e30], [3.5, 1e-30]]), "obs")  # large and tiny numbers are finite
    finite(np.zeros((0, 3)), "obs")  # nothing to check
    finite(np.array([1, 2]), "actions")  # integers are always finite
    # [[0, 0, inf], [nan, 0, nan]]: 2 NaN, 1 infinite, the first of them (in row-major order) at (0, 2)
    bad = as_kind([[0.0, 0.0, math.inf], [math.nan, 0.0, math.nan]])
    with pytest.raises(ValueError, match=r"^rewards must be finite, got 2 NaN and 1 infinite of 6 entries, "
                                         r"the first at index \(0, 2\)$"):
        finite(bad, "rewards")
    with pytest.raises(ValueError, match=r"^x must be finite, got 0 NaN and 1 infinite of 1 entries, "
                                         r"the first at index \(\)$"):
        finite(as_kind(-math.inf), "x")  # a 0-d array


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_zero_one_accepts_flags_and_names_the_first_other_value(kind):
    from marl_edu.base.validate import zero_one

    as_kind = np.asarray if kind == "numpy" else torch.tensor
    zero_one(as_kind([[0.0, 1.0], [1.0, 1.0]]), "step_mask")
    zero_one(as_kind([True, False]), "dones")  # bools are flags
    zero_one(as_kind([0, 1, 1]), "dones")  # so are the ints 0 and 1
    # [[1, 2], [0, 0.5]]: 2 of 4 entries are neither 0 nor 1, the first at (0, 1)
    with pytest.raises(ValueError, match=r"^agent_mask must be 0 or 1 in every entry, got 2.0 at index \(0, 1\) "
                                         r"\(2 of 4 entries are neither\)$"):
        zero_one(as_kind([[1.0, 2.0], [0.0, 0.5]]), "agent_mask")
    with pytest.raises(ValueError, match=r"^dones must be 0 or 1 in every entry, got nan at index \(0,\) "):
        zero_one(as_kind([math.nan, 1.0]), "dones")  # NaN is neither
