"""A grid of independent training runs, on Ray or on a local process pool: what every benchmark that trains several
seeds shares (benchmarks/compare.py, sweep.py, foraging.py, particle.py, competition.py, fresh.py).

Each run is one call ``function(job)`` in its own process, on one CPU (the function trains with ``threads=1``).
``--runner ray`` (the default when the optional ray extra is installed: ``pip install -e ".[ray]"``) starts a local
Ray instance with ``--jobs`` CPUs, or joins the cluster at ``--address`` (``auto`` on a cluster node, or
``ray://HEAD:10001``), where every node has the course's environment (``make setup``) and joined the cluster from it
(``ray start --address=HEAD:6379``). ``--runner pool`` runs them on ``--jobs`` local processes. Only where the runs
go changes: a run's results are the same whichever runner ran it, so the scripts leave these options out of the
commands they record (``drop_runner_options``).

A run's files (its policy, its GIF, its record) travel back as bytes (``run_files``) and the process that started
the grid writes them, each atomically (``write_files``): a run on another machine leaves nothing there.

What every script checks as the command line does (``course.cli``), before any run, one ``error:`` line and exit
status 2 for a bad one: its ``--out`` (``open_out``: a writable folder, locked for the whole script, so a second
script writing the same folder meanwhile is refused) and each record it reads back (``read_record``: the script's
own fields and types, finite numbers, the run the path names; anything else is refused, never trusted).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import multiprocessing
import os
import pathlib
import sys
import tempfile
from typing import IO, Callable, Iterator

from marl_edu.base.files import atomic_write_bytes
from marl_edu.base.validate import positive_int
from marl_edu.envs.make import resolve
from marl_edu.learners.table import check_env
from marl_edu.runs.folder import lock, writable_folder
from marl_edu.runs.seed import SAMPLED_STARTS

RUNNERS = ("ray", "pool")
RUNNER_OPTIONS = ("--runner", "--address")


def default_runner() -> str:
    """Ray when it is installed, else the local process pool."""
    return "ray" if importlib.util.find_spec("ray") is not None else "pool"


def add_runner_options(parser: argparse.ArgumentParser) -> None:
    """``--runner`` and ``--address`` (the script has its own ``--jobs``)."""
    parser.add_argument("--runner", choices=RUNNERS, default=default_runner(),
                        help="ray (a local Ray instance, or the cluster at --address) or pool (local processes); "
                             "default: ray when it is installed, else pool")
    parser.add_argument("--address", default=None,
                        help="a Ray cluster to run on (auto, or ray://host:10001); default: a local instance")


def check_runner_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before any run, an address without Ray, Ray when it is not installed, and fewer than one job."""
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.address and args.runner != "ray":
        parser.error("--address needs --runner ray (and Ray installed: pip install -e '.[ray]')")
    if args.runner == "ray" and importlib.util.find_spec("ray") is None:
        parser.error("--runner ray needs Ray: pip install -e '.[ray]' (or --runner pool)")


# the command line's bounds (course.cli.LIMITS) on what every script takes too
MAX_SEED, MAX_EPISODES = 2**31 - 1, 10_000_000


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The options most scripts share, checked as the command line checks its own, before any run (one ``error:``
    line, exit status 2): ``--seeds`` distinct ints in [0, 2^31 - 1], ``--episodes`` (an int) in [1, 10,000,000],
    ``--eval-every`` (unless None) in [1, --episodes], ``--jobs`` at least 1, and ``--env`` (unless None) an env the
    script's ``--algo`` (if it has one) trains on. A script checks its own options beside these."""
    seeds = getattr(args, "seeds", [0])
    if len(set(seeds)) != len(seeds) or min(seeds) < 0 or max(seeds) > MAX_SEED:
        parser.error(f"--seeds must be distinct ints in [0, {MAX_SEED}], got {' '.join(map(str, seeds))[:80]}")
    episodes = getattr(args, "episodes", None)
    if type(episodes) is int and not 1 <= episodes <= MAX_EPISODES:
        parser.error(f"--episodes must be between 1 and {MAX_EPISODES:,}, got {episodes}")
    every = getattr(args, "eval_every", None)
    if every is not None and not 1 <= every <= (episodes if type(episodes) is int else MAX_EPISODES):
        parser.error(f"--eval-every must be between 1 and --episodes ({episodes}), got {every}")
    if getattr(args, "jobs", 1) < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if getattr(args, "env", None) is not None:
        try:
            args.env = check_env(args.algo, args.env) if getattr(args, "algo", None) else resolve(args.env)
        except ValueError as error:
            parser.error(f"--env: {error}")


def where(args: argparse.Namespace) -> str:
    """Where the runs go, for the scripts' first line."""
    return f"on the Ray cluster at {args.address}" if args.address else f"{args.jobs} at a time ({args.runner})"


# Ray raises a bare Exception with this text when a local node has not registered within 30 s (fixed in Ray's code):
# on a busy machine, as CI's with the browser tests beside it, that has happened.
NODE_TIMEOUT = "timed out during startup"
START_ATTEMPTS = 3


def start_ray(ray, address: str | None, jobs: int, attempts: int = START_ATTEMPTS) -> None:
    """``ray.init``: join the cluster at ``address``, or start a local instance with ``jobs`` CPUs. A local node that
    times out while starting is shut down and started again, up to ``attempts`` times in all, saying so on stderr;
    any other error, or a cluster that cannot be joined, is raised at once."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=address, num_cpus=None if address else jobs, include_dashboard=False,
                     log_to_driver=False)
            return
        except Exception as error:  # Ray's own type for it is Exception
            if address or NODE_TIMEOUT not in str(error) or attempt == attempts:
                raise
            ray.shutdown()
            print(f"Ray's local node did not start within Ray's 30 s (a busy machine?): starting it again, "
                  f"attempt {attempt + 1} of {attempts}", file=sys.stderr)


def run_grid(function: Callable, todo: list, runner: str, jobs: int, address: str | None = None,
             ordered: bool = False) -> Iterator:
    """``function(job)`` of every job in ``todo``: on a local process pool of ``jobs`` processes, or on Ray (a local
    instance with ``jobs`` CPUs, or the cluster at ``address``), one CPU per run. Yields each result as its run
    finishes (not in order), or with ``ordered`` in the order of ``todo`` (a finished run then waits for the ones
    before it). ``function`` must be a module-level function of the calling script (or of an importable module).
    ValueError names a runner that is not one of ``RUNNERS`` or a count of jobs below 1."""
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {', '.join(RUNNERS)}, got {runner!r}")
    positive_int(jobs, "jobs")
    if not todo:
        return
    if runner == "pool":
        with multiprocessing.get_context("spawn").Pool(min(jobs, len(todo))) as pool:  # no idle process started
            yield from (pool.imap if ordered else pool.imap_unordered)(function, todo)
        return
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
    start_ray(ray, address, jobs)
    if function.__module__ != "__main__":  # imported (the tests): Ray's workers cannot import the benchmarks'
        # scripts, so send the function's module by value, as Ray does for a script's own functions
        ray.cloudpickle.register_pickle_by_value(sys.modules[function.__module__])
    try:
        remote = ray.remote(num_cpus=1)(function)
        pending = [remote.remote(job) for job in todo]
        if ordered:
            for reference in pending:
                yield ray.get(reference)
            return
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        ray.shutdown()


def interrupted(finished: int, out: pathlib.Path, in_progress: str = "the runs in progress are lost; the same "
                "command with --reuse trains only the runs missing", what: str = "run") -> int:
    """Ctrl-C during a grid of hours: one line on stderr saying how many finished ``what``s' files are in ``out`` (a
    run's, a re-timing's) and what became of the ones in progress (``in_progress``), instead of a traceback (every
    finished one's files are written as it ends); returns 130, the exit status of a command stopped by Ctrl-C."""
    whose = f"{what}'s" if finished == 1 else f"{what}s'"
    print(f"interrupted: {finished} finished {whose} files are in {out}; {in_progress}", file=sys.stderr)
    return 130


def drop_runner_options(argv: list[str], also: tuple[str, ...] = ()) -> list[str]:
    """The command line without --runner and --address (and the options ``also`` names) and their values: where the
    runs went does not change the results, so a recorded command leaves it out (as it leaves out where runs in
    progress were saved: a resumed run is the run straight through)."""
    options = (*RUNNER_OPTIONS, *also)
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        elif not arg.startswith(tuple(f"{option}=" for option in options)):
            kept.append(arg)
    return kept


def run_files(save: Callable[[pathlib.Path], object]) -> dict[str, bytes]:
    """What ``save(folder)`` writes into an empty temporary folder (``runs.seed.save_artifacts``' policy.pt and
    greedy.gif, say), as ``{file name: bytes}`` in the order of their names: a run's files, sent back from the process
    (or machine) that trained it to the one that writes them (``write_files``)."""
    with tempfile.TemporaryDirectory() as folder:
        save(pathlib.Path(folder))
        return {path.name: path.read_bytes() for path in sorted(pathlib.Path(folder).iterdir()) if path.is_file()}


def write_files(folder: pathlib.Path, files: dict[str, bytes]) -> None:
    """Each of ``files`` (``{file name: bytes}``) into ``folder`` (made if missing), atomically
    (``files.atomic_write_bytes``), in the dict's order: a run's record goes last, the mark of a finished run."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if not isinstance(data, bytes) or pathlib.Path(name).name != name:
            raise ValueError(f"write_files takes {{file name: bytes}}, got {name!r}: {type(data).__name__}")
        atomic_write_bytes(folder / name, data)


def open_out(parser: argparse.ArgumentParser, out: str | pathlib.Path) -> tuple[pathlib.Path, IO | None]:
    """A benchmark's ``--out`` checked as the command line's, before any run: a folder (made if missing) that can be
    written (``runs.folder.writable_folder``), and its lock (``runs.folder.lock``), held while the returned file stays
    open: keep it until the script ends, so that a second script writing the same folder meanwhile is refused. Unlike
    the command line's, a folder holding results is taken: a benchmark adds its runs to its own folder. A bad one is
    ``parser.error``'s one line, exit status 2."""
    try:
        folder = writable_folder(out)
        return folder, lock(folder)
    except ValueError as error:
        parser.error(str(error))


def _strict_number(text: str) -> float:
    """A JSON number read as a float, refused if it is out of float's range (``1e400`` would be infinity)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a results file holds")


# a record field's type for ``read_record`` when the run may have none of it (never solved: no episode, no seconds)
MAYBE_INT, MAYBE_FLOAT = (int, type(None)), (float, type(None))


def read_record(path: pathlib.Path, fields: dict[str, type | tuple[type, ...]], expected: dict | None = None,
                what: str = "--reuse") -> dict:
    """The JSON object a benchmark wrote at ``path`` (a run's record or a summary), checked before it is trusted:
    strict JSON (no NaN or Infinity, no number out of float's range), each of ``fields`` present with its type
    (``{"seed": int, "final": float, "steps_to_target": MAYBE_INT}``; a float field takes an int, a bool is
    no number), and each of ``expected``'s fields equal to its value (the run the path names: its method, seed, env).
    A file written by another script, another run or a hand is refused, never trusted: ValueError in one line, after
    ``what`` (the option that reads it), naming the file and the field."""
    try:
        record = json.loads(pathlib.Path(path).read_text(), parse_constant=_no_constant,
                            parse_float=_strict_number, parse_int=_whole)
    except (ValueError, UnicodeDecodeError, OSError, RecursionError) as error:
        raise ValueError(f"{what}: {path} is not a results file (JSON): {str(error)[:120]}; move it away or run "
                         f"without {what}") from None
    if not isinstance(record, dict):
        raise ValueError(f"{what}: {path} holds a {type(record).__name__}, not a results file's JSON object")
    for name, kind in fields.items():
        kinds = kind if isinstance(kind, tuple) else (kind,)
        kinds = (*kinds, int) if float in kinds else kinds
        value = record.get(name, _MISSING)
        if value is _MISSING or (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            got = "nothing" if value is _MISSING else f"{type(value).__name__} {str(value)[:40]}"
            raise ValueError(f"{what}: {path} is not a run's record of this benchmark: its {name!r} must be "
                             f"{' or '.join(k.__name__ for k in kinds)}, got {got}; move it away or run without "
                             f"{what}")
    for name, value in (expected or {}).items():
        if record.get(name) != value:
            raise ValueError(f"{what}: {path} is another run's record: its {name!r} is {str(record.get(name))[:40]}, "
                             f"this run's {value}; move it away or run without {what}")
    return record


_MISSING = object()


def require_paired(record: dict, path: pathlib.Path, what: str = "--reuse") -> None:
    """Refuse a record of a task whose episodes start at random unless its sampled figures played its greedy ones'
    own episodes: it says ``sampled_starts`` (``runs.seed.SAMPLED_STARTS``) and keeps ``sampled_gap_se``, a
    standard error (a number, 0 or more). A record made before the pairing, or one with other values there, does not
    compare with today's runs: ValueError in one line, after ``what`` (the option or table that reads it), naming the
    file and the field."""
    advice = "; move it away or run without --reuse" if what == "--reuse" else "; move it away or train that run again"
    if "sampled_starts" not in record:
        raise ValueError(f"{what}: {path} was recorded before the sampled figures played the greedy ones' episodes "
                         "(it has no 'sampled_starts'): its figures do not compare with today's runs; move it away "
                         "or train that run again")
    if record["sampled_starts"] != SAMPLED_STARTS:
        raise ValueError(f"{what}: {path} is not a run's record of this benchmark: its 'sampled_starts' is "
                         f"{str(record['sampled_starts'])[:40]!r}, expected {SAMPLED_STARTS!r}{advice}")
    se = record.get("sampled_gap_se")
    if isinstance(se, bool) or not isinstance(se, (int, float)) or not 0 <= se < math.inf:
        raise ValueError(f"{what}: {path} is not a run's record of this benchmark: its 'sampled_gap_se' is "
                         f"{str(se)[:40]}, expected a standard error (a number, 0 or more){advice}")


def _whole(text: str) -> int:
    """A JSON int, refused past 20 digits (json reads any length; a file's seed of 10^6 digits is no run's)."""
    if len(text.lstrip("-")) > 20:
        raise ValueError(f"the int {text[:20]}... is out of range")
    return int(text)


def keeps_files(folder: pathlib.Path, seed: int, seeds: list[int]) -> bool:
    """Whether the run of ``seed`` writes a method's policy.pt and greedy.gif into ``folder`` (OUT/METHOD, where its
    seed<S>.json records go): the first of the invocation's ``seeds``, unless a lower seed's record is already in
    ``folder`` (a grid committed over sittings with other ``--seeds`` keeps its lowest seed's policy, the one
    tests/test_results.py replays against that record)."""
    recorded = [path.name.removeprefix("seed").removesuffix(".json") for path in folder.glob("seed*.json")]
    return seed == min(seeds) and not any(name.isdigit() and int(name) < seed for name in recorded)
