"""The benchmark scripts' command lines refuse a bad argument in one line before any training (argparse's usage and
one ``error:`` line, exit status 2, no traceback), and the grid every benchmark trains through (marl_edu.runs.grid)
checks its arguments and hands a run's files back whole."""

import importlib
import pathlib
import sys

import pytest

from marl_edu.runs import grid

ROOT = pathlib.Path(__file__).resolve().parent.parent


def script(name: str):
    """A script of benchmarks/ imported by name (benchmarks/ on the path, as the process pool imports it)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def refused(name: str, argv: list[str], capsys) -> str:
    """Run ``benchmarks/<name>.py argv``; it must exit with status 2 before training, printing argparse's usage and
    one error line (no traceback). Returns that error line."""
    with pytest.raises(SystemExit) as stopped:
        script(name).main(argv)
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert "Traceback" not in captured.err and captured.out == ""
    assert ": error: " in lines[-1]
    assert not any("error" in line for line in lines[:-1])  # one error line, after the usage
    return lines[-1]


@pytest.mark.parametrize("name, argv", [
    ("sweep", ["--episodes", "8"]),
    ("foraging", ["--out", "OUT"]),
    ("particle", []),
    ("keep", []),
])
def test_an_int_field_set_out_of_range_is_one_line(name, argv, capsys, tmp_path):
    # 1e400 is infinity as a float and no int: once an OverflowError traceback from int(float("1e400"))
    argv = [str(tmp_path) if arg == "OUT" else arg for arg in argv]
    line = refused(name, [*argv, "--set", "hidden=1e400"], capsys)
    assert "--set" in line and "hidden" in line and "1e400" in line


@pytest.mark.parametrize("name, argv", [("sweep", ["--episodes", "8"]), ("foraging", ["--out", "OUT"]),
                                        ("particle", []), ("keep", [])])
def test_an_unknown_field_is_named(name, argv, capsys, tmp_path):
    argv = [str(tmp_path) if arg == "OUT" else arg for arg in argv]
    assert "hidden_size" in refused(name, [*argv, "--set", "hidden_size=64"], capsys)


@pytest.mark.parametrize("text", ["not json at all", "", '["a list"]', '{"no": "fields of a run"}'])
def test_foraging_reuse_of_a_file_that_is_not_a_record_is_one_line(text, capsys, tmp_path):
    foraging = script("foraging")
    method = next(iter(foraging.METHODS))
    (tmp_path / method).mkdir()
    (tmp_path / method / "seed0.json").write_text(text)
    line = refused("foraging", ["--methods", method, "--seeds", "0", "--reuse", "--out", str(tmp_path)], capsys)
    assert f"{method}/seed0.json" in line and "--reuse" in line


def test_foraging_reuse_of_a_summary_that_is_not_json_is_one_line(capsys, tmp_path):
    (tmp_path / "summary.json").write_text("{half a file")
    method = next(iter(script("foraging").METHODS))
    line = refused("foraging", ["--methods", method, "--seeds", "0", "--reuse", "--out", str(tmp_path)], capsys)
    assert "summary.json is not a results file (JSON)" in line


@pytest.mark.parametrize("argv, named", [(["--episodes", "0"], "--episodes"), (["--eval-every", "-5"], "--eval-every"),
                                         (["--algo", "coma", "--diagnose"], "--diagnose")])
def test_keep_refuses_a_count_that_is_not_positive_and_a_diagnosis_it_cannot_make(argv, named, capsys):
    assert named in refused("keep", argv, capsys)


def test_compare_reuse_of_a_file_that_is_not_a_record_is_one_line(capsys, tmp_path):
    compare = script("compare")
    method = compare.METHODS[0]
    (tmp_path / "Switch2-v0" / method).mkdir(parents=True)
    (tmp_path / "Switch2-v0" / method / "seed0.json").write_text("<html>")
    line = refused("compare", ["--envs", "Switch2-v0", "--methods", method, "--seeds", "0", "--runner", "pool",
                               "--reuse", "--out", str(tmp_path)], capsys)
    assert f"{method}/seed0.json is not a run's record" in line


@pytest.mark.parametrize("name", ["foraging", "particle", "competition"])
def test_every_grid_script_takes_the_runner_options_and_checks_them(name, capsys):
    line = refused(name, ["--runner", "pool", "--address", "auto"], capsys)
    assert "--address needs --runner ray" in line


def test_the_grid_refuses_a_bad_runner_or_count_of_jobs():
    with pytest.raises(ValueError, match="runner must be one of ray, pool, got 'threads'"):
        list(grid.run_grid(abs, [1], "threads", 1))
    with pytest.raises(ValueError, match="jobs must be a positive int, got 0"):
        list(grid.run_grid(abs, [1], "pool", 0))
    assert list(grid.run_grid(abs, [], "pool", 2)) == []  # nothing to run: no pool started


def test_the_pool_yields_in_order_when_asked():
    assert list(grid.run_grid(abs, [-3, 2, -1], "pool", 2, ordered=True)) == [3, 2, 1]
    assert sorted(grid.run_grid(abs, [-3, 2, -1], "pool", 2)) == [1, 2, 3]


def test_a_runs_files_come_back_as_bytes_and_are_written_record_last(tmp_path, monkeypatch):
    def save(folder: pathlib.Path) -> None:
        (folder / "policy.pt").write_bytes(b"weights")
        (folder / "greedy.gif").write_bytes(b"GIF89a")

    files = grid.run_files(save)
    assert files == {"greedy.gif": b"GIF89a", "policy.pt": b"weights"}  # by name
    written = []
    monkeypatch.setattr(grid, "atomic_write_bytes", lambda path, data: written.append(path.name))
    grid.write_files(tmp_path / "run", {**files, "seed0.json": b"{}\n"})
    assert written == ["greedy.gif", "policy.pt", "seed0.json"]  # each atomically, the record last
    with pytest.raises(ValueError, match="'../x'"):
        grid.write_files(tmp_path, {"../x": b""})  # a name, never a path out of the folder


class FakeRay:
    """Stands in for the ray module (an optional extra, not installed here): ``remote(f).remote(job)`` computes at
    once, and ``wait`` hands the finished runs back last first, as a cluster may."""

    class cloudpickle:
        @staticmethod
        def register_pickle_by_value(module):
            pass

    def __init__(self):
        self.calls = []

    def init(self, **kwargs):
        self.calls.append("init")

    def shutdown(self):
        self.calls.append("shutdown")

    def remote(self, num_cpus):
        def wrap(function):
            class Remote:
                @staticmethod
                def remote(job):
                    return ("done", function(job))
            return Remote
        return wrap

    def wait(self, pending, num_returns):
        return [pending[-1]], pending[:-1]

    def get(self, reference):
        return reference[1]


def test_on_ray_the_grid_yields_as_runs_finish_or_in_order_and_always_shuts_ray_down(monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    assert list(grid.run_grid(abs, [-3, 2, -1], "ray", 2)) == [1, 2, 3]  # as they finished: last first
    assert list(grid.run_grid(abs, [-3, 2, -1], "ray", 2, ordered=True)) == [3, 2, 1]  # in the order of the jobs
    assert fake.calls == ["init", "shutdown", "init", "shutdown"]
