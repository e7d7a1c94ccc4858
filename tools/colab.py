"""Write every notebook's "Open in Colab" link and Colab setup cell, and the README's links, from pyproject.toml.

The course's public address is written in one place, pyproject.toml's [project.urls] Repository. This script puts
into every notebook under notebooks/:
- an "Open in Colab" link under the title (second line of the first Markdown cell): a text link, not Colab's badge
  image, so that nothing on the page loads from elsewhere (the browser tests run offline and fail on any error);
- a first code cell that does nothing outside Google Colab and, inside it, fetches the course, installs what Colab
  lacks (tools/colab_setup.py) and works from the course's notebooks/ folder, so results/ and media/ are found;
and into the README: the same Colab link for each notebook of the course table, and the address in its other Colab
links and its `git clone` line.

Run it after changing the address or adding a notebook: python tools/colab.py
`--check` changes nothing and exits 1 if a file is out of date (a unit test runs it).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK_TEXT = "Open in Colab"
SETUP_MARKER = "# Colab setup"  # the first line of the setup cell: how this script recognises it

SETUP_CELL = '''\
# Colab setup (written by tools/colab.py). In Google Colab: fetch the course, install what Colab lacks (about a minute
# per runtime) and work from its notebooks/ folder. Anywhere else it checks that the course is installed and, in a
# copy of notebooks/, says in one line where the course's results are read from and where new GIFs go.
import importlib.util, os, subprocess, sys

COURSE = "{repository}"
if "google.colab" in sys.modules:
    course_dir = os.path.expanduser("~/marl-edu")
    if not os.path.isdir(course_dir):
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", COURSE, course_dir], check=True)
    subprocess.run([sys.executable, os.path.join(course_dir, "tools", "colab_setup.py")], check=True)
    sys.path.insert(0, course_dir)
    os.chdir(os.path.join(course_dir, "notebooks"))
elif importlib.util.find_spec("marl_edu") is None:
    print(f"This notebook needs the whole course (its marl_edu package, results/ and media/): git clone {{COURSE}},"
          " then `make lab` in it (see its README); or open this notebook in Google Colab with the link at the top.")
else:
    from marl_edu.base.course_paths import COURSE_ROOT, media_dir
    if media_dir() != COURSE_ROOT / "media":  # a copy of notebooks/, elsewhere: say where things are, once
        print(f"Working from a copy: the committed runs are read from {{COURSE_ROOT / 'results'}}, new GIFs go to "
              f"{{media_dir()}}; the pictures in the text show from the course's own notebooks/ folder.")'''


def repository() -> str:
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        sys.exit(f"colab: pyproject's Repository must be https://github.com/OWNER/NAME for Colab, not {url!r}")
    return url


def colab_url(repo: str, notebook: str) -> str:
    return f"https://colab.research.google.com/github/{repo.removeprefix('https://github.com/')}/blob/main/{notebook}"


def colab_link(repo: str, notebook: str) -> str:
    """The Markdown link that opens `notebook` (a path inside the repository) in Colab."""
    return f"[{LINK_TEXT}]({colab_url(repo, notebook)})"


def source_lines(text: str) -> list[str]:
    """A notebook cell's source as Jupyter stores it: lines that keep their newline, the last one without."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def with_colab(notebook: dict, repo: str, path: str) -> dict:
    """The notebook with its Colab link and setup cell in place (added, or replaced if out of date)."""
    cells = notebook["cells"]
    title = "".join(cells[0]["source"]).split("\n")
    if cells[0]["cell_type"] != "markdown" or not title[0].startswith("# "):
        sys.exit(f"colab: {path} must open with a Markdown cell whose first line is the title")
    if len(title) > 1 and title[1].startswith(f"[{LINK_TEXT}]"):
        title[1] = colab_link(repo, path)
    else:
        title[1:1] = [colab_link(repo, path)]
    cells[0]["source"] = source_lines("\n".join(title))
    setup = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": source_lines(SETUP_CELL.format(repository=repo))}
    first_code = next(i for i, cell in enumerate(cells) if cell["cell_type"] == "code")
    if "".join(cells[first_code]["source"]).startswith(SETUP_MARKER):
        setup["id"] = cells[first_code].get("id", "colab-setup")
        setup["execution_count"] = cells[first_code]["execution_count"]
        cells[first_code] = setup
    else:
        setup["id"] = "colab-setup"
        cells.insert(1, setup)
    if notebook.get("nbformat_minor", 0) < 5:
        del setup["id"]
    return notebook


def notebook_text(notebook: dict) -> str:
    """The JSON layout Jupyter writes (one-space indent, keys sorted, non-ASCII kept), so diffs stay small."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def readme_with_links(text: str, repo: str) -> str:
    """Every course-table row that opens with a link to notebooks/NN_name.ipynb gets (or keeps) its Colab link;
    every other Colab link and `git clone` line in the README points at the address too."""
    def row(match: re.Match) -> str:
        return f"| {match.group(1)} · {colab_link(repo, match.group(2))} |"
    text = re.sub(r"^\| (\[\d\d [^]]*\]\((notebooks/\d\d_\w+\.ipynb)\))"
                  r"(?: · \[Open in Colab\]\([^)]*\))? \|",
                  row, text, flags=re.MULTILINE)
    text = re.sub(r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/main/",
                  colab_url(repo, ""), text)
    return re.sub(r"git clone https://github\.com/[\w.-]+/[\w.-]+", f"git clone {repo}", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is out of date")
    args = parser.parse_args(argv)
    repo = repository()
    stale = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = path.read_text()
        new = notebook_text(with_colab(json.loads(text), repo, f"notebooks/{path.name}"))
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new)
    readme = ROOT / "README.md"
    text = readme.read_text()
    new = readme_with_links(text, repo)
    if new != text:
        stale.append(readme)
        if not args.check:
            readme.write_text(new)
    for path in stale:
        print(f"{'out of date' if args.check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
