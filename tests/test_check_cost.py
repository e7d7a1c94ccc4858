"""benchmarks/check_cost.py (what the boundary checks cost): its timers wrap the checks wherever a module holds them and
count a nested check once."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_checks_share_of_a_short_run_is_measured():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "check_cost.py"), "--algos", "coma",
                           "--episodes", "8"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    (summary,) = [line for line in done.stdout.splitlines() if line.startswith("SUMMARY")]
    share = float(re.search(r" share=([\d.]+)", summary).group(1))
    assert 0.0 < share < 1.0, summary  # some time in checks (every update and env step passes some), never all
    (row,) = [line.split() for line in done.stdout.splitlines() if line.split()[:1] == ["coma"]]
    assert int(row[-1]) > 8 * 50 // 4  # calls: at least one check per lock-step of the 8 episodes (4 copies, 50 steps)


def test_a_nested_check_is_counted_once():
    # check_replay_batch checks each of its five arrays with check_shape (and finite, zero_one): one outermost call
    code = ("import sys; sys.path.insert(0, 'benchmarks'); import check_cost; counter = check_cost.instrument(); "
            "import numpy as np; from marl_edu.data import buffers; from marl_edu.base import shapes; B, N, O, A = 4, 2, 3, 5; "
            "batch = dict(obs=np.zeros((B, N, O), np.float32), next_obs=np.zeros((B, N, O), np.float32), "
            "actions=np.zeros((B, N, A), np.float32), rewards=np.zeros((B, N), np.float32), "
            "dones=np.zeros((B, N), np.float32)); "
            "buffers.check_replay_batch(batch, N, O, A); print(counter['calls']); "
            "shapes.check_shape(np.zeros((2, 3)), (2, 3), 'x'); print(counter['calls'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["1", "2"]  # one call each, however many checks the first made inside


def test_every_learner_of_the_table_is_measured_and_every_check_exists():
    import importlib

    from marl_edu.learners.table import LEARNERS

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import check_cost
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert list(check_cost.RUNS) == list(LEARNERS)  # every row, in the table's order
    for home, name in check_cost.CHECKS:  # a renamed check would silently leave the count
        assert callable(getattr(importlib.import_module(f"marl_edu.{home}"), name)), (home, name)
