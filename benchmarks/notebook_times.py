"""Time each notebook, executed top to bottom in a fresh kernel (the course promises under a minute each).

Run from the repository root:  .venv/bin/python benchmarks/notebook_times.py [--only 08 12] [--busy]
It executes copies in memory; the committed notebooks are not modified (GIFs in media/ are rewritten
with identical bytes). ``--only`` times the notebooks whose names start with the given prefixes; ``--busy`` runs a
second CPU-bound process beside them the whole time (a learner's machine doing something else, or CI sharing its
cores), which is what made two torch threads fight: compare a run with it against one without.
"""

import argparse
import multiprocessing
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUDGET_SECONDS = 60


def _spin() -> None:  # the other CPU-bound process of --busy: pure Python arithmetic, for ever
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2**31


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", default=None, metavar="PREFIX", help="notebooks starting with these")
    parser.add_argument("--busy", action="store_true", help="a second CPU-bound process runs beside them")
    args = parser.parse_args()
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.only:
        paths = [path for path in paths if path.name.startswith(tuple(args.only))]
        if not paths:
            parser.error(f"no notebook starts with {' or '.join(args.only)}")
    spinner = multiprocessing.Process(target=_spin, daemon=True) if args.busy else None
    if spinner is not None:
        spinner.start()
    over = 0
    print(f"{'notebook':<40} {'seconds':>8}{'  (a CPU-bound process beside)' if args.busy else ''}")
    try:
        for path in paths:
            notebook = nbformat.read(path, as_version=4)
            client = NotebookClient(notebook, timeout=1800, kernel_name="python3",
                                    resources={"metadata": {"path": str(path.parent)}})
            start = time.perf_counter()
            client.execute()
            seconds = time.perf_counter() - start
            over += seconds > BUDGET_SECONDS
            print(f"{path.name:<40} {seconds:8.1f}{'  OVER BUDGET' if seconds > BUDGET_SECONDS else ''}",
                  flush=True)
    finally:
        if spinner is not None:
            spinner.terminate()
            spinner.join()
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
