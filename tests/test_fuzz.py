"""A tally of bad inputs (issue 19): seeded random bad arguments for the command line, the configs and the public
functions, each of which must get a clear ValueError (or, on the command line, one line on stderr and exit status 2)
and never a deep traceback, a hang or a silent acceptance.

The cases are drawn from fixed seeds, so CI tries the same ones every time; ``python tests/test_fuzz.py`` prints how
many there are per family. Every case is its own test: a failure names the exact input.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from marl_edu.checkpoints import ALGORITHMS, ON_POLICY, config_class
from marl_edu.cli import main

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
    "--algo": ["qmix", "", "COMA", "maddpg "],
    "--env": ["Switch9-v0", "", "switch2-v0", "Switch2", "CartPole-v1"],
}
ON_POLICY_BAD = {"--lam": ["nan", "1.5", "-0.2", "x"], "--entropy": ["nan", "inf", "-1", "1e308", "101"]}
OFF_POLICY_BAD = {"--batch-size": ["0", "-1", HUGE, "65537"], "--warmup": ["-1", HUGE, "x"],
                  "--actor-gradient": ["gumbell", ""]}
WRONG_FAMILY = {"on": ["--batch-size 16", "--warmup 10", "--actor-gradient gumbel"],
                "off": ["--lam 0.5", "--entropy 0.1", "--feed-forward", "--per-agent-reward"]}


def cli_cases(n: int = 150, seed: int = 0) -> list[list[str]]:
    """``n`` argument lists: a valid tiny run of a random learner with one to three options set to a bad value (or an
    option of the other family of learners)."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        algo = str(rng.choice(list(ALGORITHMS)))
        options = {**BAD_OPTIONS, **(ON_POLICY_BAD if algo in ON_POLICY else OFF_POLICY_BAD)}
        argv = ["--algo", algo, "--episodes", "8", "--n-envs", "4", "--hidden", "8", "--no-progress"]
        for _ in range(rng.integers(1, 4)):
            if rng.random() < 0.15:
                argv += str(rng.choice(WRONG_FAMILY["on" if algo in ON_POLICY else "off"])).split()
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
    assert err.count("\n") == 1 and err.startswith("python -m marl_edu.train: error: "), err
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


if __name__ == "__main__":  # the tally: how many bad inputs each family tries
    print(f"command lines: {len(cli_cases())}, config values: {len(config_cases())}")
