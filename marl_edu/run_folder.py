"""A command line run's folder (``--out``): what a run writes there, its log as it goes, and what ``--overwrite``
removes.

A run writes ``RUN_FILES`` (``runs.json``: every finished seed's figures, the config, the command, the run's status
and the seed in progress; ``returns.csv``; ``curve.png``) and one ``seed<S>/`` folder per seed (``policy.pt``,
``greedy.gif``, and ``run.pt`` while the seed is in progress); nothing else in the folder is the run's.
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import tempfile

from marl_edu.files import atomic_write_text
from marl_edu.learners import entry
from marl_edu.runs import save_artifacts, write_curve
from marl_edu.train import TrainResult

RUN_FILES = ("runs.json", "returns.csv", "curve.png")  # with the seed<S>/ folders: what a run writes in its folder
SEED_FILES = ("policy.pt", "greedy.gif", "run.pt")  # what a run writes in a seed<S>/ folder


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


def remove_temporaries(folder: pathlib.Path) -> list[pathlib.Path]:
    """Remove the temporaries a killed run left behind (``files.atomic_write`` writes ``.NAME.xxxx.tmp`` beside NAME
    and renames it; a kill between the two leaves it): only those of the run's own files, in ``folder`` and its
    ``seed<S>/`` folders. Returns what was removed."""
    def temporaries(where: pathlib.Path, names: tuple[str, ...]) -> list[pathlib.Path]:
        return [path for path in where.glob(".*.tmp") if path.is_file()
                and any(re.fullmatch(rf"\.{re.escape(name)}\.[^/]+\.tmp", path.name) for name in names)]

    if not folder.is_dir():
        return []
    stale = temporaries(folder, RUN_FILES)
    for seed in (path for path in run_files(folder) if path.is_dir()):
        stale += temporaries(seed, SEED_FILES)
    for path in stale:
        path.unlink()
    return stale


def remove_run(folder: pathlib.Path) -> None:
    """Remove what a run left in ``folder`` (``run_files``): ``--overwrite``, before the new run writes."""
    for path in run_files(folder):
        shutil.rmtree(path) if path.is_dir() else path.unlink()


class RunLog:
    """One command line run's outputs in ``out``, written as it goes: each finished seed's row, returns and files, and
    ``runs.json`` with the run's status (running, interrupted, complete) and the arguments ``--resume`` replays."""

    def __init__(self, out: pathlib.Path, header: dict, optimum: float | None, rows=(), returns=(), threads: int = 1):
        self.out, self.header, self.optimum, self.threads = out, header, optimum, threads
        self.rows, self.returns = list(rows), list(returns)  # rows: rounded figures; returns: "seed,episode,R" lines

    def finish_seed(self, run: TrainResult, row: dict) -> None:
        """A finished seed: its ``policy.pt`` and ``greedy.gif``, its row and returns, then the logs and the curve."""
        save_artifacts(run, self.header["env"], self.out / f"seed{row['seed']}", self.threads)
        self.rows.append(row)
        self.returns += [f"{row['seed']},{k + 1},{r:.2f}" for k, r in enumerate(run.episode_returns)]
        self.write("running")
        ylabel = (None if entry(self.header["algo"]).loop != "continuous"
                  else "noise-free team return\n(mean of 10 episodes)")
        write_curve(self.rows, self.optimum, f"{self.header['algo']} on {self.header['env']}", self.out / "curve.png",
                    ylabel)

    def write(self, status: str, in_progress: dict | None = None) -> None:
        """``returns.csv`` and ``runs.json`` as they stand, with the run's ``status`` and the seed ``in_progress``."""
        atomic_write_text(self.out / "returns.csv", "\n".join(["seed,episode,team_return", *self.returns]) + "\n")
        summary = {**self.header, "status": status, "in_progress": in_progress, "seeds": self.rows}
        atomic_write_text(self.out / "runs.json", json.dumps(summary, indent=1) + "\n")
