"""Where the course's own files are, wherever a notebook runs from.

A learner may work in a copy of ``notebooks/`` (to keep their answers apart from the course's). The committed runs
in ``results/`` are then found through the installed package (``make setup`` installs it editable, from the clone),
and a notebook's new files go beside it: ``media/`` in the folder it runs in, unless that folder is the course's own
``notebooks/``, whose GIFs live in the course's ``media/``.
"""

from __future__ import annotations

import pathlib

COURSE_ROOT = pathlib.Path(__file__).resolve().parents[2]  # the clone marl_edu was installed from
RESULTS_DIR = COURSE_ROOT / "results"
COURSE_MEDIA_DIR = COURSE_ROOT / "media"


def results_dir(*parts: str) -> pathlib.Path:
    """The committed results folder ``results/<parts...>`` of the course, found through the installed package.

    Raises FileNotFoundError with one line saying what to do when it is not there (marl_edu installed without the
    course's clone, or a folder name that does not exist)."""
    path = RESULTS_DIR.joinpath(*parts)
    if not RESULTS_DIR.is_dir():
        raise FileNotFoundError(f"the course's committed results are not beside marl_edu (looked in {RESULTS_DIR}): "
                                f"install the course from its clone with 'make setup' (pip install -e .)")
    if not path.exists():
        have = sorted(p.name for p in path.parent.iterdir()) if path.parent.is_dir() else []
        raise FileNotFoundError(f"no {'/'.join(('results',) + parts)} in the course (looked in {path}); "
                                f"{path.parent.name}/ holds {have}")
    return path


def media_dir(cwd: str | pathlib.Path | None = None) -> pathlib.Path:
    """Where a notebook's new GIFs go: the course's ``media/`` when it runs in the course's ``notebooks/`` (or its
    root, as the command line and tests do), else ``media/`` beside it, in the folder it runs in (``cwd``, default
    the current folder): a copy of the notebooks never writes into the course."""
    here = pathlib.Path.cwd() if cwd is None else pathlib.Path(cwd)
    here = here.resolve()
    if here in (COURSE_ROOT, COURSE_ROOT / "notebooks"):
        return COURSE_MEDIA_DIR
    return here / "media"
