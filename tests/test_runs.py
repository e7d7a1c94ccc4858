"""runs: one seed of a learner by name, its figures as the files record them, and the method names of the
comparison (``run_seed``, ``train``, ``rounded``, ``method_config``)."""

import pytest

from marl_edu.learners.coma import COMAConfig
from marl_edu.learners.continuous import ContinuousMADDPGConfig
from marl_edu.learners.maddpg import MADDPGConfig
from marl_edu.learners.table import ALGORITHMS, config_class
from marl_edu.learners.value_decomposition import ValueDecompositionConfig
from marl_edu.runs.seed import METHODS, load_replay_policy, method_config, rounded, run_seed, train
from marl_edu.training import checkpoints
from marl_edu.training.checkpoints import load_policy, save_policy
from marl_edu.training.evaluation import greedy_return, sampled_returns


@pytest.mark.parametrize("algo", list(ALGORITHMS))
def test_every_learner_round_trips_through_a_checkpoint(algo, tmp_path):
    config = config_class(algo)(hidden=8, n_envs=2, **({"warmup_steps": 16, "batch_size": 8}
                                                       if algo in ("maddpg", "iddpg") else {}))
    run = train(algo, "Switch2-v2", 2, config, seed=1, progress=False)
    path = save_policy(run.agent, "Switch2-v2", tmp_path / "policy.pt")
    loaded = load_policy(path, env_id="Switch2-v2")
    assert type(loaded) is ALGORITHMS[algo] and loaded.config == run.agent.config
    replayed, original = greedy_return(loaded, "Switch2-v2"), greedy_return(run.agent, "Switch2-v2")
    assert replayed.actions.tolist() == original.actions.tolist()
    other = "coma" if algo != "coma" else "iac"
    with pytest.raises(ValueError, match=f"is a {algo} checkpoint, expected {other}"):
        load_policy(path, algo=other)


def test_a_policy_to_replay_is_read_from_disk_once(tmp_path, monkeypatch):
    # --replay reads the header (which learner, which env) and then builds the learner: from the one payload, so a
    # large file costs one read (it read the file twice before)
    run = train("vdn", "Switch2-v2", 2, config_class("vdn")(hidden=8, n_envs=2), seed=1, progress=False)
    path = save_policy(run.agent, "Switch2-v2", tmp_path / "policy.pt")
    reads = []
    real_load = checkpoints.torch.load
    monkeypatch.setattr(checkpoints.torch, "load",
                        lambda *args, **kwargs: reads.append(1) or real_load(*args, **kwargs))
    agent, trained_on, plays_on = load_replay_policy(str(path))
    assert len(reads) == 1 and (trained_on, plays_on) == ("Switch2-v2", "Switch2-v2")
    assert type(agent) is ALGORITHMS["vdn"] and agent.config == run.agent.config


# -- the per-seed runner and the method names ------------------------------------------------------------------------

@pytest.mark.parametrize("method, algo, config", [
    ("coma-gru", "coma", COMAConfig(recurrent=True)), ("coma-ff", "coma", COMAConfig(recurrent=False)),
    ("central_v-gru", "central_v", COMAConfig(recurrent=True)),
    ("central_v-ff", "central_v", COMAConfig(recurrent=False)),
    ("iac-gru", "iac", COMAConfig(recurrent=True)), ("iac-ff", "iac", COMAConfig(recurrent=False)),
    ("maddpg-mlp", "maddpg", MADDPGConfig()), ("iddpg-mlp", "iddpg", MADDPGConfig()),
    ("central_qv-gru", "central_qv", COMAConfig(recurrent=True)),
    ("vdn-gru", "vdn", ValueDecompositionConfig(recurrent=True)), ("qmix-gru", "qmix", ValueDecompositionConfig()),
])
def test_method_config_names_a_learner_and_its_config(method, algo, config):
    assert method in METHODS
    got_algo, got_config = method_config(method)
    assert got_algo == algo and type(got_config) is type(config) and got_config == config


def test_methods_are_the_first_eight_then_central_qv_value_decomposition_and_ppo():
    assert METHODS == ["coma-gru", "coma-ff", "central_v-gru", "central_v-ff", "iac-gru", "iac-ff", "maddpg-mlp",
                       "iddpg-mlp", "central_qv-gru", "iql-gru", "vdn-gru", "qmix-gru", "mappo-gru", "ippo-gru"]


@pytest.mark.parametrize("method", ["qmix-ff", "coma", "coma-mlp", "maddpg-gru", "COMA-GRU", ""])
def test_a_bad_method_name_is_named(method):
    with pytest.raises(ValueError, match=f"unknown method {method!r}; choose one of coma-gru, coma-ff"):
        method_config(method)


DISCRETE_KEYS = ["seed", "greedy", "sampled", "sampled_as", "episodes", "env_steps", "wall_s", "steps_per_s",
                 "updates", "episodes_to_solve", "seconds_to_solve", "evaluations", "sampled_evaluations"]


@pytest.mark.parametrize("algo, config", [
    ("maddpg", MADDPGConfig(hidden=8, n_envs=2, warmup_steps=16, batch_size=8)),
    ("coma", COMAConfig(hidden=8, n_envs=2)),
])
def test_run_seed_measures_what_train_returns(algo, config):
    run, figures = run_seed(algo, "Switch2-v2", 4, config, seed=3, eval_every=2, optimum=-9.7)
    direct = train(algo, "Switch2-v2", 4, config, seed=3, eval_every=2, progress=False)  # the same seed, directly
    assert run.episode_returns == direct.episode_returns and run.evaluations == direct.evaluations
    assert (run.env_steps, run.updates) == (direct.env_steps, direct.updates) and run.updates > 0
    assert list(figures) == DISCRETE_KEYS
    assert figures["seed"] == 3 and figures["greedy"] == greedy_return(direct.agent, "Switch2-v2").team_return
    assert figures["sampled"] == float(sampled_returns(direct.agent, "Switch2-v2", n_episodes=100, seed=3).mean())
    assert (figures["episodes"], figures["env_steps"], figures["updates"]) == (
        len(direct.episode_returns), direct.env_steps, direct.updates)
    assert figures["wall_s"] == run.seconds and figures["steps_per_s"] == run.env_steps / run.seconds
    assert figures["evaluations"] == direct.evaluations
    assert figures["sampled_evaluations"] == direct.sampled_evaluations and len(direct.sampled_evaluations) == 2
    assert figures["sampled_as"] == "actions drawn from the policy"
    # an optimum of -9.7 makes -10.0 "solved": the untrained policy's first greedy evaluation already reaches it
    assert figures["episodes_to_solve"] == run.evaluations[0][0] and figures["seconds_to_solve"] == run.eval_seconds[0]
    unknown = run_seed(algo, "Switch2-v2", 4, config, seed=3, eval_every=2)[1]  # no optimum: never solved
    assert unknown["episodes_to_solve"] is None and unknown["seconds_to_solve"] is None
    assert unknown["evaluations"] == figures["evaluations"] and unknown["greedy"] == figures["greedy"]


def test_run_seed_stops_a_discrete_run_at_stop_at():
    config = COMAConfig(hidden=8, n_envs=2)
    run, figures = run_seed("coma", "Switch2-v2", 40, config, seed=0, eval_every=2, stop_at=-10.0)
    assert figures["episodes"] == 2 and run.evaluations == [(2, run.evaluations[0][1])]


def test_run_seed_trains_a_continuous_learner_with_the_one_loop():
    config = ContinuousMADDPGConfig(hidden=8, n_envs=2, warmup_steps=16, batch_size=8)
    run, figures = run_seed("maddpg_continuous", "simple_spread_v3", 4, config, seed=1, eval_every=2)
    direct = train("maddpg_continuous", "simple_spread_v3", 4, config, seed=1, eval_every=2, progress=False)
    assert run.episode_returns == direct.episode_returns and run.evaluations == direct.evaluations
    assert list(figures) == ["seed", "sampled_as", "sampled_starts", "episodes", "env_steps", "wall_s", "steps_per_s",
                             "updates", "evaluations", "sampled_evaluations"]
    assert figures["sampled_evaluations"] == direct.sampled_evaluations and figures["sampled_as"] == (
        "Gaussian noise, sigma 0.05")
    assert (figures["seed"], figures["episodes"], figures["env_steps"], figures["updates"]) == (
        1, 4, direct.env_steps, direct.updates) and direct.updates > 0
    assert figures["evaluations"] == direct.evaluations and len(direct.evaluations) == 2
    stopped, _ = run_seed("maddpg_continuous", "simple_spread_v3", 4, config, seed=1, eval_every=2, stop_at=-1e9)
    assert stopped.episode_returns == direct.episode_returns[:2] and stopped.evaluations == direct.evaluations[:1]


def test_rounded_gives_the_figures_as_the_files_record_them():
    figures = {"seed": 2, "greedy": 8.19999997317791, "sampled": 8.152999972477556, "episodes": 3001,
               "env_steps": 79392, "wall_s": 86.55585186799999, "steps_per_s": 917.2343439132798, "updates": 4896,
               "episodes_to_solve": None, "seconds_to_solve": None, "evaluations": [(64, -10.0), (100, 7.8999999)],
               "sampled_evaluations": [(64, -9.86000001), (100, 7.1234999)]}
    row = rounded(figures)
    assert row == {"seed": 2, "greedy": 8.2, "sampled": 8.153, "episodes": 3001, "env_steps": 79392, "wall_s": 86.6,
                   "steps_per_s": 917, "updates": 4896, "episodes_to_solve": None, "seconds_to_solve": None,
                   "evaluations": [(64, -10.0), (100, 7.9)], "sampled_evaluations": [(64, -9.86), (100, 7.123)]}
    assert list(row) == list(figures) and type(row["steps_per_s"]) is int
    assert rounded({**figures, "seconds_to_solve": 52.84})["seconds_to_solve"] == 52.8
    continuous = rounded({"seed": 0, "episodes": 40, "env_steps": 1000, "wall_s": 2.04, "steps_per_s": 490.2,
                          "updates": 3, "evaluations": [(20, -71.234)]})
    assert continuous == {"seed": 0, "episodes": 40, "env_steps": 1000, "wall_s": 2.0, "steps_per_s": 490,
                          "updates": 3, "evaluations": [(20, -71.23)]}


@pytest.mark.parametrize("algo, env_id", [("coma", "Switch2-v0"), ("maddpg", "Switch2-v2")])
def test_many_sampled_episodes_are_played_in_chunks_of_env_copies(algo, env_id, monkeypatch):
    # a final figure over 5,000 episodes once asked make_vec_env for 5,000 copies (more than n_envs' limit) after the
    # training: the episodes come in chunks of SAMPLED_COPIES copies, seeded on, and the first chunk is the same
    import numpy as np

    from marl_edu.envs.make import make_env
    from marl_edu.learners.table import entry
    from marl_edu.training import evaluation

    env = make_env(env_id)
    agent = entry(algo).learner(env.n_agents, env.obs_dim, env.n_actions, seed=0)
    monkeypatch.setattr(evaluation, "SAMPLED_COPIES", 3)
    seven = sampled_returns(agent, env_id, n_episodes=7, seed=3)  # chunks of 3, 3 and 1 copies
    assert seven.shape == (7,) and np.isfinite(seven).all()
    assert (seven[:3] == sampled_returns(agent, env_id, n_episodes=3, seed=3)).all()  # one chunk: the same draws
