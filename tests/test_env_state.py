"""Every env family's vec env saves its state mid-episode and a fresh one restored from it steps on to the same bits
(what resuming a run needs), through a weights_only checkpoint file as training.resume writes one."""

import io
import random

import numpy as np
import pytest
import torch

from marl_edu.envs.make import FAMILIES, family, make_env, make_vec_env
from marl_edu.envs.state import from_plain, to_plain
from marl_edu.training.resume import _decode, _encode

# one id per family (and ma-gym's own Switch beside the batched one, and both particle tasks)
CASES = [("Switch2-v2", "batched"), ("Switch3-v1", "ma-gym"), ("PredatorPrey5x5-v0", "ma-gym"),
         ("Combat-v0", "ma-gym"), ("PongDuel-v0", "ma-gym"), ("Checkers-v1", "ma-gym"), ("simple_spread_v3", "batched"),
         ("simple_adversary_v3", "batched"), ("simple_spread_v3_discrete", "batched"),
         ("Foraging-8x8-2p-3f-v3", "batched"),
         ("TrafficJunction4-v0", "ma-gym"),  # its cars come from Python's random module: its own generator, saved
         ("Lumberjacks-v0", "ma-gym")]  # its agents are objects of its own Agent class: envs.state.records()


def test_every_family_is_tested_here():
    assert {family(env_id) for env_id, _ in CASES} == set(FAMILIES)


def through_a_file(state):
    """``state`` saved as training.resume saves a run's parts and read back with ``weights_only=True``."""
    buffer = io.BytesIO()
    torch.save(_encode(state), buffer)
    buffer.seek(0)
    return _decode(torch.load(buffer, weights_only=True))


def random_actions(venv, rng):
    if venv.continuous:
        return rng.uniform(-1, 1, size=(venv.n_envs, venv.n_agents, venv.action_dim)).astype(np.float32)
    return rng.integers(0, venv.n_actions, size=(venv.n_envs, venv.n_agents))


def play(venv, actions):
    """Every output of ``venv.step`` for each of ``actions``, as bytes."""
    out = []
    for a in actions:
        obs, rewards, dones, info = venv.step(a)
        out += [obs.tobytes(), rewards.tobytes(), dones.tobytes()]
        out += [key.encode() + np.asarray(info[key]).tobytes() for key in sorted(info)]
    return out


@pytest.mark.parametrize("env_id, backend", CASES)
def test_a_vec_env_restored_mid_episode_steps_on_to_the_same_bits(env_id, backend):
    rng = np.random.default_rng(7)
    venv = make_vec_env(env_id, 3, seed=5, backend=backend)
    venv.reset()
    for _ in range(37):  # mid-episode; on cooperative navigation (25 steps) past one episode's end
        venv.step(random_actions(venv, rng))
    state = through_a_file(venv.get_state())
    later = [random_actions(venv, rng) for _ in range(80)]  # past the next episode ends, whose resets draw at random
    random.seed(99)  # Python's global generator: no env's draws depend on it (TrafficJunction's never did since seeded)
    expected = play(venv, later)
    restored = make_vec_env(env_id, 3, seed=5, backend=backend)  # fresh: never reset
    restored.set_state(state)
    random.seed(1)
    assert play(restored, later) == expected
    again = make_vec_env(env_id, 3, seed=5, backend=backend)
    again.reset()  # one that had played on its own is overwritten too
    again.step(random_actions(again, np.random.default_rng(1)))
    again.set_state(state)
    assert play(again, later) == expected


def test_a_saved_state_is_a_copy():
    venv = make_vec_env("simple_spread_v3_discrete", 2, seed=0)
    venv.reset()
    state = venv.get_state()
    before = through_a_file(state)
    venv.step(np.zeros((2, 3), dtype=np.int64))
    assert through_a_file(state)["envs"][0]["entities"][0]["state"]["_p_vel"].tobytes() == \
        before["envs"][0]["entities"][0]["state"]["_p_vel"].tobytes()


@pytest.mark.parametrize("env_id, other", [("Switch2-v0", "Switch2-v1"),
                                           ("simple_spread_v3_discrete", "simple_spread_v3"),
                                           ("Foraging-8x8-2p-3f-v3", "Foraging-8x8-2p-2f-v3")])
def test_a_state_of_another_env_is_refused(env_id, other):
    venv, elsewhere = make_vec_env(env_id, 2, seed=0), make_vec_env(other, 2, seed=0)
    venv.reset()
    elsewhere.reset()
    with pytest.raises(ValueError, match=f"the saved state is of 2 copies of {other}; this vec env has 2 copies of "
                                         f"{env_id}"):
        venv.set_state(elsewhere.get_state())
    with pytest.raises(ValueError, match="this vec env has 2 copies"):
        make_vec_env(env_id, 2, seed=0).set_state({**venv.get_state(), "n_envs": 3})
    with pytest.raises(ValueError, match="the saved state is not"):
        venv.set_state({"env_id": env_id})


def test_a_state_missing_an_attribute_is_refused():
    env = make_env("PredatorPrey5x5-v0", seed=0)
    env.reset()
    state = env.get_state()
    del state["env"]["prey_pos"]
    with pytest.raises(ValueError, match=r"attributes \['prey_pos'\] differ"):
        make_env("PredatorPrey5x5-v0", seed=0).set_state(state)


def test_a_traffic_junction_repeats_from_its_seed_and_leaves_python_s_random_module_alone():
    # ma-gym's TrafficJunction draws cars from Python's random module, which env.seed() does not set: two runs of one
    # seed used to differ. Each env now draws from a generator of its own, seeded from the env's seed
    def episode(env_seed, global_seed):
        random.seed(global_seed)
        before = random.getstate()
        env = make_env("TrafficJunction4-v0", seed=env_seed)
        out = [env.reset().tobytes()]
        for t in range(150):  # past an episode's end (a collision or the 100-step limit), whose reset draws too
            obs, rewards, dones, _ = env.step(np.full(4, t % 2))  # 0 gas, 1 brake
            out += [obs.tobytes(), rewards.tobytes()]
            if dones.all():
                out.append(env.reset().tobytes())
        assert random.getstate() == before  # the module's own generator drew nothing
        return out

    assert episode(3, global_seed=1) == episode(3, global_seed=2)
    assert episode(3, global_seed=1) != episode(4, global_seed=1)


def test_plain_data_keeps_the_types_it_is_given():
    from ma_gym.envs.lumberjacks.lumberjacks import Agent
    from PIL import Image

    generator, python_generator = np.random.RandomState(3), random.Random(4)
    value = {"pos": {0: [1, 2], 1: (np.int64(3), 4)}, "dir": np.str_("U"), "grid": np.eye(2, dtype=np.int64),
             "rng": generator, "img": Image.new("RGB", (2, 3), (1, 2, 3)), "tuple": ("a",),
             "python_rng": python_generator, "agent": Agent(2, pos=(3, 4))}
    back = from_plain(through_a_file(to_plain(value)))
    assert back["python_rng"].random() == python_generator.random()
    assert type(back["agent"]) is Agent and (back["agent"].id, back["agent"].pos) == (2, (3, 4))
    assert back["pos"] == {0: [1, 2], 1: (3, 4)} and type(back["pos"][1]) is tuple
    assert type(back["pos"][1][0]) is np.int64 and type(back["dir"]) is np.str_ and back["tuple"] == ("a",)
    assert back["grid"].dtype == np.int64 and back["img"].size == (2, 3) and back["img"].getpixel((0, 0)) == (1, 2, 3)
    assert back["rng"].randint(1000) == generator.randint(1000)
    with pytest.raises(TypeError, match=r"value\['x'\]: a object cannot be saved"):
        to_plain({"x": object()})


def test_a_saved_state_names_no_class_but_the_known_records():
    from ma_gym.envs.lumberjacks.lumberjacks import Agent

    saved = through_a_file(to_plain(Agent(0, pos=(1, 1))))
    with pytest.raises(ValueError, match="names the class 'os.system', which is not one of envs.state.records()"):
        from_plain({**saved, "record": "os.system"})


def test_a_state_saved_before_traffic_junction_had_its_own_generator_still_restores_and_a_bad_generator_is_refused():
    env = make_env("PredatorPrey5x5-v0", seed=0)
    env.reset()
    state = env.get_state()
    old = {key: value for key, value in state.items() if key != "python_random"}  # a run.pt of an earlier marl_edu
    make_env("PredatorPrey5x5-v0", seed=0).set_state(old)
    junction = make_env("TrafficJunction4-v0", seed=0)
    junction.reset()
    with pytest.raises(ValueError, match="its Python generator is missing"):
        make_env("TrafficJunction4-v0", seed=0).set_state({k: v for k, v in junction.get_state().items()
                                                           if k != "python_random"})
    with pytest.raises(ValueError, match="python_random must be a Python generator's state, got dict"):
        make_env("TrafficJunction4-v0", seed=0).set_state({**junction.get_state(), "python_random": {"a": 1}})


def test_stepping_puts_back_whatever_the_module_held():
    import ma_gym.envs.traffic_junction.traffic_junction as module

    env = make_env("TrafficJunction4-v0", seed=0)
    stand_in = random.Random(5)
    module.random = stand_in  # (a test's monkeypatch, say)
    try:
        env.reset()
        env.step(np.zeros(4, dtype=np.int64))
        assert module.random is stand_in
    finally:
        module.random = random
