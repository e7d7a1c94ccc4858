"""A tally of bad inputs (issue 19): seeded random bad arguments for the command line, the configs, the public
functions and policy files. The command line must stop in one line with exit status 2, the configs with a ValueError
naming the field; a public function must raise a ValueError or take the argument (a shape that happens to fit is a
valid call), never another exception, and non-finite data where the course's equations take it is always refused; a
damaged policy file is a ValueError or a finite policy that plays.

The cases are drawn from fixed seeds, so CI tries the same ones every time; ``python tests/test_fuzz.py`` prints how
many there are per family. Every case is its own test: a failure names the exact input.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from marl_edu.base.shapes import check_shape, one_hot
from marl_edu.course.cli import main
from marl_edu.data.buffers import ReplayBuffer
from marl_edu.learners.coma import build_critic_input, coma_advantage, counterfactual_baseline
from marl_edu.learners.maddpg import flatten_for_critic, gumbel_softmax, own_critic_input
from marl_edu.learners.table import ALGORITHMS, LEARNERS, config_class
from marl_edu.pieces.targets import critic_rewards, td_lambda_targets, td_target

# -- the command line: one valid base, one to three bad options ------------------------------------------------------

HUGE = str(10**30)
BAD_OPTIONS = {  # values each option must refuse (whatever the learner), with the learners they apply to
    "--episodes": ["-1", "0", "nan", "ten", "", "1.5", HUGE, "10000001"],
    "--n-envs": ["-3", "0", "1.5", "x", HUGE, "4097"],
    "--hidden": ["-1", "0", "200000", HUGE, "sixty-four"],
    "--threads": ["0", "-2", "257", HUGE, "one"],
    "--seeds": ["-1", str(2**64), "x", "1.5"],
    "--eval-every": ["0", "-5", "9", "nan"],  # the base trains 8 episodes
    "--gamma": ["nan", "inf", "-inf", "1.5", "-0.1", "1e308", "x", ""],
    "--actor-lr": ["nan", "inf", "0", "-1e-3", "1e308", "2", "x"],
    "--critic-lr": ["nan", "inf", "0", "-1e-3", "1e308", "1.01", "x"],
    "--device": ["meta", "xpu", "gpu", "cuda:99", "", "cpu:x"],
    "--checkpoint-every": ["0", "-1", "nan", "x"],
    "--algo": ["mappo", "", "COMA", "maddpg "],
    "--env": ["Switch9-v0", "", "switch2-v0", "Switch2", "CartPole-v1"],
}
ON_POLICY_BAD = {"--lam": ["nan", "1.5", "-0.2", "x"], "--entropy": ["nan", "inf", "-1", "1e308", "101"]}
OFF_POLICY_BAD = {"--batch-size": ["0", "-1", HUGE, "65537"], "--warmup": ["-1", HUGE, "x"],
                  "--actor-gradient": ["gumbell", ""]}
EPISODE_REPLAY_BAD = {"--lam": ["nan", "1.5", "-0.2"], "--lr": ["nan", "0", "-1e-3", "1.01", "x"],
                      "--batch-episodes": ["0", "-1", HUGE], "--epsilon-end": ["nan", "1.5", "-0.1"]}
WRONG_FAMILY = {"on_policy": ["--batch-size 16", "--warmup 10", "--actor-gradient gumbel", "--lr 1e-3"],
                "off_policy": ["--lam 0.5", "--entropy 0.1", "--feed-forward", "--per-agent-reward", "--single-q"],
                "episode_replay": ["--batch-size 16", "--entropy 0.1", "--per-agent-reward", "--actor-lr 1e-3"]}
BAD_FOR_FAMILY = {"on_policy": ON_POLICY_BAD, "off_policy": OFF_POLICY_BAD, "episode_replay": EPISODE_REPLAY_BAD}


def cli_cases(n: int = 150, seed: int = 0) -> list[list[str]]:
    """``n`` argument lists: a valid tiny run of a random learner with one to three options set to a bad value (or an
    option of the other family of learners)."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        algo = str(rng.choice(list(ALGORITHMS)))
        family = LEARNERS[algo].loop
        options = {**BAD_OPTIONS, **BAD_FOR_FAMILY[family]}
        argv = ["--algo", algo, "--episodes", "8", "--n-envs", "4", "--hidden", "8", "--no-progress"]
        for _ in range(rng.integers(1, 4)):
            if rng.random() < 0.15:
                argv += str(rng.choice(WRONG_FAMILY[family])).split()
            else:
                name = str(rng.choice(list(options)))
                argv += [name, str(rng.choice(options[name]))]
        cases.append(argv)
    return cases


@pytest.mark.parametrize("argv", cli_cases(), ids=lambda argv: " ".join(argv[1:2] + argv[9:]))
def test_bad_command_lines_stop_in_one_line_before_training(argv, tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith("python -m marl_edu: error: "), err
    assert not out.exists()


# -- the configs: every field of every learner's config, with values of the wrong kind or out of range ---------------

BAD_NUMBERS = [math.nan, math.inf, -math.inf, -1, -1.0, None, "1", True, [1]]


def config_cases() -> list[tuple[str, str, object]]:
    """``(algo, field, bad value)`` for every field of every learner's config."""
    cases = []
    for algo in ("coma", "maddpg", "maddpg_continuous", "maddpg_inferred", "maddpg_ensemble"):
        for field in dataclasses.fields(config_class(algo)):
            default = getattr(config_class(algo)(), field.name)
            if isinstance(default, bool):
                values = [1, 0, "yes", None, 1.0, np.float64(1.0)]
            elif isinstance(default, int):
                values = [*BAD_NUMBERS, 2.5, np.float64(3.0), 10**30] if field.name != "warmup_steps" else [
                    -1, 2.5, None, "1", True, 10**30]
            else:
                values = [*BAD_NUMBERS, 10**30]
            cases += [(algo, field.name, value) for value in values]
    return cases


@pytest.mark.parametrize("algo, field, value", config_cases(), ids=lambda x: repr(x)[:40])
def test_a_config_refuses_a_bad_value_naming_the_field(algo, field, value):
    with pytest.raises(ValueError, match=field):
        config_class(algo)(**{field: value}).validate()


# -- the public functions: each argument of a valid call replaced by a broken one ------------------------------------

def _float(*shape):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0))


def _one_hot(B, N, A=5):
    return torch.nn.functional.one_hot(torch.arange(B * N).reshape(B, N) % A, A).float()  # (B, N, A)


VALID_CALLS = {  # a valid call of each public function that takes arrays: (function, arguments)
    "td_target": (td_target, lambda: [_float(4), torch.zeros(4), _float(4), 0.9]),
    "td_lambda_targets": (td_lambda_targets,
                          lambda: [_float(2, 2, 5), torch.zeros(2, 2, 5), _float(2, 2, 5), 0.9, 0.8]),
    "critic_rewards": (critic_rewards, lambda: [_float(4, 2), True]),
    "coma_advantage": (coma_advantage, lambda: [_float(3, 2, 5), torch.full((3, 2, 5), 0.2),
                                                torch.arange(6).reshape(3, 2) % 5]),
    "counterfactual_baseline": (counterfactual_baseline, lambda: [_float(3, 2, 5), torch.full((3, 2, 5), 0.2)]),
    "build_critic_input": (build_critic_input, lambda: [_float(3, 4), _float(3, 2, 2), _one_hot(3, 2)]),
    "flatten_for_critic": (flatten_for_critic, lambda: [_float(3, 2, 2), _one_hot(3, 2)]),
    "own_critic_input": (own_critic_input, lambda: [1, _float(3, 2, 2), _one_hot(3, 2)]),
    "gumbel_softmax": (gumbel_softmax, lambda: [_float(3, 5), 1.0]),
    "one_hot": (one_hot, lambda: [np.array([0, 1, 4]), 5]),
    "check_shape": (check_shape, lambda: [_float(3, 2), ("B", "N"), "x"]),
    "ReplayBuffer.add": (lambda *args: ReplayBuffer(10, 2, 2, 5).add(*args),
                         lambda: [np.zeros((2, 2), np.float32), np.eye(5, dtype=np.float32)[[0, 1]],
                                  np.zeros(2, np.float32), np.zeros((2, 2), np.float32), np.zeros(2)]),
}
MUST_REFUSE = {  # (function, argument, mutation) that must be a ValueError: non-finite data where it is refused
    (name, k, kind) for name, ks in [("td_target", (0, 1, 2)), ("td_lambda_targets", (0, 1, 2)),
                                     ("coma_advantage", (0, 1)), ("counterfactual_baseline", (0, 1)),
                                     ("build_critic_input", (0, 1, 2)), ("ReplayBuffer.add", (0, 1, 2, 3))]
    for k in ks for kind in ("nan", "inf")}


def _broken(value) -> list[tuple[str, object]]:
    """Ways to break one argument: other shapes, dtypes, NaN and infinity, plain lists, other types."""
    out = [("string", "x"), ("None", None)]
    if isinstance(value, (torch.Tensor, np.ndarray)):
        clone = (lambda: value.clone()) if isinstance(value, torch.Tensor) else (lambda: value.copy())
        out += [("extra axis", value[None]), ("list", value.tolist())]
        out += [("drop axis", value[0])] if value.ndim else []
        if value.dtype in (torch.float32, np.float32, np.float64):
            for kind, bad in (("nan", math.nan), ("inf", math.inf)):
                broken = clone()
                broken.reshape(-1)[-1] = bad
                out.append((kind, broken))
    elif isinstance(value, float):
        out += [("nan", math.nan), ("negative", -1.5), ("huge", 1e30), ("text", "0.9")]
    return out


def function_cases() -> list[tuple[str, int, str]]:
    return [(name, k, kind) for name, (_, make) in VALID_CALLS.items() for k, value in enumerate(make())
            for kind, _ in _broken(value)]


@pytest.mark.parametrize("name, k, kind", function_cases(), ids=str)
def test_a_public_function_refuses_a_broken_argument_with_a_value_error_or_takes_it(name, k, kind):
    function, make = VALID_CALLS[name]
    args = make()
    args[k] = dict(_broken(args[k]))[kind]
    try:
        function(*args)
    except ValueError:
        return
    assert (name, k, kind) not in MUST_REFUSE, "accepted non-finite data"  # else a shape that happens to fit


# -- policy files: damaged bytes and hand-edited headers --------------------------------------------------------------

def damaged_files(n: int = 60, seed: int = 1):
    """``n`` ways to damage a small policy file: truncations, flipped bytes, and headers with a field removed or
    replaced by a value of another type."""
    rng = np.random.default_rng(seed)
    cases = []
    for k in range(n):
        kind = ("truncate", "flip", "header")[k % 3]
        cases.append((kind, int(rng.integers(0, 1 << 30)), str(rng.choice(["None", "str", "huge", "negative",
                                                                            "list", "drop"]))))
    return cases


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    from marl_edu.training.checkpoints import save_policy
    from marl_edu.learners.coma import COMA, COMAConfig

    return save_policy(COMA(2, 2, 5, COMAConfig(hidden=8), seed=0), "Switch2-v0",
                       tmp_path_factory.mktemp("policy") / "policy.pt")


@pytest.mark.parametrize("kind, draw, value", damaged_files(), ids=str)
def test_a_damaged_policy_file_is_a_value_error_or_a_working_policy(kind, draw, value, policy_file, tmp_path):
    import torch as torch_

    from marl_edu.training.checkpoints import load_policy
    from marl_edu.training.evaluation import greedy_return

    data = policy_file.read_bytes()
    rng = np.random.default_rng(draw)
    path = tmp_path / "policy.pt"
    if kind == "truncate":
        path.write_bytes(data[:int(rng.integers(0, len(data)))])
    elif kind == "flip":
        damaged = bytearray(data)
        for at in rng.integers(0, len(data), size=int(rng.integers(1, 8))):
            damaged[at] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(damaged))
    else:
        payload = torch_.load(policy_file, weights_only=True)
        field = str(rng.choice(sorted(payload["config"])))
        if value == "drop":
            del payload["config"][field]
        else:
            payload["config"][field] = {"None": None, "str": "7", "huge": 10**12, "negative": -3,
                                        "list": [1, 2]}[value]
        torch_.save(payload, path)
    try:
        agent = load_policy(path)
    except ValueError:
        return
    # it loaded (a flipped byte inside a weight can leave a valid file): then it is a finite policy that plays
    assert all(torch_.isfinite(weights).all() for weights in agent.actor.parameters())
    assert len(greedy_return(agent, "Switch2-v0").actions) >= 1


def crafted_files(n: int = 60, seed: int = 2):
    """``n`` policy files crafted to cost time or memory on loading (issue 32): a list that holds itself twice, 1 to
    80 levels deep, in a header field, a config field or in place of a weight; a record of the archive deflated; a
    weight of another dtype; sizes each within its bound drawn log-uniformly (together they may ask for gigabytes)."""
    rng = np.random.default_rng(seed)
    return [(("nest", "deflate", "dtype", "sizes")[k % 4], int(rng.integers(0, 1 << 30))) for k in range(n)]


@pytest.mark.parametrize("kind, draw", crafted_files(), ids=str)
def test_a_crafted_policy_file_is_refused_in_a_second_or_plays(kind, draw, policy_file, tmp_path):
    import time
    import zipfile

    import torch as torch_

    from marl_edu.training.checkpoints import SIZE_BOUNDS, load_policy

    rng = np.random.default_rng(draw)
    payload = torch_.load(policy_file, weights_only=True)
    path = tmp_path / "policy.pt"
    if kind == "nest":
        nest = []
        for _ in range(int(rng.integers(1, 81))):
            nest = [nest, nest]
        where = str(rng.choice(["env", "algo", "config", "state"]))
        if where in ("env", "algo"):
            payload[where] = nest
        else:
            inner = payload["config"] if where == "config" else payload["state"]["actor"]
            inner[str(rng.choice(sorted(inner)))] = nest
    elif kind == "dtype":
        name = str(rng.choice(sorted(payload["state"]["actor"])))
        dtype = [torch_.uint8, torch_.int64, torch_.bool, torch_.complex64, torch_.float16][int(rng.integers(0, 5))]
        payload["state"]["actor"][name] = payload["state"]["actor"][name].to(dtype)
    elif kind == "sizes":
        for field, high in (("n_agents", SIZE_BOUNDS["n_agents"]), ("obs_dim", 2_000), ("hidden", 1_024)):
            payload["config"][field] = int(np.exp(rng.uniform(0, np.log(high))))
    torch_.save(payload, path)
    if kind == "deflate":
        deflated = tmp_path / "deflated.pt"
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(deflated, "w") as target:
            records = source.infolist()
            squeeze = records[int(rng.integers(0, len(records)))].filename
            for record in records:
                method = zipfile.ZIP_DEFLATED if record.filename == squeeze else zipfile.ZIP_STORED
                target.writestr(record.filename, source.read(record.filename), compress_type=method)
        path = deflated
    start = time.monotonic()
    try:
        agent = load_policy(path)
    except ValueError as error:
        assert "\n" not in str(error) and len(str(error)) < 600, str(error)
        assert time.monotonic() - start < 2.0
        return
    assert kind == "sizes", f"a {kind} file loaded"  # (sizes drawn equal to the file's own load: a working policy)
    assert all(torch_.isfinite(weights).all() for weights in agent.actor.parameters())


def boundary_cases():
    """The library boundaries issue 32 found open, each a call that must be a ValueError naming the argument: sizes
    that would allocate terabytes or an A x A identity, empty axes, non-finite or out-of-range values that used to be
    taken silently, wrong kinds of argument. ``(name, call, message)``."""
    from marl_edu.data.buffers import EpisodeReplay
    from marl_edu.training.checkpoints import load_policy
    from marl_edu.envs.make import make_vec_env
    from marl_edu.learners.table import check_fits
    from marl_edu.learners.maddpg import MADDPG
    from marl_edu.base.schedules import linear
    from marl_edu.training.evaluation import sampled_returns

    zeros, nan = torch.zeros, float("nan")
    batch = lambda **change: {**_episode_batch(), **change}  # noqa: E731
    return [
        ("ReplayBuffer(10**12)", lambda: ReplayBuffer(10**12, 2, 3, 4), "capacity must be a positive int at most"),
        ("ReplayBuffer(10**7) of 64 agents", lambda: ReplayBuffer(10**7, 64, 2000, 4), "would take 9,551.0 GiB"),
        ("EpisodeReplay(10**6)", lambda: EpisodeReplay(10**6, 1000, 2, 30, 5), "would take 261.0 GiB"),
        ("ReplayBuffer.add of text", lambda: ReplayBuffer(4, 1, 1, 1).add(np.array([["a"]]), np.zeros((1, 1)),
                                                                           np.zeros(1), np.zeros((1, 1)),
                                                                           np.zeros(1)), "obs"),
        ("make_vec_env(10**9)", lambda: make_vec_env("Switch2-v0", 10**9), "n_envs must be a positive int at most"),
        ("make_vec_env(10**9), ma-gym", lambda: make_vec_env("Switch2-v0", 10**9, backend="ma-gym"), "n_envs must"),
        ("td_lambda_targets with T = 0", lambda: td_lambda_targets(zeros(2, 0), zeros(2, 0), zeros(2, 0), 0.9, 0.5),
         r"expected at least one step, T >= 1, got shape \(2, 0\)"),
        ("td_lambda_targets dones 0.5", lambda: td_lambda_targets(zeros(2, 3), torch.full((2, 3), 0.5), zeros(2, 3),
                                                                 0.9, 0.5), "dones must be 0 or 1 in every entry"),
        ("td_target dones 7", lambda: td_target(zeros(4), torch.full((4,), 7.0), zeros(4), 0.9), "dones must be 0 or 1"),
        ("td_target dones -1", lambda: td_target(zeros(4), torch.full((4,), -1.0), zeros(4), 0.9), "dones must be 0"),
        ("critic_rewards NaN", lambda: critic_rewards(np.full((2, 2), nan, np.float32), True), "rewards must be finite"),
        ("gumbel_softmax A = 0", lambda: gumbel_softmax(zeros(3, 0)), "expected at least one action, A >= 1"),
        ("gumbel_softmax NaN logits", lambda: gumbel_softmax(torch.full((3, 2), nan)), "logits must be finite"),
        ("gumbel_softmax -inf row", lambda: gumbel_softmax(torch.tensor([[0.0, 1.0], [-math.inf, -math.inf]])),
         "logits must be finite"),
        ("gumbel_softmax temperature 1e-40", lambda: gumbel_softmax(zeros(3, 2), 1e-40),
         "temperature must be at least 0.001"),
        ("build_critic_input with action 2.0", lambda: build_critic_input(zeros(2, 3), zeros(2, 2, 3),
                                                                           torch.full((2, 2, 4), 2.0)),
         "actions_onehot must be 0 or 1"),
        ("build_critic_input two 1s per agent", lambda: build_critic_input(zeros(2, 3), zeros(2, 2, 3),
                                                                            torch.ones(2, 2, 4)),
         "expected one 1 per agent"),
        ("linear(nan, ...)", lambda: linear(nan, 0.0, 1, 2), "start must be a finite number, got nan"),
        ("linear(..., inf, ...)", lambda: linear(1.0, math.inf, 1, 2), "end must be a finite number, got inf"),
        ("load_policy(None)", lambda: load_policy(None), "path must be a policy file's path"),
        ("check_fits with an int", lambda: check_fits(MADDPG(2, 3, 5), 5), r"check_fits\(agent, env\) takes"),
        ("check_fits with an env id that differs", lambda: check_fits(MADDPG(2, 3, 5), "Switch2-v0"),
         r"the policy does not fit Switch2-v0 \(O differs\)"),
        ("sampled_returns(n_episodes=0)", lambda: sampled_returns(MADDPG(2, 3, 5), "Switch2-v2", n_episodes=0),
         "n_episodes must be a positive int, got 0"),
        ("one_hot of 10**6 actions, numpy", lambda: _one_hot_is_small(), "not raised: see _one_hot_is_small"),
        ("ensemble act with sub-policy 7", lambda: _ensemble_act(7), r"subpolicies must be in \[0, 2\]"),
        ("ensemble act with sub-policy -1", lambda: _ensemble_act(-1), r"subpolicies must be in \[0, 2\]"),
        ("episode batch with an agent on a padded step", lambda: _check(batch(agent_mask=torch.ones(1, 3, 2))),
         "batch\\['agent_mask'\\]: 1 on a padded step"),
    ]


def _one_hot_is_small():
    """one_hot of one action among 10**6 (numpy) is a (1, 10**6) row, not an index into a 10**6 x 10**6 identity
    (4 TB): it returns at once, and the case's ValueError is raised here only once it did."""
    row = one_hot(np.array([3]), 10**6)
    assert row.shape == (1, 10**6) and row.sum() == 1.0 and row[0, 3] == 1.0
    raise ValueError("not raised: see _one_hot_is_small")


def _ensemble_act(m: int):
    from marl_edu.learners.ensembles import EnsembleMADDPG

    agent = EnsembleMADDPG(3, 18, 2)  # simple_spread_v3's sizes, M = 3 sub-policies
    return agent.act(np.zeros((1, 3, 18), np.float32), 0.0, np.full((1, 3), m))


def _episode_batch() -> dict:
    """One replayed episode of 2 steps of 2 agents, padded to T = 3 (step 3 is padding)."""
    return {"obs": torch.zeros(1, 4, 2, 3), "actions": torch.zeros(1, 4, 2, dtype=torch.int64),
            "rewards": torch.zeros(1, 3, 2), "dones": torch.tensor([[0.0, 1.0, 1.0]]),
            "step_mask": torch.tensor([[1.0, 1.0, 0.0]]), "agent_mask": torch.tensor([[[1.0, 1.0]] * 2 + [[0.0, 0.0]]])}


def _check(batch):
    from marl_edu.data.rollout import check_episode_batch

    return check_episode_batch(batch, 2, 3, 5, behaviour=False)


def test_the_episode_batch_of_the_boundary_cases_is_valid_before_it_is_broken():
    assert _check(_episode_batch())["T"] == 3


@pytest.mark.parametrize("name, call, message", boundary_cases(), ids=[case[0] for case in boundary_cases()])
def test_a_bad_call_at_a_library_boundary_is_a_value_error_naming_the_argument(name, call, message):
    with pytest.raises(ValueError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


if __name__ == "__main__":  # the tally: how many bad inputs each family tries
    print(f"command lines: {len(cli_cases())}, config values: {len(config_cases())}, function arguments: "
          f"{len(function_cases())}, damaged policy files: {len(damaged_files())}, crafted policy files: "
          f"{len(crafted_files())}, library boundaries: {len(boundary_cases())}")
