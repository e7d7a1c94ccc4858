"""Every notebook, as a learner runs it in JupyterLab in a real browser (Debian's Chromium via Playwright).

For each notebook: open it (a new kernel), clear all outputs, Run > Run All Cells, save, and check that every code
cell ran once, in order, without an error; that no widget failed to render and the page logged no error;
that every GIF is displayed and plays. Notebooks with widgets are then used: a slider is moved (and in the
training panels a readout typed into and the train button pressed) and the output must change. A
screenshot of each notebook's first screen goes to tests/browser/screenshots/ (ignored by git).

Run with `make test-browser` (it installs Chromium and Playwright first).
"""

import pathlib
import re

import nbformat
import pytest

from conftest import ROOT, SCREENSHOTS
from lab_page import (NOTEBOOK, gif_frames_differ, image_src, nudge, open_notebook, plays, readout, run_all, save,
                      slider, type_into_readout, widget_errors)

NOTEBOOKS = sorted(path.name for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# Console messages that are JupyterLab's own, not the course's: its debugger panel asks the kernel for its
# state when the notebook opens, and the restart we press right after cancels that request.
BENIGN_CONSOLE = re.compile(r"^Could not restore the debugger state: Canceled future for debug_request")


def _saved_gifs(notebook) -> int:
    """GIFs the executed notebook displays: image/gif outputs and <img src="data:image/gif..."> in HTML outputs."""
    count = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            count += "image/gif" in data
            count += str(data.get("text/html", "")).count("data:image/gif")
    return count


def _check_ran_cleanly(path: pathlib.Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), f"cells did not all run once, in order, in a fresh kernel: {counts}"
    errors = [(i, output.ename, output.evalue) for i, cell in enumerate(code) for output in cell.outputs
              if output.output_type == "error"]
    assert not errors, f"cells raised: {errors}"
    return notebook


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_jupyterlab(lab, page, name):
    open_notebook(page, lab, name)
    seconds = run_all(page)
    print(f"{name}: ran all cells in {seconds:.1f} s in JupyterLab")
    page.locator(f"{NOTEBOOK} .jp-WindowedPanel-outer").first.evaluate("element => element.scrollTo(0, 0)")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{pathlib.Path(name).stem}.png")

    path = lab.root / "notebooks" / name
    save(page, path)
    notebook = _check_ran_cleanly(path)
    assert not widget_errors(page), f"widgets failed to render: {widget_errors(page)}"

    gifs = page.locator(".jp-OutputArea-output img[src^='data:image/gif']")
    assert gifs.count() == _saved_gifs(notebook), "every GIF the notebook outputs is on the page"
    for index in range(gifs.count()):
        gif = gifs.nth(index)
        natural_width = gif.evaluate("image => image.complete ? image.naturalWidth : 0")
        assert natural_width > 0, f"GIF {index} did not decode in the browser"
        if gif_frames_differ(image_src(gif)):
            assert plays(gif), f"GIF {index} has several frames but does not animate on the page"

    INTERACTIONS.get(name, lambda page: None)(page)
    errors = [message for message in page.console_errors if not BENIGN_CONSOLE.search(message)]
    assert not errors, f"the page logged errors: {errors}"


# ------------------------------------------------------------------------------------------------
# Using the widgets: each function moves what a learner would move and checks that the output follows
# ------------------------------------------------------------------------------------------------

def _episode_explorer(page):
    step = slider(page, "step t")
    explorer = page.locator(".widget-vbox", has=step).first
    scene = explorer.locator("img").first
    table = explorer.locator(".widget-html").first
    before_scene, before_table = image_src(scene), table.inner_text()
    assert "t = 0" in before_table
    nudge(step, "ArrowRight", times=3)
    page.wait_for_function("table => table.innerText.includes('t = 3')", arg=table.element_handle(), timeout=10_000)
    assert readout(step) == "3"
    assert image_src(scene) != before_scene, "the scene did not change with the step slider"


def _advantage_explorer(page):
    q_up = slider(page, "Q(UP)")
    panel = page.locator(".widget-vbox", has=q_up).first  # the outermost box: sliders, summary and chart
    summary = panel.locator(".widget-html").first
    chart = panel.locator("img").first
    before_summary, before_chart = summary.inner_text(), image_src(chart)
    nudge(q_up, "ArrowRight", times=20)  # +2.0 in steps of 0.1
    page.wait_for_function("([el, old]) => el.innerText !== old", arg=[summary.element_handle(), before_summary],
                           timeout=10_000)
    assert "(always 0)" in summary.inner_text()
    assert image_src(chart) != before_chart, "the advantage chart did not redraw"


def _training_panel(episodes: int, screenshot: str):
    def use(page):
        episodes_slider = slider(page, "episodes")
        panel = page.locator(".widget-vbox", has=episodes_slider).first  # the panel around the slider grid
        curve = panel.locator("img").last
        status = panel.locator(".widget-html").last
        before_curve = image_src(curve)
        type_into_readout(episodes_slider, episodes)
        assert readout(episodes_slider) == str(episodes)
        nudge(slider(page, "seed"), "ArrowRight")
        panel.locator("button", has_text="train").click()
        # the tqdm.auto bar shows while it trains (leave=False removes it at the end)
        panel.locator(".widget-hprogress").first.wait_for(state="visible", timeout=30_000)
        page.wait_for_function("el => el.innerText.startsWith('done')", arg=status.element_handle(), timeout=180_000)
        ran = int(re.match(r"done: (\d+) episodes", status.inner_text()).group(1))
        assert episodes <= ran < episodes + 64, status.inner_text()  # whole batches of the parallel env copies
        page.wait_for_function("([el, old]) => el.src !== old", arg=[curve.element_handle(), before_curve],
                               timeout=10_000)
        panel.scroll_into_view_if_needed()
        page.screenshot(path=SCREENSHOTS / screenshot)
    return use


INTERACTIONS = {
    "01_information_flow.ipynb": _episode_explorer,
    "04_maddpg_training.ipynb": _training_panel(episodes=100, screenshot="04_maddpg_panel.png"),
    "06_coma_advantage.ipynb": _advantage_explorer,
    "07_coma_training.ipynb": _training_panel(episodes=320, screenshot="07_coma_panel.png"),
}


def _controls(name: str) -> set[str]:
    """Model names of the sliders, buttons and checkboxes in the committed notebook's widget state (progress bars,
    images and HTML are not something a learner moves)."""
    notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    state = notebook.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return {model["model_name"] for model in state.values()
            if re.search(r"Slider|Button|Checkbox|Dropdown|Text", model["model_name"])
            and not model["model_name"].endswith("StyleModel")}


def test_every_notebook_with_controls_is_exercised():
    with_controls = {name for name in NOTEBOOKS if _controls(name)}
    assert with_controls == set(INTERACTIONS), "a notebook with sliders or buttons needs an interaction above"
