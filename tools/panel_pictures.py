"""What a notebook's training panel draws after one press of **train** at its defaults, kept for a reader who cannot
run the panel: on GitHub or the course's website a panel is only a note (book/widget_note.py), and a "press train and
you will see ..." needs a picture beside it.

    .venv/bin/python tools/panel_pictures.py 13_ippo_and_mappo    # writes media/panel_13_ippo_and_mappo.png and .json

It executes a copy of the notebook in a fresh kernel up to the cell that builds the panel (the notebook itself is
not written), then presses the panel's button in that kernel as a learner's click does (``Button.click`` runs the
same handler), and writes what the panel then shows: its picture (media/panel_<notebook>.png) and, in
media/panel_<notebook>.json, the slider values it trained with, its status line and the press's evaluations, greedy
and sampled. The notebook shows the picture under the panel; tests/test_panel_pictures.py holds the notebook's words
about the press to the JSON, and the JSON's settings to the panel's current defaults.
"""

from __future__ import annotations

import argparse
import base64
import json
import pathlib
import re
import sys

from marl_edu.base.files import atomic_write_bytes, atomic_write_text

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MEDIA = ROOT / "media"
PANEL_CALL = re.compile(r"^\w+_panel\(", re.MULTILINE)  # the statement that builds (and shows) the panel
MARK = "PANEL-PRESS "

# Run in the notebook's kernel right after the panel's cell, whose value is the newest in IPython's ``Out`` (not
# ``_``: a notebook that assigns ``_`` itself, as ``_ = torch.manual_seed(SEED)``, stops IPython updating it).
PRESS = f'''import base64 as _b64, json as _json
_panel = Out[max(Out)]
_panel.button.click()
if _panel.run is None:  # a setting the panel refused: its status line says which
    raise RuntimeError("the press trained nothing: " + _panel.status.value)
print("{MARK}" + _json.dumps({{"settings": _panel.settings, "status": _panel.status.value,
                              "evaluations": _panel.run["evaluations"],
                              "sampled_evaluations": _panel.run.get("sampled_evaluations") or [],
                              "episodes": len(_panel.run["episode_returns"]),
                              "png": _b64.b64encode(_panel.image.value).decode()}}))'''


def paths(name: str) -> tuple[pathlib.Path, pathlib.Path]:
    """The picture and the record of notebook ``name``'s press (no .ipynb)."""
    return MEDIA / f"panel_{name}.png", MEDIA / f"panel_{name}.json"


def press(path: pathlib.Path) -> dict:
    """Execute the notebook at ``path`` up to its panel in its folder, press train, return the record (with the
    picture as base64 PNG). ValueError for a missing notebook, or one without exactly one cell that builds a panel."""
    import nbformat
    from nbclient import NotebookClient

    if not path.is_file():
        raise ValueError(f"no notebook {path}")
    nb = nbformat.read(path, as_version=4)
    found = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and PANEL_CALL.search(cell.source)]
    if len(found) != 1:
        raise ValueError(f"{path.name}: expected one cell that builds a training panel, found {len(found)}")
    nb.cells = nb.cells[:found[0] + 1] + [nbformat.v4.new_code_cell(PRESS)]
    client = NotebookClient(nb, timeout=3600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for output in nb.cells[-1].outputs:
        for line in output.get("text", "").splitlines():
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
    raise RuntimeError(f"{path.name}: the press printed no record: {nb.cells[-1].outputs}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", help="notebook names without .ipynb, e.g. 13_ippo_and_mappo")
    args = parser.parse_args(argv)
    for name in args.notebooks:
        record = press(NOTEBOOKS / f"{name}.ipynb")
        picture, data = paths(name)
        atomic_write_bytes(picture, base64.b64decode(record.pop("png")))
        atomic_write_text(data, json.dumps(record, indent=1) + "\n")
        print(f"wrote: {picture.relative_to(ROOT)} and {data.relative_to(ROOT)} ({record['status']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
