"""Runs in progress: an interrupted and resumed run is the same, to the bit, as one that never stopped."""

import math

import numpy as np
import pytest
import torch

from marl_edu.learners.baselines import IDDPG
from marl_edu.learners.coma import COMAConfig
from marl_edu.learners.continuous import ContinuousMADDPGConfig
from marl_edu.learners.ensembles import EnsembleConfig
from marl_edu.learners.maddpg import MADDPGConfig
from marl_edu.learners.ppo import PPOConfig
from marl_edu.learners.ppo_continuous import ContinuousPPOConfig
from marl_edu.learners.value_decomposition import ValueDecompositionConfig
from marl_edu.training.loops import train
from marl_edu.training.resume import RunCheckpoint, TrainingInterrupted, load_run_state, object_state, restore_object

SMALL_MADDPG = MADDPGConfig(n_envs=4, warmup_steps=100, batch_size=32, buffer_size=2_000, hidden=16)
SMALL_COMA = COMAConfig(n_envs=4, hidden=16)
SMALL_QMIX = ValueDecompositionConfig(n_envs=4, batch_episodes=4, hidden=8)


class StopAt(RunCheckpoint):
    """Requests a stop (as Ctrl-C would) once ``episodes`` episodes have finished."""

    def __init__(self, path, episodes: int):
        super().__init__(path, every_seconds=math.inf)
        self.at = episodes

    def save(self, result, parts):
        if len(result.episode_returns) >= self.at:
            self.request_stop()
        super().save(result, parts)


def tensors(agent) -> dict:
    """Every tensor the learner holds (networks, targets, optimiser states, generator states)."""
    flat = {}

    def walk(prefix, value):
        if isinstance(value, torch.Tensor):
            flat[prefix] = value
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}", item)
        elif isinstance(value, list):
            for k, item in enumerate(value):
                walk(f"{prefix}[{k}]", item)
    walk("agent", object_state(agent))
    return flat


def assert_same_run(a, b):
    assert a.episode_returns == b.episode_returns
    assert a.evaluations == b.evaluations
    assert a.sampled_evaluations == b.sampled_evaluations
    assert (a.env_steps, a.updates) == (b.env_steps, b.updates)
    ta, tb = tensors(a.agent), tensors(b.agent)
    assert ta.keys() == tb.keys()
    for key in ta:
        assert torch.equal(ta[key], tb[key]), key


# every loop kind whose envs can be saved mid-run (the batched Switch): off-policy, on-policy, episode replay
@pytest.mark.parametrize("learner, kwargs, stop_at_episode", [
    ("maddpg", dict(env_id="Switch2-v2", episodes=24, config=SMALL_MADDPG, eval_every=8), 9),
    (IDDPG, dict(env_id="Switch2-v0", episodes=16, config=SMALL_MADDPG, eval_every=8), 3),
    ("coma", dict(env_id="Switch2-v0", episodes=48, config=SMALL_COMA, eval_every=16), 20),
    ("mappo", dict(env_id="Switch2-v0", episodes=24, config=PPOConfig(n_envs=4, hidden=8), eval_every=8), 8),
    ("qmix", dict(env_id="Switch2-v0", episodes=24, config=SMALL_QMIX, eval_every=8), 12),
])
def test_an_interrupted_run_resumes_to_the_same_bits(learner, kwargs, stop_at_episode, tmp_path):
    whole = train(learner, **kwargs, seed=3, progress=False)
    path = tmp_path / "run.pt"
    with pytest.raises(TrainingInterrupted) as stop:
        train(learner, **kwargs, seed=3, progress=False, checkpoint=StopAt(path, stop_at_episode))
    assert stop.value.path == path and stop_at_episode <= stop.value.episodes < kwargs["episodes"]
    _, state = load_run_state(path)
    assert len(state["result"]["episode_returns"]) == stop.value.episodes
    resumed = train(learner, **kwargs, seed=3, progress=False, checkpoint=RunCheckpoint(path, math.inf, resume=state))
    assert_same_run(whole, resumed)


def test_interrupting_twice_still_resumes_to_the_same_bits(tmp_path):
    kwargs = dict(env_id="Switch2-v2", episodes=24, config=SMALL_MADDPG, eval_every=8, seed=5, progress=False)
    whole = train("maddpg", **kwargs)
    path = tmp_path / "run.pt"
    resume = None
    for at in (4, 13):
        checkpoint = StopAt(path, at)
        checkpoint.resume = resume
        with pytest.raises(TrainingInterrupted):
            train("maddpg", **kwargs, checkpoint=checkpoint)
        resume = load_run_state(path)[1]
    assert_same_run(whole, train("maddpg", **kwargs, checkpoint=RunCheckpoint(path, math.inf, resume=resume)))


def test_periodic_saves_do_not_change_the_run(tmp_path):
    kwargs = dict(env_id="Switch2-v0", episodes=32, config=SMALL_COMA, eval_every=16, seed=1, progress=False)
    checkpoint = RunCheckpoint(tmp_path / "run.pt", every_seconds=1e-9)  # a save after every batch
    saved = train("coma", **kwargs, checkpoint=checkpoint)
    assert checkpoint.saves == 32 // 4
    assert_same_run(train("coma", **kwargs), saved)
    assert not list(tmp_path.glob("*.tmp"))


def test_a_state_from_another_loop_is_refused(tmp_path):
    path = tmp_path / "run.pt"
    with pytest.raises(TrainingInterrupted):
        train("coma", "Switch2-v0", 16, SMALL_COMA, eval_every=8, progress=False, checkpoint=StopAt(path, 4))
    state = load_run_state(path)[1]
    with pytest.raises(ValueError, match="saved by another training loop"):
        train("maddpg", "Switch2-v2", 16, SMALL_MADDPG, progress=False, checkpoint=RunCheckpoint(path, resume=state))


def _tamper(state: dict, where: str, value) -> None:
    """Set the saved value at ``where`` ("parts.agent.n_agents", "result.episode_returns.0") to ``value``."""
    *path, last = where.split(".")
    for key in path:
        state = state[int(key)] if isinstance(state, list) else state[key]
    state[int(last) if isinstance(state, list) else last] = value


@pytest.mark.parametrize("where, value, message", [
    ("parts.agent.n_agents", 3, "the saved agent.n_agents is 3; this run's is 2"),
    ("parts.venv.vec_env.n_envs", 8, "the saved state is of 8 copies of Switch2-v0; this vec env has 4 copies"),
    ("parts.venv.vec_env.env_id", "Switch3-v0", "the saved state is of 4 copies of Switch3-v0"),
    ("parts.venv.vec_env.pos", torch.zeros(4, 3, dtype=torch.int64), r"the saved pos must be int64 \(4, 2\), got int64"),
    ("parts.venv.vec_env.pos", torch.zeros(4, 2), r"the saved pos must be int64 \(4, 2\), got float32"),
    ("parts.venv.vec_env.returns", torch.full((4,), float("nan"), dtype=torch.float64), "venv.returns: holds NaN"),
    ("parts.loop.next_eval", "16", "loop.next_eval: expected a number, got str"),
    ("parts.loop.next_eval", float("inf"), "loop.next_eval: is inf"),
    ("result.episode_returns.0", float("nan"), "the saved episode_returns hold NaN or infinity"),
    ("result.updates", -4, "the saved updates is -4, not a count"),
    ("result.env_steps", 1.5, "the saved env_steps is 1.5, not a count"),
    ("result.eval_seconds", [], "evaluations, eval_seconds and eval_env_steps differ in length"),
])
def test_a_tampered_state_is_refused_with_the_field_named(where, value, message, tmp_path):
    path = tmp_path / "run.pt"
    kwargs = dict(env_id="Switch2-v0", episodes=32, config=SMALL_COMA, eval_every=8, seed=2, progress=False)
    with pytest.raises(TrainingInterrupted):
        train("coma", **kwargs, checkpoint=StopAt(path, 12))
    state = load_run_state(path)[1]
    _tamper(state, where, value)
    with pytest.raises(ValueError, match=message) as refused:
        train("coma", **kwargs, checkpoint=RunCheckpoint(path, resume=state))
    assert "cannot be resumed here" in str(refused.value) and "\n" not in str(refused.value)


# every loop kind on the particle envs, ma-gym's own Switch copies and the two ma-gym tasks whose state needs more than
# their attributes (TrafficJunction's Python generator, Lumberjacks' agents): the loop saves any vec env (get_state)
@pytest.mark.parametrize("learner, kwargs, stop_at_episode", [
    ("coma", dict(env_id="Switch2-v0", episodes=24, config=SMALL_COMA, eval_every=8, env_backend="ma-gym"), 8),
    ("coma", dict(env_id="TrafficJunction4-v0", episodes=16, config=SMALL_COMA, eval_every=8), 8),
    ("vdn", dict(env_id="Lumberjacks-v0", episodes=12, eval_every=4, config=SMALL_QMIX), 4),
    ("maddpg_continuous", dict(env_id="simple_spread_v3", episodes=6, eval_every=2, config=ContinuousMADDPGConfig(
        n_envs=2, warmup_steps=16, batch_size=8, hidden=8)), 3),
    ("maddpg_ensemble", dict(env_id="simple_spread_v3", episodes=6, eval_every=2, config=EnsembleConfig(
        n_envs=2, warmup_steps=16, batch_size=8, hidden=8)), 2),
    ("mappo_continuous", dict(env_id="simple_spread_v3", episodes=8, eval_every=4,
                              config=ContinuousPPOConfig(n_envs=4, hidden=8)), 4),
])
def test_every_vec_env_resumes_to_the_same_bits(learner, kwargs, stop_at_episode, tmp_path):
    kwargs = dict(kwargs, seed=3, progress=False, eval_episodes=1)
    whole = train(learner, **kwargs)
    path = tmp_path / "run.pt"
    with pytest.raises(TrainingInterrupted):
        train(learner, **kwargs, checkpoint=StopAt(path, stop_at_episode))
    resumed = train(learner, **kwargs, checkpoint=RunCheckpoint(path, math.inf, resume=load_run_state(path)[1]))
    assert_same_run(whole, resumed)


def test_object_state_round_trips_arrays_generators_and_refuses_unknown_types():
    class Thing:
        def __init__(self):
            self.counts = np.arange(6, dtype=np.int64).reshape(2, 3)  # (2, 3)
            self.flags = np.array([True, False])
            self.rng = np.random.default_rng(4)
            self.generator = torch.Generator().manual_seed(4)
            self.net = torch.nn.Linear(2, 1)
            self.name, self.total = "x", 1.5

    a, b = Thing(), Thing()
    a.counts += 10
    a.flags[:] = False
    a.rng.random(3)
    torch.rand(2, generator=a.generator)
    with torch.no_grad():
        a.net.weight.fill_(0.25)
    a.total = 2.5
    restore_object(b, object_state(a), "thing")
    assert b.counts.dtype == np.int64 and b.counts.tolist() == [[10, 11, 12], [13, 14, 15]]
    assert b.flags.dtype == bool and not b.flags.any()
    assert b.rng.random() == a.rng.random()
    assert torch.equal(torch.rand(2, generator=b.generator), torch.rand(2, generator=a.generator))
    assert b.net.weight.tolist() == [[0.25, 0.25]] and b.total == 2.5
    a.other = object()
    with pytest.raises(TypeError, match="Thing.other: cannot save a object"):
        object_state(a)
    with pytest.raises(ValueError, match=r"attributes \['other'\] differ"):
        restore_object(Thing(), {**object_state(b), "other": 1}, "thing")


def test_every_seconds_must_be_positive():
    with pytest.raises(ValueError, match="every_seconds must be positive"):
        RunCheckpoint("x.pt", every_seconds=0)


def test_the_loops_state_object_is_saved_whole_and_restored_in_place():
    """A value added to the loop's state object is saved with it (never left out of the checkpoint): every field goes
    in, and comes back with its kind (a deque keeps its bound)."""
    import dataclasses
    from collections import deque

    from marl_edu.training.loops import LoopState

    state = LoopState(next_eval=40, rng=np.random.default_rng(5), obs=np.arange(12, dtype=np.float32).reshape(2, 3, 2),
                      pending=[deque([(np.ones(2), np.zeros(2, dtype=np.int64), 0.5)], maxlen=3), deque(maxlen=3)])
    saved = object_state(state)
    assert set(saved) == {field.name for field in dataclasses.fields(LoopState)}
    expected_draw = np.random.default_rng(5).random()
    fresh = LoopState(next_eval=0, rng=np.random.default_rng(0), obs=np.zeros((2, 3, 2), dtype=np.float32),
                      pending=[deque(maxlen=3), deque(maxlen=3)])
    restore_object(fresh, saved, "loop")
    assert fresh.rng.random() == expected_draw and fresh.obs.dtype == np.float32
    assert np.array_equal(fresh.obs, state.obs) and fresh.next_eval == 40
    assert [d.maxlen for d in fresh.pending] == [3, 3] and len(fresh.pending[0]) == 1
    assert np.array_equal(fresh.pending[0][0][0], np.ones(2)) and fresh.pending[0][0][2] == 0.5
    on_policy = LoopState(next_eval=8, rng=np.random.default_rng(1))  # a path that needs neither obs nor pending
    fresh = LoopState(next_eval=0, rng=np.random.default_rng(0))
    restore_object(fresh, object_state(on_policy), "loop")
    assert fresh.next_eval == 8 and fresh.obs is None and fresh.pending == []
