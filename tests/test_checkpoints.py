import pytest
import torch

import marl_edu
from marl_edu.checkpoints import load_checkpoint, save_checkpoint


def _save(path, **overrides):
    args = dict(algo="maddpg", env_id="Switch2-v2", config={"gamma": 0.95}, state={"w": torch.arange(3.0)})
    args.update(overrides)
    return save_checkpoint(path, **args)


def test_round_trip_keeps_header_and_tensors(tmp_path):
    path = _save(tmp_path / "sub" / "run.pt")
    payload = load_checkpoint(path, algo="maddpg", env_id="Switch2-v2")
    assert payload["marl_edu"] == marl_edu.__version__ and payload["config"] == {"gamma": 0.95}
    assert torch.equal(payload["state"]["w"], torch.tensor([0.0, 1.0, 2.0]))
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["run.pt"]  # the temporary file was renamed away


def test_wrong_algo_or_env_is_refused(tmp_path):
    path = _save(tmp_path / "run.pt")
    with pytest.raises(ValueError, match="is a maddpg checkpoint, expected coma"):
        load_checkpoint(path, algo="coma")
    with pytest.raises(ValueError, match="was trained on Switch2-v2, expected Switch2-v0"):
        load_checkpoint(path, env_id="Switch2-v0")


def test_truncated_missing_foreign_and_future_files(tmp_path):
    path = _save(tmp_path / "run.pt")
    data = path.read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_checkpoint(tmp_path / "cut.pt")
    with pytest.raises(ValueError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "missing.pt")
    torch.save({"w": torch.zeros(1)}, tmp_path / "foreign.pt")
    with pytest.raises(ValueError, match="not a marl_edu checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")
    torch.save({"format": 99, "state": {}}, tmp_path / "future.pt")
    with pytest.raises(ValueError, match="format 99"):
        load_checkpoint(tmp_path / "future.pt")


def test_a_config_given_numpy_values_saves_and_loads(tmp_path):
    """validate() turns numpy ints and floats into Python ones, so the checkpoint's header loads with
    weights_only=True (a numpy scalar in it would not)."""
    import numpy as np

    from marl_edu.checkpoints import load_policy, save_policy
    from marl_edu.maddpg import MADDPG, MADDPGConfig

    config = MADDPGConfig(hidden=np.int64(8), gamma=np.float32(0.9), n_envs=np.int32(2)).validate()
    assert (type(config.hidden), type(config.gamma), type(config.n_envs)) == (int, float, int)
    path = save_policy(MADDPG(2, 2, 5, config), "Switch2-v2", tmp_path / "policy.pt")
    assert load_policy(path).config.hidden == 8


def test_a_trained_policy_file_round_trips(tmp_path):
    import numpy as np

    from marl_edu.checkpoints import load_policy, save_policy
    from marl_edu.maddpg import MADDPGConfig
    from marl_edu.train import train_maddpg

    config = MADDPGConfig(n_envs=2, warmup_steps=32, batch_size=16, hidden=8)
    run = train_maddpg("Switch2-v2", episodes=2, config=config, seed=5, progress=False)
    path = save_policy(run.agent, "Switch2-v2", tmp_path / "policy.pt")
    loaded = load_policy(path, algo="maddpg", env_id="Switch2-v2")
    assert loaded.config == run.agent.config and loaded.n_agents == 2 and loaded.obs_dim == 3
    obs = np.random.default_rng(0).random((7, 2, 3), dtype=np.float32)  # (K, N, O) arbitrary observations
    assert np.array_equal(loaded.act(obs, greedy=True), run.agent.act(obs, greedy=True))
    with pytest.raises(ValueError, match="was trained on Switch2-v2, expected Switch2-v0"):
        load_policy(path, env_id="Switch2-v0")
