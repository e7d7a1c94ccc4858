"""Time each notebook, executed top to bottom in a fresh kernel (the course promises under a minute each).

Run from the repository root:  .venv/bin/python benchmarks/notebook_times.py [--only 08 12] [--busy [K]]
It executes copies in memory; the committed notebooks are not modified (GIFs in media/ are rewritten
with identical bytes). ``--only`` times the notebooks whose names start with the given prefixes; ``--busy K`` runs K
CPU-bound processes beside them the whole time (a learner's machine doing something else, or CI sharing its cores;
``--busy`` alone is one), which is what made two torch threads fight: compare a run with it against one without. On
a 2-core machine ``--busy 2`` leaves the notebook no core of its own.
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
    parser.add_argument("--busy", type=int, nargs="?", const=1, default=0, metavar="K",
                        help="K CPU-bound processes run beside them (default without K: 1)")
    args = parser.parse_args()
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.only:
        paths = [path for path in paths if path.name.startswith(tuple(args.only))]
        if not paths:
            parser.error(f"no notebook starts with {' or '.join(args.only)}")
    if args.busy < 0:
        parser.error(f"--busy takes a number of processes >= 0, got {args.busy}")
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    over = 0
    beside = f"  ({args.busy} CPU-bound process{'es' if args.busy > 1 else ''} beside)" if args.busy else ""
    print(f"{'notebook':<40} {'seconds':>8}{beside}")
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
        for spinner in spinners:
            spinner.terminate()
            spinner.join()
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
