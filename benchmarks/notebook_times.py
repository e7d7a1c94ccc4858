"""Time each notebook, executed top to bottom in a fresh kernel (the course promises under a minute each).

Run from the repository root:  .venv/bin/python benchmarks/notebook_times.py
It executes copies in memory; the committed notebooks are not modified (GIFs in media/ are rewritten
with identical bytes).
"""

import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUDGET_SECONDS = 60


def main() -> int:
    over = 0
    print(f"{'notebook':<32} {'seconds':>8}")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})
        start = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - start
        over += seconds > BUDGET_SECONDS
        print(f"{path.name:<32} {seconds:8.1f}{'  OVER BUDGET' if seconds > BUDGET_SECONDS else ''}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
