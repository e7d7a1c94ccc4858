"""torch_threads: the block runs on the asked count, the caller's count comes back, bad counts are named; the
notebooks' own cells run on one thread too."""

import json
import pathlib
import re

import pytest
import torch

from marl_edu.threads import torch_threads


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_one_thread_by_default_and_restored(two_threads):
    with torch_threads():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_restored_when_the_block_raises(two_threads):
    with pytest.raises(RuntimeError, match="inside"):
        with torch_threads(1):
            raise RuntimeError("inside")
    assert torch.get_num_threads() == 2


def test_nested_blocks_restore_in_order(two_threads):
    with torch_threads(1):
        with torch_threads(3):
            assert torch.get_num_threads() == 3
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, 257])
def test_bad_counts_are_named(bad, two_threads):
    with pytest.raises(ValueError, match="threads must be a positive int"):
        with torch_threads(bad):
            pass
    assert torch.get_num_threads() == 2


def test_none_takes_the_enclosing_blocks_count_or_one(two_threads):
    with torch_threads(None):
        assert torch.get_num_threads() == 1  # outside any block: one
    with torch_threads(3):
        with torch_threads(None):  # (an evaluation a loop on 3 threads calls)
            assert torch.get_num_threads() == 3
        with torch_threads(1):
            with torch_threads():
                assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_an_episode_runs_on_one_thread_and_gives_the_count_back(two_threads):
    import numpy as np

    from marl_edu.envs import make_env
    from marl_edu.rollout import run_episode

    seen = []

    def policy(obs):  # obs (N, O) -> actions (N,)
        seen.append(torch.get_num_threads())
        return np.full(obs.shape[0], 4)  # every agent waits (NOOP)

    run_episode(make_env("Switch2-v0"), policy)
    assert set(seen) == {1} and len(seen) == 50 and torch.get_num_threads() == 2
    with torch_threads(3):
        run_episode(make_env("Switch2-v0"), policy)
    assert set(seen[50:]) == {3}


NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_a_notebook_that_imports_torch_runs_its_own_cells_on_one_thread(path):
    # marl_edu's loops run on one thread whatever the notebook does; a cell's own loop (07 trains critics by hand,
    # 10 fits an approximation) runs on torch's default, two threads here. Beside one other CPU-bound process on 2
    # cores, notebook 07 took 316 s on two threads against 29 s idle (benchmarks/notebook_times.py --busy): the first
    # code cell that imports torch sets one thread, before any other cell runs.
    cells = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]
    first = next((source for source in cells if re.search(r"^import torch$", source, re.M)), None)
    if first is None:
        assert not any("torch" in source for source in cells), f"{path.name} uses torch without importing it"
        return
    assert re.search(r"^torch\.set_num_threads\(1\)", first, re.M), (
        f"{path.name}: its first cell that imports torch must set torch.set_num_threads(1)")
