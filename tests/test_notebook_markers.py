"""nbval honours a marker comment only when the comment is the marker alone: ``# NBVAL_IGNORE_OUTPUT  (progress
bar)`` is silently not a marker, and the cell's output is compared after all. Every NBVAL comment in a notebook must
be one nbval recognises (the reason goes on the next line)."""

import json
import pathlib

import pytest
from nbval.plugin import comment_markers, find_comment_markers

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_every_nbval_comment_is_a_marker_nbval_recognises(path):
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            comment = line.strip().lstrip("#").strip() if line.strip().startswith("#") else ""
            if "NBVAL" in comment:
                assert comment in comment_markers, f"{path.name} cell {index}: {line.strip()!r} is not a marker"


def test_the_check_itself_sees_what_nbval_sees():
    assert dict(find_comment_markers("# NBVAL_IGNORE_OUTPUT\n# (a progress bar)\nx = 1"))
    assert not dict(find_comment_markers("# NBVAL_IGNORE_OUTPUT  (a progress bar)\nx = 1"))
