"""The exercises' one rule, tested: the notebook's stub never holds the answer, its check reports NOT DONE YET until the
learner's code passes, and the answers live in marl_edu.course.solutions, each one passed by its checker and shown on request.

Solution ``NAME`` is checked by ``checks.check_NAME`` and is the exercise whose notebook cell calls ``check_NAME`` on a
function the notebook defines (the learner's stub).
"""

import ast
import importlib
import inspect
import json
import math
import pathlib
import subprocess
import sys
import types

import pytest
import torch

from marl_edu.course import checks
from marl_edu.course import solutions
from marl_edu.learners.maddpg import flatten_for_critic

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHECKER_MODULES = [checks] + [importlib.import_module(f"marl_edu.course.{path.stem}")
                              for path in sorted((ROOT / "marl_edu" / "course").glob("capstone_*.py"))]
CHECKERS = sorted(name[len("check_"):] for module in CHECKER_MODULES for name, fn in vars(module).items()
                  if name.startswith("check_") and inspect.isfunction(fn) and fn.__module__ == module.__name__)


def _checker(name: str):
    return getattr(importlib.import_module(solutions.checker_module(name)), f"check_{name}")


def _verdict(check, fn, capsys) -> str:
    assert check(fn) is None  # a checker prints its verdict and returns nothing
    return capsys.readouterr().out


def _n_args(name: str) -> int:
    return len(inspect.signature(getattr(solutions, name)).parameters)


# -- the solutions and their checkers ------------------------------------------------------------------------------

def test_every_checker_has_a_solution_and_every_solution_a_checker():
    assert sorted(solutions.NAMES) == CHECKERS
    assert len(set(solutions.NAMES)) == len(solutions.NAMES)
    assert len(solutions.EXERCISES) == 15
    for name in solutions.NAMES:  # each checked by its own module's checker, and only there
        assert [m.__name__ for m in CHECKER_MODULES if hasattr(m, f"check_{name}")] == [solutions.checker_module(name)]


@pytest.mark.parametrize("name", solutions.NAMES)
def test_every_solution_passes_its_checker(name, capsys):
    out = _verdict(_checker(name), getattr(solutions, name), capsys)
    assert out.startswith("PASSED"), out
    assert "FAILED" not in out and "NOT DONE" not in out


@pytest.mark.parametrize("name", CHECKERS)
def test_an_untouched_stub_is_not_done_yet_for_every_checker(name, capsys):
    def raises(*args):
        raise NotImplementedError("a hint that gives nothing away")

    def returns_none(*args):
        pass

    for stub, why in ((raises, "still raises NotImplementedError"), (returns_none, "returned None")):
        out = _verdict(_checker(name), stub, capsys)
        assert out.startswith("NOT DONE YET") and why in out, out
        assert "PASSED" not in out and "FAILED" not in out
        assert out.count("\n") == 1  # one verdict line, whatever the number of cases


# A wrong answer for each solution that does not return a tensor (the in-place parts and whole loops of the
# capstones); every other one is answered wrongly by solution(*args) * 2 + 1.
def _coma_update_twice(agent, batch, *parts):  # two updates where one was asked for
    solutions.coma_update(agent, batch, *parts)
    solutions.coma_update(agent, batch, *parts)


def _training_loop_that_loses_an_episode(*args):
    out = solutions.maddpg_training_loop(*args)
    return {**out, "episode_returns": out["episode_returns"][:-1]}


WRONG_ANSWERS: dict[str, object] = {
    "soft_update": lambda target, source, tau: solutions.soft_update(target, source, tau / 2),
    "maddpg_update": lambda agent, batch, *parts: solutions.maddpg_update(
        agent, {**batch, "rewards": batch["rewards"] * 2 + 1}, *parts),
    "maddpg_training_loop": _training_loop_that_loses_an_episode,
    "coma_update": _coma_update_twice,
}




@pytest.mark.parametrize("name", solutions.NAMES)
def test_a_wrong_answer_still_fails_every_checker(name, capsys):
    # the solutions' PASSED above means something only if the same checker fails a function that answers wrongly
    solution = getattr(solutions, name)

    def wrong(*args):
        return solution(*args) * 2 + 1

    out = _verdict(_checker(name), WRONG_ANSWERS.get(name, wrong), capsys)
    assert out.startswith("FAILED"), out


@pytest.mark.parametrize("name", solutions.NAMES)
def test_show_solution_prints_the_source_and_it_works_when_pasted(name, capsys):
    assert solutions.show_solution(name) is None
    out = capsys.readouterr().out
    header, source = out.split("\n", 1)
    capstone = name in solutions.MADDPG_CAPSTONE + solutions.COMA_CAPSTONE
    before = f"hint({name!r}, 1), 2 and 3" if capstone else "the check's hint"
    assert header == (f"# the last resort, after {before}: the solution to the {name!r} exercise (checked by "
                      f"{solutions.checker_module(name)}.check_{name}):")
    assert source.startswith(f"def {name}(") and source == inspect.getsource(getattr(solutions, name))
    # pasted into a notebook, with what the notebooks import (torch; 17 has marl_edu.learners.maddpg's flatten_for_critic)
    namespace = {"torch": torch, "math": math, "flatten_for_critic": flatten_for_critic, **solutions.BUILDING_BLOCKS}
    exec(compile(source, f"<show_solution {name}>", "exec"), namespace)
    assert namespace[name] is not getattr(solutions, name)
    assert _verdict(_checker(name), namespace[name], capsys).startswith("PASSED")


def test_show_solution_refuses_an_unknown_name_and_lists_the_names(capsys):
    for wrong in ("td_targets", "check_td_target", "", "NAMES", "show_solution", "torch"):
        with pytest.raises(ValueError) as error:
            solutions.show_solution(wrong)
        assert repr(wrong) in str(error.value)
        assert all(name in str(error.value) for name in solutions.NAMES)
    assert capsys.readouterr().out == ""  # nothing printed before the refusal


@pytest.mark.parametrize("name", solutions.NAMES)
def test_solutions_are_written_out_not_calls_into_the_library(name):
    # "as a learner would write it": the only globals a solution may use are torch, math, the other solutions and,
    # in a capstone, the building blocks earlier notebooks taught (solutions.BUILDING_BLOCKS)
    solution = getattr(solutions, name)
    assert solution.__doc__ and "->" in solution.__doc__, "the docstring states the equation and the shapes"
    for used in solution.__code__.co_names:
        value = vars(solutions).get(used)
        if value is None:
            continue  # an attribute or a builtin, not a global of the module
        taught = any(value is allowed for allowed in (torch, math, *solutions.BUILDING_BLOCKS.values()))
        another_solution = isinstance(value, types.FunctionType) and value.__module__ == solutions.__name__
        assert taught or another_solution, (name, used)


# -- the committed notebooks: the stub is empty, its committed check says NOT DONE YET ------------------------------

def _python(cell: dict) -> str:
    """A code cell's source without IPython's magics and shell escapes (not Python)."""
    lines = "".join(cell["source"]).split("\n")
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)


def _printed(cell: dict) -> str:
    return "".join("".join(output.get("text", "")) for output in cell.get("outputs", [])
                   if output.get("output_type") == "stream")


def _exercises() -> list[tuple[str, str, dict, ast.FunctionDef]]:
    """(notebook, checked name, check cell, the learner's stub) for every call ``check_NAME(fn)`` whose ``fn`` is a
    function the notebook defines."""
    found = []
    for path in NOTEBOOKS:
        cells = [(cell, ast.parse(_python(cell), f"{path.name} cell {index}"))
                 for index, cell in enumerate(json.loads(path.read_text())["cells"]) if cell["cell_type"] == "code"]
        defined = {node.name: node for _, tree in cells for node in tree.body if isinstance(node, ast.FunctionDef)}
        for cell, tree in cells:
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id.startswith("check_") and node.args
                        and isinstance(node.args[0], ast.Name) and node.args[0].id in defined):
                    found.append((path.name, node.func.id[len("check_"):], cell, defined[node.args[0].id]))
    return found


EXERCISES = _exercises()


def test_every_checker_is_an_exercise_in_some_notebook():
    assert sorted(name for _, name, _, _ in EXERCISES) == CHECKERS  # each exactly once


@pytest.mark.parametrize("notebook, name, cell, stub", EXERCISES,
                         ids=[f"{notebook}-{name}" for notebook, name, _, _ in EXERCISES])
def test_the_committed_stub_holds_no_answer_and_its_check_says_not_done_yet(notebook, name, cell, stub):
    body = stub.body[1:] if ast.get_docstring(stub) else stub.body
    assert len(body) == 1 and isinstance(body[0], ast.Raise), \
        f"{notebook}: {stub.name} must only raise NotImplementedError (no return, no call to a reference)"
    # run alone, the stub raises NotImplementedError whatever it is given
    namespace = {"torch": torch}
    exec(compile(ast.Module(body=[stub], type_ignores=[]), notebook, "exec"), namespace)
    with pytest.raises(NotImplementedError):
        namespace[stub.name](*[None] * len(stub.args.args))
    printed = _printed(cell)
    assert printed.startswith("NOT DONE YET: the function still raises NotImplementedError"), \
        f"{notebook}: the committed check of {stub.name} printed {printed!r}"
    assert "PASSED" not in printed and "FAILED" not in printed
    # the way to the solution is in the cell, commented out, under the checker's own name
    lines = "".join(cell["source"]).split("\n")
    assert any(line.startswith("# ") and f'show_solution("{name}")' in line for line in lines), \
        f'{notebook}: no commented show_solution("{name}") line in the cell of check_{name}'


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_no_notebook_carries_a_reference_answer_or_prints_a_solution(path):
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse(_python(cell))
        for node in ast.walk(tree):
            assert not (isinstance(node, ast.FunctionDef) and node.name.startswith("reference")), \
                f"{path.name} cell {index} defines {node.name}: the answer belongs in marl_edu.course.solutions"
            assert not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "show_solution"), \
                f"{path.name} cell {index} calls show_solution: the committed notebook must not print a solution"
            # the answers are never imported where the learner reads, not even show_solution (its module holds every
            # answer, one inspect away): a capstone's own show_solution imports them when called, and the other
            # notebooks' show_solution line stays commented out until the learner asks
            answers = (isinstance(node, ast.Import) and any("solutions" in alias.name for alias in node.names)) or (
                isinstance(node, ast.ImportFrom) and ("solutions" in (node.module or "")
                                                      or any(alias.name == "solutions" for alias in node.names)))
            assert not answers, f"{path.name} cell {index} imports marl_edu.course.solutions"
        assert "delete this line to check your own" not in "".join(cell["source"])


def test_the_capstones_offer_show_solution_without_importing_the_answers(capsys):
    # importing a capstone's module (as notebooks 22 and 23 do) leaves marl_edu.course.solutions unimported; its
    # show_solution imports it when called and prints the same as solutions.show_solution
    code = ("import sys; from marl_edu.course.capstone_maddpg import show_solution; from marl_edu.course.capstone_coma import "
            "show_solution as coma_show; import marl_edu.course.capstone_coma, marl_edu.course.capstone_maddpg; "
            "print('marl_edu.course.solutions' in sys.modules); show_solution('soft_update'); "
            "print('marl_edu.course.solutions' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "False" and out[-1] == "True", out
    solutions.show_solution("soft_update")
    assert "\n".join(out[1:-1]) + "\n" == capsys.readouterr().out
