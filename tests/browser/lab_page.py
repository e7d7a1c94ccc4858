"""What a learner does in JupyterLab, as Playwright steps: open a notebook, clear it and run all cells, save, move a
slider, type into a slider's readout, press a button, and read what the page shows."""

import base64
import io
import pathlib
import re
import time

from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCREENSHOTS = pathlib.Path(__file__).resolve().parent / "screenshots"  # ignored by git: for debugging
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook on screen (other tabs are hidden)
RUN_TIMEOUT = 240.0  # seconds for one notebook's "run all cells" (each runs in under a minute)


def open_notebook(page, lab, name: str) -> None:
    """Open notebooks/<name> and wait until its new kernel is idle, both for the server and on the page."""
    page.goto(lab.notebook_url(name))
    deadline = time.monotonic() + 60
    while lab.kernel_state(name) != "idle":
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel of {name} was not idle within 60 s: {lab.kernel_state(name)}")
        time.sleep(0.25)
    page.wait_for_selector(f"{NOTEBOOK} .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=30_000)
    page.wait_for_selector(".jp-StatusBar-Widget >> text=/\\| Idle/", timeout=30_000)


def menu(page, menu_name: str, command: str) -> None:
    """Click a menu-bar menu (e.g. "Run"), then its item for a JupyterLab command (e.g. "runmenu:run-all")."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu_name}$")).click()
    page.locator(f".lm-Menu-item[data-command='{command}']:not(.lm-mod-disabled)").click()


def _prompts(page) -> list[str]:
    """The execution prompts of the notebook's code cells, as shown: "[ ]:", "[*]:" or "[3]:"."""
    return [text.strip() for text in page.locator(f"{NOTEBOOK} .jp-CodeCell .jp-InputPrompt").all_inner_texts()]


def run_all(page, code_cells: int, timeout: float = RUN_TIMEOUT) -> float:
    """Edit > Clear Outputs of All Cells, then Run > Run All Cells, as a learner does in a notebook just opened (its
    kernel is new: the tests shut every kernel down after each notebook). Returns the seconds until the kernel is
    idle with no cell waiting: every code cell numbered, or (after an error stops the queue) nothing running for 3 s.
    """
    prompts = _prompts(page)
    assert len(prompts) == code_cells, f"the page shows {len(prompts)} code cells, the file has {code_cells}"
    menu(page, "Edit", "editmenu:clear-all")  # blank prompts, so that a number means "ran this time"
    page.wait_for_function(f"""() => {{
        const prompts = [...document.querySelectorAll("{NOTEBOOK} .jp-CodeCell .jp-InputPrompt")];
        return prompts.length > 0 && prompts.every(prompt => !/\\d/.test(prompt.innerText));
    }}""", timeout=10_000)
    menu(page, "Run", "runmenu:run-all")
    start = time.monotonic()
    quiet_since = None
    while True:
        prompts = _prompts(page)
        numbered = sum(any(ch.isdigit() for ch in prompt) for prompt in prompts)
        busy = sum("*" in prompt for prompt in prompts)
        idle = page.locator(f"{NOTEBOOK} .jp-Notebook-ExecutionIndicator[data-status='idle']").count() == 1
        now = time.monotonic()
        if idle and not busy and numbered == len(prompts):
            return now - start
        if idle and not busy and numbered > 0:  # stopped before the end: an error (the saved file says which)
            quiet_since = quiet_since or now
            if now - quiet_since > 3:
                return now - start
        else:
            quiet_since = None
        if now - start > timeout:
            raise TimeoutError(f"the notebook was still running after {timeout:.0f} s ({busy} cells [*], "
                               f"{numbered} of {len(prompts)} done)")
        time.sleep(0.25)


def save(page, path: pathlib.Path) -> None:
    """File > Save Notebook; returns once the server has written the file (the tab is no longer marked dirty)."""
    before = path.stat().st_mtime_ns
    menu(page, "File", "docmanager:save")
    page.wait_for_selector(".lm-TabBar-tab.jp-mod-current:not(.jp-mod-dirty)", timeout=30_000)
    deadline = time.monotonic() + 30
    while path.stat().st_mtime_ns == before:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path.name} was not saved within 30 s")
        time.sleep(0.2)


def error_outputs(page) -> list[str]:
    """Texts of the error outputs (tracebacks) on the page, inside widgets' Output areas too."""
    return page.locator(f"{NOTEBOOK} [data-mime-type='application/vnd.jupyter.error']").all_inner_texts()


def widget_errors(page) -> list[str]:
    """Texts of outputs where a widget failed to render (JupyterLab shows the error in place of the widget)."""
    texts = page.locator(f"{NOTEBOOK} .jp-OutputArea-output").all_inner_texts()
    return [text for text in texts if "Error displaying widget" in text or "Error rendering" in text]


def _any_slider(page, description: str):
    """Sliders whose label reads exactly ``description`` ("episodes" is not "episodes/batch"), wherever they are."""
    label = page.locator("label.widget-label", has_text=re.compile(f"^{re.escape(description)}$"))
    return page.locator(".widget-slider", has=label)


def slider(page, description: str):
    """The ipywidgets slider of the notebook on screen whose label reads exactly ``description``."""
    return page.locator(NOTEBOOK).locator(_any_slider(page, description)).first


def cell_output(page, description: str):
    """The output area of the code cell that shows the slider labelled ``description``: where its panel's images and
    texts are."""
    cell = page.locator(f"{NOTEBOOK} .jp-CodeCell", has=_any_slider(page, description))
    return cell.locator(".jp-OutputArea").first


def nudge(slider_widget, key: str, times: int = 1) -> None:
    """Focus the slider's handle and press an arrow key, as a learner does with the keyboard."""
    handle = slider_widget.locator(".noUi-handle")
    handle.focus()
    for _ in range(times):
        handle.press(key)


def type_into_readout(slider_widget, value) -> None:
    """Click the number next to a slider, replace it and press Enter (ipywidgets' editable readout)."""
    readout_box = slider_widget.locator(".widget-readout")
    readout_box.click()
    readout_box.press("Control+a")
    readout_box.type(str(value))
    readout_box.press("Enter")


def readout(slider_widget) -> str:
    """The value shown next to a slider, as text."""
    return slider_widget.locator(".widget-readout").inner_text().strip()


def image_src(locator) -> str:
    """An <img>'s src attribute (for widgets.Image and GIFs: a data: URL of the image's bytes)."""
    return locator.get_attribute("src") or ""


def wait_until_decoded(page, image) -> None:
    """Wait until the browser has decoded the image (it has a natural width)."""
    page.wait_for_function("image => image.complete && image.naturalWidth > 0", arg=image.element_handle(),
                           timeout=10_000)


def gif_frames_differ(data_url: str) -> bool:
    """Whether a data:image/gif URL holds at least two different frames (an animation, not a still)."""
    gif = Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1])))
    first = None
    for index in range(getattr(gif, "n_frames", 1)):
        gif.seek(index)
        frame = gif.convert("RGB").tobytes()
        if first is None:
            first = frame
        elif frame != first:
            return True
    return False


def longest_frame_seconds(data_url: str) -> float:
    """How long a data:image/gif URL's longest frame is shown. Identical consecutive frames are stored as one frame
    whose duration is their sum (a deadlocked episode holds one picture for 12 s or more), so a check that the GIF
    animates must watch at least that long."""
    gif = Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1])))
    durations = []
    for index in range(getattr(gif, "n_frames", 1)):
        gif.seek(index)
        durations.append(gif.info.get("duration", 0))
    return max(durations) / 1000


def plays(image, seconds: float = 12.0) -> bool:
    """Whether the displayed image changes on screen within ``seconds`` (a GIF that the browser animates): pass at
    least ``longest_frame_seconds`` of its data, or a screenshot taken at the start of a long frame sees no change.
    Screenshots follow each other without a pause: a GIF that holds its last picture for 13.5 s may show its first
    for only 250 ms (15's two-frame greedy episodes), which one screenshot every quarter second can miss."""
    image.scroll_into_view_if_needed()
    first = image.screenshot()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if image.screenshot() != first:
            return True
    return False
