"""The command line: ``python -m marl_edu --algo coma --out runs/coma`` (its options: ``python -m marl_edu --help``).
It lives in ``marl_edu.course.cli``; this file starts it."""

import os
import signal
import sys


def _starting(signum, frame):  # (cli.main puts its own handlers in place once it starts)
    # Nothing is written before cli.main starts, so leave at once: os._exit, not SystemExit, which raised while
    # torch's C++ code is importing a module (torch.distributed) aborts the process with a C++ traceback (-6).
    print("python -m marl_edu: interrupted while starting: nothing was written", file=sys.stderr, flush=True)
    os._exit(128 + signum)


if __name__ == "__main__":  # a Ctrl-C or SIGTERM while the modules load (a few seconds)
    for _signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signum, _starting)

    from marl_edu.course.cli import main

    raise SystemExit(main())
