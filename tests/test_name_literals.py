"""A learner is declared in one place: no learner name of the table (``learners.table.LEARNERS``) appears as a string
literal in ``marl_edu/`` outside the table, nor in ``benchmarks/``. A layer above the table asks the table (a row's
``loop``, ``policy``, ``continuous``, ``replay``), or gets a learner's name from its class
(``table.algo_name_of_class``); a script takes its learners from the table or from its command line.

A literal is a ``str`` constant (``ast.Constant``, f-strings' fixed parts among them) equal to a learner's name, or to
a method name ``"<name>-<variant>"`` (``"coma-gru"``, ``"qmix-vd"``). Comments and text inside longer strings
(docstrings, messages) are not literals. The notebooks are out of this test's scope: they teach with the names.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

from marl_edu.learners.table import LEARNERS

ROOT = pathlib.Path(__file__).resolve().parent.parent

# the modules of marl_edu/ that may hold a learner's name, and why
ALLOWED = {
    "marl_edu/learners/table.py": "the table itself: each row's name",
    # its ``method`` argument ("vdn" or "qmix") picks the mixer of a one-step matrix-game fit (notebook 11 calls
    # ``train_matrix_game(payoff, "qmix")``): VDN's and QMIX's own mixers on a toy, not rows of the table, and below
    # the table's layer, so it cannot ask the table
    "marl_edu/learners/matrix_game.py": "VDN's and QMIX's matrix-game fit names its two mixers",
}


def name_literals(source: str, names=tuple(LEARNERS)) -> list[tuple[int, str]]:
    """Every ``(line, literal)`` of ``source`` (Python) whose str constant is one of ``names`` or
    ``"<name>-<variant>"`` (variant: letters and digits)."""
    method = re.compile(rf"^({'|'.join(map(re.escape, names))})-[A-Za-z0-9]+$")
    return sorted((node.lineno, node.value) for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and (node.value in names or method.match(node.value)))


def offending_lines(folder: str, root: pathlib.Path = ROOT) -> list[str]:
    """``path:line: 'literal'`` for every learner-name literal in the .py files under ``root / folder`` (but
    ``ALLOWED``)."""
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative not in ALLOWED:
            found += [f"{relative}:{line}: {value!r}" for line, value in name_literals(path.read_text())]
    return found


def test_the_finder_finds_names_and_method_names_and_nothing_else():
    source = '''
algo = "coma"                      # 2: a name
methods = ["qmix-gru", "iql-vd"]   # 3: method names
label = f"{algo}-gru"              # 4: only "-gru", not a name
about = "coma: a counterfactual"   # 5: longer text
other = ["COMA", "coma_", "coma-", "comagru", "maddpg-mlp-x"]  # 6: none of them
key = {"maddpg_continuous": 1}     # 7: a name as a key
def f(x="vdn"): """coma"""         # 8: a default and a docstring both count
'''
    assert name_literals(source) == [(2, "coma"), (3, "iql-vd"), (3, "qmix-gru"), (7, "maddpg_continuous"),
                                     (8, "coma"), (8, "vdn")]


def test_the_allowed_modules_exist_and_hold_names():  # (a stale exception would hide a module that moved)
    for relative in ALLOWED:
        assert name_literals((ROOT / relative).read_text()), relative


def test_no_learner_name_literal_in_marl_edu_outside_the_table():
    found = offending_lines("marl_edu")
    assert not found, "learner names written outside the table (ask the table):\n" + "\n".join(found)


def test_no_learner_name_literal_in_the_benchmarks():
    found = offending_lines("benchmarks")
    assert not found, "learner names written in the benchmarks (read the table):\n" + "\n".join(found)


@pytest.mark.parametrize("folder", ["marl_edu", "benchmarks"])
def test_a_name_written_in_a_module_would_be_found(folder, tmp_path):
    name = next(iter(LEARNERS))
    planted = tmp_path / folder / "sub" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(f"ALGO = {name!r}\n")
    assert offending_lines(folder, tmp_path) == [f"{folder}/sub/planted.py:1: {name!r}"]
