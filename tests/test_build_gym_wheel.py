"""tools/build_gym_wheel.py: gym 0.20.0's wheel assembled from its source release with the standard library.

A small source release made here stands in for the real one (which needs the network): its expected wheel contents
are written out by hand. The real wheel in .wheelhouse/ (make setup builds it) is checked too: RECORD verifies, and
the gym that this test runs against is exactly that wheel's files.
"""

import base64
import hashlib
import http.server
import importlib.metadata
import io
import pathlib
import subprocess
import sys
import tarfile
import threading
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_gym_wheel as tool  # noqa: E402

PKG_INFO = """Metadata-Version: 2.1
Name: gym
Version: 0.20.0
Summary: A stand-in.
Home-page: https://example.org/gym
Author: Someone
License: UNKNOWN
Description: UNKNOWN
Platform: UNKNOWN
Classifier: Programming Language :: Python :: 3
Requires-Python: >=3.6
Provides-Extra: other
"""
REQUIRES = "numpy>=1.18.0\ncloudpickle>=1.2.0\n\n[other]\nlz4>=3.1.0\nopencv-python>=3.\n\n[toy_text]\nscipy>=1.4.1\n"
SOURCE = {
    "PKG-INFO": PKG_INFO,
    "setup.py": "raise SystemExit('never run')\n",
    "gym.egg-info/requires.txt": REQUIRES,
    "gym/__init__.py": "__version__ = '0.20.0'\nfrom gym.envs import ENVS\n",
    "gym/envs/__init__.py": "ENVS = ['stand-in']\n",
    "gym/envs/classic_control/__init__.py": "",
    "gym/envs/classic_control/cartpole.py": "X = 1\n",
    "gym/envs/classic_control/assets/clockwise.png": "png bytes",     # package_data: envs/classic_control/assets/*.png
    "gym/envs/classic_control/assets/notes.txt": "not listed",       # no glob names .txt there
    "gym/envs/mujoco/assets/ant.xml": "<mujoco/>",                   # package_data even though mujoco has no __init__
    "gym/envs/mujoco/assets/deeper/ant.xml": "<mujoco/>",            # '*' never crosses a '/'
    "gym/scripts/play.py": "# a folder without __init__.py: not a package\n",
    "gym/envs/classic_control/nested/__init__.py": "",              # a package inside a package
    "tests/test_gym.py": "# outside gym/\n",
}
EXPECTED_PAYLOAD = [
    "gym/__init__.py",
    "gym/envs/__init__.py",
    "gym/envs/classic_control/__init__.py",
    "gym/envs/classic_control/assets/clockwise.png",
    "gym/envs/classic_control/cartpole.py",
    "gym/envs/classic_control/nested/__init__.py",
    "gym/envs/mujoco/assets/ant.xml",
]
# PKG-INFO's fields minus the UNKNOWN ones and Provides-Extra (rebuilt from requires.txt), then the requirements:
# plain ones first, then each extra with its lines, '>=3.' repaired to '>=3'.
EXPECTED_METADATA = """Metadata-Version: 2.1
Name: gym
Version: 0.20.0
Summary: A stand-in.
Home-page: https://example.org/gym
Author: Someone
Classifier: Programming Language :: Python :: 3
Requires-Python: >=3.6
Requires-Dist: numpy>=1.18.0
Requires-Dist: cloudpickle>=1.2.0
Provides-Extra: other
Requires-Dist: lz4>=3.1.0; extra == 'other'
Requires-Dist: opencv-python>=3; extra == 'other'
Provides-Extra: toy_text
Requires-Dist: scipy>=1.4.1; extra == 'toy_text'
"""


def make_sdist(files=SOURCE) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"gym-0.20.0/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def verify_record(wheel: zipfile.ZipFile) -> None:
    """Every RECORD row's sha256 and size match its entry, every entry has a row, RECORD's own row has none."""
    rows = [line.split(",") for line in wheel.read("gym-0.20.0.dist-info/RECORD").decode().splitlines()]
    assert sorted(path for path, _, _ in rows) == sorted(wheel.namelist())
    for path, digest, size in rows:
        if path.endswith("/RECORD"):
            assert (digest, size) == ("", "")
            continue
        data = wheel.read(path)
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert (digest, int(size)) == (f"sha256={expected}", len(data)), path


def test_payload_is_what_setup_py_names():
    entries = tool.wheel_entries(make_sdist())
    payload = [path for path in entries if not path.startswith("gym-0.20.0.dist-info/")]
    assert payload == EXPECTED_PAYLOAD
    assert entries["gym/envs/classic_control/assets/clockwise.png"] == b"png bytes"
    assert list(entries)[-4:] == [f"gym-0.20.0.dist-info/{name}" for name in ("METADATA", "WHEEL", "top_level.txt",
                                                                              "RECORD")]


def test_metadata_by_hand():
    assert tool.wheel_entries(make_sdist())["gym-0.20.0.dist-info/METADATA"].decode() == EXPECTED_METADATA


def test_wheel_is_reproducible_and_its_record_verifies(tmp_path):
    first = tool.write_wheel(tool.wheel_entries(make_sdist()), tmp_path / "a").read_bytes()
    second = tool.write_wheel(tool.wheel_entries(make_sdist()), tmp_path / "b").read_bytes()
    assert first == second
    with zipfile.ZipFile(io.BytesIO(first)) as wheel:
        verify_record(wheel)
        assert b"Tag: py3-none-any" in wheel.read("gym-0.20.0.dist-info/WHEEL")


def test_wheel_installs_and_imports(tmp_path):
    wheel = tool.write_wheel(tool.wheel_entries(make_sdist()), tmp_path / "wheelhouse")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(target), str(wheel)], check=True)
    imported = subprocess.run([sys.executable, "-c", "import gym; print(gym.__version__, gym.ENVS)"], cwd=tmp_path,
                              env={"PYTHONPATH": str(target)}, capture_output=True, text=True, check=True)
    assert imported.stdout == "0.20.0 ['stand-in']\n"


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    with pytest.raises(TypeError):
        tool.write_wheel({"gym/__init__.py": 12345}, tmp_path)  # not bytes: fails mid-write
    assert list(tmp_path.iterdir()) == []


def test_a_release_with_another_hash_is_refused():
    with pytest.raises(tool.BuildError, match=r"sha256 [0-9a-f]{64}, expected ca963d00.*not the published release"):
        tool.check_sdist(make_sdist())


class _Index(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass


def test_fetches_from_pips_index_and_refuses_a_tampered_file(tmp_path, monkeypatch, capsys):
    """A PEP 503 index on localhost: the link is found and followed, then the stand-in fails the hash check."""
    (tmp_path / "simple" / "gym").mkdir(parents=True)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "gym-0.20.0.tar.gz").write_bytes(make_sdist())
    (tmp_path / "simple" / "gym" / "index.html").write_text(
        '<a href="../../files/gym-0.19.0.tar.gz">gym-0.19.0.tar.gz</a>\n'
        '<a href="../../files/gym-0.20.0.tar.gz#sha256=00">gym-0.20.0.tar.gz</a>\n')
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: _Index(*a, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple")
        assert tool.sdist_url(tool.index_url()).endswith("/files/gym-0.20.0.tar.gz#sha256=00")
        assert tool.main([str(tmp_path / "wheelhouse")]) == 1
    finally:
        server.shutdown()
    assert "not the published release" in capsys.readouterr().err
    assert not (tmp_path / "wheelhouse").exists()


class _Served(http.server.BaseHTTPRequestHandler):
    """Serves ``pages``: path -> (content type, body, Content-Length or None for the body's own)."""

    pages: dict = {}

    def do_GET(self):
        content_type, body, length = self.pages.get(self.path, ("text/plain", b"missing", None))
        self.send_response(200 if self.path in self.pages else 404)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def serve(monkeypatch):
    """A local index serving the given pages, PIP_INDEX_URL pointing at it; returns its address."""
    servers = []

    def start(pages: dict) -> str:
        handler = type("Handler", (_Served,), {"pages": pages})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        url = f"http://127.0.0.1:{server.server_port}"
        monkeypatch.setenv("PIP_INDEX_URL", f"{url}/simple")
        return url

    yield start
    for server in servers:
        server.shutdown()


JSON = "application/vnd.pypi.simple.v1+json"


@pytest.mark.parametrize("page, message", [
    ((JSON, b"{not json", None), "is not a simple index page (JSONDecodeError"),
    ((JSON, b'{"name": "gym"}', None), "is not a simple index page (KeyError: 'files')"),
    (("text/html", b"\xff\xfe<a href='x'>", None), "is not a simple index page (UnicodeDecodeError"),
    (("text/html", b"<a href=", 5000), "was cut short"),
])
def test_a_malformed_index_page_is_one_line(page, message, serve, tmp_path, capsys):
    serve({"/simple/gym/": page})
    assert tool.main([str(tmp_path / "wheelhouse")]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("build_gym_wheel: "), err


def test_only_https_or_localhost_and_a_bounded_download(serve, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PIP_INDEX_URL", "file:///dev/zero")  # (read whole, it used to end in a MemoryError)
    assert tool.main([str(tmp_path / "wheelhouse")]) == 1
    assert "the package index must be https (or http to localhost), got file" in capsys.readouterr().err
    url = serve({"/simple/gym/": ("text/html", b'<a href="http://example.org/gym-0.20.0.tar.gz">x</a>', None)})
    assert tool.main([str(tmp_path / "wheelhouse")]) == 1  # a link off this machine over plain http
    assert "http://example.org/gym-0.20.0.tar.gz: the package index must be https" in capsys.readouterr().err
    serve({"/simple/gym/": ("text/html", b'<a href="../../f/gym-0.20.0.tar.gz">x</a>', None),
           "/f/gym-0.20.0.tar.gz": ("application/gzip", bytes(3000), None)})
    monkeypatch.setattr(tool, "MAX_SDIST_BYTES", 2000)
    assert tool.main([str(tmp_path / "wheelhouse")]) == 1
    assert "gym-0.20.0.tar.gz at http://127.0.0.1:" in capsys.readouterr().err
    assert not (tmp_path / "wheelhouse").exists() and url


def test_a_missing_release_is_named(tmp_path, capsys):
    assert tool.main([str(tmp_path / "wheelhouse"), "--sdist", str(tmp_path / "nowhere.tar.gz")]) == 1
    assert "nowhere.tar.gz" in capsys.readouterr().err


def test_the_real_wheel_is_the_installed_gym():
    """make setup's wheel: RECORD verifies, and the gym imported here is exactly its files."""
    import gym

    wheel_path = ROOT / ".wheelhouse" / tool.WHEEL_NAME
    assert gym.__version__ == "0.20.0"
    with zipfile.ZipFile(wheel_path) as wheel:
        verify_record(wheel)
        package = {path: wheel.read(path) for path in wheel.namelist() if path.startswith("gym/")}
    installed = {str(f): f.locate().read_bytes() for f in importlib.metadata.files("gym") if str(f).startswith("gym/")
                 and not str(f).endswith(".pyc")}
    assert installed == package
    assert len(package) == 219  # 153 modules and 66 asset files, as setuptools' own build of the release has
