"""Settings every test run shares: a headless matplotlib, one torch thread, the `slow` and `smoke` markers, and how
pytest-xdist hands out the tests when `make test` runs them in parallel workers (-n): a notebook's cells to one worker,
in order, and every other test to whichever worker is free.
"""

import os
import pathlib
import sys

import matplotlib
import pytest
import torch

matplotlib.use("Agg")  # unit tests draw figures without a screen (notebooks keep their inline backend)

# One torch thread in every test process, whether pytest runs alone or as one of several workers: the course's
# networks are tiny, and a second thread per process on a busy 2-core machine made training several times slower
# (a 105 s capstone run took 21 minutes). The same number of threads everywhere also keeps a test's numbers the same
# however many workers run. OMP_NUM_THREADS does the same for the processes tests start: nbval's notebook kernels
# (before issue 29 two notebooks did not set threads: in a parallel run beside other work one such kernel ran for
# over 9 minutes), command-line runs and pool or Ray workers. A value already set in the environment is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)

# Tests that take long (training to a solve, million-step differential tests, end-to-end command-line runs, replays of
# the committed runs): `make test` and `make test-unit` run them (CI once, in make test on one Python, README, Tests);
# `-m 'not slow'` leaves them out, and parallel workers start them first, so that none is left running alone at the end.
# Each name is FILE::TEST (every parametrisation) or FILE (the whole file).
SLOW = {
    "test_batched_switch.py::test_a_million_random_transitions_match_ma_gym",
    "test_capstone_coma.py::test_the_solutions_train_to_the_solve",
    "test_capstone_coma.py::test_update_slips_are_named",
    "test_capstone_maddpg.py::test_the_answers_assembled_solve_switch2_v2",
    "test_capstone_maddpg.py::test_training_loop_slips_are_named",
    "test_cli.py::test_a_killed_run_resumes_from_its_last_periodic_save_to_the_same_bytes",
    "test_cli.py::test_a_kill_at_every_file_write_resumes_to_the_same_files_and_leaves_nothing_behind",
    "test_cli.py::test_ctrl_c_in_a_continuous_run_keeps_the_finished_seeds_and_resume_continues_the_seed_in_progress",
    "test_cli.py::test_ctrl_c_saves_the_run_and_resume_finishes_it_to_the_same_bytes",
    "test_cli.py::test_ctrl_c_while_a_seed_is_written_keeps_its_files_whole_and_stops_before_the_next",
    "test_runs.py::test_run_seed_measures_what_train_returns",
    "test_compare_runners.py",  # make test-ray runs it again, on Ray and on the pool
    "test_planning.py::test_the_plan_replayed_in_the_real_env_earns_the_optimum",
    "test_results.py::test_committed_foraging_policy_replays_its_recorded_final_mean",
    "test_results.py::test_the_2m_foraging_grid_is_whole_paired_and_its_kept_policies_replay_their_final_figures",
    "test_results.py::test_committed_policy_replays_its_recorded_return",
    "test_results.py::test_committed_particle_policy_replays_its_recorded_score",
    "test_results.py::test_predator_prey_random_line_is_reproduced_and_below_standing_still",
    "test_results.py::test_the_random_reference_line_is_reproduced",
    "test_resume.py::test_an_interrupted_run_resumes_to_the_same_bits",
}

# A quick check of an environment on a Python that does not run `make test` (`make test-smoke`; CI runs it on 3.12 and
# 3.13, README, Tests): every supported Python installs the same versions of torch, numpy and the rest (constraints/),
# so what can differ is the interpreter and the install. These are the tests of what depends on it: the install and
# gym's wheel, importing and stepping every environment (gym's distutils on 3.12+), the file formats (torch.load,
# atomic writes), the command line's argparse messages and signal handling, one run of each loop writing every output,
# the learners' hand-computed updates, and nbval on the first two notebooks (01 compares the GIF of a Switch episode
# byte for byte). Each name is FILE::TEST (every parametrisation) or FILE (the whole file); notebooks by file name.
SMOKE = {
    "test_imports.py",
    "test_install.py",
    "test_build_gym_wheel.py",
    "test_envs.py",
    "test_checkpoints.py",
    "test_files.py",
    "test_threads.py",
    "test_learners.py",
    "test_colab.py",
    "test_buffers.py",
    "test_rollout.py",
    "test_nets.py",
    "test_targets.py",
    "test_coma.py",
    "test_maddpg.py",
    "test_cli.py::test_bad_arguments_stop_in_one_line_before_training",
    "test_cli.py::test_help_explains_every_option",
    "test_cli.py::test_module_entry_point_exits_non_zero_on_a_bad_argument",
    "test_cli.py::test_a_run_writes_every_output",
    "test_cli.py::test_sigterm_stops_like_ctrl_c_with_status_143",
    "test_cli.py::test_a_second_ctrl_c_while_the_interruption_is_written_changes_nothing",
    "00_overview.ipynb",
    "01_information_flow.ipynb",
}
NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
TESTS = pathlib.Path(__file__).resolve().parent
SMOKE_FILES = {name.split("::")[0] for name in SMOKE if ".py" in name}  # the test files that hold a smoke test


def pytest_ignore_collect(collection_path: pathlib.Path, config):
    """`-m smoke` (make test-smoke) collects only the test files SMOKE names: importing every other one to find no
    smoke test in it cost each quick check 3-4 s of CPU (collecting 7.3-8.2 s instead of 10.5-11.2, measured back to
    back on 2026-11-29). (pytest asks this file about tests/ only: the notebooks are collected and selected by -m.)"""
    if config.option.markexpr != "smoke" or collection_path.is_dir():
        return None
    name = collection_path.name
    if name.startswith("test_") and name.endswith(".py") and name not in SMOKE_FILES:
        return True
    return None


def pytest_configure(config):
    # (here rather than in pyproject.toml, whose every change makes `make setup` reinstall the course)
    config.addinivalue_line("markers", "smoke: the quick check of an environment (SMOKE above): make test-smoke, which "
                                       "CI runs on the Pythons that do not run make test")
    config.addinivalue_line("markers", "ci: the browser tests CI runs (tests/browser: the notebooks a learner operates, "
                                       "one training panel of three); make test-browser runs every notebook")


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


@pytest.hookimpl(tryfirst=True)  # before pytest's -m selects by marker
def pytest_collection_modifyitems(config, items):
    """Marks each slow and each smoke test (a notebook's cells too: this file's per-item hooks do not reach notebooks/),
    checks that every name in SLOW and SMOKE exists, and in a pytest-xdist worker hands out the slow tests first."""
    for item in items:
        for names, marker in ((SLOW, pytest.mark.slow), (SMOKE, pytest.mark.smoke)):
            if "::".join(_slow_key(item)) in names or item.path.name in names:
                item.add_marker(marker)
    files = {item.path.name for item in items if item.path.suffix == ".py"}
    files -= {pathlib.Path(arg.split("::")[0]).name for arg in config.args if "::" in arg}  # only some of a file's tests
    keys = {key for item in items for key in ("::".join(_slow_key(item)), _slow_key(item)[0])}
    for label, names in (("SLOW", SLOW), ("SMOKE", SMOKE)):
        # a test renamed or removed: say so, rather than quietly losing its marker (a slow test run by -m 'not slow',
        # a smoke test left out of make test-smoke); a notebook is looked for in notebooks/, whatever was collected
        unknown = {name for name in names if name.split("::")[0] in files} - keys
        unknown |= {name for name in names if name.endswith(".ipynb") and not (NOTEBOOKS / name).is_file()}
        unknown |= {name for name in names if name.split("::")[0].endswith(".py")
                    and not (TESTS / name.split("::")[0]).is_file()}  # a file -m smoke would not collect
        if unknown:
            raise pytest.UsageError(f"tests/conftest.py {label} names tests that do not exist: {sorted(unknown)}")
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: hand out the slow tests first, so none is left last
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _close_figures():
    """Every figure a test leaves open is closed after it: figures returned for a test to read (``plot_runs``, the
    viz helpers) piled up in a worker until matplotlib warned of more than 20 open (CI, 2026-11-30). Only where a test
    imported pyplot: importing it here would cost every worker for nothing."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
