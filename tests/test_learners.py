"""learners: the one table of learners. Every row builds its learner from its config, names map both ways, the views
by loop agree with the rows, and an unknown name is a clear error."""

import dataclasses
import math

import pytest
import torch

from marl_edu.learners.coma import COMAConfig
from marl_edu.learners.maddpg import MADDPGConfig
from marl_edu.learners.table import (ALGORITHMS, CONTINUOUS_ALGORITHMS, LEARNERS, LOOPS, ON_POLICY, algo_name,
                                     algo_name_of_class, config_class, config_with, entry,
                                     recorded_config)
from batches import batch_for, changes, entries_set


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


# -- config_with: the one parser of "field=value" settings ------------------------------------------------------------

def test_config_with_reads_each_setting_by_its_fields_type():
    config = config_with(COMAConfig, ["actor_lr=3e-3", "hidden=32", "recurrent=False", "n_envs=1e1", "lam=1"])
    assert config == COMAConfig(actor_lr=0.003, hidden=32, recurrent=False, n_envs=10, lam=1.0)
    assert type(config.hidden) is int and type(config.n_envs) is int and type(config.lam) is float
    assert config_with(MADDPGConfig, ["actor_gradient=gumbel"]).actor_gradient == "gumbel"  # a str as it is
    assert config_with(COMAConfig, ["team_reward=false"]).team_reward is False


def test_config_with_no_settings_is_the_defaults_and_the_last_setting_of_a_field_wins():
    assert config_with(COMAConfig, []) == COMAConfig()
    assert config_with(COMAConfig, ["hidden=8", "hidden=16"]).hidden == 16  # (a script's defaults, then the user's)


@pytest.mark.parametrize("setting, message", [
    ("hidden=1e400", "'hidden=1e400': hidden takes an int \\(a whole number\\), got '1e400'"),  # (was OverflowError)
    ("hidden=2.5", "hidden takes an int \\(a whole number\\), got '2.5'"),
    ("hidden=nan", "hidden takes an int"),
    ("hidden=", "hidden takes an int"),
    ("gamma=nan", "'gamma=nan': gamma takes a finite number, got 'nan'"),
    ("actor_lr=-inf", "actor_lr takes a finite number, got '-inf'"),
    ("actor_lr=fast", "actor_lr takes a finite number, got 'fast'"),
    ("recurrent=maybe", "'recurrent=maybe': recurrent takes True or False, got 'maybe'"),
    ("recurrent=1", "recurrent takes True or False, got '1'"),
    ("hiden=8", "'hiden=8': COMAConfig has no field 'hiden'; its fields: actor_lr, critic_lr, gamma"),
    ("hidden", "'hidden' is not field=value"),
    ("hidden=0", "hidden must be a positive int, got 0"),  # validate's range check
    ("gamma=2", "gamma must be a number in \\[0, 1\\], got 2.0"),
])
def test_config_with_names_the_field_and_what_it_takes(setting, message):
    with pytest.raises(ValueError, match=message):
        config_with(COMAConfig, [setting])


@pytest.mark.parametrize("config_class, settings", [(dict, []), (COMAConfig, "hidden=8"), (COMAConfig, [8])])
def test_config_with_takes_a_config_dataclass_and_a_list_of_strings(config_class, settings):
    with pytest.raises(ValueError, match="config dataclass|field=value"):
        config_with(config_class, settings)


@pytest.mark.parametrize("algo", list(LEARNERS))
def test_config_with_sets_every_field_of_every_config_to_its_default_as_text(algo):
    defaults = LEARNERS[algo].config()
    settings = [f"{field.name}={getattr(defaults, field.name)}" for field in dataclasses.fields(defaults)]
    assert config_with(LEARNERS[algo].config, settings) == defaults


def test_a_recorded_config_takes_the_defaults_of_fields_added_since():
    from marl_edu.learners.ppo import PPOConfig
    recorded = dataclasses.asdict(PPOConfig(hidden=8))
    del recorded["target_kl"]  # (recorded before PPO had it)
    assert recorded_config("mappo", recorded) == dataclasses.asdict(PPOConfig(hidden=8))
    assert recorded_config("mappo", {**recorded, "target_kl": 0.02})["target_kl"] == 0.02  # a value recorded stays
    assert recorded_config("mappo", {**recorded, "old_field": 1})["old_field"] == 1  # (and so compares unequal)


# -- what a row says: its actions, its replay, its policy and how a policy file rebuilds it ---------------------------

def test_each_loop_kind_says_its_actions_and_replay():
    assert set(LOOPS) == {row.loop for row in LEARNERS.values()}
    for row in LEARNERS.values():
        assert row.actions in ("discrete", "forces") and row.replay in ("transitions", "episodes", None)
        assert row.continuous == (row.actions == "forces")
    replays = {name: row.replay for name, row in LEARNERS.items()}
    assert [name for name, replay in replays.items() if replay == "episodes"] == ["iql", "vdn", "qmix"]
    assert [name for name, replay in replays.items() if replay is None] == [*ON_POLICY, "mappo_continuous",
                                                                            "ippo_continuous"]


@pytest.mark.parametrize("algo", list(LEARNERS))
@pytest.mark.parametrize("changes", [{}, {"hidden": 8, "recurrent": False, "n_subpolicies": 2}])
def test_a_rows_policy_network_is_the_learners_own(algo, changes):
    row = LEARNERS[algo]
    fields = {field.name for field in dataclasses.fields(row.config)}
    config = row.config(**{key: value for key, value in changes.items() if key in fields})
    N, O, A = 3, 7, 2 if row.continuous else 5
    agent = row.learner(N, O, A, config, seed=0)
    built = row.policy.network(N, O, A, config)
    mine = getattr(agent, row.policy.attribute)
    assert {k: v.shape for k, v in built.state_dict().items()} == {k: v.shape for k, v in mine.state_dict().items()}
    assert row.policy.recurrent == ("recurrent" in fields)  # a GRU the config can turn off
    assert row.policy.subpolicies == ("n_subpolicies" in fields)
    if row.policy.subpolicies:
        assert len(mine) == N * config.n_subpolicies


def test_the_policies_keep_the_attributes_the_committed_policy_files_hold():  # (their format stays as it is)
    attributes = {name: row.policy.attribute for name, row in LEARNERS.items()}
    assert {name for name, key in attributes.items() if key == "q_net"} == {"iql", "vdn", "qmix"}
    assert {name for name, key in attributes.items() if key == "actor"} == {*ON_POLICY, "mappo_continuous",
                                                                             "ippo_continuous"}
    assert all(key in ("actor", "actors", "q_net") for key in attributes.values())


@pytest.mark.parametrize("algo", list(LEARNERS))
@pytest.mark.parametrize("sizes, message", [
    ((0, 4, 5), r"^n_agents must be a positive int, got 0"),
    ((2, -1, 5), r"^obs_dim must be a positive int, got -1"),
    ((2, 4, 0), r"^(n_actions|action_dim) must be a positive int, got 0"),
    ((2.0, 4, 5), r"^n_agents must be a positive int, got 2.0"),
    ((10**5, 10**3, 5), r"^n_agents must be a positive int at most 64, got 100000"),
    ((2, 10**6, 5), r"^obs_dim must be a positive int at most 100,000, got 1000000"),
    ((2, 4, 10**5), r"^(n_actions|action_dim) must be a positive int at most 10,000, got 100000"),
])
def test_every_learner_names_a_size_out_of_the_limits_before_building_anything(algo, sizes, message):
    row = LEARNERS[algo]
    with pytest.raises(ValueError, match=message):
        row.learner(*sizes, row.config(hidden=8), seed=0)


@pytest.mark.parametrize("algo", ["mappo", "qmix", "coma"])
def test_a_network_layer_beyond_the_limit_is_named_not_allocated(algo):
    # N=64, O=100,000 are each within their limits, but a centralised network's first layer on N*O = 6,400,000
    # inputs would hold 6,400,000 * 8 = 51,200,000 weights (QMIX's hypernetworks more): over the limit of one layer
    row = LEARNERS[algo]
    with pytest.raises(ValueError, match=r"in_dim=6,[45]\d\d,\d\d\d by \d+ outputs: [\d,]+ weights in one layer, more "
                                         r"than the 33,554,432"):
        row.learner(64, 100_000, 5, row.config(hidden=8), seed=0)


@pytest.mark.parametrize("algo", ["coma", "vdn", "mappo"])
def test_a_recurrent_agent_beyond_the_layer_limit_is_named_not_allocated(algo):
    # hidden=4,096 is within the hidden bound, but the GRU's hidden-to-hidden weights are 3 gates x 4,096 by 4,096
    # = 50,331,648 > 33,554,432 = 2**25; hidden=3,000 gives 27,000,000 (within), so a GRU of 3,000 is built
    row = LEARNERS[algo]
    with pytest.raises(ValueError, match=r"a GRU of 4,096 inputs and hidden=4,096: its input-to-hidden weights "
                                         r"\(3 gates x 4,096 by 4,096\) are 50,331,648 weights in one layer, more than "
                                         r"the 33,554,432"):
        row.learner(2, 2, 5, row.config(hidden=4096), seed=0)


def test_the_gru_bound_counts_each_weight_matrix():
    from marl_edu.pieces.nets import gru_cell
    cell = gru_cell(3000, 3000)  # 3 x 3,000 x 3,000 = 27,000,000 <= 33,554,432
    assert cell.weight_hh.shape == (9000, 3000)
    with pytest.raises(ValueError, match=r"its hidden-to-hidden weights \(3 gates x 3,400 by 3,400\) are 34,680,000"):
        gru_cell(10, 3400)  # input: 3 x 3,400 x 10 = 102,000, fine; hidden: 3 x 3,400 x 3,400 = 34,680,000, over


# The batch contract every update checks once, at the batch's boundary (data/: check_episode_batch, check_force_batch,
# check_replay_batch), by the kind of batch a row's loop gives it: (change, the ValueError's message)
EPISODE_CONTRACT = {  # B=2 episodes of T=3 steps, N=2, O=2, A=5, every step real
    "a hole in step_mask (real, padding, real)": (
        changes(entries_set("step_mask", 0.0, (0, 1)), entries_set("agent_mask", 0.0, (0, 1)),
                entries_set("dones", 1.0, (0, 1))),
        r"^batch\['step_mask'\]: a real step after padding \(episode 0, step 2\): padding comes only after an "
        r"episode's end"),
    "an episode without a real step": (
        changes(entries_set("step_mask", 0.0, (1,)), entries_set("agent_mask", 0.0, (1,)),
                entries_set("dones", 1.0, (1,))),
        r"^batch\['step_mask'\]: episode 1 has no real step \(every episode starts with one\)"),
    "a padded step whose done is 0": (
        changes(entries_set("step_mask", 0.0, (0, 2)), entries_set("agent_mask", 0.0, (0, 2))),
        r"^batch\['dones'\]: 0 on a padded step \(episode 0, step 2\): padding has d = 1"),
    "a done at t = 0 followed by real steps": (
        entries_set("dones", 1.0, (0, 0)),
        r"^batch\['dones'\]: a real step after a done \(episode 0, done at step 0, step 1 real\)"),
    "an agent acting again after its end": (
        entries_set("agent_mask", 0.0, (1, 1, 1)),
        r"^batch\['agent_mask'\]: agent 1 acts again after its end \(episode 1, step 2\)"),
    "a step_mask of 2": (entries_set("step_mask", 2.0, (0, 1)), r"^batch\['step_mask'\] must be 0 or 1"),
    "NaN obs": (entries_set("obs", math.nan, (1, 3, 0, 1)), r"^batch\['obs'\] must be finite"),
    "float64 rewards": (lambda b: b | {"rewards": b["rewards"].double()},
                        r"^batch\['rewards'\]: expected torch.float32 elements"),
    "team rewards (B, T)": (lambda b: b | {"rewards": b["rewards"][..., 0]}, r"^batch\['rewards'\]: expected shape"),
}
FORCE_CONTRACT = {  # B=2 episodes of T=3 steps with forces, every step real
    "a done at t = 0 followed by real steps": (
        entries_set("dones", 1.0, (1, 0)),
        r"^batch\['dones'\]: a real step after a done \(episode 1, done at step 0, step 1 real\)"),
    "dones of 0.5": (entries_set("dones", 0.5, (0, 2)), r"^batch\['dones'\] must be 0 or 1"),
    "NaN actions": (entries_set("actions", math.nan, (0, 1, 1, 0)), r"^batch\['actions'\] must be finite"),
    "infinite reward": (entries_set("rewards", -math.inf, (0, 0, 0)), r"^batch\['rewards'\] must be finite"),
    "float64 obs": (lambda b: b | {"obs": b["obs"].double()}, r"^batch\['obs'\]: expected torch.float32 elements"),
    "actions (B, T, N)": (lambda b: b | {"actions": b["actions"][..., 0]}, r"^batch\['actions'\]: expected shape"),
    "a missing key": (lambda b: {k: v for k, v in b.items() if k != "dones"}, r"^batch is missing \['dones'\]"),
}
REPLAY_CONTRACT = {  # B=8 transitions
    "dones of 2": (entries_set("dones", 2.0, (3, 1)), r"^batch\['dones'\] must be 0 or 1"),
    "NaN reward": (entries_set("rewards", math.nan, (0, 1)), r"^batch\['rewards'\] must be finite"),
    "infinite next_obs": (entries_set("next_obs", math.inf, (2, 0, 1)), r"^batch\['next_obs'\] must be finite"),
    "obs (B, N)": (lambda b: b | {"obs": b["obs"][..., 0]}, r"^batch\['obs'\]: expected shape"),
    "a missing key": (lambda b: {k: v for k, v in b.items() if k != "dones"}, r"^batch is missing \['dones'\]"),
}
CONTRACTS = {"on_policy": EPISODE_CONTRACT, "episode_replay": EPISODE_CONTRACT, "off_policy": REPLAY_CONTRACT,
             "continuous": REPLAY_CONTRACT, "continuous_on_policy": FORCE_CONTRACT}


def _weights(agent) -> dict:
    """Every tensor of every network a learner holds, copied."""
    return {f"{key}.{name}": value.clone() for key, module in vars(agent).items() if isinstance(module, torch.nn.Module)
            for name, value in module.state_dict().items()}


@pytest.mark.parametrize("algo, case", [(algo, case) for algo, row in LEARNERS.items() for case in CONTRACTS[row.loop]])
def test_every_update_refuses_a_batch_that_breaks_its_contract_before_learning(algo, case):
    row = LEARNERS[algo]
    A = 2 if row.continuous else 5
    agent = row.learner(2, 2, A, row.config(hidden=8), seed=0)
    before = _weights(agent)
    change, message = CONTRACTS[row.loop][case]
    with pytest.raises(ValueError, match=message):
        agent.update(change(batch_for(row)))
    after = _weights(agent)
    assert agent.updates == 0 and all(torch.equal(before[key], after[key]) for key in before)  # nothing learned


@pytest.mark.parametrize("algo", list(LEARNERS))
def test_every_update_takes_a_batch_that_keeps_its_contract(algo):
    # the hand-made batches the test above breaks are themselves accepted, and so is padding after an episode's end
    row = LEARNERS[algo]
    agent = row.learner(2, 2, 2 if row.continuous else 5, row.config(hidden=8), seed=0)
    agent.update(batch_for(row))
    if row.loop in ("on_policy", "episode_replay"):  # episode 1 ended (terminal) at step 1, padded after
        padded = changes(entries_set("step_mask", 0.0, (1, 2)), entries_set("agent_mask", 0.0, (1, 2)),
                         entries_set("dones", 1.0, (1, 1), (1, 2)))
        agent.update(padded(batch_for(row)))
    assert agent.updates == (2 if row.loop in ("on_policy", "episode_replay") else 1)


@pytest.mark.parametrize("algo", list(LEARNERS))
def test_every_update_checks_its_batch_once(algo, monkeypatch):
    # the batch contract's checks (data/), wherever a learner's module holds them, counted over one update
    import importlib
    import pkgutil

    import marl_edu.learners

    calls = []
    for info in pkgutil.iter_modules(marl_edu.learners.__path__, "marl_edu.learners."):
        module = importlib.import_module(info.name)
        for name in ("check_episode_batch", "check_force_batch", "check_replay_batch"):
            original = getattr(module, name, None)
            if original is not None:
                monkeypatch.setattr(module, name, lambda *args, _f=original, _n=name, **kwargs: (
                    calls.append(_n), _f(*args, **kwargs))[1])
    row = LEARNERS[algo]
    agent = row.learner(2, 2, 2 if row.continuous else 5, row.config(hidden=8), seed=0)
    agent.update(batch_for(row))
    assert len(calls) == 1, calls  # the whole batch once (an ensemble's slices are batches of their own: None here)
