"""The Colab path: links and setup cells written from pyproject's one address, the cell's three branches, and what
tools/colab_setup.py installs (Colab's own torch, numpy, matplotlib and ipywidgets kept).

The cell is run for real in a separate Python: outside Colab (nothing happens), without the course (it says what to
do), and "in Colab" (a stand-in google.colab module, HOME in a temporary folder, and git told to fetch the course's
address from a local repository), where it clones, runs the setup script and moves to notebooks/.
"""

import copy
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402
import colab_setup  # noqa: E402

REPO = colab.repository()
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def setup_cell(notebook: pathlib.Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def test_every_notebook_and_the_readme_are_in_step_with_pyproject():
    assert colab.main(["--check"]) == 0
    readme = (ROOT / "README.md").read_text()
    for notebook in NOTEBOOKS:
        path = f"notebooks/{notebook.name}"
        title = "".join(json.loads(notebook.read_text())["cells"][0]["source"]).split("\n")
        assert title[1] == colab.colab_link(REPO, path)
        assert f"({colab.colab_url(REPO, path)})" in readme
        assert setup_cell(notebook) == colab.SETUP_CELL.format(repository=REPO)


def test_the_readmes_other_links_follow_the_address():
    text = "git clone https://github.com/old/place && cd place\n[x](https://colab.research.google.com/github/old/place/" \
           "blob/main/notebooks/00_overview.ipynb)\n"
    assert colab.readme_with_links(text, "https://github.com/new/home") == (
        "git clone https://github.com/new/home && cd place\n"
        "[x](https://colab.research.google.com/github/new/home/blob/main/notebooks/00_overview.ipynb)\n")


def test_links_by_hand():
    assert colab.colab_url("https://github.com/someone/course", "notebooks/00_overview.ipynb") == \
        "https://colab.research.google.com/github/someone/course/blob/main/notebooks/00_overview.ipynb"


def test_a_new_address_rewrites_links_and_cell_once():
    notebook = json.loads(NOTEBOOKS[0].read_text())
    cells_before = len(notebook["cells"])
    moved = colab.with_colab(copy.deepcopy(notebook), "https://github.com/someone/course", "notebooks/x.ipynb")
    again = colab.with_colab(copy.deepcopy(moved), "https://github.com/someone/course", "notebooks/x.ipynb")
    assert moved == again and len(moved["cells"]) == cells_before
    assert "github/someone/course/blob/main/notebooks/x.ipynb" in "".join(moved["cells"][0]["source"])
    assert 'COURSE = "https://github.com/someone/course"' in "".join(moved["cells"][1]["source"])


def test_a_notebook_without_the_cell_gets_it_after_the_title():
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "text"]},
                          {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
                           "source": ["import marl_edu"]}], "nbformat": 4, "nbformat_minor": 5}
    done = colab.with_colab(notebook, REPO, "notebooks/99_new.ipynb")
    assert [c["cell_type"] for c in done["cells"]] == ["markdown", "code", "code"]
    assert done["cells"][0]["source"] == ["# Title\n", colab.colab_link(REPO, "notebooks/99_new.ipynb") + "\n", "text"]
    assert "".join(done["cells"][1]["source"]).startswith(colab.SETUP_MARKER)
    assert done["cells"][2]["source"] == ["import marl_edu"]


def test_the_address_must_be_a_github_repository(monkeypatch, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project.urls]\nRepository = "https://example.org/course"\n')
    monkeypatch.setattr(colab, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match="https://github.com/OWNER/NAME"):
        colab.repository()


def run_cell(code: str, cwd: pathlib.Path, env: dict, isolated: bool = False) -> subprocess.CompletedProcess:
    probe = code + "\nimport os, sys; print('CWD', os.getcwd()); print('PATH0', sys.path[0])"
    args = [sys.executable, *(["-S"] if isolated else []), "-c", probe]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_outside_colab_in_the_course_the_cell_does_nothing():
    result = run_cell(setup_cell(NOTEBOOKS[0]), ROOT / "notebooks", dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"CWD {ROOT / 'notebooks'}\nPATH0 \n"


def test_in_a_copy_of_the_notebooks_the_cell_says_where_things_are(tmp_path):
    result = run_cell(setup_cell(NOTEBOOKS[0]), tmp_path, dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"Working from a copy: the committed runs are read from {ROOT / 'results'}, new GIFs go "
                             f"to {tmp_path / 'media'}; the pictures in the text show from the course's own "
                             f"notebooks/ folder.\nCWD {tmp_path}\nPATH0 \n")


def test_without_the_course_the_cell_says_what_to_do(tmp_path):
    # -S: no site-packages, so marl_edu cannot be found, as in a kernel where the course was never installed
    result = run_cell(setup_cell(NOTEBOOKS[0]), tmp_path, {"PATH": os.environ["PATH"]}, isolated=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"This notebook needs the whole course (its marl_edu package, results/ and media/): "
                                    f"git clone {REPO}, then `make lab` in it")
    assert "Colab" in result.stdout


def git(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_in_colab_the_cell_clones_sets_up_and_moves_to_notebooks(tmp_path):
    course = tmp_path / "published"  # what the course's address serves, with a setup script that leaves a mark
    (course / "tools").mkdir(parents=True)
    (course / "notebooks").mkdir()
    (course / "notebooks" / "README").write_text("notebooks\n")
    (course / "tools" / "colab_setup.py").write_text(
        "import pathlib, sys\npathlib.Path(sys.argv[0]).parent.parent.joinpath('SETUP_RAN').write_text('yes')\n")
    git("init", "--quiet", "-b", "main", cwd=course)
    git("add", ".", cwd=course)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "course", cwd=course)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f'[url "{course.as_uri()}"]\n\tinsteadOf = {REPO}\n')
    (tmp_path / "fake" / "google" / "colab").mkdir(parents=True)
    (tmp_path / "fake" / "google" / "colab" / "__init__.py").write_text("")
    content = tmp_path / "content"  # Colab's working folder
    content.mkdir()
    code = "import google.colab\n" + setup_cell(NOTEBOOKS[0])  # Colab imports google.colab before any cell
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(tmp_path / "fake")}
    for attempt in ("first", "second"):  # a second run reuses the clone
        result = run_cell(code, content, env)
        assert result.returncode == 0, (attempt, result.stderr)
        clone = home / "marl-edu"
        assert result.stdout == f"CWD {clone / 'notebooks'}\nPATH0 {clone}\n"
        assert (clone / "SETUP_RAN").read_text() == "yes"
        (clone / "SETUP_RAN").unlink()


def test_colab_setup_keeps_colabs_builds_and_pins_only_what_is_missing(monkeypatch, tmp_path):
    versions = {"torch": "2.11.0+cpu", "numpy": "2.1.3", "matplotlib": "3.10.0", "ipywidgets": "7.7.1",
                "pillow": "11.3.0", "tqdm": "4.67.3"}
    monkeypatch.setattr(colab_setup, "installed", lambda name: versions.get(name.lower()))
    wanted = ["torch>=2.11,<2.14", "numpy>=1.26,<2.3", "matplotlib>=3.8", "ipywidgets>=7.7,<9", "pillow>=10",
              "tqdm>=4.66", "ma-gym==0.0.13"]
    text, install = colab_setup.constraints(wanted)
    pins = text.splitlines()
    assert pins[:4] == ["torch==2.11.0+cpu", "numpy==2.1.3", "matplotlib==3.10.0", "ipywidgets==7.7.1"]
    assert install == wanted
    tested = [line for line in (ROOT / "constraints" / f"python{sys.version_info[0]}.{sys.version_info[1]}.txt")
              .read_text().splitlines() if not line.startswith("#")]
    assert "ma-gym==0.0.13" in pins[4:]
    assert not [line for line in pins[4:] if line.split("==")[0].lower() in versions]  # installed: never pinned
    assert set(pins[4:]) <= set(tested)


def test_colab_setup_keeps_a_colab_torch_outside_the_range_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(colab_setup, "installed", lambda name: {"torch": "2.15.0", "numpy": "2.1.3"}.get(name))
    text, install = colab_setup.constraints(["torch>=2.11,<2.14", "numpy>=1.26,<2.3"])
    assert text.splitlines()[:2] == ["torch==2.15.0", "numpy==2.1.3"]
    assert install == ["numpy>=1.26,<2.3"]  # torch's range is not asked for, so pip keeps Colab's without a conflict
    assert "WARNING: this runtime's torch 2.15.0 is outside the course's tested range '<2.14,>=2.11'" in \
        capsys.readouterr().out


def test_colab_setup_refuses_to_run_outside_colab(monkeypatch):
    # it uninstalls and installs packages in the Python that runs it: never in a learner's own environment
    monkeypatch.setattr(colab_setup.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit, match="this sets up a Google Colab runtime.*use make setup"):
        colab_setup.main([])
