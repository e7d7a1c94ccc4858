"""Fixtures for the browser tests: a JupyterLab server on a free local port and Debian's Chromium.

`make test-browser` installs what these need (Debian's chromium, the `browser` extra with Playwright) and runs them.
The server serves a throwaway copy of notebooks/, so running and saving cells never edits the committed notebooks,
next to copies of results/ and media/, the layout the notebooks expect (their Markdown cells show GIFs from both, and
the server answers 403 for a file reached through a link that leaves its root). (Cells that write GIFs still write them
to the repo's media/, as `make test` does: they are deterministic, so the files do not change.)
"""

import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from lab_page import ROOT

CHROMIUM = pathlib.Path(os.environ.get("MARL_EDU_CHROMIUM", "/usr/bin/chromium"))

# Chromium flags for a root user on a machine with no network but loopback (no sandbox as root, and no background
# connections that would be refused and retried).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

# JupyterLab settings for a reproducible session: every cell in the DOM (no windowing, so a test can read every
# output), no autosave (the test saves when it wants), no news or update checks.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: the folder it serves, its port and token, and its process and log."""

    def __init__(self, root: pathlib.Path, port: int, token: str, process: subprocess.Popen, log: pathlib.Path):
        self.root, self.port, self.token, self.process, self.log = root, port, token, process, log

    def url(self, path: str = "lab") -> str:
        """The address of ``path`` on this server, with the token."""
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def notebook_url(self, name: str) -> str:
        """The notebook alone in a fresh workspace of its own (``reset``), so no tab of an earlier test is open."""
        stem = pathlib.Path(name).stem
        return self.url(f"lab/workspaces/{stem}/tree/notebooks/{name}") + "&reset"

    def sessions(self) -> list[dict]:
        """The server's open notebook sessions (REST API), each with its kernel."""
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
    """Poll the server's status until it answers 200; fail with its log if it exits or does not answer in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lab.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with status {lab.process.returncode}:\n{lab.log.read_text()}")
        try:
            with urllib.request.urlopen(lab.url("api/status"), timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer on port {lab.port} within {timeout:.0f} s:\n{lab.log.read_text()}")


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """JupyterLab on a free port with a random token, serving a copy of notebooks/; stopped at the end whatever
    happens (a failing test, Ctrl-C, or a SIGTERM to pytest, which is turned into KeyboardInterrupt for that)."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    # the notebooks load committed runs from ../results, and their Markdown cells show GIFs from ../results and ../media
    # (copies, not links: jupyter_server refuses, with 403, to serve a file whose real path is outside its root)
    for folder in ("results", "media"):
        shutil.copytree(ROOT / folder, root / folder)
    settings = root / ".lab-settings"
    for name, values in LAB_SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"))
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = root / "jupyterlab.log"
    previous_sigterm = signal.signal(signal.SIGTERM, signal.default_int_handler)
    with log.open("w") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                                   env=env)
    server = Lab(root, port, token, process, log)
    try:
        _wait_until_up(server)
        yield server
    finally:  # the kernels first (through the server), then the server itself
        try:
            if process.poll() is None:
                server.shut_down_kernels()
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            signal.signal(signal.SIGTERM, previous_sigterm)


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium, driven by Playwright (which downloads no browser of its own)."""
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
    """A new browser tab (1440 x 900) whose console errors and uncaught exceptions are collected in
    ``page.console_errors``; afterwards the tab is closed and every kernel shut down."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    tab = context.new_page()
    tab.console_errors = []

    def record(message) -> None:
        if message.type == "error":
            tab.console_errors.append(message.text)

    tab.on("console", record)
    tab.on("pageerror", lambda error: tab.console_errors.append(str(error)))
    try:
        yield tab
    finally:
        try:
            context.close()
        finally:
            lab.shut_down_kernels()
