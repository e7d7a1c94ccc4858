import os
import re

import numpy as np
import pytest
import torch

import marl_edu
from marl_edu.learners.table import CONTINUOUS_ALGORITHMS, LEARNERS, ON_POLICY, config_class
from marl_edu.training.checkpoints import load_checkpoint, save_checkpoint


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
    with pytest.raises(ValueError, match=r"not a readable checkpoint \(truncated"):
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
    from marl_edu.training.checkpoints import load_policy, save_policy
    from marl_edu.learners.maddpg import MADDPG, MADDPGConfig

    config = MADDPGConfig(hidden=np.int64(8), gamma=np.float32(0.9), n_envs=np.int32(2)).validate()
    assert (type(config.hidden), type(config.gamma), type(config.n_envs)) == (int, float, int)
    path = save_policy(MADDPG(2, 2, 5, config), "Switch2-v2", tmp_path / "policy.pt")
    assert load_policy(path).config.hidden == 8


def test_a_trained_policy_file_round_trips(tmp_path):
    from marl_edu.training.checkpoints import load_policy, save_policy
    from marl_edu.learners.maddpg import MADDPGConfig
    from marl_edu.training.loops import train

    config = MADDPGConfig(n_envs=2, warmup_steps=32, batch_size=16, hidden=8)
    run = train("maddpg", "Switch2-v2", episodes=2, config=config, seed=5, progress=False)
    path = save_policy(run.agent, "Switch2-v2", tmp_path / "policy.pt")
    loaded = load_policy(path, algo="maddpg", env_id="Switch2-v2")
    assert loaded.config == run.agent.config and loaded.n_agents == 2 and loaded.obs_dim == 3
    obs = np.random.default_rng(0).random((7, 2, 3), dtype=np.float32)  # (K, N, O) arbitrary observations
    assert np.array_equal(loaded.act(obs, greedy=True), run.agent.act(obs, greedy=True))
    with pytest.raises(ValueError, match="was trained on Switch2-v2, expected Switch2-v0"):
        load_policy(path, env_id="Switch2-v0")


# -- nothing lost: writes through files.atomic_write, headers of plain types, NaN never saved ------------------------

def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def _small_policy(tmp_path, name="policy.pt", env_id="Switch2-v2", agent=None):
    """A MADDPG policy file for N=2, O=3, A=5 with hidden=8: 2 actors of 6 tensors."""
    from marl_edu.training.checkpoints import save_policy
    from marl_edu.learners.maddpg import MADDPG, MADDPGConfig

    agent = agent or MADDPG(2, 3, 5, MADDPGConfig(hidden=8))
    return save_policy(agent, env_id, tmp_path / name)


def _tamper(path, change):
    """Rewrite a checkpoint with ``change(payload)`` applied, as someone editing the file by hand would."""
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)
    return path


def test_a_failed_save_keeps_the_previous_checkpoint_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = _save(tmp_path / "run.pt")
    before = path.read_bytes()

    def full_disk(obj, file):  # what torch.save does when the disk fills up under it
        file.write(b"PK\x03\x04 half a zip")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError, match=r"^could not write .*run\.pt: torch's writer failed"):
        _save(path, config={"gamma": 0.5})
    assert path.read_bytes() == before and _names(tmp_path) == ["run.pt"]


def test_numpy_values_in_a_header_are_saved_as_python_types(tmp_path):
    config = {"actor_lr": np.float64(1e-3), "hidden": np.int64(8), "recurrent": np.bool_(False), "gamma": 0.5}
    loaded = load_checkpoint(_save(tmp_path / "run.pt", config=config))["config"]
    assert loaded == {"actor_lr": 1e-3, "hidden": 8, "recurrent": False, "gamma": 0.5}
    assert [type(v) for v in loaded.values()] == [float, int, bool, float]


def test_a_config_changed_to_a_numpy_value_after_construction_still_loads(tmp_path):
    """validate() runs when the learner is built; a value set later (a panel's slider, a sweep) is saved as it is."""
    from marl_edu.training.checkpoints import load_policy, save_policy
    from marl_edu.learners.coma import COMA, COMAConfig

    agent = COMA(2, 2, 5, COMAConfig(hidden=8))
    agent.config.actor_lr = np.float64(1e-3)
    loaded = load_policy(save_policy(agent, "Switch2-v0", tmp_path / "policy.pt"))
    assert loaded.config.actor_lr == 1e-3 and type(loaded.config.actor_lr) is float


@pytest.mark.parametrize("part, value, named", [
    ("config", lambda: {"window": np.zeros(3)}, r"config\.window is a ndarray"),
    ("config", lambda: {"schedule": object()}, r"config\.schedule is a object"),
    ("state", lambda: {"buffer": {"obs": np.zeros(3)}}, r"state\.buffer\.obs is a ndarray"),
])
def test_values_torch_cannot_load_back_are_refused_on_save(tmp_path, part, value, named):
    path = _save(tmp_path / "run.pt")
    before = path.read_bytes()
    with pytest.raises(ValueError, match=named + r", which torch\.load\(weights_only=True\) cannot read back"):
        _save(path, **{part: value()})
    assert path.read_bytes() == before and _names(tmp_path) == ["run.pt"]


def test_a_header_that_would_not_load_is_refused_on_save(tmp_path):
    with pytest.raises(ValueError, match=r"config keys must be str \(field names\), got 3"):
        _save(tmp_path / "run.pt", config={3: "three"})
    with pytest.raises(ValueError, match=r"env_id must be a str, got int 2"):
        _save(tmp_path / "run.pt", env_id=2)
    assert _names(tmp_path) == []


def test_nan_weights_are_never_saved(tmp_path):
    from marl_edu.training.checkpoints import save_policy
    from marl_edu.learners.maddpg import MADDPG, MADDPGConfig

    agent = MADDPG(2, 3, 5, MADDPGConfig(hidden=8))
    path = save_policy(agent, "Switch2-v2", tmp_path / "policy.pt")
    before = path.read_bytes()
    with torch.no_grad():
        agent.actors[1].mlp.net[2].weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"^state\.actors\.1\.mlp\.net\.2\.weight holds non-finite values "
                                         r"\(1 of 64\): NaN weights are never saved"):
        save_policy(agent, "Switch2-v2", path)
    assert path.read_bytes() == before and _names(tmp_path) == ["policy.pt"]
    with pytest.raises(ValueError, match=r"state\.b holds non-finite values \(2 of 3\)"):
        _save(tmp_path / "other.pt", state={"b": torch.tensor([1.0, float("inf"), -float("inf")])})
    assert _names(tmp_path) == ["policy.pt"]
    _save(tmp_path / "ints.pt", state={"steps": torch.tensor([3, 4]), "rng": torch.zeros(4, dtype=torch.uint8)})


def test_a_file_with_non_finite_weights_is_refused_on_load(tmp_path):
    from marl_edu.training.checkpoints import load_policy

    path = _tamper(_small_policy(tmp_path), lambda p: p["state"]["actors"]["0.mlp.net.4.bias"].fill_(float("nan")))
    with pytest.raises(ValueError, match=r"policy\.pt: state\.actors\.0\.mlp\.net\.4\.bias holds non-finite values "
                                         r"\(5 of 5\)"):
        load_policy(path)


def test_the_real_unpickling_error_is_reported_not_truncation(tmp_path):
    class RunsCode:  # a file that would run a shell command if loaded without weights_only
        def __reduce__(self):
            return os.system, ("echo this must never run",)

    torch.save({"format": 1, "state": {}, "payload": RunsCode()}, tmp_path / "evil.pt")
    with pytest.raises(ValueError, match=r"evil\.pt is not a readable checkpoint: weights_only load refused "
                                         r"GLOBAL \w+\.system") as caught:
        load_checkpoint(tmp_path / "evil.pt")
    assert "truncated" not in str(caught.value)
    torch.save({"format": 1, "state": {}, "lr": np.float64(1e-3)}, tmp_path / "numpy.pt")  # an older save_checkpoint's
    with pytest.raises(ValueError, match=r"weights_only load refused GLOBAL numpy\.[\w.]*scalar"):
        load_checkpoint(tmp_path / "numpy.pt")
    data = _save(tmp_path / "run.pt").read_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 1):  # still says truncated, with the reader's own words
        (tmp_path / "cut.pt").write_bytes(data[:cut])
        with pytest.raises(ValueError, match=r"cut\.pt is not a readable checkpoint \(truncated, or not written by "
                                             r"torch\.save\): \w+"):
            load_checkpoint(tmp_path / "cut.pt")


def _refuse_to_build(monkeypatch):
    """Make building any learner fail the test: the header must be refused before anything is allocated."""
    import dataclasses

    def never(*args, **kwargs):
        raise AssertionError("load_policy built a learner before checking the header's sizes")

    for name, row in LEARNERS.items():  # (the table load_policy reads its learners from)
        monkeypatch.setitem(LEARNERS, name, dataclasses.replace(row, learner=never))


@pytest.mark.parametrize("field, value, message", [
    ("n_agents", 50_000_000, r"n_agents must be an int in \[1, 64\], got 50000000"),  # 12.8 GB of actors
    ("obs_dim", 10 ** 9, r"obs_dim must be an int in \[1, 100000\], got 1000000000"),
    ("n_actions", 10 ** 7, r"n_actions must be an int in \[1, 10000\], got 10000000"),
    ("hidden", 100_000, r"hidden must be a positive int at most 4,096, got 100000"),  # the config's own bound
    ("n_agents", 0, r"n_agents must be an int in \[1, 64\], got 0"),
    ("n_agents", "2", r"n_agents must be an int in \[1, 64\], got '2'"),
    ("obs_dim", 3.0, r"obs_dim must be an int in \[1, 100000\], got 3\.0"),
    ("n_actions", True, r"n_actions must be an int in \[1, 10000\], got True"),
])
def test_header_sizes_are_bounded_before_anything_is_built(tmp_path, monkeypatch, field, value, message):
    from marl_edu.training.checkpoints import load_policy

    path = _tamper(_small_policy(tmp_path), lambda p: p["config"].update({field: value}))
    _refuse_to_build(monkeypatch)
    with pytest.raises(ValueError, match=r"policy\.pt: (the header's )?" + message):
        load_policy(path)


@pytest.mark.parametrize("sizes, message", [
    ({"n_agents": 3}, r"tensor state\.actors\.2\.mlp\.net\.0\.weight is missing: the header's sizes \(N=3, O=3, A=5, "
                      r"hidden=8\) call for 18 tensors in state\.actors, the file holds 12"),
    ({"n_agents": 1}, r"unexpected tensor state\.actors\.1\.mlp\.net\.0\.weight: the header's sizes \(N=1, O=3, A=5, "
                      r"hidden=8\) call for 6 tensors in state\.actors, the file holds 12"),
    ({"obs_dim": 40}, r"tensor state\.actors\.0\.mlp\.net\.0\.weight has shape \(8, 3\), but the header's sizes "
                      r"\(N=2, O=40, A=5, hidden=8\) call for \(8, 40\)"),
    ({"hidden": 4096}, r"tensor state\.actors\.0\.mlp\.net\.0\.weight has shape \(8, 3\), but the header's sizes "
                       r"\(N=2, O=3, A=5, hidden=4096\) call for \(4096, 3\)"),
])
def test_header_sizes_must_agree_with_the_stored_tensors_before_anything_is_built(tmp_path, monkeypatch, sizes,
                                                                                  message):
    from marl_edu.training.checkpoints import load_policy

    path = _tamper(_small_policy(tmp_path), lambda p: p["config"].update(sizes))
    _refuse_to_build(monkeypatch)
    with pytest.raises(ValueError, match=r"policy\.pt: " + message):
        load_policy(path)


@pytest.mark.parametrize("change, message", [
    (lambda p: p["config"].pop("n_agents"), r"the header has no 'n_agents' \(a policy file's sizes: n_agents, "
                                            r"obs_dim, n_actions\)"),
    (lambda p: p["config"].update(fancy=1, other=2), r"unknown config fields 'fancy', 'other' for MADDPGConfig"),
    (lambda p: p["config"].update(hidden="8"), r"config field 'hidden' must be int \(its default is 64\), got '8'"),
    (lambda p: p["config"].update(gamma=1), None),  # an int where a float is expected is a number all the same
    (lambda p: p["config"].update(tau=2.0), r"tau must be a number in \[0, 1\], got 2\.0"),  # the config's own check
    (lambda p: p.pop("algo"), r"the header has no 'algo' field"),
    (lambda p: p.update(env=5), r"header field 'env' must be a str, got int 5"),
    (lambda p: p.update(config=[1]), r"header field 'config' must be a dict, got list \[1\]"),
    (lambda p: p["config"].update({3: 1}), r"config keys must be str \(field names\), got 3"),
    (lambda p: p.update(state={}), r"state has no 'actors' \(where a maddpg policy file keeps its actors' weights\)"),
    (lambda p: p["state"].update(critics={}), r"unexpected entry 'critics' in state \(a maddpg policy file holds "
                                              r"'actors' only\)"),
    (lambda p: p["state"]["actors"].pop("0.mlp.net.4.bias"), r"tensor state\.actors\.0\.mlp\.net\.4\.bias is "
                                                              r"missing"),
    (lambda p: p["state"]["actors"].update({"0.mlp.net.6.weight": torch.zeros(2)}),
     r"unexpected tensor state\.actors\.0\.mlp\.net\.6\.weight"),
    (lambda p: p["state"]["actors"].update({"1.mlp.net.4.weight": torch.zeros(5, 9)}),
     r"tensor state\.actors\.1\.mlp\.net\.4\.weight has shape \(5, 9\), but the header's sizes \(N=2, O=3, A=5, "
     r"hidden=8\) call for \(5, 8\)"),
    (lambda p: p["state"]["actors"].update({"1.mlp.net.4.weight": 1.5}),
     r"state\.actors\.1\.mlp\.net\.4\.weight is a float, not a tensor"),
])
def test_a_tampered_policy_file_is_a_value_error_naming_the_field(tmp_path, change, message):
    from marl_edu.training.checkpoints import load_policy

    path = _tamper(_small_policy(tmp_path), change)
    if message is None:
        assert load_policy(path).config.gamma == 1.0
        return
    with pytest.raises(ValueError, match=r"policy\.pt: " + message):
        load_policy(path)


def test_a_policy_meets_an_env_of_other_sizes(tmp_path):
    from marl_edu.training.checkpoints import load_policy, save_policy
    from marl_edu.learners.table import check_fits
    from marl_edu.learners.coma import COMA, COMAConfig
    from marl_edu.envs.make import make_env

    switch2 = COMA(2, 2, 5, COMAConfig(hidden=8))  # Switch2-v0: N=2, O=2, A=5
    check_fits(switch2, make_env("Switch2-v0"))  # fits: no error
    with pytest.raises(ValueError, match=r"^the policy does not fit Switch4-v0 \(N differs\): it was built for N=2 "
                                         r"agents, O=2 obs dims, A=5 actions, and Switch4-v0 has N=4, O=2, A=5$"):
        check_fits(switch2, make_env("Switch4-v0"))
    with pytest.raises(ValueError, match=r"Switch2-v2 \(O differs\): .* Switch2-v2 has N=2, O=3, A=5"):
        check_fits(switch2, make_env("Switch2-v2"))
    # a file that says Switch4-v0 but holds a Switch2 policy (written by hand, or by an older marl_edu whose Switch4
    # had other sizes) is refused where it meets its env, not deep inside the first forward pass
    path = save_policy(switch2, "Switch4-v0", tmp_path / "policy.pt")
    with pytest.raises(ValueError, match=r"policy\.pt: the policy does not fit Switch4-v0 \(N differs\)"):
        load_policy(path, env_id="Switch4-v0")
    assert load_policy(path).n_agents == 2  # without an env to meet, the file loads as it is


def test_a_continuous_policy_meets_a_particle_env(tmp_path):
    from marl_edu.learners.table import check_fits
    from marl_edu.learners.continuous import ContinuousMADDPG, ContinuousMADDPGConfig
    from marl_edu.envs.make import make_env

    agent = ContinuousMADDPG(3, 18, 2, ContinuousMADDPGConfig(hidden=8))  # simple_spread_v3: N=3, O=18, forces (2,)
    check_fits(agent, make_env("simple_spread_v3"))
    with pytest.raises(ValueError, match=r"does not fit simple_adversary_v3 \(O differs\)"):
        check_fits(agent, make_env("simple_adversary_v3"))  # N=3, O=10


@pytest.mark.parametrize("algo", [*LEARNERS, "coma-ff"])
def test_every_learner_round_trips_through_its_policy_file(tmp_path, algo):
    """The shapes load_policy expects before building a learner are the ones the learner builds."""
    from marl_edu.training.checkpoints import load_policy, save_policy

    name, recurrent = (algo[:-3], False) if algo.endswith("-ff") else (algo, True)
    config = config_class(name)(hidden=8, **({} if name in CONTINUOUS_ALGORITHMS else {"n_envs": 2}))
    if hasattr(config, "recurrent"):
        config.recurrent = recurrent
    agent = LEARNERS[name].learner(2, 3, 2 if name in CONTINUOUS_ALGORITHMS else 5, config, seed=1)
    loaded = load_policy(save_policy(agent, "any-env", tmp_path / "policy.pt"), algo=name)
    assert type(loaded) is type(agent) and loaded.config == agent.config
    key = LEARNERS[name].policy.attribute  # the policy's networks: actor, actors or q_net
    mine, theirs = getattr(agent, key), getattr(loaded, key)
    assert mine.state_dict().keys() == theirs.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(mine.state_dict().values(), theirs.state_dict().values()))


# -- crafted files: loading costs time and memory bounded by the file's size (issue 32) -------------------------------

def _nest(levels: int, shared: bool = True):
    """A list that holds the previous level twice (``x = [x, x]``): a few hundred bytes pickled, 2^levels paths; or,
    unshared, a chain of one-element lists ``levels`` deep."""
    value = []
    for _ in range(levels):
        value = [value, value] if shared else [value]
    return value


def _raw_checkpoint(path, **fields):
    """A file laid out as save_checkpoint's, written with torch.save directly, so that it may hold what save refuses."""
    payload = {"format": 1, "marl_edu": marl_edu.__version__, "algo": "maddpg", "env": "Switch2-v2",
               "config": {"gamma": 0.95}, "state": {"w": torch.zeros(2)}}
    payload.update(fields)
    torch.save(payload, path)
    return path


def test_a_list_that_holds_itself_60_levels_deep_is_refused_at_once(tmp_path):
    import time

    from marl_edu.training.checkpoints import load_policy

    for where, fields in (("state", {"state": {"w": _nest(60)}}), ("config", {"config": {"gamma": _nest(60)}}),
                          ("env", {"env": _nest(60)})):
        path = _raw_checkpoint(tmp_path / f"{where}.pt", **fields)
        assert path.stat().st_size < 5_000
        start = time.monotonic()
        for load in (load_checkpoint, load_policy):
            with pytest.raises(ValueError, match=r"the file nests containers more than 32 levels deep: not a file "
                                                 r"marl_edu writes$"):
                load(path)
        assert time.monotonic() - start < 1.0


def test_a_header_field_holding_a_deep_shared_list_is_named_in_a_short_line(tmp_path):
    import time

    from marl_edu.training.checkpoints import load_policy

    # 30 levels: within the nesting bound, but repr() would write 2^30 lists (the line below is 60 characters)
    path = _tamper(_small_policy(tmp_path), lambda p: p["config"].update(gamma=_nest(30)))
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"config field 'gamma' must be float \(its default is 0\.95\), got "
                                         r"\[\[\[\.\.\.\], \[\.\.\.\]\], \[\[\.\.\.\], \[\.\.\.\]\]\]$") as caught:
        load_policy(path)
    assert time.monotonic() - start < 1.0 and len(str(caught.value)) < 200
    path = _raw_checkpoint(tmp_path / "env.pt", env=_nest(30))
    with pytest.raises(ValueError, match=r"header field 'env' must be a str, got list \[\[\[\.\.\.\], "):
        load_checkpoint(path)
    path = _raw_checkpoint(tmp_path / "huge.pt", env=2 ** 2_000, algo="x" * 1_000_000)
    with pytest.raises(ValueError, match=r"header field 'env' must be a str, got int <an int of 2001 bits>$"):
        load_checkpoint(path)


def test_a_chain_of_lists_deeper_than_the_stack_allows_is_one_line(tmp_path):
    import sys

    # 600 levels (about as deep as torch.save's pickler writes on Python 3.12, whose C stack has its own limit; 3.11's
    # needs a higher Python limit for it), loaded with the stack cut to 400 frames: a walk that recursed once per
    # level would end in RecursionError, not in the one line
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5_000)
    try:
        path = _raw_checkpoint(tmp_path / "chain.pt", state={"w": _nest(600, shared=False)})
    finally:
        sys.setrecursionlimit(limit)
    sys.setrecursionlimit(400)
    try:
        with pytest.raises(ValueError, match=r"the file nests containers more than 32 levels deep"):
            load_checkpoint(path)
    finally:
        sys.setrecursionlimit(limit)


def test_a_compressed_record_is_refused_before_torch_reads_it(tmp_path, monkeypatch):
    import zipfile

    plain = _raw_checkpoint(tmp_path / "plain.pt", state={"w": torch.zeros(2_000_000)})  # 8 MB of zeros
    deflated = tmp_path / "deflated.pt"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as target:
        for record in source.infolist():
            target.writestr(record.filename, source.read(record.filename))
    assert deflated.stat().st_size < 100_000  # 8 MB inflated from a file 1% of it

    def never(*args, **kwargs):
        raise AssertionError("torch.load was called on a compressed archive")

    monkeypatch.setattr(torch, "load", never)
    with pytest.raises(ValueError, match=r"deflated\.pt is not a checkpoint torch\.save wrote: its record "
                                         r"'plain/[\w/.]+' is compressed \(\d[\d,]* bytes in \d[\d,]*\); torch\.save "
                                         r"stores every record as it is"):
        load_checkpoint(deflated)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.bool, torch.complex64, torch.float64])
def test_policy_weights_of_another_dtype_are_refused(tmp_path, monkeypatch, dtype):
    from marl_edu.training.checkpoints import load_policy

    name = "0.mlp.net.0.weight"
    path = _tamper(_small_policy(tmp_path), lambda p: p["state"]["actors"].update(
        {name: p["state"]["actors"][name].to(dtype)}))
    _refuse_to_build(monkeypatch)
    with pytest.raises(ValueError, match=rf"policy\.pt: tensor state\.actors\.0\.mlp\.net\.0\.weight is "
                                         rf"{str(dtype).removeprefix('torch.')}, not float32"):
        load_policy(path)


def test_sizes_each_in_bounds_that_ask_for_gigabytes_together_are_refused_before_building(tmp_path, monkeypatch):
    from marl_edu.training.checkpoints import MAX_CRITIC_WEIGHTS, load_policy

    # MADDPG with N=64, O=200, A=5, hidden 256: 64 critics x N*(O+A) = 64 x 205 = 13,120 inputs x 256 units
    # = 64 x 13,120 x 256 = 214,958,080 weights in the critics' first layers (1.95 GB with the rest, measured)
    path = _tamper(_small_policy(tmp_path), lambda p: p["config"].update(n_agents=64, obs_dim=200, hidden=256))
    _refuse_to_build(monkeypatch)
    assert 64 * 64 * 205 * 256 == 214_958_080 > MAX_CRITIC_WEIGHTS
    with pytest.raises(ValueError, match=r"policy\.pt: the header's sizes \(N=64, O=200, A=5, hidden=256\) ask for "
                                         r"214,958,080 weights in the critics' first layers alone, more than "
                                         r"20,000,000: 64 critics of N\*\(O\+A\) = 13,120 inputs$"):
        load_policy(path)


def test_every_committed_policy_is_within_the_size_bounds():
    import dataclasses
    import pathlib

    from marl_edu.training.checkpoints import MAX_CRITIC_WEIGHTS, MAX_LEARNER_WEIGHTS, learner_weights

    largest = whole = 0
    for path in pathlib.Path(__file__).resolve().parent.parent.glob("results/**/policy.pt"):
        payload = load_checkpoint(path)
        config = payload["config"]
        n, o, a = config["n_agents"], config["obs_dim"], config["n_actions"]
        largest = max(largest, n * config.get("n_subpolicies", 1) * n * (o + a) * config["hidden"])
        kind = config_class(payload["algo"])
        fields = {field.name: config[field.name] for field in dataclasses.fields(kind) if field.name in config}
        whole = max(whole, learner_weights(payload["algo"], n, o, a, kind(**fields)))
    assert 0 < largest * 100 < MAX_CRITIC_WEIGHTS  # the bound is over 100 times the course's largest
    assert 0 < whole * 100 < MAX_LEARNER_WEIGHTS  # and the whole learner's too


def test_a_policy_that_does_not_fit_the_env_it_will_play_is_refused_before_building(tmp_path, monkeypatch):
    from marl_edu.training.checkpoints import load_policy

    path = _small_policy(tmp_path)  # N=2, O=3, A=5: Switch2-v2's sizes
    _refuse_to_build(monkeypatch)
    with pytest.raises(ValueError, match=r"policy\.pt: the policy does not fit Switch4-v0 \(N and O differ\)"):
        load_policy(path, plays_on="Switch4-v0")


# -- round three (issue 47): the whole learner counted, file values cut short, meta and sparse tensors named ---------

def _tiny_learner(name: str, seed: int = 1):
    """Learner ``name`` of the table at N=2, O=3, A=5 (2 action dims for a continuous one), hidden 8."""
    config = config_class(name)(hidden=8)
    return LEARNERS[name].learner(2, 3, 2 if name in CONTINUOUS_ALGORITHMS else 5, config, seed=seed)


def _weights_of(agent) -> int:
    """Every parameter and buffer of every network the learner holds (its attributes), each counted once."""
    tensors = {id(t): t.numel() for value in vars(agent).values()
               for item in (value if isinstance(value, (list, tuple)) else [value])
               if isinstance(item, torch.nn.Module) for t in [*item.parameters(), *item.buffers()]}
    return sum(tensors.values())


@pytest.mark.parametrize("name", LEARNERS)
def test_every_network_a_learner_builds_is_counted_before_it_is_built(name):
    from marl_edu.training.checkpoints import learner_weights

    agent = _tiny_learner(name)
    before = torch.get_rng_state()
    counted = learner_weights(name, agent.n_agents, agent.obs_dim, agent.n_actions, agent.config)
    assert counted == _weights_of(agent) > 0  # critics, mixers, hypernetworks and target copies: all of them
    assert torch.equal(torch.get_rng_state(), before)  # (a learner seeds the global generator; counting does not)


def test_the_count_of_qmix_by_hand():
    from marl_edu.learners.value_decomposition import ValueDecompositionConfig
    from marl_edu.training.checkpoints import learner_weights

    # QMIX, N=2, O=2 (state S = N*O = 4), E = mixer_embed = 4096, H = hyper_hidden = 4096, per copy (net and target):
    # hyper_w1 S->H->N*E: 4*4096 + 4096 + 4096*8192 + 8192 = 33,583,104; hyper_b1 S->E: 4*4096 + 4096 = 20,480;
    # hyper_w2 S->H->E: 4*4096 + 4096 + 4096*4096 + 4096 = 16,801,792; hyper_b2 S->E->1: 20,480 + 4096 + 1 = 24,577
    mixer = 33_583_104 + 20_480 + 16_801_792 + 24_577
    small = ValueDecompositionConfig()
    big = ValueDecompositionConfig(mixer_embed=4096, hyper_hidden=4096)
    default_mixer = learner_weights("qmix", 2, 2, 5, small) - learner_weights("iql", 2, 2, 5, small)
    assert learner_weights("qmix", 2, 2, 5, big) == learner_weights("qmix", 2, 2, 5, small) - default_mixer + 2 * mixer
    assert 2 * mixer == 100_859_906


def _refuse_to_build_for_real(monkeypatch):
    """Make building any learner with memory fail the test; building it on the meta device (to count it) is allowed."""
    import dataclasses

    for name, row in LEARNERS.items():
        def on_meta_only(*args, _learner=row.learner, **kwargs):
            if str(kwargs.get("device")) != "meta":
                raise AssertionError("load_policy built a learner before counting its weights")
            return _learner(*args, **kwargs)

        monkeypatch.setitem(LEARNERS, name, dataclasses.replace(row, learner=on_meta_only))


def test_a_small_qmix_file_asking_for_a_huge_mixer_is_refused_before_building(tmp_path, monkeypatch):
    from marl_edu.learners.table import DEFAULT_ENV
    from marl_edu.training.checkpoints import learner_weights, load_policy, save_policy

    # once: exit 0 and 2,245 MB at the peak against 1,087 MB, the mixer's hypernetworks and their target uncounted
    path = save_policy(LEARNERS["qmix"].learner(2, 2, 5, None), DEFAULT_ENV["discrete"], tmp_path / "policy.pt")
    _tamper(path, lambda p: p["config"].update(mixer_embed=4096, hyper_hidden=4096))
    _refuse_to_build_for_real(monkeypatch)
    with pytest.raises(ValueError, match=r"policy\.pt: the header's sizes \(N=2, O=2, A=5, hidden=64, "
                                         r"mixer_embed=4096, hyper_hidden=4096\) ask for [\d,]+ weights in the qmix learner's networks "
                                         r"\(critics, mixers and target copies included\), more than 50,000,000$"):
        load_policy(path)


@pytest.mark.parametrize("name", LEARNERS)
def test_every_learner_is_bounded_by_its_whole_networks_before_building(tmp_path, monkeypatch, name):
    from marl_edu.training import checkpoints

    agent = _tiny_learner(name)
    path = checkpoints.save_policy(agent, "any-env", tmp_path / "policy.pt")
    whole = _weights_of(agent)
    monkeypatch.setattr(checkpoints, "MAX_LEARNER_WEIGHTS", whole - 1)  # one weight fewer than the learner builds
    _refuse_to_build_for_real(monkeypatch)
    with pytest.raises(ValueError, match=rf"ask for {whole:,} weights in the {name} learner's networks"):
        checkpoints.load_policy(path)


@pytest.mark.parametrize("field", ["env", "algo", "marl_edu"])
def test_a_huge_header_name_is_refused_in_a_short_line(tmp_path, field):
    path = _tamper(_small_policy(tmp_path), lambda p: p.update({field: "x" * 5_000_000}))
    with pytest.raises(ValueError) as caught:  # once: a one-line error 50,000,572 bytes long for a 50 MB env
        load_checkpoint(path)
    message = str(caught.value)
    assert f"header field '{field}' is a string of 5,000,000 characters" in message and len(message) < 400


def test_a_huge_config_string_is_refused_in_a_short_line(tmp_path):
    from marl_edu.training.checkpoints import load_policy

    path = _tamper(_small_policy(tmp_path), lambda p: p["config"].update(actor_gradient="y" * 1_000_000))
    with pytest.raises(ValueError) as caught:  # (the config's own check would print it whole)
        load_policy(path)
    message = str(caught.value)
    assert "config field 'actor_gradient' is a string of 1,000,000 characters" in message and len(message) < 400


@pytest.mark.parametrize("kind, said", [("meta", "a meta tensor"), ("sparse", "a sparse_coo tensor")])
def test_a_meta_or_sparse_tensor_is_named(tmp_path, kind, said):
    from marl_edu.training.checkpoints import load_policy

    name = "state.actors.0.mlp.net.0.weight"
    change = {"meta": lambda w: w.to("meta"), "sparse": lambda w: w.to_sparse()}[kind]
    path = _tamper(_small_policy(tmp_path), lambda p: p["state"]["actors"].update(
        {"0.mlp.net.0.weight": change(p["state"]["actors"]["0.mlp.net.0.weight"])}))
    with pytest.raises(ValueError, match=rf"tensor {re.escape(name)} is {said}"):  # once: no name, a torch error
        load_policy(path)
