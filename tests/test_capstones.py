"""What both capstones share (marl_edu.capstones), and the ``update=`` hook through which they train with the
library's own loops (train.train_maddpg, train.train_coma) instead of a copy of them.

(Each capstone's own checks, and its train_yours against the library's run, are in tests/test_capstone_maddpg.py and
tests/test_capstone_coma.py.)
"""

import matplotlib
import pytest
import torch

from marl_edu import capstone_coma, capstone_maddpg, capstones
from marl_edu.coma import COMAConfig
from marl_edu.maddpg import MADDPGConfig
from marl_edu.train import TrainResult, train_coma, train_maddpg

matplotlib.use("Agg")

CAPSTONES = [capstone_maddpg, capstone_coma]


# -- one API ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("module", CAPSTONES, ids=lambda m: m.__name__)
def test_both_capstones_offer_the_same_api(module):
    import inspect

    assert list(module.REFERENCE) == list(module.PARTS) == list(module.CHECKERS) and len(module.PARTS) == 5
    assert all(callable(getattr(module, f"check_{name}")) for name in module.PARTS)
    for name in ("assemble", "whose", "train_yours", "reference_run", "random_return", "plot_against_reference"):
        assert callable(getattr(module, name)), name
    assert list(inspect.signature(module.train_yours).parameters) == ["parts", "env_id", "episodes", "seed",
                                                                       "eval_every", "stop_at", "progress"]
    assert list(inspect.signature(module.plot_against_reference).parameters) == ["result", "optimal", "random",
                                                                                  "env_id", "ax", "label"]
    assert inspect.signature(module.train_yours).return_annotation == "TrainResult"


@pytest.mark.parametrize("module", CAPSTONES, ids=lambda m: m.__name__)
def test_train_yours_refuses_what_is_not_assembles_dict(module):
    with pytest.raises(ValueError, match="assemble"):
        module.train_yours([module.REFERENCE[name] for name in module.PARTS])
    with pytest.raises(ValueError, match="missing"):
        module.train_yours({module.PARTS[0]: module.REFERENCE[module.PARTS[0]]})
    with pytest.raises(ValueError, match="not functions"):
        module.train_yours({**module.REFERENCE, module.PARTS[1]: "mine"})


def test_assemble_prints_one_table_and_refuses_unknown_parts(capsys):
    def passes(fn):
        print("PASSED: fine")

    def fails(fn):
        print("FAILED on a case: wrong\nHint: look")

    def raises(fn):
        raise RuntimeError("a checker's own bug")

    checkers = {"first": passes, "second": fails, "third": raises, "fourth": passes}
    reference = {name: (lambda name=name: name) for name in checkers}
    mine = {"first": lambda: "mine", "second": lambda: "mine", "third": lambda: "mine"}
    parts = capstones.assemble(mine, checkers, reference)
    assert parts["first"] is mine["first"]
    assert [parts[name] is reference[name] for name in ("second", "third", "fourth")] == [True, True, True]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("|")[0].strip() == "part" and len(lines) == 2 + len(checkers)
    assert [line.split("|")[1].strip() for line in lines[2:]] == ["PASSED", "FAILED", "FAILED", "not given"]
    assert [line.split("|")[2].strip() for line in lines[2:]] == ["yours"] + ["marl_edu's reference"] * 3
    with pytest.raises(ValueError, match=r"unknown parts \['fifth'\]; the parts are first, second"):
        capstones.assemble({"fifth": print}, checkers, reference)


def test_whose_counts_the_learners_parts():
    reference = {"a": print, "b": len}
    assert capstones.whose(dict(reference), reference, "COMA") == "marl_edu's parts (your stubs are empty)"
    assert capstones.whose({"a": abs, "b": len}, reference, "COMA") == "your COMA (1 of 2 parts yours)"
    assert capstones.whose({"a": abs, "b": min}, reference, "MADDPG") == "your MADDPG"


def test_learner_update_is_none_for_the_references_and_passes_the_parts_in_order():
    reference = {"update": print, "loss": len, "soft": abs}
    assert capstones.learner_update(dict(reference), reference, "update", ("loss", "soft")) is None
    calls = []
    update = capstones.learner_update({**reference, "update": lambda *args: calls.append(args)}, reference, "update",
                                      ("loss", "soft"))
    assert update("agent", "batch") is None and calls == [("agent", "batch", len, abs)]
    # a learner's loss alone is enough to need the update with the parts passed in
    update = capstones.learner_update({**reference, "loss": min}, reference, "update", ("loss", "soft"))
    assert update is not None


def test_reference_run_and_its_refusal():
    run = capstones.reference_run("coma", "Switch2-v0")
    assert run["seed"] == 0 and run["evaluations"][-1] == [6000, 8.3]
    with pytest.raises(ValueError, match=r"no committed reference run of coma on 'Switch9-v0'.*Switch2-v0"):
        capstones.reference_run("coma", "Switch9-v0")


def test_random_return_is_the_mean_of_uniform_actions():
    # 100 episodes of two agents acting uniformly at random on Switch2-v0: far below the optimum 8.3, near
    # -10 (neither arrives: 50 steps of -0.1 each) plus the few arrivals; the same figure for the same seed
    value = capstones.random_return("Switch2-v0", episodes=100, seed=0)
    assert -10.0 < value < 0.0 and value == capstones.random_return("Switch2-v0", episodes=100, seed=0)
    assert capstone_coma.random_return is capstones.random_return is capstone_maddpg.random_return


def test_the_plot_refuses_a_dict_and_draws_a_run():
    reference = capstones.reference_run("maddpg", "Switch2-v2")
    with pytest.raises(ValueError, match="TrainResult"):
        capstones.plot_against_reference({"evaluations": [(1, 2.0)]}, reference, "MADDPG")
    ax = capstones.plot_against_reference(TrainResult(agent=None, evaluations=[(50, 1.0), (100, 8.1)]), reference,
                                          "MADDPG", optimal=8.3, random=-9.3, env_id="Switch2-v2", label="mine")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["marl_edu's MADDPG (committed run, seed 0)", "mine", "exact optimum (8.3)",
                      "random policy (-9.3)"]
    assert ax.get_title() == "Switch2-v2: greedy team return"


# -- the update= hook of the library's loops ------------------------------------------------------------------------

def test_train_coma_calls_the_given_update_with_the_learner_and_each_batch():
    seen = []

    def update(agent, batch):
        seen.append((agent, batch["obs"].shape))
        agent.update(batch)

    ours = train_coma("Switch2-v0", 32, COMAConfig(n_envs=8), seed=2, eval_every=16, progress=False, update=update)
    theirs = train_coma("Switch2-v0", 32, COMAConfig(n_envs=8), seed=2, eval_every=16, progress=False)
    assert len(seen) == ours.updates == 4 and all(agent is ours.agent for agent, _ in seen)
    assert all(shape[0] == 8 and shape[2:] == (2, 2) for _, shape in seen)  # (B = K, T+1, N, O)
    assert ours.episode_returns == theirs.episode_returns and ours.evaluations == theirs.evaluations
    assert all(torch.equal(a, b) for a, b in zip(ours.agent.actor.parameters(), theirs.agent.actor.parameters()))


def test_train_maddpg_calls_the_given_update_instead_of_the_learners():
    seen = []
    config = MADDPGConfig(n_envs=4, warmup_steps=64, batch_size=32, hidden=16, buffer_size=5_000)
    result = train_maddpg("Switch2-v2", 12, config, seed=0, eval_every=12, progress=False,
                          update=lambda agent, batch: seen.append(batch["obs"].shape))
    N, O = result.agent.n_agents, result.agent.obs_dim
    assert len(seen) == result.updates > 0 and set(seen) == {(32, N, O)}  # (B, N, O) replay batches
    assert result.agent.updates == 0  # MADDPG.update never ran


@pytest.mark.parametrize("train", [train_maddpg, train_coma], ids=lambda f: f.__name__)
def test_an_update_that_is_not_a_function_is_a_value_error(train):
    with pytest.raises(ValueError, match="update must be None .* or a function update\\(agent, batch\\), got str"):
        train(episodes=1, progress=False, update="agent.update")
