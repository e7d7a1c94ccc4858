"""learners: the one table of learners. Every row builds its learner from its config, names map both ways, the views
by loop agree with the rows, and an unknown name is a clear error."""

import dataclasses

import pytest

from marl_edu.learners.table import (ALGORITHMS, CONTINUOUS_ALGORITHMS, LEARNERS, LOOPS, ON_POLICY, algo_name,
                               algo_name_of_class, config_class, entry)


@pytest.mark.parametrize("algo", list(LEARNERS))
def test_every_row_builds_its_learner_from_its_config(algo):
    row = LEARNERS[algo]
    assert dataclasses.is_dataclass(row.config) and row.loop in LOOPS
    assert row.episodes >= 1 and 1 <= row.eval_every <= row.episodes and row.about
    config = row.config(hidden=8)
    agent = row.learner(2, 3, 2 if row.continuous else 5, config, seed=0)
    assert algo_name(agent) == algo and algo_name_of_class(row.learner) == algo and config_class(algo) is row.config
    assert agent.config == config


def test_each_class_has_one_name():
    classes = [row.learner for row in LEARNERS.values()]
    assert len(set(classes)) == len(classes)


def test_the_views_by_loop_are_the_rows():
    assert ON_POLICY == ("coma", "central_qv", "central_v", "iac", "mappo", "ippo")
    assert list(ALGORITHMS) == ["maddpg", "iddpg", *ON_POLICY, "iql", "vdn", "qmix"]  # the discrete learners
    assert list(CONTINUOUS_ALGORITHMS) == ["maddpg_continuous", "iddpg_continuous", "maddpg_inferred",
                                           "maddpg_ensemble", "mappo_continuous", "ippo_continuous"]
    assert set(ALGORITHMS) | set(CONTINUOUS_ALGORITHMS) == set(LEARNERS)


def test_the_budgets_are_the_committed_results():  # (the results page's tables were made with these)
    budgets = {algo: (row.episodes, row.eval_every) for algo, row in LEARNERS.items()}
    assert budgets["maddpg"] == budgets["iddpg"] == (1500, 50)
    assert all(budgets[algo] == (6000, 200) for algo in ON_POLICY)
    assert all(budgets[algo] == (4000, 200) for algo in CONTINUOUS_ALGORITHMS)


@pytest.mark.parametrize("bad", ["happo", "COMA", "", None, 3])
def test_an_unknown_name_is_named(bad):
    with pytest.raises(ValueError, match=rf"unknown algo {bad!r}; choose one of maddpg, iddpg, coma"):
        entry(bad)
    with pytest.raises(ValueError, match="unknown algo"):
        config_class(bad)


def test_a_class_not_in_the_table_is_named():
    with pytest.raises(ValueError, match="not one of the learners .*: dict"):
        algo_name_of_class(dict)


def test_the_learners_with_one_value_of_the_state_take_the_team_reward_only():
    # the command line refuses --per-agent-reward for these (cli.config_from_args reads the class attribute)
    only = {name for name, row in LEARNERS.items() if getattr(row.learner, "team_reward_only", False)}
    assert only == {"central_v", "central_qv", "mappo", "mappo_continuous"}
