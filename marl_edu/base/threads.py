"""Torch threads for training and evaluation: one by default, the caller's count restored after.

The course's networks are tiny (two hidden layers of 64 units, batches of a few hundred rows), so a second thread
has little to share and spends its time waiting: on a 2-core machine with another CPU-bound process beside it,
300 MADDPG episodes took 14 s on one thread and 100 s on two. Every training loop and evaluation of ``marl_edu``
therefore runs inside ``torch_threads(threads)``, on one thread unless told otherwise, and leaves torch as it
found it. A notebook cell that trains a critic or fits a network in a loop of its own uses the same mechanism: without
it the loop ran on torch's default, and beside one other CPU-bound process notebook 08 took 316 s on two threads
against 29 s idle (``benchmarks/notebook_times.py --busy``). Such a loop runs inside ``torch_threads()``; no notebook
sets the kernel's count (``tests/test_threads.py`` checks both).

The count can change the last bits of a result (torch splits sums between threads), so a run is reproducible for a
seed *and* a thread count; the command line records ``--threads`` with the run.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Callable, Iterator

import torch

from marl_edu.base.validate import positive_int

MAX_THREADS = 256  # far above any machine this course runs on: a typo fails in one line


_ACTIVE: list[int] = []  # the counts of the torch_threads blocks now running, innermost last


@contextlib.contextmanager
def torch_threads(threads: int | None = None) -> Iterator[None]:
    """Run the ``with`` block with torch on ``threads`` intra-op threads, then restore the caller's count (also when
    the block raises). ``None``: the enclosing ``torch_threads`` block's count, or 1 outside any; so an evaluation a
    training loop calls runs on the loop's count, and the same evaluation called on its own runs on one thread.
    ValueError names a count that is not an int in [1, ``MAX_THREADS``]."""
    if threads is None:
        threads = _ACTIVE[-1] if _ACTIVE else 1
    threads = positive_int(threads, "threads", MAX_THREADS)
    before = torch.get_num_threads()
    if threads != before:
        torch.set_num_threads(threads)
    _ACTIVE.append(threads)
    try:
        yield
    finally:
        _ACTIVE.pop()
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def on_one_thread(fn: Callable) -> Callable:
    """``fn`` run inside ``torch_threads(1)``: for the exercise checkers and capstone runs, which call a learner's own
    code (that takes no ``threads``) beside the library's. The values are the same as on any count the library's
    side also runs on; only the waiting goes."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch_threads(1):
            return fn(*args, **kwargs)
    return wrapper


def on_enclosing_threads(fn: Callable) -> Callable:
    """``fn`` run inside ``torch_threads()``: the enclosing block's count, or one outside any. For a learner's
    ``update``: inside a training loop it runs on the loop's count, and called on its own (a notebook cell showing one
    update) on one thread, not torch's default two, which on a busy 2-core machine made one COMA update take seconds."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch_threads():
            return fn(*args, **kwargs)
    return wrapper
