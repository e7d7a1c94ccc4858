"""The committed results still hold: each committed policy is reloaded and replayed greedily."""

import json
import pathlib

import pytest

from marl_edu.train import greedy_return, load_coma_policy, load_maddpg_policy

RESULTS = pathlib.Path(__file__).resolve().parent.parent / "results"
LOADERS = {"maddpg": load_maddpg_policy, "coma": load_coma_policy}


@pytest.mark.parametrize("folder", ["maddpg/Switch2-v2", "coma/Switch2-v0"])
def test_committed_policy_reaches_its_recorded_return(folder):
    run = json.loads((RESULTS / folder / "run.json").read_text())
    agent = LOADERS[run["algo"]](RESULTS / folder / "policy.pt", env_id=run["env"])
    replayed = greedy_return(agent, run["env"]).team_return
    assert replayed == pytest.approx(run["greedy"], abs=1e-6)
    assert replayed >= 8.0  # the README calls this policy solved (greedy team return >= 8.0)


def test_committed_feed_forward_coma_policy_still_deadlocks():
    # notebook 07 shows this policy's greedy episode as the feed-forward deadlock
    folder = RESULTS / "coma/Switch2-v0-feed-forward"
    run = json.loads((folder / "run.json").read_text())
    agent = load_coma_policy(folder / "policy.pt", env_id=run["env"])
    assert not agent.config.recurrent
    replayed = greedy_return(agent, run["env"]).team_return
    assert replayed == pytest.approx(run["greedy"], abs=1e-6) and replayed < 8.0
