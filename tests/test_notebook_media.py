"""Every GIF a notebook writes or shows is also a Markdown image of its committed file, in the cell right after.

A kernel's image/gif output (and an <img src="data:image/gif..."> in an HTML output) plays in JupyterLab and Colab,
but GitHub's and nbviewer's renderers and a Markdown export show it as `<IPython.core.display.Image object>`. So,
for each notebook in notebooks/:
- a code cell that calls `save_gif(frames, "NAME.gif")` is followed by a Markdown cell with an image of
  `../media/NAME.gif` (`![what it shows](../media/NAME.gif)` or `<img src="../media/NAME.gif" alt="...">`);
- every GIF in a code cell's committed outputs has the bytes of a file that the Markdown cell right after shows
  (so the web shows what the kernel showed, and a stale output or file is caught);
- every image a Markdown cell shows from the repository exists, is tracked by git, and has alt text that says what
  it shows.
"""

import ast
import base64
import pathlib
import re
import shutil
import subprocess

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))

MARKDOWN_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
HTML_IMAGE = re.compile(r"<img\s[^>]*>", re.IGNORECASE)
ATTRIBUTE = re.compile(r"""(?P<name>[a-z-]+)\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)')""", re.IGNORECASE)
DATA_GIF = re.compile(r"data:image/gif;base64,(?P<data>[A-Za-z0-9+/=\s]+)")


def markdown_images(text: str) -> list[tuple[str, str]]:
    """(src, alt) of every image in a Markdown cell: ![alt](src) and <img src=... alt=...>."""
    images = [(m["src"], m["alt"]) for m in MARKDOWN_IMAGE.finditer(text)]
    for tag in HTML_IMAGE.findall(text):
        attributes = {m["name"].lower(): m["dq"] if m["dq"] is not None else m["sq"] for m in ATTRIBUTE.finditer(tag)}
        images.append((attributes.get("src", ""), attributes.get("alt", "")))
    return images


def is_local(src: str) -> bool:
    return not re.match(r"^([a-z][a-z0-9+.-]*:|//|#)", src, re.IGNORECASE)  # not http:, data:, attachment:, ...


def saved_gifs(source: str) -> list[str | None]:
    """The path of each save_gif call in a code cell, as the notebook names it (None when not a string literal)."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    names = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "save_gif":
            path = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "path"),
                                                                 None)
            names.append(path.value if isinstance(path, ast.Constant) and isinstance(path.value, str) else None)
    return names


def shown_gifs(cell) -> list[bytes]:
    """The bytes of every GIF in a code cell's committed outputs."""
    gifs = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "image/gif" in data:
            gifs.append(base64.b64decode(data["image/gif"]))
        gifs += [base64.b64decode(m["data"]) for m in DATA_GIF.finditer(str(data.get("text/html", "")))]
    return gifs


def tracked_files(root: pathlib.Path) -> set[str] | None:
    """Paths git tracks under root (None outside a git checkout, where only existence is checked)."""
    if not (root / ".git").exists() or shutil.which("git") is None:
        return None
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True).stdout
    return set(listed.decode().split("\0")) - {""}


def media_problems(notebook_path: pathlib.Path, root: pathlib.Path, tracked: set[str] | None) -> list[str]:
    """What keeps a notebook's GIFs from showing wherever it is read, one line each (empty: nothing)."""
    notebook = nbformat.read(notebook_path, as_version=4)
    folder = notebook_path.parent
    problems = []

    def images_in(index: int) -> list[tuple[str, str]]:
        cell = notebook.cells[index] if index < len(notebook.cells) else None
        return markdown_images(cell.source) if cell is not None and cell.cell_type == "markdown" else []

    for index, cell in enumerate(notebook.cells):
        where = f"cell {index}"
        if cell.cell_type == "markdown":
            for src, alt in markdown_images(cell.source):
                if not is_local(src):
                    continue
                file = (folder / src).resolve()
                if not file.is_file():
                    problems.append(f"{where}: shows {src}, which does not exist")
                elif tracked is not None and file.relative_to(root).as_posix() not in tracked:
                    problems.append(f"{where}: shows {src}, which git does not track (commit it)")
                if len(alt.split()) < 3:
                    problems.append(f"{where}: the image {src} needs alt text that says what a reader sees, "
                                    f"got {alt!r}")
            continue
        if cell.cell_type != "code":
            continue
        beside = {(folder / src).resolve() for src, _ in images_in(index + 1) if is_local(src)}
        for name in saved_gifs(cell.source):
            if name is None:
                problems.append(f"{where}: save_gif's path is not a string literal, so its image cannot be checked")
                continue
            path = pathlib.Path(name)
            file = (root / "media" / path if path.parent == pathlib.Path(".") else folder / path).resolve()
            if file not in beside:
                shown = pathlib.Path("..", "media", name).as_posix() if path.parent == pathlib.Path(".") else name
                problems.append(f"{where}: writes {name} but the next cell is not a Markdown image of it "
                                f"(add ![what it shows]({shown}))")
        files = {file.read_bytes() for file in beside if file.is_file()}
        for number, gif in enumerate(shown_gifs(cell)):
            if gif not in files:
                problems.append(f"{where}: output GIF {number} is shown only by the kernel: the next cell has no "
                                f"Markdown image of a file with its bytes (missing, or the output or file is stale)")
    return problems


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_gif_is_a_markdown_image_of_its_committed_file(name):
    problems = media_problems(ROOT / "notebooks" / name, ROOT, tracked_files(ROOT))
    assert not problems, f"{name}:\n" + "\n".join(problems)


# ------------------------------------------------------------------------------------------------
# The checker itself, on a small repository in a temporary folder
# ------------------------------------------------------------------------------------------------

GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"  # stand-ins for GIF bytes: the checker compares bytes only
OTHER_GIF = b"GIF89a\x02\x00\x01\x00\x00\x00\x00;"


def _notebook(tmp_path, cells, files=None) -> pathlib.Path:
    (tmp_path / "media").mkdir(exist_ok=True)
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    for name, data in (files if files is not None else {"a.gif": GIF}).items():
        (tmp_path / "media" / name).write_bytes(data)
    notebook = nbformat.v4.new_notebook(cells=cells)
    path = tmp_path / "notebooks" / "n.ipynb"
    nbformat.write(notebook, path)
    return path


def _writes(name="a.gif", shown=GIF, html=False):
    cell = nbformat.v4.new_code_cell(f'show_gif(save_gif(frames, "{name}", fps=4))')
    encoded = base64.b64encode(shown).decode()
    data = ({"text/html": f'<img src="data:image/gif;base64,{encoded}">'} if html else {"image/gif": encoded})
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
    return cell


ALT = "![both agents reach their switches](../media/a.gif)"


def test_checker_passes_a_gif_with_its_image_beside_it(tmp_path):
    path = _notebook(tmp_path, [_writes(), nbformat.v4.new_markdown_cell(ALT)])
    assert media_problems(path, tmp_path, {"media/a.gif"}) == []
    html = '<img src="../media/a.gif" width="150" alt="both agents reach their switches">'
    path = _notebook(tmp_path, [_writes(html=True), nbformat.v4.new_markdown_cell(html)])
    assert media_problems(path, tmp_path, {"media/a.gif"}) == []


@pytest.mark.parametrize("cells, files, tracked, expected", [
    ([_writes()], None, {"media/a.gif"}, "writes a.gif but the next cell is not a Markdown image of it"),
    ([_writes(), nbformat.v4.new_code_cell("1"), nbformat.v4.new_markdown_cell(ALT)], None, {"media/a.gif"},
     "writes a.gif but the next cell"),  # an image further down is not beside the cell
    ([_writes(), nbformat.v4.new_markdown_cell(ALT)], {}, set(), "shows ../media/a.gif, which does not exist"),
    ([_writes(), nbformat.v4.new_markdown_cell(ALT)], None, set(), "which git does not track"),
    ([_writes(), nbformat.v4.new_markdown_cell("![](../media/a.gif)")], None, {"media/a.gif"}, "needs alt text"),
    ([_writes(shown=OTHER_GIF), nbformat.v4.new_markdown_cell(ALT)], None, {"media/a.gif"},
     "output GIF 0 is shown only by the kernel"),
    ([_writes(html=True), nbformat.v4.new_markdown_cell("no image here")], None, {"media/a.gif"},
     "output GIF 0 is shown only by the kernel"),
    ([nbformat.v4.new_code_cell('save_gif(frames, f"{name}.gif")')], None, set(), "not a string literal"),
])
def test_checker_reports_what_keeps_a_gif_off_the_web(tmp_path, cells, files, tracked, expected):
    problems = media_problems(_notebook(tmp_path, cells, files), tmp_path, tracked)
    assert any(expected in problem for problem in problems), problems
