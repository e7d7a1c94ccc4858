"""Every notebook runs from a copy of the notebooks/ folder (issue 44): its code never reaches the course's files by a
path relative to notebooks/ ("../results", "../media"), which from a copy points outside it or at nothing. Committed
runs are found through the package (marl_edu.base.course_paths.results_dir), new GIFs go where save_gif puts them
(course_paths.media_dir: beside a copy). Markdown images of ../media stay: they only show the committed GIFs on the
web."""

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
RELATIVE = re.compile(r"""["']\.\./""")  # a string literal that starts by climbing out of the notebook's folder


def relative_paths(notebook: dict) -> list[str]:
    """``cell k: line`` for every line of a code cell holding a string that starts with ``../``."""
    found = []
    for k, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            if RELATIVE.search(line):
                found.append(f"cell {k}: {line.strip()}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_no_code_cell_reaches_the_course_by_a_relative_path(path):
    found = relative_paths(json.loads(path.read_text()))
    assert not found, (f"{path.name} reads or writes the course's files relative to notebooks/, which breaks in a copy "
                       f"of the folder; use marl_edu.base.course_paths.results_dir(...) or save_gif's bare name: {found}")


def test_the_rule_catches_a_relative_path_and_spares_markdown():
    code = {"cell_type": "code", "source": ['RUNS = pathlib.Path("../results/coma")\n']}
    markdown = {"cell_type": "markdown", "source": ["![a GIF](../media/switch2_coma.gif)"]}
    fine = {"cell_type": "code", "source": ['RUNS = results_dir("coma")  # not "results/../x"\n']}
    assert relative_paths({"cells": [markdown, code, fine]}) == ['cell 1: RUNS = pathlib.Path("../results/coma")']
