"""The committed results still hold: each committed policy is reloaded and replayed greedily."""

import json
import pathlib

import pytest

from marl_edu.train import greedy_return, load_maddpg_policy

RESULTS = pathlib.Path(__file__).resolve().parent.parent / "results"


@pytest.mark.parametrize("folder", ["maddpg/Switch2-v2"])
def test_committed_policy_reaches_its_recorded_return(folder):
    run = json.loads((RESULTS / folder / "run.json").read_text())
    agent = load_maddpg_policy(RESULTS / folder / "policy.pt", env_id=run["env"])
    replayed = greedy_return(agent, run["env"]).team_return
    assert replayed == pytest.approx(run["greedy"], abs=1e-6)
    assert replayed >= 8.0  # the README calls this policy solved (greedy team return >= 8.0)
