"""The Makefile's setup checks, run for real with `make` but stopped before anything is installed.

Stand-in interpreters are small shell scripts that answer the version check the way a Python of that version would,
so the tests can offer make any mix of Pythons without having them.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def fake_python(folder: pathlib.Path, name: str, version: tuple[int, int]) -> pathlib.Path:
    """A script that runs the real Python with sys.version_info reporting `version`."""
    script = folder / name
    script.write_text(f"""#!/bin/sh
exec {sys.executable} -c 'import sys
class V(tuple):
    major, minor = {version[0]}, {version[1]}
sys.version_info = V(({version[0]}, {version[1]}, 0, "final", 0))
sys.argv = sys.argv[1:]
exec(sys.argv[0] if sys.argv else "")' "$2"
""")
    script.chmod(0o755)
    return script


TOOLS = ("sed", "id", "ls", "sort", "rm", "cat", "sh")  # what the Makefile's own shell lines call


def isolated_path(folder: pathlib.Path) -> str:
    """A PATH of ``folder`` alone, holding links to the few tools make needs: no real Python of this machine (a
    python3.13 in /usr/bin, say) can be found, only the stand-ins the test puts there."""
    for tool in TOOLS:
        (folder / tool).symlink_to(shutil.which(tool))
    return str(folder)


def make(*args: str, path: str) -> subprocess.CompletedProcess:
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([shutil.which("make"), "--no-print-directory", "-s", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_newest_supported_python_on_path_is_chosen(tmp_path):
    """3.12 beats 3.11; python3 is 3.14, which is not supported, so it is passed over."""
    for name, version in [("python3.11", (3, 11)), ("python3.12", (3, 12)), ("python3", (3, 14))]:
        fake_python(tmp_path, name, version)
    result = subprocess.run([shutil.which("make"), "--no-print-directory", "-s", "-f", "Makefile", "-f", "-",
                             "print-python"], input="print-python: ; @echo $(PYTHON)\n", cwd=ROOT, capture_output=True,
                            text=True, env={"PATH": isolated_path(tmp_path), "HOME": str(tmp_path)})
    assert result.stdout.strip() == str(tmp_path / "python3.12")


def test_an_unsupported_python_gets_one_message_and_what_to_install(tmp_path):
    old = fake_python(tmp_path, "python3.10", (3, 10))
    result = make("setup", f"PYTHON={old}", f"VENV={tmp_path / 'venv'}", path=isolated_path(tmp_path))
    assert result.returncode == 2
    assert result.stdout.startswith(f"marl-edu needs Python 3.11, 3.12 or 3.13; found: {old} (Python 3.10).")
    assert "make setup PYTHON=/path/to/python3.13" in result.stdout
    assert not (tmp_path / "venv").exists()


def test_no_python_at_all_says_none_and_names_the_python3_it_saw(tmp_path):
    fake_python(tmp_path, "python3", (3, 14))
    result = make("setup", "PYTHON=", f"VENV={tmp_path / 'venv'}", path=isolated_path(tmp_path))
    assert result.returncode == 2
    assert "found: none." in result.stdout
    assert "(python3 on your PATH is" in result.stdout


def test_a_folder_without_a_python_is_not_taken_over(tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "keep.txt").write_text("mine")
    result = make("setup", f"PYTHON={sys.executable}", f"VENV={tmp_path / 'venv'}", path=os.environ["PATH"])
    assert result.returncode == 2
    assert "exists but has no bin/python" in result.stdout
    assert (tmp_path / "venv" / "keep.txt").read_text() == "mine"


def test_clean_never_removes_an_environment_given_with_venv(tmp_path):
    result = make("-n", "clean", f"VENV={tmp_path}", path=os.environ["PATH"])
    assert result.returncode == 0
    assert str(tmp_path) not in result.stdout
    assert "rm -rf .venv .venv-3.1[123] .venv-colab .wheelhouse .colab-installed" in result.stdout


def test_an_empty_venv_stops_before_anything_runs(tmp_path):
    result = make("setup", "VENV=", path=os.environ["PATH"])
    assert result.returncode == 2
    assert "VENV is empty: activate the conda environment first" in result.stderr


def test_an_existing_environment_with_an_unsupported_python_says_so(tmp_path):
    (tmp_path / "env" / "bin").mkdir(parents=True)
    fake_python(tmp_path / "env" / "bin", "python", (3, 10))
    result = make("setup", f"VENV={tmp_path / 'env'}", path=os.environ["PATH"])
    assert result.returncode == 2
    assert result.stdout.startswith(f"{tmp_path / 'env'} has Python 3.10; marl-edu needs 3.11, 3.12 or 3.13")


def test_a_venv_variable_in_the_environment_is_ignored(tmp_path):
    result = subprocess.run([shutil.which("make"), "-n", "-s", "clean"], cwd=ROOT, capture_output=True, text=True,
                            env={"PATH": os.environ["PATH"], "VENV": str(tmp_path)})
    probe = subprocess.run([shutil.which("make"), "--no-print-directory", "-s", "-f", "Makefile", "-f", "-", "show"],
                           input="show: ; @echo $(VENV)\n", cwd=ROOT, capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "VENV": str(tmp_path)})
    assert result.returncode == 0 and str(tmp_path) not in result.stdout  # make clean never reads it
    assert probe.stdout.strip() == ".venv"


@pytest.mark.parametrize("workers, expected", [((), "-n auto --maxprocesses 4"), (("TEST_WORKERS=0",), "-n 0")])
def test_make_test_runs_in_parallel_workers_unless_told_otherwise(workers, expected, tmp_path):
    result = make("-n", "test", f"VENV={tmp_path / 'venv'}", f"PYTHON={sys.executable}", *workers, path=os.environ["PATH"])
    (command,) = [line for line in result.stdout.splitlines() if "-m pytest tests notebooks --nbval" in line]
    assert f" {expected} " in f"{command} "


def test_ci_runs_the_readmes_test_command():
    """.ci/run runs `make test` on one Python (3.11, or the next one found), not only its parts; the README says so."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'run_on 3.11 test "' in ci and ci.count('run_on "$version" test\n') == 1
    assert "make test" in (ROOT / "README.md").read_text().split("## Tests")[1].split("CI (`.ci/run`)")[1]


# -- .ci/run itself, with stand-in Pythons and a make that only writes down what it was asked -------------------------

FAKE_MAKE = """#!/bin/sh
echo "$*" >> "$MAKE_LOG"
if [ -n "$MAKE_FAILS" ]; then
    case "$*" in $MAKE_FAILS) echo "make: *** [$MAKE_FAILS] Error 1"; exit 2;; esac
fi
case "$*" in *" test-smoke "*|*" test-ray "*|*" test-browser "*) sleep 1; echo "finished $*" >> "$MAKE_LOG";; esac
exit 0
"""
CI_TOOLS = ("dirname", "mktemp", "pgrep", "sleep", "touch")


def run_ci(tmp_path: pathlib.Path, versions: list[str], fails: str = "") -> tuple[subprocess.CompletedProcess, list]:
    """.ci/run in a copy of the repository's layout (tmp_path/repo) with stand-ins for python3.X of ``versions`` and
    for make; returns the finished run and the make command lines, in order."""
    repo, bin_ = tmp_path / "repo", tmp_path / "bin"
    (repo / ".ci").mkdir(parents=True)
    bin_.mkdir()
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (repo / ".venv-3.12" / "bin").mkdir(parents=True)  # 3.12's environment made beforehand (.ci/run's venv step)
    (repo / ".venv-3.12" / "bin" / "python").write_text("")
    (repo / ".venv-3.12" / "bin" / "python").chmod(0o755)
    for version in versions:
        fake_python(bin_, f"python{version}", tuple(int(part) for part in version.split(".")))
    (bin_ / "make").write_text(FAKE_MAKE)
    (bin_ / "make").chmod(0o755)
    path = isolated_path(bin_)
    for tool in CI_TOOLS:
        (bin_ / tool).symlink_to(shutil.which(tool))
    log = tmp_path / "make.log"
    result = subprocess.run([shutil.which("bash"), str(repo / ".ci" / "run")], capture_output=True, text=True,
                            timeout=60, env={"PATH": path, "HOME": str(tmp_path), "MAKE_LOG": str(log),
                                             "MAKE_FAILS": fails})
    calls = log.read_text().splitlines() if log.exists() else []
    return result, [call.replace(str(bin_) + "/", "") for call in calls]  # (with "finished ..." after a test-smoke)


def test_ci_runs_make_test_on_311_the_quick_checks_on_the_others_beside_ray_then_the_browser(tmp_path):
    result, calls = run_ci(tmp_path, ["3.11", "3.12", "3.13"])
    assert result.returncode == 0, result.stdout + result.stderr
    tests = [call for call in calls if call.removeprefix("finished ").split()[1].startswith("test")]
    smoke_313 = "--no-print-directory test-smoke PYTHON=python3.13 VENV=.venv-3.13"
    smoke_312 = "--no-print-directory test-smoke PYTHON=python3.12 VENV=.venv-3.12"
    browser = "--no-print-directory test-browser -o _site/html/index.html VENV=.venv-3.13 PYTEST_ARGS=-m ci -n 2"
    ray = "--no-print-directory test-ray VENV=.venv-3.13"
    # make test leaves the file make test-ray runs whole to it
    assert tests[0] == ("--no-print-directory test PYTHON=python3.11 VENV=.venv-3.11 "
                        "PYTEST_ARGS=--durations=30 --ignore=tests/test_compare_runners.py")  # the log's slowest 30
    assert set(tests[1:3]) == {smoke_313, ray}  # Ray starts beside the first quick check ...
    assert tests.index(smoke_312) > tests.index("finished " + smoke_313)  # ... which the second one follows
    assert tests[-2:] == [browser, "finished " + browser]  # the browser alone, after all of them
    assert len(tests) == 9
    assert calls.index("--no-print-directory setup-extras VENV=.venv-3.13") < calls.index(tests[1])
    # the website is built in the background after the extras, before the browser's tests read it
    site = "--no-print-directory site VENV=.venv-3.13"
    assert calls.index("--no-print-directory setup-extras VENV=.venv-3.13") < calls.index(site) < calls.index(browser)
    assert {call.split()[2] for call in calls if call.split()[1] == "setup"} == {
        "PYTHON=python3.11", "PYTHON=python3.12", "PYTHON=python3.13"}
    summary = result.stdout.split("CI summary (")[1].splitlines()[1:]
    assert [line.split(" passed in ")[0].strip() for line in summary] == [
        "Python 3.11: make setup", "Python 3.11: make test (--durations=30 --ignore=tests/test_compare_runners.py)",
        "Python 3.13: make setup", "Python 3.12: make setup", "Python 3.13: make setup-extras (ray, playwright, site)",
        "Python 3.13: make site (the website)",
        "Python 3.13 then 3.12: make test-smoke", "Ray runner (Python 3.13): make test-ray",
        "browser tests (Python 3.13): make test-browser (-m ci)"]
    assert [line for line in summary if "with the others" in line] == summary[-3:-1]  # the quick checks beside Ray
    assert all(re.search(r" passed in \d+ s( \(in the background\)| \(with the others\))?$", line)
               for line in summary), summary


def test_ci_without_311_runs_make_test_on_313_and_reports_what_it_skipped(tmp_path):
    result, calls = run_ci(tmp_path, ["3.13"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--no-print-directory test PYTHON=python3.13 VENV=.venv-3.13 PYTEST_ARGS=" in calls
    assert not any(" test-smoke " in call for call in calls)
    assert calls.index("--no-print-directory setup-extras VENV=.venv-3.13") < calls.index(
        "--no-print-directory test-ray VENV=.venv-3.13")
    assert "Python 3.11: SKIPPED (no interpreter found)" in result.stdout
    assert "Python 3.12: SKIPPED (no interpreter found)" in result.stdout


def test_ci_with_only_312_runs_make_test_there_and_skips_ray_and_the_browser(tmp_path):
    result, calls = run_ci(tmp_path, ["3.12"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--no-print-directory test PYTHON=python3.12 VENV=.venv-3.12 PYTEST_ARGS=" in calls
    assert "Ray runner SKIPPED: no Python 3.13 environment" in result.stdout
    assert "browser tests SKIPPED: no Python 3.13 environment" in result.stdout


def test_ci_without_chromium_skips_the_browser_tests_and_says_why(tmp_path):
    result, calls = run_ci(tmp_path, ["3.11", "3.12", "3.13"], fails="--no-print-directory chromium")
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any(" test-browser " in call for call in calls)
    assert "browser tests SKIPPED: Debian's Chromium could not be installed here:" in result.stdout


@pytest.mark.parametrize("fails", ["*directory test PYTHON=*3.11 *", "*directory test-smoke *3.12*",
                                   "*directory setup-extras *", "*directory site *", "*directory test-ray *",
                                   "*directory test-browser *"])
def test_ci_fails_when_any_part_fails(fails, tmp_path):
    result, _ = run_ci(tmp_path, ["3.11", "3.12", "3.13"], fails=fails)
    assert result.returncode != 0
    assert f"make: *** [{fails}] Error 1" in result.stdout  # (the stand-in make's own line: that part failed)
    assert "CI summary" not in result.stdout


def test_ci_without_any_supported_python_fails(tmp_path):
    result, calls = run_ci(tmp_path, [])
    assert result.returncode == 1
    assert "CI FAILED: no supported Python (3.11, 3.12 or 3.13) was found, so nothing was tested" in result.stdout
    assert not any(call.split()[1].startswith("test") for call in calls)
