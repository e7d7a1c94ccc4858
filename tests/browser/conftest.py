"""Fixtures for the browser tests: a JupyterLab server on a free local port and Debian's Chromium.

`make test-browser` installs what these need (Debian's chromium, the `browser` extra with Playwright)
and runs them. The server serves a throwaway copy of notebooks/ (so running cells never edits the
committed notebooks) next to a link to results/, the layout the notebooks expect.
"""

import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = pathlib.Path(os.environ.get("MARL_EDU_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = pathlib.Path(__file__).resolve().parent / "screenshots"  # ignored by git: for debugging

# Chromium flags for a root user on a machine with no network but loopback (no sandbox as root, and
# no background connections that would be refused and retried).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

# JupyterLab settings for a reproducible session: every cell in the DOM (no windowing, so a test can
# read every output), no autosave (the test saves when it wants), no news or update checks.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: its URL, token and the folder it serves."""

    def __init__(self, root: pathlib.Path, port: int, token: str, process: subprocess.Popen, log: pathlib.Path):
        self.root, self.port, self.token, self.process, self.log = root, port, token, process, log

    def url(self, path: str = "lab") -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def notebook_url(self, name: str) -> str:
        """The notebook alone in a fresh workspace of its own (``reset``), so no tab of an earlier test is open."""
        stem = pathlib.Path(name).stem
        return self.url(f"lab/workspaces/{stem}/tree/notebooks/{name}") + "&reset"

    def sessions(self) -> list[dict]:
        with urllib.request.urlopen(self.url("api/sessions"), timeout=10) as response:
            return json.load(response)

    def kernel_state(self, name: str) -> str:
        """The server's view of the kernel of notebooks/<name>: "idle", "busy", "starting", or "none"."""
        for session in self.sessions():
            if session["path"].endswith(f"notebooks/{name}"):
                return session["kernel"]["execution_state"]
        return "none"

    def shut_down_kernels(self) -> None:
        """Stop every kernel the server runs (each notebook's kernel would otherwise live until the end)."""
        for session in self.sessions():
            request = urllib.request.Request(self.url(f"api/sessions/{session['id']}"), method="DELETE")
            urllib.request.urlopen(request, timeout=30).close()


def _wait_until_up(lab: Lab, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lab.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with status {lab.process.returncode}:\n{lab.log.read_text()}")
        try:
            with urllib.request.urlopen(lab.url("api/status"), timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer on port {lab.port} within {timeout:.0f} s:\n{lab.log.read_text()}")


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    (root / "results").symlink_to(ROOT / "results")  # read only: the notebooks load committed runs from ../results
    settings = root / ".lab-settings"
    for name, values in LAB_SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"),
               MPLBACKEND="module://matplotlib_inline.backend_inline")
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = root / "jupyterlab.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=root, env=env)
    server = Lab(root, port, token, process, log)
    try:
        _wait_until_up(server)
        yield server
    finally:  # stopped whatever happened: shut kernels down, then the server
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: run `make test-browser`, which installs Debian's chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright for Python is not installed: run `make test-browser` (it installs the browser extra)")

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda message: message.type == "error" and page.console_errors.append(message.text))
    page.on("pageerror", lambda error: page.console_errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
        lab.shut_down_kernels()
