"""Every notebook, as a learner runs it in JupyterLab in a real browser (Debian's Chromium via Playwright).

For each notebook: open it (a new kernel), clear all outputs, Run > Run All Cells, save, and check that no cell raised
and every code cell ran once, in order; that no widget failed to render and the page logged no error; that the GIFs
the committed notebook shows are displayed, decoded, and play, both as outputs and as Markdown images of their files.
Notebooks with controls are then used: a slider is moved (and in the training panels a readout typed into and the
train button pressed), the output must change in the way the numbers say, and no error may appear. A screenshot of
each notebook's first screen goes to tests/browser/screenshots/ (ignored by git), also when the run fails.

Run with `make test-browser` (it installs Chromium and Playwright first).
"""

import pathlib
import re
import time

import nbformat
import pytest
from PIL import Image

from lab_page import (NOTEBOOK, ROOT, SCREENSHOTS, cell_output, error_outputs, gif_frames_differ, image_src,
                      longest_frame_seconds, nudge, open_notebook, plays, readout, run_all, save, slider,
                      type_into_readout, wait_until_decoded, widget_errors)

NOTEBOOKS = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
SWITCH_ACTIONS = ("DOWN", "LEFT", "UP", "RIGHT", "NOOP")  # Switch2's action meanings, in order


def _committed(name: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "notebooks" / name, as_version=4)


def _gifs(notebook) -> int:
    """GIFs a notebook displays: image/gif outputs and <img src="data:image/gif..."> in HTML outputs."""
    count = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            count += "image/gif" in data
            count += str(data.get("text/html", "")).count("data:image/gif")
    return count


def _markdown_gifs(notebook) -> list[str]:
    """The GIFs the notebook's Markdown cells show (![alt](../media/NAME.gif) or <img src="...gif">), in order, as
    paths relative to notebooks/."""
    srcs = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            srcs += re.findall(r"!\[[^\]]*\]\(([^)\s]+\.gif)\)|<img\s[^>]*src=\"([^\"]+\.gif)\"", cell.source)
    return [markdown or html for markdown, html in srcs]


def _check_ran_cleanly(path: pathlib.Path) -> nbformat.NotebookNode:
    """The saved notebook: no cell raised (named by its index in the notebook), every code cell ran once, in order."""
    notebook = nbformat.read(path, as_version=4)
    errors = [(index, output.ename, output.evalue) for index, cell in enumerate(notebook.cells)
              for output in cell.get("outputs", []) if output.output_type == "error"]
    assert not errors, f"cells raised (cell index, exception, message): {errors}"
    counts = [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), f"cells did not all run once, in order, in a new kernel: {counts}"
    return notebook


def _screenshot_first_screen(page, name: str) -> None:
    """The top of the notebook as shown (or whatever the page shows, when the notebook never opened)."""
    scroller = page.locator(f"{NOTEBOOK} .jp-WindowedPanel-outer")
    if scroller.count():
        scroller.first.evaluate("element => element.scrollTo(0, 0)")
    page.screenshot(path=SCREENSHOTS / f"{pathlib.Path(name).stem}.png")


def test_notebook_runs_in_jupyterlab(lab, page, name):  # (name: every notebook, pytest_generate_tests below)
    """Run all cells in JupyterLab, then check the saved file, the page, the GIFs, and use the notebook's controls."""
    SCREENSHOTS.mkdir(exist_ok=True)
    (SCREENSHOTS / f"{pathlib.Path(name).stem}.png").unlink(missing_ok=True)  # no stale picture from an earlier run
    committed = _committed(name)
    try:
        open_notebook(page, lab, name)
        seconds = run_all(page, code_cells=sum(cell.cell_type == "code" for cell in committed.cells))
        print(f"{name}: ran all cells in {seconds:.1f} s in JupyterLab")
    finally:
        _screenshot_first_screen(page, name)

    path = lab.root / "notebooks" / name
    save(page, path)
    notebook = _check_ran_cleanly(path)
    assert not widget_errors(page), f"widgets failed to render: {widget_errors(page)}"

    gifs = page.locator(f"{NOTEBOOK} .jp-OutputArea-output img[src^='data:image/gif']")
    assert gifs.count() == _gifs(notebook) == _gifs(committed), "the page shows every GIF the committed notebook shows"
    for index in range(gifs.count()):
        gif = gifs.nth(index)
        wait_until_decoded(page, gif)
        if gif_frames_differ(image_src(gif)):
            watch = longest_frame_seconds(image_src(gif)) + 3.0  # a whole frame, and time for the next one
            assert plays(gif, watch), f"GIF {index} has several frames but does not animate on the page"
    # the same GIFs as Markdown images of their files (what GitHub and nbviewer show): served from ../media and
    # ../results and decoded at the file's size. Whether they animate is checked on the outputs above, which
    # tests/test_notebook_media.py proves to hold the same bytes (watching both would double the time, and a
    # screenshot every quarter second can miss a 250 ms frame between two long ones).
    srcs = _markdown_gifs(committed)
    images = page.locator(f"{NOTEBOOK} .jp-MarkdownCell .jp-RenderedMarkdown img[src*='.gif']")
    assert images.count() == len(srcs), "the page shows every GIF that the notebook's Markdown cells show"
    for index, src in enumerate(srcs):
        image = images.nth(index)
        assert src.removeprefix("../") in image_src(image), (src, image_src(image))  # served from the server's files
        wait_until_decoded(page, image)
        size = image.evaluate("image => [image.naturalWidth, image.naturalHeight]")
        assert tuple(size) == Image.open(ROOT / "notebooks" / src).size, (src, size)

    INTERACTIONS.get(name, lambda page: None)(page)
    assert not error_outputs(page), f"errors on the page after using it: {error_outputs(page)}"
    assert not widget_errors(page), f"widgets failed to render after using them: {widget_errors(page)}"
    assert not page.console_errors, f"the page logged errors: {page.console_errors}"


# ------------------------------------------------------------------------------------------------
# Using the controls: each function moves what a learner would move and checks that the output follows
# ------------------------------------------------------------------------------------------------

def _episode_explorer(page):
    """01: three steps right on the "step t" slider: the table reads t = 3 and the scene is redrawn."""
    step = slider(page, "step t")
    output = cell_output(page, "step t")
    scene, table = output.locator("img").first, output.locator(".widget-html").first
    before_scene = image_src(scene)
    assert "t = 0" in table.inner_text()
    nudge(step, "ArrowRight", times=3)
    page.wait_for_function("table => table.innerText.includes('t = 3')", arg=table.element_handle(), timeout=10_000)
    assert readout(step) == "3"
    assert image_src(scene) != before_scene, "the scene did not change with the step slider"


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"no {pattern!r} in {text!r}"
    return float(match.group(1))


def _advantage_explorer(page):
    """07: Q(UP) up by 2.0 moves the baseline Qbar_i by pi(UP) * 2.0, the COMA advantages still average 0, and the chart
    is redrawn."""
    q_up = slider(page, "Q(UP)")
    output = cell_output(page, "Q(UP)")
    summary, chart = output.locator(".widget-html").first, output.locator("img").first
    before_text, before_chart, before_q = summary.inner_text(), image_src(chart), float(readout(q_up))
    weights = [float(readout(slider(page, f"pi({action}) weight"))) for action in SWITCH_ACTIONS]
    pi_up = weights[2] / sum(weights)  # the explorer normalises the weights to probabilities
    baseline = r"= sum_k pi\(k\) Q_k = (-?[\d.]+)"  # "baseline Qbar_i = sum_k pi(k) Q_k = 2.00"
    expected = _number(baseline, before_text) + pi_up * 2.0  # Qbar_i = sum_k pi(k) Q_k is linear in Q(UP)
    nudge(q_up, "ArrowRight", times=20)  # +2.0 in steps of 0.1; each step is a round trip to the kernel
    deadline = time.monotonic() + 15
    while abs(_number(baseline, summary.inner_text()) - expected) > 0.011 and time.monotonic() < deadline:
        time.sleep(0.2)
    after_text = summary.inner_text()
    assert _number(baseline, after_text) == pytest.approx(expected, abs=0.011), (before_text, after_text)
    assert float(readout(q_up)) == pytest.approx(before_q + 2.0)
    assert abs(_number(r"COMA advantages: ([-+][\d.]+)", after_text)) == 0.0  # sum_k pi(k) (Q_k - Qbar_i) = 0
    assert image_src(chart) != before_chart, "the advantage chart did not redraw"


def _training_panel(episodes: int, screenshot: str, seed_steps: int = 1, solves: bool = False, ci: bool = False):
    """05, 08, 13 and 17: type an episode count, move the seed ``seed_steps`` to the right, press train; a progress bar
    shows, the status line says done with at least that many episodes, and the curve is redrawn. With ``solves``, the
    run's last greedy team return must be at least 8.0 (the README's screenshot shows a run that solves). With ``ci``,
    the one of the four panels CI drives (they are one ``widgets.training_panel``)."""
    def use(page):
        episodes_slider = slider(page, "episodes")
        output = cell_output(page, "episodes")
        curve, status = output.locator("img").last, output.locator(".widget-html").last
        before_curve = image_src(curve)
        type_into_readout(episodes_slider, episodes)
        assert readout(episodes_slider) == str(episodes)
        nudge(slider(page, "seed"), "ArrowRight", times=seed_steps)
        output.locator("button", has_text="train").click()
        # the tqdm.auto bar shows while it trains (leave=False removes it at the end)
        output.locator(".widget-hprogress").first.wait_for(state="visible", timeout=30_000)
        page.wait_for_function("el => /^(done|not trained)/.test(el.innerText)", arg=status.element_handle(),
                               timeout=180_000)
        ran = int(_number(r"^done: (\d+) episodes", status.inner_text()))
        assert episodes <= ran < episodes + 64, status.inner_text()  # whole batches of the parallel env copies
        if solves:
            assert _number(r"last greedy team return ([-\d.]+)", status.inner_text()) >= 8.0, status.inner_text()
        page.wait_for_function("([el, old]) => el.src !== old", arg=[curve.element_handle(), before_curve],
                               timeout=10_000)
        output.scroll_into_view_if_needed()
        page.screenshot(path=SCREENSHOTS / screenshot)
    use.trains, use.ci = True, ci  # the longest browser tests (pytest_generate_tests starts them first)
    return use


def _matrix_game_panel(page):
    """11: P(action 0) three steps right, from 1/3 (uniform) to 0.45, above VDN's threshold 0.375 (worked by hand in the
    notebook): the panel refits both methods, VDN's agents now play the optimum (0, 0), and the tables are redrawn."""
    p0 = slider(page, "P(action 0)")
    output = cell_output(page, "P(action 0)")
    summary, tables = output.locator(".widget-html").first, output.locator("img").first
    before_tables = image_src(tables)
    before = summary.inner_text()  # its last line, "by hand, VDN plays (0, 0) when ...", names (0, 0) either way
    assert readout(p0) == "1/3 (uniform)" and "VDN plays (0, 0): payoff" not in before and "(no here)" in before, before
    nudge(p0, "ArrowRight", times=3)  # 0.35, 0.4, 0.45: each a refit of about two seconds
    page.wait_for_function("el => el.innerText.includes('probability 0.45')", arg=summary.element_handle(),
                           timeout=60_000)
    after = summary.inner_text()
    assert "VDN plays (0, 0): payoff 8" in after and "(yes here)" in after, after
    assert readout(p0) == "0.45"
    page.wait_for_function("([el, old]) => el.src !== old", arg=[tables.element_handle(), before_tables],
                           timeout=10_000)


_matrix_game_panel.trains = True  # each step refits VDN and QMIX, after the notebook's live runs of both


INTERACTIONS = {
    "01_information_flow.ipynb": _episode_explorer,
    "05_maddpg_training.ipynb": _training_panel(episodes=100, screenshot="05_maddpg_panel.png"),
    "07_coma_advantage.ipynb": _advantage_explorer,
    # the panel's default budget on seed 2, which the committed runs solve (seed 1 is the one of 0-4 that does not)
    "08_coma_training.ipynb": _training_panel(episodes=6000, screenshot="08_coma_panel.png", seed_steps=2, solves=True),
    "17_continuous_maddpg.ipynb": _training_panel(episodes=96, screenshot="17_continuous_maddpg_panel.png"),
    "11_relative_overgeneralisation.ipynb": _matrix_game_panel,
    # CI's one training panel: notebook 13's, whose notebook runs shorter than 05's, 08's and 17's (idle 33 s, 17 45 s)
    "13_ippo_and_mappo.ipynb": _training_panel(episodes=96, screenshot="13_ppo_panel.png", ci=True),
}


def pytest_generate_tests(metafunc):
    """Every notebook for test_notebook_runs_in_jupyterlab, and the subset CI runs marked `ci` (make test-browser
    PYTEST_ARGS="-m ci"): the notebooks with controls (INTERACTIONS), of the four training panels only 13's. The
    four are one widgets.training_panel (test_widgets checks each one's training in Python), and 05's, 08's and 17's
    notebooks are the browser's longest runs, after every notebook has run under nbval in make test. The longest
    come first: with two workers (-n 2) no long one is left to run alone at the end.
    """
    if "name" in metafunc.fixturenames:
        def in_ci(name: str) -> bool:
            return name in INTERACTIONS and getattr(INTERACTIONS[name], "ci", True)

        order = sorted(NOTEBOOKS, key=lambda name: (not in_ci(name), name not in INTERACTIONS,
                                                    not getattr(INTERACTIONS.get(name), "trains", False), name))
        metafunc.parametrize("name", [pytest.param(name, marks=pytest.mark.ci) if in_ci(name) else name
                                      for name in order])


def _controls(name: str) -> set[str]:
    """Model names of the sliders, buttons and checkboxes in the committed notebook's widget state (progress bars,
    images and HTML are not something a learner moves)."""
    state = _committed(name).metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return {model["model_name"] for model in state.get("state", {}).values()
            if re.search(r"Slider|Button|Checkbox|Dropdown|Text", model["model_name"])
            and not model["model_name"].endswith("StyleModel")}


@pytest.mark.ci
def test_every_notebook_with_controls_is_exercised():
    """A notebook that gains a slider or a button needs an interaction in INTERACTIONS."""
    assert all(_committed(name).metadata.get("widgets") for name in INTERACTIONS), "widget state was not saved"
    with_controls = {name for name in NOTEBOOKS if _controls(name)}
    assert with_controls == set(INTERACTIONS), "a notebook with sliders or buttons needs an interaction above"
