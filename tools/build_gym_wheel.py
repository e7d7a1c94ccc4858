"""Assemble a wheel of gym 0.20.0 from its source release, with the standard library alone.

Why: ma-gym needs gym 0.20.0, which exists only as a source release, and no setuptools can build it on every Python
the course supports. setuptools >= 66 rejects one requirement string in its extras (``opencv-python>=3.``, not valid
PEP 440), and setuptools < 66 fails on Python 3.13 (``pkgutil.ImpImporter`` is gone). gym is pure Python, so its
wheel is only a zip of the files its ``setup.py`` names plus three metadata files. This script writes that zip:

- the packages ``find_packages()`` finds under ``gym/`` (folders with an ``__init__.py``, reached through packages)
  with every ``.py`` file in them, and the ``package_data`` globs of gym's ``setup.py``;
- ``METADATA`` from the release's ``PKG-INFO`` and ``requires.txt``, with ``>=3.`` repaired to ``>=3``;
- ``WHEEL`` (``py3-none-any``), ``top_level.txt`` and ``RECORD`` (every file's sha256 and size).

The wheel is byte-for-byte reproducible (fixed timestamps, sorted entries) and written atomically. The source
release is fetched from pip's index (``PIP_INDEX_URL``, pip's ``global.index-url`` setting, or pip's default) and
checked against the sha256 below before anything is read from it.

Usage: python tools/build_gym_wheel.py DEST_DIR [--sdist PATH_TO_gym-0.20.0.tar.gz]
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import http.client
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile

NAME, VERSION = "gym", "0.20.0"
SDIST = f"{NAME}-{VERSION}.tar.gz"
SDIST_SHA256 = "ca963d003cf8b7db8205865de6f3fed605e17e8e488f55ed9118b7768ea21100"  # the file on the index
WHEEL_NAME = f"{NAME}-{VERSION}-py3-none-any.whl"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"

# setup.py's package_data for "gym", relative to gym/.
PACKAGE_DATA = (
    "envs/mujoco/assets/*.xml",
    "envs/classic_control/assets/*.png",
    "envs/robotics/assets/LICENSE.md",
    "envs/robotics/assets/fetch/*.xml",
    "envs/robotics/assets/hand/*.xml",
    "envs/robotics/assets/stls/fetch/*.stl",
    "envs/robotics/assets/stls/hand/*.stl",
    "envs/robotics/assets/textures/*.png",
)
BROKEN, REPAIRED = ">=3.", ">=3"  # opencv-python's specifier in the 'other', 'nomujoco' and 'all' extras
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest zip timestamp: the same bytes on every build


class BuildError(Exception):
    """What went wrong, in one line a learner can act on."""


# ---------------------------------------------------------------------------------------------------- fetching
def index_url() -> str:
    """The simple index pip would use: PIP_INDEX_URL, then pip's global.index-url setting, then pip's default."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    configured = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"],
                                capture_output=True, text=True)
    if configured.returncode == 0 and configured.stdout.strip():
        return configured.stdout.strip()
    try:
        from pip._internal.models.index import PyPI  # pip's default index, the one `pip install` uses
    except ImportError as error:
        raise BuildError("no pip in this Python to say which package index to use: set PIP_INDEX_URL, "
                         "or pass --sdist PATH") from error
    return PyPI.simple_url


MAX_INDEX_BYTES = 10 * 2**20  # the index's page for gym (PyPI's: about 100 KB)
MAX_SDIST_BYTES = 50 * 2**20  # gym-0.20.0.tar.gz is 1.6 MB


def check_url(url: str) -> str:
    """Only https, or http to this machine (a local mirror, the tests' index): never file:, ftp: or plain http
    across a network."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1")):
        return url
    raise BuildError(f"{url[:200]}: the package index must be https (or http to localhost), got "
                     f"{parts.scheme or 'no scheme'}")


def read_bounded(url: str, limit: int, what: str, timeout: float, headers: dict | None = None) -> tuple[bytes, str]:
    """GET ``url`` (``check_url``'s) and read at most ``limit`` bytes: ``(body, content type)``. BuildError for a
    larger body or one cut short."""
    request = urllib.request.Request(check_url(url), headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = response.read(limit + 1)
        content_type = response.headers.get("Content-Type", "")
        expected = response.headers.get("Content-Length")
    if len(body) > limit:
        raise BuildError(f"{what} at {url[:200]} is larger than {limit:,} bytes: not what the package index serves")
    if expected is not None and expected.isdigit() and int(expected) != len(body):
        raise BuildError(f"{what} at {url[:200]} was cut short: {len(body)} of {expected} bytes")
    return body, content_type


def sdist_url(index: str) -> str:
    """The download address of gym-0.20.0.tar.gz on a PEP 503/691 simple index."""
    page_url = index.rstrip("/") + f"/{NAME}/"
    body, content_type = read_bounded(page_url, MAX_INDEX_BYTES, "the index page", 60,
                                      {"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    try:
        text = body.decode()
        if "json" in content_type:
            links = [f["url"] for f in json.loads(text)["files"] if f["filename"] == SDIST]
        else:
            links = [href for href in re.findall(r'href="([^"]+)"', text)
                     if urllib.parse.urlsplit(href).path.endswith("/" + SDIST)]
    except (ValueError, KeyError, TypeError) as error:  # (UnicodeDecodeError and JSON's errors are ValueErrors)
        raise BuildError(f"the package index page {page_url} is not a simple index page ({type(error).__name__}: "
                         f"{str(error).splitlines()[0][:120] if str(error) else 'no detail'})") from None
    if not links:
        raise BuildError(f"{SDIST} is not listed on the package index {page_url}")
    return check_url(urllib.parse.urljoin(page_url, links[0]))


def fetch_sdist() -> bytes:
    return read_bounded(sdist_url(index_url()), MAX_SDIST_BYTES, SDIST, 300)[0]


def check_sdist(data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != SDIST_SHA256:
        raise BuildError(f"{SDIST} has sha256 {digest}, expected {SDIST_SHA256}: not the published release")


# ---------------------------------------------------------------------------------------------------- assembling
def sdist_files(data: bytes) -> dict[str, bytes]:
    """Regular files of the source release, keyed by their path inside it (without the gym-0.20.0/ prefix)."""
    prefix = f"{NAME}-{VERSION}/"
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.startswith(prefix):
                files[member.name[len(prefix):]] = tar.extractfile(member).read()
    return files


def package_dirs(files: dict[str, bytes]) -> list[str]:
    """find_packages(): gym/ and every folder below it with an __init__.py whose parent is a package too."""
    candidates = {path.rsplit("/", 1)[0] for path in files if path.endswith("/__init__.py")}
    return sorted(d for d in candidates if d == NAME or (d.startswith(NAME + "/") and all(
        "/".join(d.split("/")[:i]) in candidates for i in range(1, d.count("/") + 1))))


def glob_match(path: str, pattern: str) -> bool:
    """A setuptools package_data glob: '*' matches within one folder level, never across a '/'."""
    parts, pattern_parts = path.split("/"), pattern.split("/")
    return len(parts) == len(pattern_parts) and all(map(fnmatch.fnmatchcase, parts, pattern_parts))


def wheel_payload(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files that go into the wheel under their installed paths: modules of every package and package data."""
    packages = set(package_dirs(files))
    return {path: data for path, data in files.items()
            if (path.endswith(".py") and path.rsplit("/", 1)[0] in packages)
            or any(glob_match(path, f"{NAME}/{pattern}") for pattern in PACKAGE_DATA)}


def requires_dist(requires_txt: str) -> list[str]:
    """Requires-Dist lines from an egg-info requires.txt: plain lines first, then '[extra]' sections."""
    lines, extras, extra = [], [], None
    for raw in requires_txt.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            extra = line[1:-1]
            extras.append(extra)
            continue
        line = line.replace(BROKEN, REPAIRED) if line.endswith(BROKEN) else line
        lines.append((extra, f"Requires-Dist: {line}" + (f"; extra == '{extra}'" if extra else "")))
    plain = [text for extra, text in lines if extra is None]
    by_extra = [text for e in extras for text in [f"Provides-Extra: {e}"] + [t for x, t in lines if x == e]]
    return plain + by_extra


def metadata(files: dict[str, bytes]) -> str:
    """METADATA: PKG-INFO's header fields (UNKNOWN ones dropped, as setuptools does) and the requirements."""
    keep = ("Metadata-Version", "Name", "Version", "Summary", "Home-page", "Author", "Author-email", "Classifier",
            "Requires-Python")
    fields = [line for line in files["PKG-INFO"].decode().splitlines()
              if ": " in line and line.split(": ", 1)[0] in keep and line.split(": ", 1)[1] != "UNKNOWN"]
    if f"Version: {VERSION}" not in fields:
        raise BuildError(f"PKG-INFO does not say Version: {VERSION}")
    return "\n".join(fields + requires_dist(files[f"{NAME}.egg-info/requires.txt"].decode())) + "\n"


def record_row(path: str, data: bytes) -> str:
    """One RECORD row: path, urlsafe-base64 sha256 without padding, size in bytes."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def wheel_entries(sdist: bytes) -> dict[str, bytes]:
    """Every entry of the wheel, in the order they are written (payload sorted, dist-info last, RECORD at the end)."""
    files = sdist_files(sdist)
    entries = dict(sorted(wheel_payload(files).items()))
    entries[f"{DIST_INFO}/METADATA"] = metadata(files).encode()
    entries[f"{DIST_INFO}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: marl-edu tools/build_gym_wheel.py\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n").encode()
    entries[f"{DIST_INFO}/top_level.txt"] = f"{NAME}\n".encode()
    rows = [record_row(path, data) for path, data in entries.items()] + [f"{DIST_INFO}/RECORD,,"]
    entries[f"{DIST_INFO}/RECORD"] = ("\n".join(rows) + "\n").encode()
    return entries


def write_wheel(entries: dict[str, bytes], dest_dir: pathlib.Path) -> pathlib.Path:
    """Write the zip under a unique temporary name in dest_dir, fsync it, then rename: never half a wheel."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / WHEEL_NAME
    fd, tmp_name = tempfile.mkstemp(prefix=f".{WHEEL_NAME}.", suffix=".tmp", dir=dest_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
                for path, data in entries.items():
                    info = zipfile.ZipInfo(path, date_time=ZIP_TIME)
                    info.external_attr = 0o644 << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    wheel.writestr(info, data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, dest)
    except BaseException:
        pathlib.Path(tmp_name).unlink(missing_ok=True)
        raise
    return dest


def build(dest_dir: pathlib.Path, sdist_path: pathlib.Path | None = None) -> pathlib.Path:
    sdist = sdist_path.read_bytes() if sdist_path else fetch_sdist()
    check_sdist(sdist)
    return write_wheel(wheel_entries(sdist), dest_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest_dir", type=pathlib.Path, help="folder to write the wheel into (created if missing)")
    parser.add_argument("--sdist", type=pathlib.Path, help=f"a local {SDIST} instead of fetching it")
    args = parser.parse_args(argv)
    try:
        wheel = build(args.dest_dir, args.sdist)
    except (BuildError, OSError, http.client.HTTPException) as error:  # (urllib's errors are OSErrors)
        print(f"build_gym_wheel: {error}", file=sys.stderr)
        return 1
    print(f"built {wheel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
