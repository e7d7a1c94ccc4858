"""The README's "Nothing lost" tally is the tests' own count: each row's number of probes is the number of test cases
its tests collect (each parametrized case one probe), so the table cannot drift from the tests. ``python
tests/test_tally.py`` prints the rows as the README has them."""

from __future__ import annotations

import importlib
import math
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# the README's rows, in its order: what a family probes, and the tests (module: functions) whose cases are its probes
TALLY = [
    ("bad command lines: one line, exit status 2, nothing written",
     {"test_fuzz": ["test_bad_command_lines_stop_in_one_line_before_training"]}),
    ("bad config values: a ValueError naming the field",
     {"test_fuzz": ["test_a_config_refuses_a_bad_value_naming_the_field"]}),
    ("broken arguments of public functions: a ValueError or a call that fits",
     {"test_fuzz": ["test_a_public_function_refuses_a_broken_argument_with_a_value_error_or_takes_it"]}),
    ("damaged policy files (truncated, flipped bytes, edited headers)",
     {"test_fuzz": ["test_a_damaged_policy_file_is_a_value_error_or_a_working_policy"]}),
    ("policy files crafted to hang or bloat the loader",
     {"test_fuzz": ["test_a_crafted_policy_file_is_refused_in_a_second_or_plays"]}),
    ("calls once let through at the library's boundaries",
     {"test_fuzz": ["test_a_bad_call_at_a_library_boundary_is_a_value_error_naming_the_argument"]}),
    ("policy files of every learner: the whole learner counted before it is built, values cut short, odd tensors named",
     {"test_checkpoints": ["test_every_network_a_learner_builds_is_counted_before_it_is_built",
                           "test_the_count_of_qmix_by_hand",
                           "test_a_small_qmix_file_asking_for_a_huge_mixer_is_refused_before_building",
                           "test_every_learner_is_bounded_by_its_whole_networks_before_building",
                           "test_a_huge_header_name_is_refused_in_a_short_line",
                           "test_a_huge_config_string_is_refused_in_a_short_line",
                           "test_a_meta_or_sparse_tensor_is_named"]}),
    ("the new modules' boundaries (PPO, value decomposition) and every learner's sizes",
     {"test_learners": ["test_every_learner_names_a_size_out_of_the_limits_before_building_anything",
                        "test_a_network_layer_beyond_the_limit_is_named_not_allocated"],
      "test_ppo": ["test_the_clipped_loss_names_a_non_finite_or_impossible_input",
                   "test_a_log_density_may_be_positive",
                   "test_normalised_advantages_without_a_spread_are_only_centred",
                   "test_gae_names_an_episode_without_a_step_and_an_overflow"],
      "test_value_decomposition": ["test_vdn_and_qmix_refuse_non_finite_utilities_and_states",
                                   "test_qmix_names_a_dtype_other_than_its_weights_and_sizes_beyond_the_limits",
                                   "test_td_loss_names_an_empty_mask_and_a_broadcast",
                                   "test_config_names_a_batch_larger_than_the_replay"]}),
    ("every learner's update given a batch that breaks (or keeps) the contract it relies on",
     {"test_learners": ["test_every_update_refuses_a_batch_that_breaks_its_contract_before_learning",
                        "test_every_update_takes_a_batch_that_keeps_its_contract"]}),
    ("benchmark scripts: options, --out, results files read back, two runs into one folder",
     {"test_benchmarks": ["test_an_int_field_set_out_of_range_is_one_line", "test_an_unknown_field_is_named",
                          "test_foraging_reuse_of_a_file_that_is_not_a_record_is_one_line",
                          "test_foraging_reuse_of_a_summary_that_is_not_json_is_one_line",
                          "test_compare_reuse_of_a_file_that_is_not_a_record_is_one_line",
                          "test_every_grid_script_takes_the_runner_options_and_checks_them",
                          "test_every_scripts_shared_options_are_checked_in_one_line",
                          "test_a_scripts_env_and_evaluation_period_are_checked_in_one_line",
                          "test_a_bad_out_is_one_line_before_any_run", "test_a_read_only_out_is_one_line",
                          "test_two_runs_into_one_folder_are_refused",
                          "test_foraging_reuse_trusts_only_its_own_record_of_that_run",
                          "test_foraging_reuse_refuses_another_scripts_record",
                          "test_foraging_reuse_refuses_a_summary_whose_yardstick_is_not_a_number",
                          "test_compare_reuse_trusts_only_its_own_record_of_that_run",
                          "test_every_committed_record_is_one_its_script_trusts"]}),
    ("learners killed mid-save, stopped by SIGINT or SIGTERM, killed at a write, resumed to the same bytes",
     {"test_cli": ["test_every_new_learner_killed_stopped_and_killed_again_resumes_to_the_same_bytes",
                   "test_ctrl_c_saves_the_run_and_resume_finishes_it_to_the_same_bytes",
                   "test_sigterm_stops_like_ctrl_c_with_status_143",
                   "test_a_killed_run_resumes_from_its_last_periodic_save_to_the_same_bytes",
                   "test_ctrl_c_in_a_continuous_run_keeps_the_finished_seeds_"
                   "and_resume_continues_the_seed_in_progress"]}),
    ("tampered fields of a saved run, each named in one line",
     {"test_resume": ["test_a_tampered_state_is_refused_with_the_field_named"]}),
    ("a second run or resume on a folder in use",
     {"test_cli": ["test_a_second_run_or_resume_on_a_folder_in_use_is_refused"]}),
]
# and one row counted inside its test: a run killed at each of its file writes, resumed (test_cli asserts how many)
KILLS = "a run killed at each of its file writes, resumed to the same files, nothing left behind"


def _module(name: str):
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    return importlib.import_module(name)


def cases(module: str, function: str) -> int:
    """The test cases ``module.function`` collects: the product of its parametrize marks' lengths (1 without)."""
    marks = getattr(getattr(_module(module), function), "pytestmark", [])
    return math.prod(len(mark.args[1]) for mark in marks if mark.name == "parametrize")


def kills() -> int:
    """The file writes test_cli's kill-at-every-write test asserts a run makes (and kills it at, each in turn)."""
    source = (ROOT / "tests" / "test_cli.py").read_text()
    return int(re.search(r"assert n_writes == (\d+)", source).group(1))


def tally() -> dict[str, int]:
    """Every row's probes, in the README's order."""
    rows = {label: sum(cases(module, function) for module, functions in tests.items() for function in functions)
            for label, tests in TALLY}
    return {**rows, KILLS: kills()}


def readme_rows() -> dict[str, int]:
    """The README's "Nothing lost" table: ``{family: probes}``."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Nothing lost", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| *([\d,]+) *\| *(.+?) *\|$", section, re.M)
    return {family: int(count.replace(",", "")) for count, family in rows}


def test_the_readme_tally_is_the_tests_count():
    assert readme_rows() == tally()


def test_every_function_of_the_tally_exists_and_has_cases():
    for label, tests in TALLY:
        for module, functions in tests.items():
            for function in functions:
                test = getattr(_module(module), function, None)  # (a renamed test would count as nothing)
                assert callable(test), (label, module, function)
                assert cases(module, function) >= 1, (label, module, function)  # (0: an empty parametrize)


if __name__ == "__main__":  # the rows as the README has them
    for family, count in tally().items():
        print(f"| {count:,} | {family} |")
