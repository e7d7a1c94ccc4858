"""The course's website (`make site`, tools/site.py) read in Chromium: every page loads with no error and no request
that leaves this machine, every internal link and anchor leads somewhere, every image and GIF is drawn, all math is
typeset, a search finds pages, and every notebook's Colab and download buttons point at that notebook.

The site is served from _site/html/ (built by `make site`; `make test-browser` builds it first) by a small HTTP server
on a free local port, as GitHub Pages serves it: Sphinx's search reads its index over HTTP.
"""

import functools
import importlib.util
import http.server
import json
import pathlib
import re
import threading
import urllib.parse

import pytest

from lab_page import ROOT

SITE = ROOT / "_site" / "html"
TOOLS_SITE = ROOT / "tools" / "site.py"
NOTEBOOKS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
pytestmark = pytest.mark.ci


@functools.cache
def _widget_note():
    """book/widget_note.py as a module (it tells a progress bar's widget view from a panel's)."""
    spec = importlib.util.spec_from_file_location("widget_note", ROOT / "book" / "widget_note.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _tools_site():
    """tools/site.py as a module (it names the results pages and writes them)."""
    spec = importlib.util.spec_from_file_location("tools_site", TOOLS_SITE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages() -> list[str]:
    """Every page the site must have, from the repository (not from the build, so a page missing there fails): the
    home page, each notebook's, the results index and each results page."""
    results = [name for name, _, _ in _tools_site().RESULTS_PAGES]
    return (["index.html"] + [f"notebooks/{name}.html" for name in NOTEBOOKS] + ["results/index.html"]
            + [f"results/{name}.html" for name in results])


PAGES = _pages()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site():
    """The built site served on 127.0.0.1 at a free port; its address."""
    if not (SITE / "index.html").exists():
        pytest.fail("no _site/html/index.html: build the site first (make site)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def tab(browser, site):
    """A tab whose console errors, failed requests and requests to any other host are collected in ``tab.problems``
    (requests that leave this machine are refused: the site must need none)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.problems = []

    def route(request_route) -> None:
        if request_route.request.url.startswith(site):
            request_route.continue_()
        else:
            tab.problems.append(f"a request that leaves the site: {request_route.request.url}")
            request_route.abort()

    context.route("**/*", route)
    tab.on("console", lambda message: message.type == "error" and tab.problems.append(f"console: {message.text}"))
    tab.on("pageerror", lambda error: tab.problems.append(f"page error: {error}"))
    tab.on("requestfailed", lambda request: request.url.startswith(site)
           and tab.problems.append(f"failed: {request.url}"))
    tab.on("response", lambda response: response.status >= 400
           and tab.problems.append(f"HTTP {response.status}: {response.url}"))
    try:
        yield tab
    finally:
        context.close()


@functools.cache
def _ids(path: pathlib.Path) -> frozenset[str]:
    return frozenset(re.findall(r'\sid="([^"]+)"', path.read_text()))


def _site_file(url: str, site: str) -> pathlib.Path:
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)[len(urllib.parse.urlsplit(site).path):]
    target = SITE / path
    return target / "index.html" if target.is_dir() or path == "" else target


# Typeset by MathJax, the page has no formula left in its \( \) or \[ \] delimiters, nor a Markdown $...$ that was not
# parsed as math, outside code (where a dollar or a backslash is code).
UNRENDERED_MATH = """() => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const found = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement.closest("pre, code, script, style, textarea, mjx-assistive-mml")) continue;
        const text = node.textContent;
        if (/\\\\\\(|\\\\\\[|\\$\\$|(^|[\\s(])\\$[^$\\s][^$]*\\$/.test(text)) found.push(text.trim().slice(0, 80));
    }
    return found;
}"""

IMAGES = """async () => {
    const images = Array.from(document.images);
    images.forEach(image => { image.loading = "eager"; });
    await Promise.all(images.map(image => image.decode().catch(() => null)));
    return images.map(image => [image.getAttribute("src"), image.naturalWidth]);
}"""


@pytest.mark.parametrize("page_path", PAGES)
def test_page_loads_with_its_links_images_and_math(tab, site, page_path):
    tab.goto(site + page_path, wait_until="load")
    tab.wait_for_function("() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise",
                          timeout=30_000)
    tab.evaluate("() => MathJax.startup.promise")  # every formula typeset
    assert tab.evaluate(UNRENDERED_MATH) == [], "math left unrendered"
    if tab.locator("span.math, div.math").count():
        assert tab.locator("mjx-container").count() > 0

    images = tab.evaluate(IMAGES)
    assert [src for src, width in images if width == 0] == [], "images that are not drawn"

    broken = []
    for href in set(tab.eval_on_selector_all("a[href]", "links => links.map(link => link.href)")):
        if not href.startswith(site):
            continue
        target = _site_file(href, site)
        fragment = urllib.parse.urlsplit(href).fragment
        if not target.is_file():
            broken.append(href)
        elif fragment and target.suffix == ".html" and urllib.parse.unquote(fragment) not in _ids(target):
            broken.append(href)
    assert broken == [], "internal links that lead nowhere"
    assert tab.problems == [], "\n".join(tab.problems)

    if page_path.startswith("notebooks/"):
        _check_notebook_page(tab, site, page_path, images)


def _check_notebook_page(tab, site, page_path, images):
    """The Colab and download buttons, the GIFs the notebook's Markdown shows, and a note for every slider panel."""
    name = pathlib.PurePosixPath(page_path).stem
    committed = ROOT / "notebooks" / f"{name}.ipynb"
    notebook = json.loads(committed.read_text())
    colab = (f"https://colab.research.google.com/github/marl-edu/marl-edu/blob/main/notebooks/{name}.ipynb")

    launch = tab.locator(".dropdown-launch-buttons a.dropdown-item")
    assert launch.count() == 1 and launch.get_attribute("href") == colab

    download = tab.locator(".dropdown-download-buttons a.btn-download-source-button")
    assert download.count() == 1
    response = tab.request.get(urllib.parse.urljoin(tab.url, download.get_attribute("href")))
    assert response.ok and response.body() == committed.read_bytes(), "the download is not the committed notebook"

    gifs = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            gifs |= {pathlib.PurePosixPath(src).name
                     for src in re.findall(r"[(\"']([^()\"']+\.gif)[)\"']", "".join(cell["source"]))}
    shown = {pathlib.PurePosixPath(src).name.split("?")[0] for src, width in images if width}
    assert all(any(shown_name.startswith(gif[:-4]) for shown_name in shown) for gif in gifs), (gifs, shown)

    views = [output["data"][WIDGET_VIEW]["model_id"] for cell in notebook["cells"] if cell["cell_type"] == "code"
             for output in cell.get("outputs", []) if WIDGET_VIEW in output.get("data", {})]
    bars = _widget_note().progress_bars(notebook)  # tqdm's bars: a quiet line each, not a panel's note
    notes = tab.locator(".widget-note")
    assert notes.count() == sum(view not in bars for view in views)
    assert tab.locator(".widget-progress").count() == sum(view in bars for view in views)
    assert all(link == colab for link in tab.eval_on_selector_all(".widget-note a", "a => a.map(x => x.href)"))
    assert tab.locator(f'script[type="{WIDGET_VIEW}"]').count() == 0, "a panel's dead state is on the page"


def test_search_finds_the_counterfactual_baseline(tab, site):
    tab.goto(site + "search.html?q=counterfactual+baseline", wait_until="load")
    results = tab.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=30_000)
    found = set(results.evaluate_all("links => links.map(link => link.getAttribute('href'))"))
    assert any("07_coma_advantage" in href for href in found), found
    assert tab.problems == []


def test_the_results_pages_are_what_the_files_give():
    # the built site's generated pages are the ones results/ gives now (tools/site.py writes them at build time)
    module = _tools_site()
    for name, text in module.results_pages().items():
        built = ROOT / "_site" / "source" / name
        assert built.read_text() == text, f"{name} on the site differs from what results/ gives: make site"


def test_a_progress_bar_is_told_from_a_panel_by_its_models():
    # tqdm's bar: an HBox of an HTML label, a FloatProgress and HTML counts; a panel: a VBox of sliders, a button, ...
    state = {"bar": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_c"]}},
             "l": {"model_name": "HTMLModel", "state": {}}, "p": {"model_name": "FloatProgressModel", "state": {}},
             "c": {"model_name": "HTMLModel", "state": {}},
             "panel": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_s", "IPY_MODEL_b"]}},
             "s": {"model_name": "IntSliderModel", "state": {}}, "b": {"model_name": "ButtonModel", "state": {}}}
    notebook = {"metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}}}}
    assert _widget_note().progress_bars(notebook) == {"bar"}
    assert _widget_note().progress_bars({"metadata": {}}) == set()  # no state saved: every view is a panel's note
    view = '<script type="application/vnd.jupyter.widget-view+json">{"version_major": 2, "model_id": "bar"}</script>'
    assert _widget_note().model_id(view) == "bar" and _widget_note().model_id(view.replace('{"version_major": 2, "model_id": "bar"}', "{not json")) is None
