"""A command line run's folder (``--out``): what a run writes there, its log as it goes, and what ``--overwrite``
removes.

A run writes ``RUN_FILES`` (``runs.json``: every finished seed's figures, the config, the command, the run's status
and the seed in progress; ``returns.csv``; ``curve.png``) and one ``seed<S>/`` folder per seed (``policy.pt``,
``greedy.gif``, and ``run.pt`` while the seed is in progress); nothing else in the folder is the run's. While it
runs it holds the folder's lock (``LOCK_FILE``), so a second run or resume on the same folder is refused.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import tempfile
from typing import IO

try:
    import fcntl  # (POSIX: Linux, macOS, Colab)
except ImportError:  # Windows: no lock (the course runs on WSL there)
    fcntl = None

from marl_edu.base.files import atomic_write_text
from marl_edu.learners.table import entry
from marl_edu.runs.seed import save_artifacts, write_curve
from marl_edu.training.loops import TrainResult

RUN_FILES = ("runs.json", "returns.csv", "curve.png")  # with the seed<S>/ folders: what a run writes in its folder
SEED_FILES = ("policy.pt", "greedy.gif", "run.pt")  # what a run writes in a seed<S>/ folder
LOCK_FILE = ".run.lock"  # held by the run writing the folder (an empty file; the lock is the system's, not its bytes)


def probe_writable(folder: pathlib.Path) -> None:
    """Make ``folder`` (and its parents) and prove it writable with a probe file, created and removed."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
        pass


def run_files(folder: pathlib.Path) -> list[pathlib.Path]:
    """What a run of this command line left in ``folder``: its ``RUN_FILES`` and ``seed<S>`` folders."""
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir()
                  if path.name in RUN_FILES or (path.is_dir() and re.fullmatch(r"seed\d+", path.name)))


def _temporaries(where: pathlib.Path, names: tuple[str, ...]) -> list[pathlib.Path]:
    """The ``.NAME.xxxx.tmp`` files ``files.atomic_write`` left in ``where`` for the given NAMEs."""
    return [path for path in where.glob(".*.tmp") if path.is_file() and not path.is_symlink()
            and any(re.fullmatch(rf"\.{re.escape(name)}\.[^/]+\.tmp", path.name) for name in names)]


def remove_temporaries(folder: pathlib.Path) -> list[pathlib.Path]:
    """Remove the temporaries a killed run left behind (``files.atomic_write`` writes ``.NAME.xxxx.tmp`` beside NAME
    and renames it; a kill between the two leaves it): only those of the run's own files, in ``folder`` and its
    ``seed<S>/`` folders. Returns what was removed."""
    if not folder.is_dir():
        return []
    stale = _temporaries(folder, RUN_FILES)
    for seed in (path for path in run_files(folder) if path.is_dir() and not path.is_symlink()):
        stale += _temporaries(seed, SEED_FILES)
    for path in stale:
        path.unlink()
    return stale


def lock(folder: pathlib.Path) -> IO | None:
    """Take ``folder``'s lock for a run, held while the returned file stays open (close it when the run ends; the
    system also drops it when the process ends, however it ends). ValueError if another run holds it. None where the
    system has no such lock (Windows)."""
    if fcntl is None:
        return None
    handle = open(folder / LOCK_FILE, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # (BlockingIOError: another process holds it)
        handle.close()
        raise ValueError(f"--out {folder} is in use by another run that has not ended; wait for it, or choose "
                         f"another --out") from None
    return handle


def overwritten(folder: pathlib.Path, old_seeds, new_seeds) -> list[pathlib.Path]:
    """What ``--overwrite`` removes from ``folder`` before a run of ``new_seeds`` writes there: only what the run that
    ``runs.json`` records wrote, its ``RUN_FILES`` and, in the ``seed<S>/`` folders of its ``old_seeds``, its
    ``SEED_FILES`` (with their temporaries). Files of any other name stay, and so do other seed folders.

    Everything is checked before anything is removed: ValueError if files of a run's names are there without a
    ``runs.json`` (not a run of this command line), if a seed folder of either run is not a plain folder (a file or a
    symbolic link), or if a file the new run would write is there and is not the old run's."""
    if not (folder / "runs.json").is_file():
        found = run_files(folder)
        if found:
            raise ValueError(f"--out {folder} holds {', '.join(path.name for path in found[:3])} but no runs.json: "
                             f"not a run of this command line, so --overwrite removes nothing there; move them or "
                             f"choose another --out")
        return []
    old, new = {f"seed{seed}" for seed in old_seeds}, {f"seed{seed}" for seed in new_seeds}
    for name in sorted(old | new):
        path = folder / name
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise ValueError(f"--out {path} is not a plain folder (a file or a symbolic link), as a run's seed folder "
                             f"is; nothing was removed")
    for name in sorted(new - old):
        in_the_way = [path for path in (folder / name / file for file in SEED_FILES) if path.exists()]
        if in_the_way:
            raise ValueError(f"--out {in_the_way[0]} was not written by the run in {folder} (its runs.json's seeds "
                             f"are {sorted(old_seeds)}); move it or choose another --out; nothing was removed")
    removed = [path for path in (folder / name for name in RUN_FILES) if path.is_file()]
    removed += _temporaries(folder, RUN_FILES)
    for name in sorted(old):
        if (folder / name).is_dir():
            removed += [path for path in ((folder / name / file) for file in SEED_FILES) if path.is_file()]
            removed += _temporaries(folder / name, SEED_FILES)
    return removed


def remove_run(folder: pathlib.Path, paths: list[pathlib.Path]) -> None:
    """Remove ``overwritten``'s ``paths`` from ``folder``, then each seed folder they leave empty."""
    for path in paths:
        path.unlink(missing_ok=True)
    for seed in {path.parent for path in paths if path.parent != folder}:
        if not any(seed.iterdir()):
            seed.rmdir()


def writable_folder(out: str | pathlib.Path) -> pathlib.Path:
    """``--out`` as a folder (made if missing) proven writable by a probe file created and removed. ValueError in one
    line for an empty name, a file, or a folder that cannot be written (read-only, or a link to nowhere)."""
    if not str(out).strip():
        raise ValueError("--out must name a folder, got an empty string")
    folder = pathlib.Path(out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {folder} is a file, not a folder")
    if folder.is_symlink() and not folder.exists():
        raise ValueError(f"--out {folder} is a symbolic link to nothing ({os.readlink(folder)}), not a folder")
    try:
        probe_writable(folder)
    except OSError as error:
        raise ValueError(f"--out {folder} cannot be written: {error.strerror or error}") from None
    return folder


def open_folder(out: str, overwrite: bool, resume: bool) -> tuple[pathlib.Path, IO | None]:
    """``--out``: the output folder, proven writable (``writable_folder``), and its lock (``lock``), taken before its
    contents are looked at and held while the returned file stays open. ValueError for an empty name, a file, a
    folder that cannot be written or that another run holds, or one holding another run (``run_files``) unless
    ``overwrite`` (or ``resume``: continuing that run). Nothing in it is removed here."""
    folder = writable_folder(out)
    held = lock(folder)
    if not resume and not overwrite and run_files(folder):
        if held is not None:
            held.close()
        raise ValueError(f"--out {folder} holds another run ({run_files(folder)[0].name}); give --overwrite to "
                         f"replace it or --resume {folder} to continue it")
    return folder, held


class RunLog:
    """One command line run's outputs in ``out``, written as it goes: each finished seed's row, returns and files, and
    ``runs.json`` with the run's status (running, interrupted, complete) and the arguments ``--resume`` replays."""

    def __init__(self, out: pathlib.Path, header: dict, optimum: float | None, rows=(), returns=(), threads: int = 1):
        self.out, self.header, self.optimum, self.threads = out, header, optimum, threads
        self.rows, self.returns = list(rows), list(returns)  # rows: rounded figures; returns: "seed,episode,R" lines

    def finish_seed(self, run: TrainResult, row: dict) -> None:
        """A finished seed: its ``policy.pt`` and ``greedy.gif``, the curve with its row, then the logs, ``runs.json``
        last: what it records as finished is on disk, wherever a kill comes."""
        save_artifacts(run, self.header["env"], self.out / f"seed{row['seed']}", self.threads)
        self.rows.append(row)
        self.returns += [f"{row['seed']},{k + 1},{r:.2f}" for k, r in enumerate(run.episode_returns)]
        self.draw_curve()
        self.write("running")

    def draw_curve(self) -> None:
        """``curve.png``: every finished seed's periodic evaluations."""
        sampled = any(row.get("sampled_evaluations") for row in self.rows)  # (the dotted line: viz's)
        ylabel = (None if not entry(self.header["algo"]).continuous
                  else "team return, mean of 10 episodes\n(solid: noise-free, dotted: sampled)" if sampled
                  else "noise-free team return\n(mean of 10 episodes)")
        write_curve(self.rows, self.optimum, f"{self.header['algo']} on {self.header['env']}", self.out / "curve.png",
                    ylabel)

    def write(self, status: str, in_progress: dict | None = None) -> None:
        """``returns.csv`` (once a seed has finished) and ``runs.json`` as they stand, with the run's ``status`` and the
        seed ``in_progress``. ``runs.json`` comes last, and is the run's first file: a kill at any point leaves either
        no run (started again as new) or one ``--resume`` continues."""
        if self.rows:
            atomic_write_text(self.out / "returns.csv", "\n".join(["seed,episode,team_return", *self.returns]) + "\n")
        summary = {**self.header, "status": status, "in_progress": in_progress, "seeds": self.rows}
        atomic_write_text(self.out / "runs.json", json.dumps(summary, indent=1) + "\n")
