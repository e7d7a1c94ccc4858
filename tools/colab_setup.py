"""Install what Google Colab lacks for the course, keeping Colab's own torch, numpy, matplotlib and ipywidgets.

Run by every notebook's first code cell inside Colab, after it has fetched the course (anywhere else that cell does
nothing). What it does, each step printed:
1. Colab's torch, numpy, matplotlib and ipywidgets are kept: they are pinned to the installed versions, so pip can
   only add packages around them. If one is outside the range pyproject.toml supports (Colab moved on), it says so
   and carries on with Colab's version: untested, but the alternative, replacing it, breaks Colab's other packages.
2. Colab ships `pygame`, and mpe2 (the particle environments) needs `pygame-ce`. Both install into the same
   `pygame/` folder, so keeping both corrupts it: `pygame` is removed, and `pygame-ce` (the same API) replaces it.
3. gym 0.20.0's wheel is assembled by tools/build_gym_wheel.py (Colab's gym 0.25 is too new for ma-gym).
4. pip installs pyproject.toml's dependencies; packages Colab does not have come at the versions CI tested on this
   Python (constraints/python3.X.txt), and packages it has are kept whenever they satisfy the course.
The course itself is imported from the fetched folder (the notebook's setup cell puts it on sys.path).

Usage (inside Colab): python tools/colab_setup.py
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
KEEP = ("torch", "numpy", "matplotlib", "ipywidgets")  # Colab's builds: replacing them breaks its other packages
STAMP = ROOT / ".colab-installed"  # holds the sha256 of the pyproject.toml it installed; the next notebooks skip


def installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def requirement_name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)).lower()


def pip(*args: str) -> None:
    print("+ pip", " ".join(args), flush=True)
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def constraints(dependencies: list[str]) -> tuple[str, list[str]]:
    """Pins (KEEP at Colab's versions, the tested versions of whatever is not installed yet) and the requirements
    to install: all of pyproject's, except a KEEP package whose Colab version is outside the course's range."""
    from packaging.requirements import Requirement  # Colab has packaging; imported here so --help needs nothing

    lines, install = [], []
    for text in dependencies:
        requirement = Requirement(text)
        name, version = requirement_name(requirement.name), installed(requirement.name)
        install.append(text)
        if name in KEEP and version is not None:
            lines.append(f"{name}=={version}")
            if requirement.specifier.contains(version, prereleases=True):
                print(f"keeping Colab's {name} {version}")
            else:
                install.pop()
                print(f"WARNING: this runtime's {name} {version} is outside the course's tested range "
                      f"'{requirement.specifier}'; keeping it (replacing it would break Colab's other packages)")
    tested = ROOT / "constraints" / f"python{sys.version_info.major}.{sys.version_info.minor}.txt"
    if tested.exists():
        for line in tested.read_text().splitlines():
            if line and not line.startswith("#") and installed(line.split("==")[0]) is None:
                lines.append(line)
    return "\n".join(lines) + "\n", install


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="It changes the Python that runs it: Colab only (elsewhere: make setup).")
    parser.parse_args(argv)
    if importlib.util.find_spec("google") is None or importlib.util.find_spec("google.colab") is None:
        sys.exit("colab_setup: this sets up a Google Colab runtime (it uninstalls and installs packages in the Python "
                 "that runs it); anywhere else, use make setup")
    pyproject = (ROOT / "pyproject.toml").read_text()
    digest = hashlib.sha256(pyproject.encode()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest:
        print("marl-edu is set up in this runtime already")
        return
    pins, dependencies = constraints(tomllib.loads(pyproject)["project"]["dependencies"])
    if installed("pygame") is not None and installed("pygame-ce") is None:
        print("replacing pygame with pygame-ce: mpe2 needs pygame-ce, and the two share one `pygame` folder")
        pip("uninstall", "--yes", "--quiet", "pygame")
    if not (ROOT / ".wheelhouse" / "gym-0.20.0-py3-none-any.whl").exists():
        subprocess.run([sys.executable, str(ROOT / "tools" / "build_gym_wheel.py"), str(ROOT / ".wheelhouse")],
                       check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="colab-constraints-") as pinned:
        pinned.write(pins)
        pinned.flush()
        pip("install", "--quiet", "--find-links", str(ROOT / ".wheelhouse"), "--only-binary", "gym",
            "-c", pinned.name, *dependencies)
    STAMP.write_text(digest)
    print("marl-edu is ready: " + ", ".join(f"{name} {installed(name)}"
                                            for name in ("torch", "gym", "ma-gym", "mpe2", "lbforaging")))


if __name__ == "__main__":
    main()
