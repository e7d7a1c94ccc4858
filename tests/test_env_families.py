"""Every env family's declaration (``envs.family.EnvFamily``), which family an id is, and the errors for ids no family
makes."""

import numpy as np
import pytest

from marl_edu.envs.batched_switch import BatchedSwitch
from marl_edu.envs.family import EnvFamily, check_int_actions
from marl_edu.envs.foraging import FORAGING, ForagingEnv
from marl_edu.envs.magym import MA_GYM, MultiAgentEnv
from marl_edu.envs.make import FAMILIES, family, make_env, make_vec_env, resolve
from marl_edu.envs.particle import PARTICLE, ParticleEnv
from marl_edu.envs.planning import optimal_team_return
from marl_edu.envs.spread_discrete import SPREAD_DISCRETE, SpreadDiscreteEnv
from marl_edu.envs.switch import SWITCH

# family -> (its env class, action kind, deterministic, periodic and final evaluation episodes, evaluation seed)
DECLARED = {
    SWITCH: (MultiAgentEnv, "discrete", True, 1, 1, 0),
    MA_GYM: (MultiAgentEnv, "discrete", False, 10, 100, 0),
    PARTICLE: (ParticleEnv, "forces", False, 10, 100, 10_000),
    SPREAD_DISCRETE: (SpreadDiscreteEnv, "discrete", False, 10, 100, 0),
    FORAGING: (ForagingEnv, "discrete", False, 10, 100, 0),
}


def test_every_family_is_listed_once():
    assert set(FAMILIES) == set(DECLARED) and len(FAMILIES) == len(DECLARED)
    assert FAMILIES[-1] is MA_GYM  # ma-gym takes every id no other family claims, so it is asked last


@pytest.mark.parametrize("declared", FAMILIES, ids=lambda f: f.name)
def test_each_family_declares_what_the_layers_above_read(declared):
    env_class, actions, deterministic, episodes, final_episodes, eval_seed = DECLARED[declared]
    assert isinstance(declared, EnvFamily)
    assert (declared.env, declared.actions, declared.deterministic) == (env_class, actions, deterministic)
    assert (declared.eval_episodes, declared.final_eval_episodes, declared.eval_seed) == (episodes, final_episodes,
                                                                                           eval_seed)
    assert declared.render and declared.backend in ("ma-gym", "mpe2", "lbforaging")
    ids = declared.ids()
    assert declared.example in ids
    for env_id in ids:  # each family makes its own ids, and no other family's
        assert family(env_id) is declared and resolve(env_id) == env_id
    env = make_env(declared.example, seed=0)
    assert type(env) is env_class and env.env_id == declared.example
    assert hasattr(env, "action_dim") == (actions == "forces")


def test_the_families_ids_do_not_overlap():
    every = [env_id for f in FAMILIES for env_id in f.ids()]
    assert len(every) == len(set(every))
    assert "simple_spread_v3" in PARTICLE.ids() and "simple_spread_v3_discrete" in SPREAD_DISCRETE.ids()
    assert len(SWITCH.ids()) == 12 and all(env_id.startswith("Switch") for env_id in SWITCH.ids())  # 2, 3, 4 x v0-v3


def test_only_switch_knows_its_optimum_and_steps_in_batch():
    assert SWITCH.optimum("Switch2-v0") == optimal_team_return("Switch2-v0") == pytest.approx(8.3)
    assert SWITCH.optimum("ma_gym:Switch4-v0") == optimal_team_return("Switch4-v0")
    assert all(f.optimum is None and f.batched is None for f in FAMILIES if f is not SWITCH)
    assert SWITCH.batched is BatchedSwitch
    assert isinstance(make_vec_env("Switch2-v0", 2), BatchedSwitch)
    assert not isinstance(make_vec_env("Switch2-v0", 2, backend="ma-gym"), BatchedSwitch)


@pytest.mark.parametrize("env_id, expected, resolved", [
    ("ma_gym:Switch2-v0", SWITCH, "Switch2-v0"),
    ("Switch3-v2", SWITCH, "Switch3-v2"),
    ("PredatorPrey7x7-v0", MA_GYM, "PredatorPrey7x7-v0"),
    ("ma_gym:Combat-v0", MA_GYM, "Combat-v0"),
    ("TrafficJunction10-v1", MA_GYM, "TrafficJunction10-v1"),
    ("ma_gym:Lumberjacks-v0", MA_GYM, "Lumberjacks-v0"),
    ("simple_adversary_v3", PARTICLE, "simple_adversary_v3"),
    ("simple_spread_v3_discrete", SPREAD_DISCRETE, "simple_spread_v3_discrete"),
    ("lbforaging:Foraging-8x8-2p-3f-v3", FORAGING, "Foraging-8x8-2p-3f-v3"),
])
def test_an_id_is_its_familys(env_id, expected, resolved):
    assert family(env_id) is expected and resolve(env_id) == resolved


@pytest.mark.parametrize("env_id, message", [
    ("Switch5-v0", "unknown ma-gym environment 'Switch5-v0'; did you mean 'Switch4-v0', 'Switch3-v0', 'Switch2-v0'"),
    ("Switch2", "unknown ma-gym environment 'Switch2'; did you mean 'Switch2-v0', 'Switch2-v1', 'Switch2-v2', "
                "'Switch2-v3'?"),
    ("PredatorPrey7x7-v9", "did you mean 'PredatorPrey7x7-v3', 'PredatorPrey7x7-v2', 'PredatorPrey7x7-v1', "
                           "'PredatorPrey7x7-v0'?"),
    ("simple_sprad_v3", "unknown particle environment 'simple_sprad_v3'; did you mean 'simple_spread_v3', "),
    ("simple_spread_discrete", "unknown particle environment with discrete actions 'simple_spread_discrete'; did you "
                               "mean 'simple_spread_v3_discrete'?"),
    ("simple_spread_v3_Discrete", "did you mean 'simple_spread_v3_discrete'?"),
    ("Foragin-8x8-2p-3f-v3", "unknown Level-Based Foraging environment 'Foragin-8x8-2p-3f-v3'; did you mean "
                             "'Foraging-8x8-2p-3f-v3'"),
    ("CartPole-v1", "unknown ma-gym environment 'CartPole-v1'"),
])
def test_an_unknown_id_names_the_close_ones(env_id, message):
    for asked in (family, resolve, make_env, lambda env_id: make_vec_env(env_id, 2)):
        with pytest.raises(ValueError) as error:
            asked(env_id)
        assert message in str(error.value)


@pytest.mark.parametrize("bad", [None, 3, ["Switch2-v0"]])
def test_an_id_must_be_a_string(bad):
    with pytest.raises(ValueError, match="env_id must be a string"):
        family(bad)


def test_a_declaration_is_checked():
    fields = dict(name="bad", backend="mpe2", example="x", recognises=bool, resolve=str, ids=list, env=object,
                  actions="discrete", deterministic=False, eval_episodes=10, final_eval_episodes=100, eval_seed=0,
                  optimum=None, render="none", gif_scale=2, gif_fps=4)
    EnvFamily(**fields)
    EnvFamily(**{**fields, "gif_scale": 0.25})  # a quarter: downscale by 4
    with pytest.raises(ValueError, match="actions must be one of"):
        EnvFamily(**{**fields, "actions": "continuous"})
    with pytest.raises(ValueError, match="a deterministic family's evaluation is one episode, got 10"):
        EnvFamily(**{**fields, "deterministic": True})
    with pytest.raises(ValueError, match="evaluation episodes must be positive"):
        EnvFamily(**{**fields, "final_eval_episodes": 0})
    for bad in (0, 0.3, 9, 1.5):  # a GIF's pixels are whole blocks: scale by 1-8 or shrink by 2-8
        with pytest.raises(ValueError, match=f"gif_scale must be an integer 1-8 or its reciprocal, got {bad}"):
            EnvFamily(**{**fields, "gif_scale": bad})
    for bad in (0, -4, 31):
        with pytest.raises(ValueError, match=f"gif_fps must be in \\[0.5, 30\\], got {bad}"):
            EnvFamily(**{**fields, "gif_fps": bad})


def test_a_vec_env_says_its_action_kind_from_the_family():
    for env_id, continuous in (("simple_spread_v3", True), ("simple_spread_v3_discrete", False),
                               ("Foraging-8x8-2p-3f-v3", False), ("PredatorPrey5x5-v0", False)):
        venv = make_vec_env(env_id, 2, seed=0)
        assert venv.continuous == continuous
        obs = venv.reset()
        assert obs.shape == (2, venv.n_agents, venv.obs_dim) and obs.dtype == np.float32


def test_every_discrete_family_checks_its_actions_the_same_way():
    meanings = ["DOWN", "LEFT", "UP", "RIGHT", "NOOP"]
    check_int_actions(np.array([0, 4]), 2, 5, meanings)  # one int per agent, in 0..4: passes
    with pytest.raises(ValueError, match="one-hot actions"):
        check_int_actions(np.eye(5)[[0, 4]], 2, 5, meanings)  # (N, A) one-hot
    with pytest.raises(ValueError, match="actions"):
        check_int_actions(np.array([0.0, 4.0]), 2, 5, meanings)  # floats
    with pytest.raises(ValueError, match="actions"):
        check_int_actions(np.array([0, 5]), 2, 5, meanings)  # 5 is not one of the 5 actions 0..4
    with pytest.raises(ValueError, match="actions"):
        check_int_actions(np.array([0, 1, 2]), 2, 5, meanings)  # three agents' actions for two
