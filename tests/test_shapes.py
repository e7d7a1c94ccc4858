import numpy as np
import pytest
import torch

from marl_edu.base.shapes import check_shape, one_hot


def test_binds_symbols_and_returns_sizes():
    dims = check_shape(np.zeros((32, 2, 3)), ("B", "N", "O"), "obs")
    assert dims == {"B": 32, "N": 2, "O": 3}


def test_exact_ints_and_torch_tensors():
    assert check_shape(torch.zeros(4, 5), ("B", 5), "q") == {"B": 4}
    with pytest.raises(ValueError, match=r"q: expected shape \(B, 5\), got \(4, 6\): axis 1 should be 5"):
        check_shape(torch.zeros(4, 6), ("B", 5), "q")


def test_symbol_bound_twice_in_one_call_must_match():
    check_shape(np.zeros((3, 3)), ("N", "N"), "adjacency")
    with pytest.raises(ValueError, match=r"adjacency: .*axis 1 \(N\) is 4 but N=3"):
        check_shape(np.zeros((3, 4)), ("N", "N"), "adjacency")


def test_dims_dict_ties_several_calls_together():
    dims = {}
    check_shape(np.zeros((8, 2, 3)), ("B", "N", "O"), "obs", dims)
    check_shape(np.zeros((8, 2)), ("B", "N"), "rewards", dims)
    # the classic trap: rewards kept as (B, 1) instead of (B, N)
    with pytest.raises(ValueError, match=r"dones: expected shape \(B=8, N=2\), got \(8, 1\)"):
        check_shape(np.zeros((8, 1)), ("B", "N"), "dones", dims)


def test_wrong_number_of_dims_names_both():
    with pytest.raises(ValueError, match=r"rewards: expected shape \(B,\) \(1 dims\), got \(4, 1\) \(2 dims\)"):
        check_shape(np.zeros((4, 1)), ("B",), "rewards")


def test_dtype_kinds():
    check_shape(np.zeros(3, dtype=np.int64), ("N",), "actions", dtype="int")
    check_shape(torch.zeros(3, dtype=torch.bool), ("N",), "dones", dtype="bool")
    with pytest.raises(ValueError, match="actions: expected int elements, got dtype float32"):
        check_shape(np.zeros(3, dtype=np.float32), ("N",), "actions", dtype="int")
    with pytest.raises(ValueError, match="dtype must be one of"):
        check_shape(np.zeros(3), ("N",), "x", dtype="double")


def test_rejects_non_arrays():
    with pytest.raises(ValueError, match="obs: expected an array or tensor .* got list"):
        check_shape([[0.0, 1.0]], ("N", "O"), "obs")


def test_one_hot_by_hand():
    # actions [2, 0] with A=3 -> rows e_2 = [0, 0, 1] and e_0 = [1, 0, 0]
    np.testing.assert_array_equal(one_hot(np.array([2, 0]), 3), [[0, 0, 1], [1, 0, 0]])
    t = one_hot(torch.tensor([[1], [4]]), 5)
    assert t.shape == (2, 1, 5) and t.dtype == torch.float32
    assert t[1, 0].tolist() == [0, 0, 0, 0, 1]


def test_one_hot_bad_inputs():
    with pytest.raises(ValueError, match=r"in \[0, 4\], got values from 0 to 5"):
        one_hot(np.array([0, 5]), 5)
    with pytest.raises(ValueError, match="must be integers"):
        one_hot(np.array([0.0, 1.0]), 5)
    with pytest.raises(ValueError, match="positive int"):
        one_hot(np.array([0]), 0)
    assert one_hot(np.array([1]), np.int64(3)).tolist() == [[0, 1, 0]]  # numpy ints are ints too


def test_describe_prints_dtype_shape_and_rounded_values():
    from marl_edu.base.shapes import describe

    line = describe(np.array([[0, 0.17], [0, 0.83]], dtype=np.float32), "obs")
    assert line.split() == ["obs", "float32", "(2,", "2)", "[[0.0,", "0.17],", "[0.0,", "0.83]]"]
    assert describe(torch.tensor([True]), "dones").split()[1:3] == ["bool", "(1,)"]
    assert "400 values; [0] = [[0.0, 0.0], [0.0, 0.0]]" in describe(np.zeros((100, 2, 2)), "buffer")
