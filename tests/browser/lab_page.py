"""What a learner does in JupyterLab, as Playwright steps: open a notebook, restart and run all, save,
move a slider, type into a slider's readout, press a button, and read what the page shows."""

import base64
import io
import re
import time

from PIL import Image

NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook on screen (other tabs are hidden)
RUN_TIMEOUT = 240.0  # seconds for one notebook's "restart kernel and run all cells" (they take < 1 min)


def open_notebook(page, lab, name: str) -> None:
    """Open the notebook and wait until its new kernel is idle, both for the server and on the page."""
    page.goto(lab.notebook_url(name))
    deadline = time.monotonic() + 60
    while lab.kernel_state(name) != "idle":
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel of {name} was not idle within 60 s: {lab.kernel_state(name)}")
        time.sleep(0.25)
    page.wait_for_selector(f"{NOTEBOOK} .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=30_000)
    page.wait_for_selector(".jp-StatusBar-Widget >> text=/\\| Idle/", timeout=30_000)


def _prompts(page) -> list[str]:
    return [text.strip() for text in page.locator(f"{NOTEBOOK} .jp-Cell.jp-CodeCell .jp-InputPrompt").all_inner_texts()]


def _menu(page, menu: str, command: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu}$")).click()
    page.locator(f".lm-Menu-item[data-command='{command}']").click()


def run_all(page, timeout: float = RUN_TIMEOUT) -> float:
    """Edit > Clear Outputs of All Cells, then Run > Run All Cells, as a learner does in a notebook just opened
    (its kernel is new: the tests shut every kernel down after each notebook). Returns the seconds until the kernel
    is idle with no cell waiting: every code cell numbered, or (after an error stops the queue) nothing running
    for 3 s."""
    _menu(page, "Edit", "editmenu:clear-all")  # blank prompts, so a number means "ran this time"
    page.wait_for_function(f"""() => [...document.querySelectorAll("{NOTEBOOK} .jp-CodeCell .jp-InputPrompt")]
                                     .every(prompt => !/\\d/.test(prompt.innerText))""", timeout=10_000)
    _menu(page, "Run", "runmenu:run-all")
    start = time.monotonic()
    quiet_since = None
    while True:
        prompts = _prompts(page)
        numbered = sum(any(c.isdigit() for c in p) for p in prompts)
        busy = sum("*" in p for p in prompts)
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


def save(page, path) -> None:
    """Ctrl+S, then wait until the file on disk is newer than before."""
    before = path.stat().st_mtime_ns
    page.locator(NOTEBOOK).click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while path.stat().st_mtime_ns == before:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path.name} was not saved within 30 s of Ctrl+S")
        time.sleep(0.2)
    time.sleep(0.5)  # let the write finish


def widget_errors(page) -> list[str]:
    """Texts of outputs where a widget failed to render (JupyterLab shows the error in place of the widget)."""
    texts = page.locator(".jp-OutputArea-output").all_inner_texts()
    return [t for t in texts if "Error displaying widget" in t or "Error rendering" in t]


def slider(page, description: str):
    """The ipywidgets slider whose label reads ``description``."""
    label = page.locator("label.widget-label", has_text=re.compile(f"^{re.escape(description)}$"))  # "episodes" is
    # not "episodes/batch"
    return page.locator(".widget-slider", has=label).first


def nudge(slider_widget, key: str, times: int = 1) -> None:
    """Focus the slider's handle and press an arrow key, as a learner does with the keyboard."""
    handle = slider_widget.locator(".noUi-handle")
    handle.focus()
    for _ in range(times):
        handle.press(key)


def type_into_readout(slider_widget, value) -> None:
    """Click the number next to a slider, replace it and press Enter (ipywidgets' editable readout)."""
    readout = slider_widget.locator(".widget-readout")
    readout.click()
    readout.press("Control+a")
    readout.type(str(value))
    readout.press("Enter")


def readout(slider_widget) -> str:
    return slider_widget.locator(".widget-readout").inner_text().strip()


def image_src(locator) -> str:
    return locator.get_attribute("src") or ""


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


def plays(image, seconds: float = 12.0) -> bool:
    """Whether the displayed image changes on screen within ``seconds`` (a GIF that the browser animates)."""
    image.scroll_into_view_if_needed()
    first = image.screenshot()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.25)
        if image.screenshot() != first:
            return True
    return False
