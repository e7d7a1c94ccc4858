"""Settings every test run shares: a headless matplotlib, one torch thread, the `slow` marker, and how pytest-xdist
hands out the tests when `make test` runs them in parallel workers (-n): a notebook's cells to one worker, in order,
and every other test to whichever worker is free.
"""

import os

import matplotlib
import pytest
import torch

matplotlib.use("Agg")  # unit tests draw figures without a screen (notebooks keep their inline backend)

# One torch thread in every test process, whether pytest runs alone or as one of several workers: the course's
# networks are tiny, and a second thread per process on a busy 2-core machine made training several times slower
# (a 105 s capstone run took 21 minutes). The same number of threads everywhere also keeps a test's numbers the same
# however many workers run. OMP_NUM_THREADS does the same for the processes tests start: nbval's notebook kernels
# (08 and 13 do not set threads yet, issue 29: in a parallel run beside other work one such kernel ran for over 9
# minutes), command-line runs and pool or Ray workers. A value already set in the environment is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)

# Tests that take long (training to a solve, million-step differential tests, end-to-end command-line runs, replays of
# the committed runs) and whose numbers come from the same torch and numpy on every supported Python: CI runs them on
# one Python and the rest of the unit tests on all three (README, Tests). `make test` and `make test-unit` run them.
# Each name is FILE::TEST (every parametrisation) or FILE (the whole file).
SLOW = {
    "test_batched_switch.py::test_a_million_random_transitions_match_ma_gym",
    "test_capstone_coma.py::test_the_solutions_train_to_the_solve",
    "test_capstone_coma.py::test_update_slips_are_named",
    "test_capstone_maddpg.py::test_the_answers_assembled_solve_switch2_v2",
    "test_capstone_maddpg.py::test_training_loop_slips_are_named",
    "test_cli.py::test_a_killed_run_resumes_from_its_last_periodic_save_to_the_same_bytes",
    "test_cli.py::test_ctrl_c_in_a_continuous_run_keeps_the_finished_seeds_and_resume_restarts_the_seed_in_progress",
    "test_cli.py::test_ctrl_c_saves_the_run_and_resume_finishes_it_to_the_same_bytes",
    "test_cli.py::test_ctrl_c_while_a_seed_is_written_keeps_its_files_whole_and_stops_before_the_next",
    "test_runs.py::test_run_seed_measures_what_train_returns",
    "test_compare_runners.py",  # make test-ray runs it again, on Ray and on the pool
    "test_planning.py::test_the_plan_replayed_in_the_real_env_earns_the_optimum",
    "test_results.py::test_committed_policy_replays_its_recorded_return",
    "test_results.py::test_committed_particle_policy_replays_its_recorded_score",
    "test_results.py::test_predator_prey_random_line_is_reproduced_and_below_standing_still",
    "test_results.py::test_the_random_reference_line_is_reproduced",
    "test_resume.py::test_an_interrupted_run_resumes_to_the_same_bits",
}


def _slow_key(item: pytest.Item) -> tuple[str, str]:
    return item.path.name, getattr(item, "originalname", item.name)


@pytest.hookimpl(optionalhook=True)  # (pytest-xdist's hook: pytest without it runs the tests in one process)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler for `make test`: a notebook's cells go to one worker, in order (they share one kernel,
    cell after cell); every other test to whichever worker is free. (pytest-xdist's own `--dist loadfile` would keep
    each test file in one worker too, and test_cli.py alone would then hold up the end of the run; `--dist loadgroup`
    does not group anything under pytest 9.2, pytest-dev/pytest-xdist#1386.)"""
    from xdist.scheduler import LoadScopeScheduling

    class NotebookScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::")[0]
            return file if file.endswith(".ipynb") else nodeid

    return NotebookScheduling(config, log)


def pytest_itemcollected(item):
    """Marks each slow test as it is collected, so that pytest's -m sees it."""
    if "::".join(_slow_key(item)) in SLOW or item.path.name in SLOW:
        item.add_marker(pytest.mark.slow)


def pytest_collection_modifyitems(config, items):
    files = {item.path.name for item in items if item.path.suffix == ".py"}
    unknown = {name for name in SLOW if name.split("::")[0] in files} - {
        key for item in items for key in ("::".join(_slow_key(item)), _slow_key(item)[0])}
    if unknown:  # a test renamed or removed: say so, rather than quietly running it on every Python again
        raise pytest.UsageError(f"tests/conftest.py SLOW names tests that do not exist: {sorted(unknown)}")
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: hand out the slow tests first, so none is left last
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
