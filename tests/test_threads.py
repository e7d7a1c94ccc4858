"""torch_threads: the block runs on the asked count, the caller's count comes back, bad counts are named; the
notebooks' own loops of gradient steps run inside it too."""

import ast
import json
import pathlib

import pytest
import torch

from marl_edu.base.threads import on_enclosing_threads, torch_threads
from marl_edu.learners.table import LEARNERS


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

    from marl_edu.envs.make import make_env
    from marl_edu.data.rollout import run_episode

    seen = []

    def policy(obs):  # obs (N, O) -> actions (N,)
        seen.append(torch.get_num_threads())
        return np.full(obs.shape[0], 4)  # every agent waits (NOOP)

    run_episode(make_env("Switch2-v0"), policy)
    assert set(seen) == {1} and len(seen) == 50 and torch.get_num_threads() == 2
    with torch_threads(3):
        run_episode(make_env("Switch2-v0"), policy)
    assert set(seen[50:]) == {3}


def test_collecting_a_batch_runs_on_one_thread_and_gives_the_count_back(two_threads):
    # a notebook cell that collects one batch outside any loop (07 does, to show its shapes) ran on two threads: on a
    # busy 2-core machine that cell took 3.8 s instead of under one
    from marl_edu.learners.coma import COMA
    from marl_edu.envs.make import make_vec_env
    from marl_edu.data.rollout import collect_episodes

    learner = COMA(2, 2, 5, seed=0)
    seen = []
    policy_step = learner.policy_step

    def counting_step(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return policy_step(*args, **kwargs)

    learner.policy_step = counting_step
    collect_episodes(learner, make_vec_env("Switch2-v0", 2, seed=0), epsilon=0.0)
    assert set(seen) == {1} and len(seen) == 51 and torch.get_num_threads() == 2  # T + 1 = 51 steps
    with torch_threads(3):
        collect_episodes(learner, make_vec_env("Switch2-v0", 2, seed=0), epsilon=0.0)
    assert set(seen[51:]) == {3}


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learners_update_runs_on_the_enclosing_threads(name):
    # one update called from a notebook cell (07 shows one) ran on torch's default two threads: beside one other
    # CPU-bound process on 2 cores that cell took 5 s instead of under one; inside a loop it keeps the loop's count
    update = LEARNERS[name].learner.update
    assert getattr(update, "__wrapped__", None) is not None and update.__code__ is on_enclosing_threads(len).__code__


def test_one_update_called_alone_runs_on_one_thread_and_gives_the_count_back(two_threads):
    from marl_edu.learners.coma import COMA
    from marl_edu.envs.make import make_vec_env
    from marl_edu.data.rollout import collect_episodes

    learner = COMA(2, 2, 5, seed=0)
    batch, _, _ = collect_episodes(learner, make_vec_env("Switch2-v0", 2, seed=0), epsilon=0.0)
    seen = []
    critic_loss = learner.critic_loss

    def counting_loss(*args):
        seen.append(torch.get_num_threads())
        return critic_loss(*args)

    learner.critic_loss = counting_loss
    learner.update(batch)
    assert seen and set(seen) == {1} and torch.get_num_threads() == 2
    with torch_threads(3):
        learner.update(batch)
    assert set(seen[len(seen) // 2:]) == {3}


NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def _optimiser_step(node: ast.AST) -> bool:
    """``<...optimizer...>.step()``: one step of a torch optimiser (an env's step is ``env.step(actions)``)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step"
            and not node.args and "optim" in ast.unparse(node.func.value))


def _training_loops_outside_torch_threads(source: str) -> list[int]:
    """The line of every ``for`` loop that steps an optimiser and is not inside a ``with torch_threads(...)``."""
    found = []

    def visit(node, inside: bool) -> None:
        if isinstance(node, ast.With) and any(isinstance(item.context_expr, ast.Call)
                                              and getattr(item.context_expr.func, "id", None) == "torch_threads"
                                              for item in node.items):
            inside = True
        if isinstance(node, ast.For) and not inside and any(_optimiser_step(n) for n in ast.walk(node)):
            found.append(node.lineno)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def test_the_check_finds_a_training_loop_outside_torch_threads():
    loop = "for step in range(3):\n    loss.backward()\n    optimizer.step()\n"
    indented = loop.replace("\n", "\n    ")
    assert _training_loops_outside_torch_threads(loop) == [1]
    assert _training_loops_outside_torch_threads("def f():\n    " + indented) == [2]
    assert _training_loops_outside_torch_threads("with torch_threads():\n    " + indented) == []
    assert _training_loops_outside_torch_threads(loop.replace("optimizer.step()", "learner.critic_optimizer.step()")) \
        == [1]
    assert _training_loops_outside_torch_threads("optimizer.step()\n") == []  # one step: no loop
    assert _training_loops_outside_torch_threads("for t in range(3):\n    env.step(actions)\n") == []  # an env's


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_a_notebook_trains_on_one_thread_and_leaves_torchs_count_alone(path):
    # marl_edu's loops run on one thread (torch_threads) and give the caller's count back; a cell's own loop of
    # optimiser steps (07 trains critics by hand, 10 fits an approximation) ran on torch's default, two threads here,
    # and beside one other CPU-bound process on 2 cores notebook 08 took 316 s against 29 s idle
    # (benchmarks/notebook_times.py --busy). Such a loop runs inside torch_threads(), the library's own mechanism;
    # no notebook sets torch's thread count for the whole kernel.
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        assert "set_num_threads" not in source, f"{path.name} cell {index} sets torch's thread count for the kernel"
        lines = _training_loops_outside_torch_threads(source)
        assert not lines, f"{path.name} cell {index}: a loop of optimiser steps outside torch_threads() (line {lines})"
