"""benchmarks/compare.py gives the same files, and benchmarks/sweep.py prints the same figures, whichever runner ran
the grid (marl_edu.runs.grid): the local process pool, or Ray (here a local Ray instance on two CPUs; the same code
runs on a cluster given --address). Needs Ray (make test-ray installs the ray extra); without it the Ray tests are
skipped and the pool's are still run."""

import contextlib
import importlib
import io
import json
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# wall-clock figures, the only ones a runner may change; and the command, whose --out differs between the two runs
TIMINGS = {"wall_s", "steps_per_s", "seconds_to_solve", "command"}
GRID = ["--envs", "Switch2-v0", "--methods", "coma-gru", "iddpg-mlp", "--seeds", "0", "--episodes", "32",
        "--jobs", "2"]


def compare_module():
    """benchmarks/compare.py imported by name, so the pool's processes (which import their function by module name)
    find it too."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module("compare")


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def results(out: pathlib.Path) -> dict[str, object]:
    """Every file the grid wrote (but the figure), the JSON ones without their wall-clock figures and command."""
    found = {}
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.suffix != ".png":
            name = str(path.relative_to(out))
            found[name] = without_timings(json.loads(path.read_text())) if path.suffix == ".json" else path.read_bytes()
    return found


@pytest.fixture(scope="module")
def ray():
    """Ray, or the test skipped. Module-scoped and asked for before the pool's fixtures, so that without Ray (make test)
    the skip comes before the pool's run, not after it (pytest sets up a module's fixtures before a test's own,
    whatever the order of the arguments: a function-scoped `ray` skipped only after the pool's 20 s grid)."""
    return pytest.importorskip("ray", reason="Ray is an optional extra: make test-ray installs it")


@pytest.fixture(scope="module")
def pool_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("pool")
    assert compare_module().main([*GRID, "--runner", "pool", "--out", str(out)]) == 0
    return results(out)


def test_the_pool_writes_every_run_and_the_summary(pool_results):
    assert {"Switch2-v0/coma-gru/seed0.json", "Switch2-v0/coma-gru/policy.pt", "Switch2-v0/coma-gru/greedy.gif",
            "Switch2-v0/iddpg-mlp/seed0.json", "Switch2-v0/summary.json"} <= set(pool_results)
    assert [row["method"] for row in pool_results["Switch2-v0/summary.json"]["table"]] == ["coma-gru", "iddpg-mlp"]


def test_ray_gives_the_same_files_as_the_pool(ray, pool_results, tmp_path):
    out = tmp_path / "ray"
    assert compare_module().main([*GRID, "--runner", "ray", "--out", str(out)]) == 0
    assert results(out) == pool_results


def test_runner_options_are_checked_and_left_out_of_the_record(capsys):
    compare = compare_module()
    assert compare.drop_runner_options(["--envs", "Switch2-v0", "--runner", "ray", "--address=auto", "--jobs", "2"]) \
        == ["--envs", "Switch2-v0", "--jobs", "2"]
    with pytest.raises(SystemExit):
        compare.main(["--runner", "pool", "--address", "auto"])  # refused before any run
    assert "--address needs --runner ray" in capsys.readouterr().err


# -- benchmarks/sweep.py, the tuning grid, on the same runners ---------------------------------------------------------

SWEEP = ["--algo", "coma", "--env", "Switch2-v0", "--episodes", "32", "--seeds", "3", "1", "--eval-every", "16",
         "--set", "--set", "critic_steps=2", "--jobs", "2"]
SEED_LINE = re.compile(r"^  seed +(\d+): solved at (\S+) episodes / .* s, final greedy (-?[\d.]+),")


def sweep_figures(runner: str) -> list[tuple]:
    """Run the tiny sweep on ``runner``; every seed line's (config, seed, episodes to solve, final greedy), in the
    order printed, and the SUMMARY lines without their seconds."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert importlib.import_module("sweep").main([*SWEEP, "--runner", runner]) == 0
    figures, config = [], None
    for line in printed.getvalue().splitlines():
        if line in ("(defaults)", "critic_steps=2"):
            config = line
        elif match := SEED_LINE.match(line):
            figures.append((config, *match.groups()))
        elif line.startswith("SUMMARY"):
            figures.append(re.sub(r"median \S+ s / ", "", line))
    return figures


@pytest.fixture(scope="module")
def pool_sweep() -> list[tuple]:
    """The pool's figures, swept once for both tests below (make test-ray runs them in one process)."""
    return sweep_figures("pool")


def test_a_sweep_prints_every_config_and_seed_in_order_on_the_pool(pool_sweep):
    figures = pool_sweep
    assert [f[:2] for f in figures if isinstance(f, tuple)] == [("(defaults)", "3"), ("(defaults)", "1"),
                                                               ("critic_steps=2", "3"), ("critic_steps=2", "1")]
    assert sum(isinstance(f, str) for f in figures) == 2  # one SUMMARY per config


def test_a_sweep_on_ray_prints_what_it_prints_on_the_pool(ray, pool_sweep):
    assert sweep_figures("ray") == pool_sweep


class FakeRay:
    """Stands in for the ray module: its first ``failures`` calls to init raise ``error``, as Ray does when a local
    node does not start in time."""

    def __init__(self, failures: int, error: Exception):
        self.failures, self.error, self.calls = failures, error, []

    def init(self, **kwargs):
        self.calls.append("init")
        if len(self.calls) - self.calls.count("shutdown") <= self.failures:
            raise self.error

    def shutdown(self):
        self.calls.append("shutdown")


NODE_TIMED_OUT = Exception("The current node timed out during startup. This could happen because some of the raylet "
                           "failed to startup or the GCS has become overloaded.")


def test_a_local_ray_node_that_times_out_starting_is_started_again(capsys):
    from marl_edu.runs import grid

    fake = FakeRay(failures=2, error=NODE_TIMED_OUT)
    grid.start_ray(fake, None, 2)  # fails twice, starts on the third of three attempts
    assert fake.calls == ["init", "shutdown", "init", "shutdown", "init"]
    err = capsys.readouterr().err
    assert "attempt 2 of 3" in err and "attempt 3 of 3" in err

    fake = FakeRay(failures=3, error=NODE_TIMED_OUT)
    with pytest.raises(Exception, match="timed out during startup"):  # three in a row: Ray's own error
        grid.start_ray(fake, None, 2)
    assert fake.calls.count("init") == 3

    fake = FakeRay(failures=1, error=ConnectionError("Could not find any running Ray instance"))
    with pytest.raises(ConnectionError):  # another error: raised at once, never retried
        grid.start_ray(fake, None, 2)
    fake = FakeRay(failures=1, error=NODE_TIMED_OUT)
    with pytest.raises(Exception, match="timed out"):  # a cluster's address: nothing of ours to start again
        grid.start_ray(fake, "auto", 2)
    assert fake.calls == ["init"]
