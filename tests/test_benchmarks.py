"""The benchmark scripts' command lines refuse a bad argument in one line before any training (argparse's usage and
one ``error:`` line, exit status 2, no traceback), and the grid every benchmark trains through (marl_edu.runs.grid)
checks its arguments and hands a run's files back whole."""

import dataclasses
import importlib
import json
import math
import pathlib
import sys
import types

import numpy as np
import pytest
import torch

from marl_edu.runs import grid

ROOT = pathlib.Path(__file__).resolve().parent.parent


def script(name: str):
    """A script of benchmarks/ imported by name (benchmarks/ on the path, as the process pool imports it)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def refused(name: str, argv: list[str], capsys) -> str:
    """Run ``benchmarks/<name>.py argv``; it must exit with status 2 before training, printing argparse's usage and
    one error line (no traceback). Returns that error line."""
    with pytest.raises(SystemExit) as stopped:
        script(name).main(argv)
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert "Traceback" not in captured.err and captured.out == ""
    assert ": error: " in lines[-1]
    assert not any("error" in line for line in lines[:-1])  # one error line, after the usage
    return lines[-1]


@pytest.mark.parametrize("name, argv", [
    ("sweep", ["--episodes", "8"]),
    ("foraging", ["--out", "OUT"]),
    ("particle", []),
    ("keep", ["--algo", "vdn"]),
])
def test_an_int_field_set_out_of_range_is_one_line(name, argv, capsys, tmp_path):
    # 1e400 is infinity as a float and no int: once an OverflowError traceback from int(float("1e400"))
    argv = [str(tmp_path) if arg == "OUT" else arg for arg in argv]
    line = refused(name, [*argv, "--set", "hidden=1e400"], capsys)
    assert "--set" in line and "hidden" in line and "1e400" in line


@pytest.mark.parametrize("name, argv", [("sweep", ["--episodes", "8"]), ("foraging", ["--out", "OUT"]),
                                        ("particle", []), ("keep", ["--algo", "vdn"])])
def test_an_unknown_field_is_named(name, argv, capsys, tmp_path):
    argv = [str(tmp_path) if arg == "OUT" else arg for arg in argv]
    assert "hidden_size" in refused(name, [*argv, "--set", "hidden_size=64"], capsys)


@pytest.mark.parametrize("text", ["not json at all", "", '["a list"]', '{"no": "fields of a run"}'])
def test_foraging_reuse_of_a_file_that_is_not_a_record_is_one_line(text, capsys, tmp_path):
    foraging = script("foraging")
    method = next(iter(foraging.METHODS))
    (tmp_path / method).mkdir()
    (tmp_path / method / "seed0.json").write_text(text)
    line = refused("foraging", ["--methods", method, "--seeds", "0", "--reuse", "--out", str(tmp_path)], capsys)
    assert f"{method}/seed0.json" in line and "--reuse" in line


def test_foraging_reuse_of_a_summary_that_is_not_json_is_one_line(capsys, tmp_path):
    (tmp_path / "summary.json").write_text("{half a file")
    method = next(iter(script("foraging").METHODS))
    line = refused("foraging", ["--methods", method, "--seeds", "0", "--reuse", "--out", str(tmp_path)], capsys)
    assert "summary.json is not a results file (JSON)" in line


@pytest.mark.parametrize("argv, named", [(["--algo", "vdn", "--episodes", "0"], "--episodes"),
                                         (["--algo", "vdn", "--eval-every", "-5"], "--eval-every"),
                                         (["--algo", "central_qv", "--diagnose"], "--diagnose"),
                                         (["--algo", "mappo", "--time-updates"], "--time-updates"),
                                         (["--algo", "coma", "--trace"], "--trace"),
                                         (["--algo", "maddpg", "--trace"], "--trace"),
                                         (["--algo", "vdn", "--entropy-floor", "0.01"], "--entropy-floor"),
                                         (["--algo", "mappo", "--lr-end", "1.5"], "--lr-end"),
                                         (["--algo", "mappo", "--entropy-floor", "nan"], "--entropy-floor"),
                                         # evaluations at 1,600 only: none after 2,000 (2/3 of 3,000), no "late"
                                         (["--algo", "vdn", "--episodes", "3000", "--eval-every", "1600"],
                                          "--eval-every 1600: no greedy evaluation would fall in the last third")])
def test_keep_refuses_a_count_that_is_not_positive_and_a_diagnosis_it_cannot_make(argv, named, capsys):
    assert named in refused("keep", argv, capsys)


def test_keep_diagnoses_maddpg_per_evaluation_window():
    # 4 episodes of 2 copies (50 steps each, nobody home with so little training), an update at every step once the
    # replay holds 180 transitions (late in the second episodes): the first window (episodes 1-2) without one
    from marl_edu.learners.table import config_class, config_with
    from marl_edu.training.loops import train
    keep = script("keep")
    config = config_with(config_class("maddpg"), ["n_envs=2", "warmup_steps=180", "batch_size=32"])
    diagnosis = keep.Diagnosis()
    with diagnosis:
        run = train("maddpg", "Switch2-v2", 4, config, 0, 2, False, threads=1, update=diagnosis.update)
    lines = diagnosis.windows(run, config, 4)
    assert lines[0].split()[:5] == ["episode", "greedy", "eps", "q_taken", "entropy"]
    assert len(lines) == 1 + len(run.evaluations) == 3 and len(diagnosis.rows) == run.updates > 0
    assert len(lines[1].split()) == 5 and len(lines[2].split()) == len(lines[0].split())  # no updates, then some
    entropy = [row["entropy"] for row in diagnosis.rows]
    assert 0.0 < min(entropy) and max(entropy) <= math.log(5) + 1e-6  # nats, of 5 actions
    assert {"critic|g|", "critic_step", "actor|g|", "actor_step"} <= diagnosis.rows[0].keys()


def test_keep_diagnoses_ppo_per_evaluation_window_and_trains_as_without():
    # 4 episodes of 2 copies: two updates, an evaluation after each; the diagnosis's own forward passes draw nothing,
    # so the weights end the same to the bit as a run without it
    from marl_edu.learners.table import config_class, config_with
    from marl_edu.training.loops import train
    keep = script("keep")
    config = config_with(config_class("mappo"), ["n_envs=2", "minibatches=1", "epochs=2"])
    plain = train("mappo", "Switch2-v0", 4, config, 0, 2, False, threads=1)
    diagnosis = keep.Diagnosis()
    with diagnosis:
        run = train("mappo", "Switch2-v0", 4, config, 0, 2, False, threads=1, update=diagnosis.update)
    for name, weights in plain.agent.state_dict().items():
        for key, value in weights.items():
            assert torch.equal(value, run.agent.state_dict()[name][key]), (name, key)
    lines = diagnosis.windows(run, config, 4)
    assert lines[0].split()[:4] == ["episode", "greedy", "beta", "entropy"]  # no epsilon column: beta in the rows
    assert len(lines) == 1 + len(run.evaluations) == 3 and len(diagnosis.rows) == run.updates == 2
    first = diagnosis.rows[0]
    assert first["beta"] == config.entropy_start  # the schedule's beta at episode 0
    assert 0.0 < first["entropy"] <= math.log(5) + 1e-6 and first["kl"] >= 0.0 and 0.0 <= first["clipfrac"] <= 1.0
    assert first["v_err"] > 0.0 and first["actor|g|"] <= first["actor|g|max"]  # epochs=2: two actor steps each
    assert [row["a_steps"] for row in diagnosis.rows] == [2, 2]  # no target_kl: every minibatch's step


def test_keep_s_ppo_diagnosis_counts_the_actor_s_steps_a_target_kl_left_and_every_critic_step():
    # a target_kl so small that the actor stops after its first step (its second minibatch has moved from pi_old):
    # 4 epochs of 2 minibatches give norms actor, critic, critic, ... (1 + 8): the actor's one, the critic's eight
    from marl_edu.learners.table import config_class, config_with
    from marl_edu.training.loops import train
    keep = script("keep")
    config = config_with(config_class("mappo"), ["n_envs=4", "minibatches=2", "epochs=4", "target_kl=1e-9"])
    diagnosis = keep.Diagnosis()
    with diagnosis:
        train("mappo", "Switch2-v0", 4, config, 0, 4, False, threads=1, update=diagnosis.update)
    row, = diagnosis.rows  # (one update)
    assert row["a_steps"] == 1 and len(diagnosis._norms) == 1 + 8
    assert row["actor|g|"] == row["actor|g|max"] == diagnosis._norms[0]
    assert row["critic|g|"] == pytest.approx(np.mean(diagnosis._norms[1:]))
    assert row["critic|g|max"] == max(diagnosis._norms[1:])


@pytest.mark.parametrize("algo", ["coma", "central_v"])
def test_keep_diagnoses_coma_per_evaluation_window_and_trains_as_without(algo):
    # 4 episodes of 2 copies: two updates, an evaluation after each; the diagnosis's forward passes draw nothing, so
    # the weights end the same to the bit as a run without it; the critic's 8 steps, then the actor's one
    from marl_edu.learners.baselines import CentralQV
    from marl_edu.learners.coma import COMAConfig
    from marl_edu.learners.table import config_class, config_with
    from marl_edu.training.loops import train
    keep = script("keep")
    config = config_with(config_class(algo), ["n_envs=2"])
    plain = train(algo, "Switch2-v0", 4, config, 0, 2, False, threads=1)
    diagnosis = keep.Diagnosis()
    with diagnosis:
        run = train(algo, "Switch2-v0", 4, config, 0, 2, False, threads=1, update=diagnosis.update)
    for name, weights in plain.agent.state_dict().items():
        for key, value in weights.items():
            assert torch.equal(value, run.agent.state_dict()[name][key]), (name, key)
    lines = diagnosis.windows(run, config, 4)
    assert lines[0].split()[:5] == ["episode", "greedy", "beta", "|adv|", "critic_loss"]
    assert len(lines) == 1 + len(run.evaluations) == 3 and len(diagnosis.rows) == run.updates == 2
    first = diagnosis.rows[0]
    assert first["beta"] == config.entropy_start and first["|adv|"] > 0.0 and 0.0 < first["entropy"] <= math.log(5)
    assert first["critic|g|"] <= first["critic|g|max"] and first["actor|g|"] > 0.0
    assert first["critic_step"] > 0.0 and first["actor_step"] > 0.0
    assert len(diagnosis._norms) == run.updates * (config.critic_steps + 1)  # 8 critic steps and the actor's, each
    with pytest.raises(ValueError, match="central-QV"):  # three networks: refused rather than split wrongly
        keep.Diagnosis().update(CentralQV(2, 2, 5, COMAConfig()), None)


def test_keep_mixer_credit_is_dq_tot_dq_i_over_the_steps_each_agent_acts():
    # A mixer whose weights' hypernetworks give constants (their last layers' weights 0): W_1 = |[[1, -2], [0.5, 0]]|
    # (N = 2 rows of E = 2), w_2 = |(-1, 4)|, and v_1 = (3 - 100 s_0, 3), s_0 agent 0's first observation feature.
    # Step 0 (s = 0): both hidden units positive (3 + Q_0 + 0.5 Q_1 and 3 + 2 Q_0: the untrained Q_i are far below 1 in
    # size, asserted below), elu' = 1, so
    #   dQ_tot/dQ_0 = 1 * 1 + 4 * 2 = 9,  dQ_tot/dQ_1 = 1 * 0.5 + 4 * 0 = 0.5.
    # Step 1 (s_0 = 1): unit 0 is at about -97, elu' = exp(-97), about 0, so dQ_tot/dQ_0 = 4 * 2 = 8, dQ_tot/dQ_1 = 0.
    # Agent 1 does not act at step 1 (home): credit0 = (9 + 8) / 2 = 8.5 over both steps, credit1 = 0.5 over step 0
    # alone (0.25 if its masked step were counted).
    from marl_edu.learners.value_decomposition import QMIX, ValueDecompositionConfig
    keep = script("keep")
    agent = QMIX(2, 2, 5, ValueDecompositionConfig(mixer_embed=2, hyper_hidden=4), seed=0)
    mixer = agent.mixer
    with torch.no_grad():
        for hyper, bias in ((mixer.hyper_w1, [1.0, -2.0, 0.5, 0.0]), (mixer.hyper_w2, [-1.0, 4.0])):
            last = [m for m in hyper.modules() if isinstance(m, torch.nn.Linear)][-1]
            last.weight.zero_()
            last.bias.copy_(torch.tensor(bias))  # W_1 flattened (N*E): agent i's E weights at i*E, ..., i*E + E-1
        mixer.hyper_b1.weight.zero_()
        mixer.hyper_b1.weight[0, 0] = -100.0  # (E, S): unit 0's bias falls by 100 per unit of s_0
        mixer.hyper_b1.bias.fill_(3.0)
    B, T, N, O = 1, 2, 2, 2
    obs = torch.zeros(B, T + 1, N, O)
    obs[0, 1, 0, 0] = 1.0  # s_0 = 1 at step 1
    batch = {"obs": obs, "actions": torch.zeros(B, T + 1, N, dtype=torch.long), "agent_mask": torch.ones(B, T, N)}
    batch["agent_mask"][0, 1, 1] = 0.0
    with torch.no_grad():
        assert agent.q_values(obs, batch["actions"]).abs().max() < 1.0  # the premise of the hidden units' signs
    assert keep.mixer_credit(agent, batch) == pytest.approx({"credit0": 8.5, "credit1": 0.5}, abs=1e-5)


def test_keep_trace_spells_each_agents_greedy_moves_and_its_nearest_tie(monkeypatch):
    # An untrained QMIX on Switch2-v0 (seed 0): nobody gets home in the 50 steps, so each agent's line spells 50 moves,
    # the initials of Switch's action meanings (Down, Left, Up, Right, Noop) of the greedy episode's actions; the gap
    # between the best two Q-values is the top value minus the runner-up at each step, never negative
    from marl_edu.learners.value_decomposition import QMIX, ValueDecompositionConfig
    from marl_edu.training.evaluation import greedy_return
    keep = script("keep")
    agent = QMIX(2, 2, 5, ValueDecompositionConfig(), seed=0)
    lines = keep.trace(agent, "Switch2-v0")
    episode = greedy_return(agent, "Switch2-v0")
    assert lines[0] == "final greedy episode: team return -10.0, 50 steps" and len(lines) == 3
    obs = torch.as_tensor(np.concatenate([episode.obs, episode.next_obs[-1:]]))[None]  # (1, 51, N, O)
    actions = torch.as_tensor(np.concatenate([episode.actions, episode.actions[-1:]]))[None]  # (1, 51, N)
    with torch.no_grad():
        q = agent.q_values(obs, actions)[0, :-1].numpy()  # (50, N, A)
    ranked = np.sort(q, axis=-1)  # (50, N, A) ascending
    gaps = ranked[..., -1] - ranked[..., -2]  # (50, N) best minus runner-up
    for i in range(2):
        moves = "".join("DLURN"[a] for a in episode.actions[:, i])
        assert lines[1 + i] == (f"agent {i}: {moves} (never home); its best two Q-values apart by "
                                f"{gaps[:, i].min():.2f} at least, {np.median(gaps[:, i]):.2f} in the median step")
    # an agent home after 3 steps: its line spells those 3 moves and reads its gaps over them only
    home = dataclasses.replace(episode, terminated=episode.terminated.copy())
    home.terminated[2, 0] = True
    monkeypatch.setattr(keep, "greedy_return", lambda *args, **kwargs: home)
    line = keep.trace(agent, "Switch2-v0")[1]
    moves = "".join("DLURN"[a] for a in episode.actions[:3, 0])
    assert line == (f"agent 0: {moves} (home after 3 steps); its best two Q-values apart by {gaps[:3, 0].min():.2f} "
                    f"at least, {np.median(gaps[:3, 0]):.2f} in the median step")


def test_keep_nearest_spells_the_moves_and_the_best_return_with_one_or_two_agents_changed(monkeypatch):
    # The rush of tests/test_planning.py: both agents take their shortest path at once, Down, Right (Left) x5, Up, and
    # jam in the corridor (team -10.0). With agent 0's moves free the best is 8.2, with agent 1's 8.3 (the optimum),
    # with both the optimum: the arithmetic is in test_planning.py's
    # test_one_agent_free_against_the_others_fixed_moves_by_hand.
    keep = script("keep")
    rush = np.array([[0, 0], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [2, 2]] + [[4, 4]] * 43)  # (T=50, N=2) jammed
    episode = types.SimpleNamespace(actions=rush, terminated=np.zeros((50, 2), dtype=bool), team_return=-10.0)
    monkeypatch.setattr(keep, "greedy_return", lambda *args, **kwargs: episode)
    agent = types.SimpleNamespace(n_agents=2)
    assert keep.nearest(agent, "Switch2-v0") == [
        "final greedy episode: team return -10.0, 50 steps; the optimum 8.3",
        "agent 0: DRRRRRU" + "N" * 43 + " (never home)",
        "agent 1: DLLLLLU" + "N" * 43 + " (never home)",
        "the best team return with only these agents' moves changed: 0 8.2, 1 8.3, 0+1 8.3"]


@pytest.mark.parametrize("env_id, method, first, mover, best", [
    # TUNING.md, "Why MAPPO misses on Switch3": the committed seed-0 policy keeps a path of 12.0 (the optimum 12.4) on
    # which agent 1 crosses the corridor first; no change of one agent's moves, nor of two agents', gets above 12.0
    ("Switch3-v0", "mappo-gru", "team return 12.0, 14 steps; the optimum 12.4", "agent 1: DLLLLUL (home after 7 steps)",
     "0 12.0, 1 12.0, 2 12.0, 0+1 12.0, 0+2 12.0, 1+2 12.0"),
    # "Why QMIX misses on Switch4": the committed seed-0 policy ends at 15.3 (the optimum 16.1) with agent 1 wandering
    # for 23 steps; changing agent 1's moves alone gives the optimum
    ("Switch4-v0", "qmix-gru", "team return 15.3, 23 steps; the optimum 16.1",
     "agent 1: RDRUULDULDRURDULLULLLLU (home after 23 steps)", "0 15.3, 1 16.1, 2 15.3, 3 15.3,")])
def test_keep_nearest_on_a_committed_near_path(env_id, method, first, mover, best):
    from marl_edu.runs.seed import load_replay_policy
    keep = script("keep")
    agent, _, _ = load_replay_policy(str(ROOT / "results" / "compare" / env_id / method / "policy.pt"))
    lines = keep.nearest(agent, env_id)
    assert lines[0] == f"final greedy episode: {first}"
    assert lines[2] == mover
    assert lines[-1].startswith(f"the best team return with only these agents' moves changed: {best}")


def test_keep_trains_coma_with_the_remedies(monkeypatch, capsys):
    # COMA's family takes --entropy-floor and --lr-end (the on-policy loop), as PPO's does: a run of 16 episodes
    keep = script("keep")
    monkeypatch.setattr(keep, "yardstick_seconds", lambda: 1.0)  # (the real one times 200,000 raw steps)
    assert keep.main(["--algo", "coma", "--episodes", "16", "--eval-every", "8", "--seeds", "100",
                      "--entropy-floor", "0.01", "--lr-end", "0.5"]) == 0
    assert "SUMMARY algo=coma env=Switch2-v0 episodes=16 set=entropy_floor=0.01,lr_end=0.5 seeds=1 " in \
        capsys.readouterr().out


def test_keep_remedy_floors_the_entropy_weight_and_decays_the_learning_rates():
    # lr_end 0.1 at update 5 of 10: the rates times 1 - 0.9 * 5 / 10 = 0.55; beta 0.002 is floored to 0.01; MAPPO's
    # rates are actor 1e-3, critic 3e-3, COMA's 2e-3 and 3e-3
    from marl_edu.learners.coma import COMA, COMAConfig
    from marl_edu.learners.ppo import MAPPO, PPOConfig
    keep = script("keep")
    for agent, actor_lr, critic_lr in ((MAPPO(2, 3, 5, PPOConfig()), 1e-3, 3e-3),
                                       (COMA(2, 3, 5, COMAConfig()), 2e-3, 3e-3)):
        agent.updates, agent.entropy_coef = 5, 0.002
        keep.Remedy(0.01, 0.1, 10).apply(agent)
        assert agent.entropy_coef == 0.01
        assert agent.actor_optimizer.param_groups[0]["lr"] == pytest.approx(actor_lr * 0.55)
        assert agent.critic_optimizer.param_groups[0]["lr"] == pytest.approx(critic_lr * 0.55)
        agent.entropy_coef = 0.03  # above the floor: kept
        keep.Remedy(0.01, 1.0, 10).apply(agent)
        assert agent.entropy_coef == 0.03 and agent.actor_optimizer.param_groups[0]["lr"] == pytest.approx(actor_lr)
    # central-QV's third optimiser (its V critic, built at the critic's 3e-3) decays with the others
    from marl_edu.learners.baselines import CentralQV
    central_qv = CentralQV(2, 3, 5, COMAConfig())
    central_qv.updates = 5
    keep.Remedy(0.0, 0.1, 10).apply(central_qv)
    assert central_qv.value_optimizer.param_groups[0]["lr"] == pytest.approx(3e-3 * 0.55)


def test_compare_reuse_of_a_file_that_is_not_a_record_is_one_line(capsys, tmp_path):
    compare = script("compare")
    method = compare.METHODS[0]
    (tmp_path / "Switch2-v0" / method).mkdir(parents=True)
    (tmp_path / "Switch2-v0" / method / "seed0.json").write_text("<html>")
    line = refused("compare", ["--envs", "Switch2-v0", "--methods", method, "--seeds", "0", "--runner", "pool",
                               "--reuse", "--out", str(tmp_path)], capsys)
    assert f"{method}/seed0.json is not a results file (JSON)" in line


def test_compare_reuse_refuses_a_random_start_record_made_before_the_pairing(capsys, tmp_path):
    # on PredatorPrey a record without sampled_starts played its sampled figure on other episodes than its greedy
    # one: --reuse must not mix it into a table of today's runs; on Switch (every episode alike) nothing changed
    compare = script("compare")
    committed = json.loads((ROOT / "results" / "compare" / "Switch2-v0" / "vdn-gru" / "seed0.json").read_text())
    for env_id in ("PredatorPrey7x7-v0", "Switch2-v0"):
        (tmp_path / env_id / "vdn-gru").mkdir(parents=True)
        (tmp_path / env_id / "vdn-gru" / "seed0.json").write_text(json.dumps({**committed, "env": env_id}))
    with pytest.raises(ValueError, match="--reuse: .*PredatorPrey7x7-v0/vdn-gru/seed0.json was recorded before the "
                                         "sampled figures played the greedy ones' episodes"):
        compare.record(tmp_path, "PredatorPrey7x7-v0", "vdn-gru", 0)
    assert compare.record(tmp_path, "Switch2-v0", "vdn-gru", 0)["greedy"] == committed["greedy"]
    # a paired record must say how it was paired and keep a standard error
    for changes, said in (({"sampled_starts": "copies", "sampled_gap_se": 0.4},
                           "its 'sampled_starts' is 'copies', expected 'greedy'; move it away or run without --reuse"),
                          ({"sampled_starts": "greedy", "sampled_gap_se": None},
                           "its 'sampled_gap_se' is None, expected a standard error"),
                          ({"sampled_starts": "greedy", "sampled_gap_se": -0.1}, "its 'sampled_gap_se' is -0.1")):
        (tmp_path / "PredatorPrey7x7-v0" / "vdn-gru" / "seed0.json").write_text(
            json.dumps({**committed, "env": "PredatorPrey7x7-v0", **changes}))
        with pytest.raises(ValueError, match=f"is not a run's record of this benchmark: {said}"):
            compare.record(tmp_path, "PredatorPrey7x7-v0", "vdn-gru", 0)
    # read for a table rather than by --reuse, the advice is not "run without" the table
    with pytest.raises(ValueError, match=r"^the table: .* expected a standard error \(a number, 0 or more\); move it "
                                         "away or train that run again$"):
        compare.record(tmp_path, "PredatorPrey7x7-v0", "vdn-gru", 0, "the table")
    # an int standard error is a number too (JSON writes 0.0 as 0.0, but a hand may write 0)
    (tmp_path / "PredatorPrey7x7-v0" / "vdn-gru" / "seed0.json").write_text(
        json.dumps({**committed, "env": "PredatorPrey7x7-v0", "sampled_starts": "greedy", "sampled_gap_se": 0}))
    assert compare.record(tmp_path, "PredatorPrey7x7-v0", "vdn-gru", 0)["sampled_gap_se"] == 0


@pytest.mark.parametrize("name", ["foraging", "particle", "competition"])
def test_every_grid_script_takes_the_runner_options_and_checks_them(name, capsys):
    line = refused(name, ["--runner", "pool", "--address", "auto"], capsys)
    assert "--address needs --runner ray" in line


def test_the_grid_refuses_a_bad_runner_or_count_of_jobs():
    with pytest.raises(ValueError, match="runner must be one of ray, pool, got 'threads'"):
        list(grid.run_grid(abs, [1], "threads", 1))
    with pytest.raises(ValueError, match="jobs must be a positive int, got 0"):
        list(grid.run_grid(abs, [1], "pool", 0))
    assert list(grid.run_grid(abs, [], "pool", 2)) == []  # nothing to run: no pool started


def test_the_pool_yields_in_order_when_asked():
    assert list(grid.run_grid(abs, [-3, 2, -1], "pool", 2, ordered=True)) == [3, 2, 1]
    assert sorted(grid.run_grid(abs, [-3, 2, -1], "pool", 2)) == [1, 2, 3]


def test_a_runs_files_come_back_as_bytes_and_are_written_record_last(tmp_path, monkeypatch):
    def save(folder: pathlib.Path) -> None:
        (folder / "policy.pt").write_bytes(b"weights")
        (folder / "greedy.gif").write_bytes(b"GIF89a")

    files = grid.run_files(save)
    assert files == {"greedy.gif": b"GIF89a", "policy.pt": b"weights"}  # by name
    written = []
    monkeypatch.setattr(grid, "atomic_write_bytes", lambda path, data: written.append(path.name))
    grid.write_files(tmp_path / "run", {**files, "seed0.json": b"{}\n"})
    assert written == ["greedy.gif", "policy.pt", "seed0.json"]  # each atomically, the record last
    with pytest.raises(ValueError, match="'../x'"):
        grid.write_files(tmp_path, {"../x": b""})  # a name, never a path out of the folder


class FakeRay:
    """Stands in for the ray module (an optional extra, not installed here): ``remote(f).remote(job)`` computes at
    once, and ``wait`` hands the finished runs back last first, as a cluster may."""

    class cloudpickle:
        @staticmethod
        def register_pickle_by_value(module):
            pass

    def __init__(self):
        self.calls = []

    def init(self, **kwargs):
        self.calls.append("init")

    def shutdown(self):
        self.calls.append("shutdown")

    def remote(self, num_cpus):
        def wrap(function):
            class Remote:
                @staticmethod
                def remote(job):
                    return ("done", function(job))
            return Remote
        return wrap

    def wait(self, pending, num_returns):
        return [pending[-1]], pending[:-1]

    def get(self, reference):
        return reference[1]


def test_on_ray_the_grid_yields_as_runs_finish_or_in_order_and_always_shuts_ray_down(monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    assert list(grid.run_grid(abs, [-3, 2, -1], "ray", 2)) == [1, 2, 3]  # as they finished: last first
    assert list(grid.run_grid(abs, [-3, 2, -1], "ray", 2, ordered=True)) == [3, 2, 1]  # in the order of the jobs
    assert fake.calls == ["init", "shutdown", "init", "shutdown"]


# -- round three (issue 47): every script's options, --out and results files checked as the command line's ----------

# each script with a small valid base (nothing trains: every case below is refused first), and the options it takes
SCRIPTS = {
    "sweep": ["--episodes", "4", "--seeds", "0", "--runner", "pool"],
    "compare": ["--envs", "Switch2-v0", "--episodes", "4", "--seeds", "0", "--jobs", "1", "--runner", "pool"],
    "foraging": ["--episodes", "4", "--eval-every", "2", "--seeds", "0", "--jobs", "1", "--runner", "pool"],
    "particle": ["--episodes", "4", "--seeds", "0", "--jobs", "1", "--runner", "pool"],
    "competition": ["--episodes", "4", "--seeds", "0", "--jobs", "1", "--runner", "pool"],
    "fresh": ["--episodes", "4", "--seeds", "0", "--jobs", "1", "--runner", "pool"],
    "learning": ["--episodes", "4", "--seeds", "0"],
    "keep": ["--algo", "vdn", "--episodes", "4", "--eval-every", "2", "--seeds", "0"],
}
WITH_OUT = [name for name in SCRIPTS if name not in ("sweep", "keep")]


def _with(base: list[str], **options) -> list[str]:
    """``base`` with each ``--option value`` replaced or added (``seeds=["1", "1"]`` for nargs options)."""
    argv = list(base)
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if flag in argv:
            at = argv.index(flag)
            end = next((k for k in range(at + 1, len(argv)) if argv[k].startswith("--")), len(argv))
            del argv[at:end]
        argv += [flag, *(value if isinstance(value, list) else [value])]
    return argv


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("option, value, said", [
    ("seeds", ["-1"], "--seeds must be distinct ints in [0, 2147483647], got -1"),
    ("seeds", ["3", "3"], "--seeds must be distinct ints in [0, 2147483647], got 3 3"),
    ("episodes", "0", "--episodes must be between 1 and 10,000,000, got 0"),
    ("episodes", "10000001", "--episodes must be between 1 and 10,000,000, got 10000001"),
])
def test_every_scripts_shared_options_are_checked_in_one_line(name, option, value, said, capsys, tmp_path):
    if option == "episodes" and name == "compare":
        said = said.replace("--episodes must be between 1 and 10,000,000", "--episodes")  # (N|METHOD=N, its own)
        value = "0"
    line = refused(name, _with(SCRIPTS[name], **{option: value}), capsys)
    assert said in line if name != "compare" or option != "episodes" else "--episodes" in line


@pytest.mark.parametrize("name, argv, said", [
    ("sweep", ["--eval-every", "0"], "--eval-every must be between 1 and --episodes (4), got 0"),
    ("foraging", ["--eval-every", "5"], "--eval-every must be between 1 and --episodes (4), got 5"),
    ("sweep", ["--env", "Switch9-v0"], "--env: unknown ma-gym environment 'Switch9-v0'"),
    ("sweep", ["--env", "simple_spread_v3"], "--env: coma acts with discrete actions"),
    ("learning", ["--env", "Switch9-v0"], "--env: unknown ma-gym environment 'Switch9-v0'"),
    ("keep", ["--env", "Switch9-v0"], "--env: unknown ma-gym environment 'Switch9-v0'"),
    ("keep", ["--env", "PredatorPrey5x5-v0"], "--env: exact planning is implemented for the Switch environments only"),
    ("keep", ["--eval-every", "0"], "--eval-every must be between 1 and --episodes (4), got 0"),
])
def test_a_scripts_env_and_evaluation_period_are_checked_in_one_line(name, argv, said, capsys):
    assert said in refused(name, _with(SCRIPTS[name], **{argv[0][2:]: argv[1]}), capsys)


def _bad_out(kind: str, tmp_path) -> str:
    (tmp_path / "a_file").write_text("not a folder")
    if kind == "dangling":
        (tmp_path / "link").symlink_to(tmp_path / "nowhere" / "x")
        return str(tmp_path / "link")
    return {"file": str(tmp_path / "a_file"), "empty": "", "under a file": str(tmp_path / "a_file" / "out")}[kind]


@pytest.mark.parametrize("name", WITH_OUT)
@pytest.mark.parametrize("kind, said", [
    ("file", "is a file, not a folder"), ("empty", "--out must name a folder, got an empty string"),
    ("dangling", "is a symbolic link to nothing"), ("under a file", "cannot be written: Not a directory"),
])
def test_a_bad_out_is_one_line_before_any_run(name, kind, said, capsys, tmp_path):
    line = refused(name, _with(SCRIPTS[name], out=_bad_out(kind, tmp_path)), capsys)
    assert said in line and "--out" in line
    assert not (tmp_path / "nowhere").exists()  # (a link to nowhere made nothing there)


@pytest.mark.parametrize("name", WITH_OUT)
def test_a_read_only_out_is_one_line(name, capsys, tmp_path, monkeypatch):
    from marl_edu.runs import folder

    def read_only(path):  # (the tests may run as root, who writes anywhere: the probe is what fails)
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(folder, "probe_writable", read_only)
    line = refused(name, _with(SCRIPTS[name], out=str(tmp_path / "results")), capsys)
    assert f"--out {tmp_path / 'results'} cannot be written: Permission denied" in line


@pytest.mark.parametrize("name", WITH_OUT)
def test_two_runs_into_one_folder_are_refused(name, capsys, tmp_path):
    from marl_edu.runs.folder import lock

    held = lock(tmp_path)  # another script (or the command line) writing this folder, not yet ended
    try:
        line = refused(name, _with(SCRIPTS[name], out=str(tmp_path)), capsys)
    finally:
        held.close()
    assert f"--out {tmp_path} is in use by another run that has not ended" in line


def _foraging_record(method: str, /, **changes) -> dict:
    """A run's record as foraging.py writes it (seed 0), with ``changes``."""
    row = {"method": method, "seed": 0, "final": 0.5, "sampled": 0.5, "sampled_starts": "greedy",
           "sampled_gap_se": 0.02, "episodes_to_target": None,
           "steps_to_target": None, "seconds_to_target": None, "episodes": 4, "env_steps": 200, "updates": 1,
           "wall_s": 1.0, "steps_per_s": 200.0, "config": {"n_envs": 8}, "evaluations": [], "raw_steps_per_s": 5000.0}
    return {**row, **changes}


@pytest.mark.parametrize("changes, text, said", [
    ({}, '"final": NaN', "NaN is not a number a results file holds"),
    ({}, '"final": Infinity', "Infinity is not a number a results file holds"),
    ({}, '"final": 1e400', "the number 1e400 is out of range"),  # (json reads it as infinity)
    ({"final": "0.9"}, None, "its 'final' must be float or int, got str 0.9"),
    ({"method": "someone-else"}, None, "is another run's record: its 'method' is someone-else"),
    ({"seed": 7}, None, "is another run's record: its 'seed' is 7"),
    ({"config": None}, None, "its 'config' must be dict, got NoneType None"),
])
def test_foraging_reuse_trusts_only_its_own_record_of_that_run(changes, text, said, capsys, tmp_path):
    import json

    method = next(iter(script("foraging").METHODS))
    record = json.dumps(_foraging_record(method, **changes))
    (tmp_path / method).mkdir()
    (tmp_path / method / "seed0.json").write_text(record if text is None else record.replace('"final": 0.5', text))
    line = refused("foraging", _with(SCRIPTS["foraging"], methods=method, reuse=[], out=str(tmp_path)), capsys)
    assert f"{method}/seed0.json" in line and said in line


def test_foraging_reuse_refuses_another_scripts_record(capsys, tmp_path):
    method = next(iter(script("foraging").METHODS))
    (tmp_path / method).mkdir()
    (tmp_path / method / "seed0.json").write_text('{"env": "Switch2-v0", "method": "vdn-gru", "seed": 0, '
                                                  '"greedy": 8.0}')  # compare.py's
    line = refused("foraging", _with(SCRIPTS["foraging"], methods=method, reuse=[], out=str(tmp_path)), capsys)
    assert "is not a run's record of this benchmark: its 'final' must be float or int, got nothing" in line


def test_foraging_reuse_refuses_a_summary_whose_yardstick_is_not_a_number(capsys, tmp_path):
    method = next(iter(script("foraging").METHODS))
    (tmp_path / "summary.json").write_text('{"raw_steps_per_s": "fast"}')
    line = refused("foraging", _with(SCRIPTS["foraging"], methods=method, reuse=[], out=str(tmp_path)), capsys)
    assert "summary.json is not a run's record of this benchmark: its 'raw_steps_per_s' must be" in line


@pytest.mark.parametrize("change, said", [
    ({"greedy": "NaN"}, "NaN is not a number a results file holds"),
    ({"seed": 3}, "is another run's record: its 'seed' is 3"),
    ({"env": "Switch2-v2"}, "is another run's record: its 'env' is Switch2-v2"),
    ({"episodes": None}, "its 'episodes' must be int, got NoneType None"),
])
def test_compare_reuse_trusts_only_its_own_record_of_that_run(change, said, capsys, tmp_path):
    import json

    method = script("compare").METHODS[0]
    row = {"env": "Switch2-v0", "method": method, "seed": 0, "greedy": 8.0, "sampled": 7.9, "episodes": 4,
           "env_steps": 100, "wall_s": 1.0, "steps_per_s": 100, "updates": 1, "episodes_to_solve": None,
           "seconds_to_solve": None, "evaluations": []}
    text = json.dumps({**row, **change}).replace('"NaN"', "NaN")
    (tmp_path / "Switch2-v0" / method).mkdir(parents=True)
    (tmp_path / "Switch2-v0" / method / "seed0.json").write_text(text)
    line = refused("compare", _with(SCRIPTS["compare"], methods=method, reuse=[], out=str(tmp_path)), capsys)
    assert f"{method}/seed0.json" in line and said in line


def test_every_committed_record_is_one_its_script_trusts():
    from marl_edu.runs.grid import read_record

    compare, foraging = script("compare"), script("foraging")
    records = sorted((ROOT / "results" / "compare").glob("*/*/seed*.json"))
    for path in records:
        read_record(path, compare.RECORD, {"env": path.parent.parent.name, "method": path.parent.name})
    kept = sorted((ROOT / "results" / "foraging").glob("*/seed*.json"))
    for path in kept:
        read_record(path, foraging.RECORD, {"method": path.parent.name, "seed": int(path.stem[4:])})
    read_record(ROOT / "results" / "foraging" / "summary.json", foraging.SUMMARY)
    assert len(records) > 100 and len(kept) > 30


def _particle_row(particle, method: str, seed: int, **changes) -> dict:
    """A finished particle.py run's record of ``method`` with ``seed`` (the default config, a 4-episode budget)."""
    config = json.loads(json.dumps(dataclasses.asdict(particle.method_config(method))))
    return {"method": method, "seed": seed, "team_return": -50.0, "landmark_distance": 1.2,
            "final_landmark_distance": 1.1, "collisions_per_step": 0.05, "agent_returns": [-16.7, -16.7, -16.6],
            "sampled": -49.5, "sampled_starts": "greedy", "sampled_gap_se": 0.1, "sampled_as": "noise",
            "episodes": 16, "env_steps": 400, "updates": 3, "wall_s": 1.0, "steps_per_s": 400.0, "config": config,
            "evaluations": [[16, -50.0]], "sampled_evaluations": [[16, -49.5]], **changes}


def test_particle_reuse_refuses_a_record_paired_otherwise(tmp_path):
    # particle.py's RECORD takes any string for sampled_starts: --reuse also checks it says the noise-free episodes
    particle = script("particle")
    (tmp_path / "maddpg").mkdir()
    for changes, said in (({"sampled_starts": "copies"}, "its 'sampled_starts' is 'copies', expected 'greedy'"),
                          ({"sampled_gap_se": -1.0}, "its 'sampled_gap_se' is -1.0, expected a standard error")):
        (tmp_path / "maddpg" / "seed0.json").write_text(json.dumps(_particle_row(particle, "maddpg", 0, **changes)))
        with pytest.raises(ValueError, match=f"--reuse: .* {said}"):
            particle.kept_record(tmp_path, "maddpg", 0, 16, [])
    (tmp_path / "maddpg" / "seed0.json").write_text(json.dumps(_particle_row(particle, "maddpg", 0)))
    assert particle.kept_record(tmp_path, "maddpg", 0, 16, [])["sampled_gap_se"] == 0.1


def test_particle_keeps_each_run_s_record_and_reuse_trains_only_the_missing_ones(tmp_path, monkeypatch, capsys):
    # particle.py wrote its runs only into summary.json, once every run had finished: a grid of hours cut off lost
    # them all. Each run's record is now written as it ends, and --reuse keeps it
    particle = script("particle")
    given = []

    def grid(function, jobs, *args, **kwargs):
        given.extend(jobs)
        for method, seed, *_ in jobs:
            yield _particle_row(particle, method, seed), {}

    monkeypatch.setattr(particle, "run_grid", grid)
    monkeypatch.setattr(particle, "reference_scores", lambda: {})
    (tmp_path / "maddpg").mkdir()
    (tmp_path / "maddpg" / "seed1.json").write_text(json.dumps(_particle_row(particle, "maddpg", 1, team_return=-40.0)))
    argv = ["--methods", "maddpg", "--seeds", "0", "1", "--episodes", "16", "--jobs", "1", "--runner", "pool",
            "--out", str(tmp_path), "--reuse"]
    assert particle.main(argv) == 0
    assert [job[:2] for job in given] == [("maddpg", 0)]  # seed 1 kept, seed 0 trained
    assert given[0][3]  # the lowest seed writes the method's policy.pt and greedy.gif
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [(run["seed"], run["team_return"]) for run in summary["runs"]] == [(0, -50.0), (1, -40.0)]  # seeds' order
    assert json.loads((tmp_path / "maddpg" / "seed0.json").read_text())["seed"] == 0
    assert "--reuse" not in summary["command"] and "--jobs" not in summary["command"]
    given.clear()
    assert particle.main(argv) == 0 and given == []  # the records it wrote are ones --reuse keeps: nothing to train


@pytest.mark.parametrize("change, said", [
    ({"actor_lr": 1.0}, "its config's 'actor_lr' is 1.0, this run's 0.001"),
    ({"n_envs": None}, "its config's 'n_envs' is nothing, this run's 16"),  # (a field the learner gained since)
    ({"episodes": 4000}, "its 'episodes' is 4000, this run's budget 16"),
    ({"team_return": "NaN"}, "NaN is not a number a results file holds"),
])
def test_particle_reuse_refuses_a_record_of_another_run_in_one_line(change, said, tmp_path, capsys):
    particle = script("particle")
    row = _particle_row(particle, "maddpg", 0)
    for field in ("actor_lr", "n_envs"):
        if field in change:
            value = change.pop(field)
            row["config"] = {k: v for k, v in row["config"].items() if k != field} | ({} if value is None
                                                                                      else {field: value})
    text = json.dumps({**row, **change}).replace('"NaN"', "NaN")
    (tmp_path / "maddpg").mkdir()
    (tmp_path / "maddpg" / "seed0.json").write_text(text)
    line = refused("particle", ["--methods", "maddpg", "--seeds", "0", "--episodes", "16", "--runner", "pool",
                                "--out", str(tmp_path), "--reuse"], capsys)
    assert "maddpg/seed0.json" in line and said in line


def test_particle_reuse_needs_out(capsys):
    assert "--reuse needs --out" in refused("particle", ["--reuse", "--runner", "pool"], capsys)


def test_particle_ctrl_c_is_one_line_and_status_130_with_the_finished_runs_on_disk(tmp_path, monkeypatch, capsys):
    particle = script("particle")

    def stopped_grid(function, jobs, *args, **kwargs):
        method, seed, *_ = jobs[0]
        yield _particle_row(particle, method, seed), {}
        raise KeyboardInterrupt

    monkeypatch.setattr(particle, "run_grid", stopped_grid)
    argv = ["--methods", "maddpg", "--seeds", "0", "1", "--episodes", "16", "--jobs", "1", "--runner", "pool",
            "--out", str(tmp_path)]
    assert particle.main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"interrupted: 1 finished run's files are in {tmp_path}; the runs in progress are lost; the same "
                   f"command with --reuse trains only the runs missing"]
    assert (tmp_path / "maddpg" / "seed0.json").exists() and not (tmp_path / "maddpg" / "seed1.json").exists()
    assert not (tmp_path / "summary.json").exists()


# -- issue 48: the 2M-env-step foraging grid: a budget of env steps, runs resumed across sittings ----------------------

def test_foraging_run_cut_off_and_resumed_from_its_checkpoint_is_the_run_straight_through(tmp_path, monkeypatch):
    from marl_edu.training import loops, resume

    foraging = script("foraging")
    pairs = ["n_envs=2", "batch_episodes=2", "updates_per_collection=1", "buffer_episodes=8", "hidden=8"]  # (tiny)
    job = lambda saving: ("iql", 0, None, 2, False, pairs, 2, 300, saving)  # noqa: E731  (300 env steps, 2 final)
    monkeypatch.setattr(loops, "SAMPLED_EPISODES", 2)  # (cheaper evaluations: 2 sampled episodes, not 10)
    straight, _ = foraging.run_one(job(None))
    assert straight["budget"] == {"env_steps": 300} and 300 <= straight["env_steps"] < 400
    assert len(straight["evaluations"]) >= 2
    # its sampled figure played its greedy figure's 2 episodes, and the record says so (what --reuse requires)
    assert straight["sampled_starts"] == "greedy" and straight["sampled_gap_se"] >= 0

    class CutOff(resume.RunCheckpoint):  # the sitting ends at the run's second save
        def save(self, result, parts):
            if self.saves == 1:
                self.request_stop()
            super().save(result, parts)

    real = foraging.seed_checkpoint
    monkeypatch.setattr(foraging, "seed_checkpoint", lambda *args: setattr(checkpoint := real(*args), "__class__",
                                                                            CutOff) or checkpoint)
    saving = (str(tmp_path / "seed0.run.pt"), 1e-9, True)  # (saved at every collection's end)
    with pytest.raises(resume.TrainingInterrupted):
        foraging.run_one(job(saving))
    cut = resume.load_run_state(saving[0])[1]["result"]
    assert 0 < cut["env_steps"] < 300 and cut["evaluations"]  # cut off part way, after an evaluation
    monkeypatch.setattr(foraging, "seed_checkpoint", real)
    resumed, _ = foraging.run_one(job(saving))  # the next sitting continues it
    clock = ("wall_s", "steps_per_s", "seconds_to_target")
    assert {k: v for k, v in resumed.items() if k not in clock} == {k: v for k, v in straight.items() if k not in clock}
    with pytest.raises(ValueError, match="was saved by another run"):  # another budget's file is never resumed
        foraging.run_one(("iql", 0, None, 2, False, pairs, 2, 400, saving))


def test_foraging_reuse_keeps_a_record_of_the_same_env_step_budget_only(tmp_path):
    foraging = script("foraging")
    config = {"n_envs": 8}
    for seed, budget in enumerate([{"env_steps": 2000}, {"env_steps": 1000}, None]):  # None: recorded before budgets
        record = _foraging_record("vdn", seed=seed, config=config, **({} if budget is None else {"budget": budget}))
        (tmp_path / "vdn").mkdir(exist_ok=True)
        (tmp_path / "vdn" / f"seed{seed}.json").write_text(__import__("json").dumps(record))
    jobs = [("vdn", 0), ("vdn", 1), ("vdn", 2)]
    assert set(foraging.kept_runs(tmp_path, jobs, None, {"vdn": config}, env_steps=2000)) == {("vdn", 0)}
    assert set(foraging.kept_runs(tmp_path, jobs, 4, {"vdn": config})) == {("vdn", 2)}  # its 4 episodes


def test_foraging_reuse_refuses_a_record_made_before_the_pairing(tmp_path):
    # Level-Based Foraging's episodes start at random: a record without sampled_starts played its sampled figure on
    # other episodes than its greedy one, and --reuse must not keep it beside today's runs; nor one paired otherwise
    foraging = script("foraging")
    (tmp_path / "vdn").mkdir()
    unpaired = {key: value for key, value in _foraging_record("vdn").items()
                if key not in ("sampled_starts", "sampled_gap_se")}
    for record, said in ((unpaired, "vdn/seed0.json was recorded before the sampled figures played the greedy ones' "
                                    "episodes"),
                         (_foraging_record("vdn", sampled_gap_se=None), "its 'sampled_gap_se' is None, expected a "
                                                                        "standard error")):
        (tmp_path / "vdn" / "seed0.json").write_text(__import__("json").dumps(record))
        with pytest.raises(ValueError, match=f"--reuse: .*{said}"):
            foraging.kept_runs(tmp_path, [("vdn", 0)], 4, {"vdn": {"n_envs": 8}})


def test_foraging_reuse_writes_a_kept_record_back_byte_for_byte(tmp_path):
    # every sitting writes the kept records again (one without its own yardstick gains the invocation's); one with
    # its own must come back as it was, its keys in their order, or each sitting would change committed files
    import json
    foraging = script("foraging")
    record = _foraging_record("vdn", budget={"env_steps": 2000})  # (raw_steps_per_s last, as run_one writes it)
    (tmp_path / "vdn").mkdir()
    (tmp_path / "vdn" / "seed0.json").write_text(json.dumps(record) + "\n")
    kept = foraging.kept_runs(tmp_path, [("vdn", 0)], None, {"vdn": {"n_envs": 8}}, env_steps=2000)
    assert json.dumps(kept["vdn", 0]) + "\n" == (tmp_path / "vdn" / "seed0.json").read_text()


@pytest.mark.parametrize("argv, said", [
    (["--env-steps", "1000"], "give --episodes or --env-steps, not both"),
    (["--env-steps", "0", "--episodes"], "--env-steps must be between 1 and 100,000,000, got 0"),
    (["--checkpoint-every", "0"], "--checkpoint-every must be a positive number of seconds, got 0.0"),
    (["--checkpoint-dir", "elsewhere"], "--checkpoint-dir is where --checkpoint-every saves the runs in progress: "
                                        "give both"),
])
def test_foraging_budget_and_checkpoint_options_are_checked_in_one_line(argv, said, capsys, tmp_path):
    base = _with(SCRIPTS["foraging"], out=str(tmp_path))
    if argv[-1] == "--episodes":  # (--env-steps alone: the base's --episodes left out)
        argv, base = argv[:-1], [arg for k, arg in enumerate(base) if "--episodes" not in base[max(k - 1, 0):k + 1]]
    assert said in refused("foraging", [*base, *argv], capsys)


def _foraging_jobs(foraging, monkeypatch, argv: list[str]) -> list[tuple]:
    """The jobs ``foraging.main(argv)`` hands its grid (one at a time, on the pool), each answered with a tiny record
    instead of training; main must end with status 0."""
    todo = []

    def fake_grid(function, jobs, *args, **kwargs):
        for job in jobs:
            todo.append(job)
            yield _foraging_record(job[0], seed=job[1], evaluations=[[2, 100, 0.1]]), {}

    monkeypatch.setattr(foraging, "run_grid", fake_grid)
    monkeypatch.setattr(foraging, "raw_speed", lambda: 1000.0)
    monkeypatch.setattr(foraging, "figure", lambda rows, path: path)
    assert foraging.main([*argv, "--jobs", "1", "--runner", "pool"]) == 0
    return todo


def test_foraging_epsilon_steps_end_the_decay_at_that_many_env_steps(tmp_path, monkeypatch):
    # --epsilon-steps 300000 with --env-steps 2000000: epsilon_fraction 300,000 / 2,000,000 = 0.15 for the learners
    # that decay epsilon (the committed 1M runs' decay ended at about 298,000 env steps: 30% of 20,000 episodes)
    from marl_edu.training.loops import exploration

    foraging = script("foraging")
    assert foraging.epsilon_pairs("vdn", 300_000, 2_000_000) == ["epsilon_fraction=0.15"]
    assert foraging.epsilon_pairs("mappo", 300_000, 2_000_000) == []  # (its entropy schedule: anneal_fraction)
    assert foraging.epsilon_pairs("vdn", None, 2_000_000) == []
    for steps, budget in [(0, 2_000_000), (2_000_001, 2_000_000), (300_000, None)]:
        with pytest.raises(ValueError, match="--epsilon-steps must be between 1 and --env-steps"):
            foraging.epsilon_pairs("iql", steps, budget)
    config = foraging.method_config("iql", ["epsilon_start=1.0", "epsilon_end=0.01",
                                            *foraging.epsilon_pairs("iql", 300_000, 2_000_000)])
    # 1.0 at the start, halfway down at 150,000 env steps: 1.0 + (0.01 - 1.0) x 150,000 / 300,000 = 0.505, then 0.01
    for done, epsilon in [(0, 1.0), (150_000, 0.505), (300_000, 0.01), (1_000_000, 0.01)]:
        assert exploration("episode_replay", config, done, 2_000_000)["epsilon"] == pytest.approx(epsilon, abs=1e-12)
    assert exploration("episode_replay", config, 299_000, 2_000_000)["epsilon"] > 0.01
    # through the command line: the value-based runs get the fraction, the on-policy ones their own config
    todo = _foraging_jobs(foraging, monkeypatch, ["--methods", "qmix", "ippo", "--seeds", "0", "--env-steps", "2000000",
                                                  "--epsilon-steps", "300000", "--out", str(tmp_path)])
    assert {job[0]: job[5] for job in todo} == {"qmix": ["epsilon_fraction=0.15"], "ippo": []}
    assert foraging.method_config("qmix", todo[0][5]).epsilon_fraction == 0.15


def test_foraging_textbook_mean_at_interpolates_each_seed_between_its_evaluations():
    # two seeds evaluated at 100,000 and 200,000 env steps: at 150,000 seed a reads (0.2 + 0.6) / 2 = 0.4 and seed b
    # (0.0 + 1.0) / 2 = 0.5, their mean (0.4 + 0.5) / 2 = 0.45; at 100,000 exactly: (0.2 + 0.0) / 2 = 0.1
    foraging = script("foraging")
    runs = {"iql": {"a": [[100_000, 0.2], [200_000, 0.6]], "b": [[100_000, 0.0], [200_000, 1.0]]}}
    assert foraging.textbook_mean_at("iql", 150_000, runs) == pytest.approx(0.45, abs=1e-12)
    assert foraging.textbook_mean_at("iql", 100_000, runs) == pytest.approx(0.1, abs=1e-12)
    for outside in (99_999, 200_001):  # (before its first evaluation or after its last: not measured)
        with pytest.raises(ValueError, match=f"its evaluations span 100,000-200,000 env steps, not {outside:,}"):
            foraging.textbook_mean_at("iql", outside, runs)
    with pytest.raises(ValueError, match="the textbook publishes no run of 'mappo'"):
        foraging.textbook_mean_at("mappo", 150_000, runs)
    # the published file at 2M: each seed's evaluations at about 1,900,400 and 2,000,400 lie within 0.3 of each other
    # on every IDQN seed, so the mean is within a little of the mean of the evaluations at about 2,000,400:
    # (0.7507143 + 0.65821433 + 0.6735714 + 0.80535716 + 0.32184523) / 5 = 3.20970242 / 5 = 0.6419
    assert foraging.textbook_mean_at("iql", 2_000_000) == pytest.approx(0.6419, abs=0.002)


def test_foraging_textbook_firsts_count_as_ours_do():
    # each seed's first evaluation at 0.8 or above (0.799999 with the float margin): IDQN seeds 0-4 at 2,200,408,
    # 2,300,514, 2,300,453, 2,000,371 and 2,600,701; QMIX none; a seed of 0.8 exactly counts (our runs' 0.8 does)
    foraging = script("foraging")
    assert foraging.textbook_firsts("iql") == [2_200_408, 2_300_514, 2_300_453, 2_000_371, 2_600_701]
    assert foraging.textbook_firsts("qmix") == [None] * 5
    runs = {"vdn": {"a": [[1, 0.5], [2, 0.8], [3, 0.9]], "b": [[1, 0.79], [2, 0.7]]}}
    assert foraging.textbook_firsts("vdn", runs) == [2, None]


def _runs_2m(method, seeds_steps_finals, env_steps=2_000_050, budget=2_000_000):
    return [_foraging_record(method, seed=seed, evaluations=[[2, 100, 0.1]]) | {
        "steps_to_target": steps, "final": final, "sampled": sampled, "env_steps": env_steps,
        "budget": {"env_steps": budget}} for seed, steps, final, sampled in seeds_steps_finals]


def test_foraging_beside_the_textbook_says_the_bar_and_the_means_at_the_budget():
    # two IQL seeds of a 2M grid: reached 0.8 at 650,000 and 1,100,000 env steps; greedy finals 0.9 and 0.7, sampled
    # (epsilon 0.05, as the textbook evaluates) 0.88 and 0.72: means 0.80 and 0.80. The bar: half the env steps of the
    # textbook's earliest first 0.8 (IDQN seed 3, 2,000,371): 1,000,186, so one seed of two by 1.0M. The textbook's
    # IDQN at 2.0M: 0.64 (above), so ours ahead by 0.80 - 0.64 = +0.16
    foraging = script("foraging")
    rows = _runs_2m("iql", [(0, 650_000, 0.9, 0.88), (1, 1_100_000, 0.7, 0.72)])
    rows += _runs_2m("mappo", [(0, None, 0.5, 0.6)])
    assert foraging.beside_textbook(rows) == [
        "iql: reached 0.8 on 2 of 2 seeds (650k-1100k env steps), 1 of 2 by 1.0M (half the env steps of the "
        "textbook's earliest first 0.8; its IDQN's seeds first reached it at 2.0-2.6M); at 2.0M the final mean is "
        "0.80 greedy and 0.80 sampled, the textbook's IDQN 0.64 (+0.16 sampled: both epsilon 0.05)",
        "mappo: reached 0.8 on 0 of 1 seed; at 2.0M the final mean is 0.50 greedy and 0.60 sampled (no textbook run)"]


def test_foraging_beside_the_textbook_does_not_judge_the_bar_past_the_runs_end():
    # 1M runs (a budget of episodes: ending at 947k and 990k), neither at 0.8: whether they would have reached it by
    # 1.0M is not measured, so neither counts as missing it; the textbook's mean is read where the shorter ends
    foraging = script("foraging")
    rows = [_foraging_record("vdn", seed=seed, evaluations=[[2, 100, 0.1]]) | {"env_steps": steps, "sampled": 0.5}
            for seed, steps in [(0, 947_000), (1, 990_000)]]
    line = foraging.beside_textbook(rows)[0]
    assert line.startswith("vdn: reached 0.8 on 0 of 2 seeds, 0 of 2 by 1.0M (2 ended before it; half the env steps")
    assert "at 947k (where the shortest run ends) the final mean is 0.50 greedy and 0.50 sampled" in line
    # QMIX: the textbook's never reached 0.8, so there is no half of it to judge by
    qmix = foraging.beside_textbook(_runs_2m("qmix", [(0, 1_500_000, 0.85, 0.8)]))[0]
    assert qmix.startswith("qmix: reached 0.8 on 1 of 1 seed (1500k env steps); the textbook's QMIX never did; at 2.0M")
    # runs shorter than the textbook's first evaluation (100k): its mean there is not measured
    short = foraging.beside_textbook([_foraging_record("vdn", env_steps=30_000, sampled=0.5)])[0]
    assert short.endswith("at 30k (where the shortest run ends) the final mean is 0.50 greedy and 0.50 sampled "
                          "(the textbook's runs have no evaluation there)")
    # runs of a grid with two budgets: where the shortest ends, as with episodes
    mixed = _runs_2m("iql", [(0, None, 0.5, 0.5)]) + _runs_2m("iql", [(1, None, 0.5, 0.5)], 1_000_050, 1_000_000)
    assert "at 1000k (where the shortest run ends)" in foraging.beside_textbook(mixed)[0]


def test_foraging_set_with_a_method_before_the_field_changes_that_method_only(tmp_path, monkeypatch):
    # the 2M grid trains IQL at the learning rate tuned for it on this task beside the others at their defaults:
    # "iql.lr=2e-4" is IQL's alone, "lr=..." every method's, in the order given (a field set twice: its last value)
    foraging = script("foraging")
    assert foraging.method_pairs(["iql.lr=2e-4", "gamma=0.9", "vdn.lr=1e-3", "iql.lr=3e-4"],
                                 ["iql", "vdn", "qmix"]) == {"iql": ["lr=2e-4", "gamma=0.9", "lr=3e-4"],
                                                             "vdn": ["gamma=0.9", "lr=1e-3"],
                                                             "qmix": ["gamma=0.9"]}
    assert foraging.method_config("iql", ["lr=2e-4", "lr=3e-4"]).lr == 3e-4
    todo = _foraging_jobs(foraging, monkeypatch, ["--methods", "iql", "qmix", "mappo", "--seeds", "0", "--env-steps",
                                                  "2000000", "--epsilon-steps", "300000", "--set", "iql.lr=2e-4",
                                                  "--out", str(tmp_path)])
    assert {job[0]: job[5] for job in todo} == {"iql": ["lr=2e-4", "epsilon_fraction=0.15"],
                                                "qmix": ["epsilon_fraction=0.15"], "mappo": []}
    assert json.loads((tmp_path / "summary.json").read_text())["command"].count("--set iql.lr=2e-4") == 1


@pytest.mark.parametrize("pairs, said", [
    (["sac.lr=1e-3"], "--set sac.lr=1e-3: no method 'sac' among --methods (iql, vdn)"),
    (["qmix.lr=1e-3"], "--set qmix.lr=1e-3: no method 'qmix' among --methods (iql, vdn)"),
    (["iql.lr"], "--set 'iql.lr' is not [METHOD.]FIELD=VALUE"),
    (["lr0.5"], "--set 'lr0.5' is not [METHOD.]FIELD=VALUE"),  # (no method 'lr0')
    (["lr=", "0.0002"], "--set 'lr=': lr takes a finite number, got ''"),  # (a space after '=' splits the setting)
    (["iql.no_such_field=1"], "ValueDecompositionConfig has no field 'no_such_field'"),
    (["vdn.lr=-1"], "--set vdn.lr=-1: lr must be a positive number, got -1.0"),
    (["lr=-1"], "--set lr=-1: lr must be a positive number, got -1.0"),
    (["batch=4"], "--set 'batch=4': ValueDecompositionConfig has no field 'batch'"),
    (["iql.epsilon_fraction=0.5", "--epsilon-steps", "10"], "give --epsilon-steps or --set epsilon_fraction=..., "
                                                            "not both"),
])
def test_foraging_set_for_one_method_is_checked_in_one_line(pairs, said, capsys, tmp_path):
    base = ["--methods", "iql", "vdn", "--seeds", "100", "--env-steps", "100", "--jobs", "1", "--runner", "pool",
            "--out", str(tmp_path)]
    options = [pair for pair in pairs if pair.startswith("--") or pair.isdigit()]
    line = refused("foraging", [*base, *options, "--set", *[p for p in pairs if p not in options]], capsys)
    assert said in line
    assert not any(tmp_path.iterdir())  # nothing written


def test_foraging_saves_runs_in_progress_in_the_checkpoint_dir_and_leaves_other_runs_files(tmp_path, monkeypatch,
                                                                                           capsys):
    # a grid over sittings in fresh clones keeps its runs in progress outside the checkout: --checkpoint-dir
    from marl_edu.training import resume
    from marl_edu.training.checkpoints import save_checkpoint

    foraging = script("foraging")
    out, keep = tmp_path / "out", tmp_path / "keep"
    base = ["--methods", "vdn", "--seeds", "3", "--env-steps", "100", "--checkpoint-every", "300", "--out", str(out)]
    todo = _foraging_jobs(foraging, monkeypatch, [*base, "--checkpoint-dir", str(keep)])
    assert todo[0][8] == (str(keep / "vdn" / "seed3.run.pt"), 300.0, False)  # (path, every seconds, resuming)
    command = json.loads((out / "summary.json").read_text())["command"]
    assert "checkpoint" not in command and str(keep) not in command  # (where runs were saved changes no result)
    todo = _foraging_jobs(foraging, monkeypatch, [*base, "--out", str(tmp_path / "out2")])
    assert todo[0][8][0] == str(tmp_path / "out2" / "vdn" / "seed3.run.pt")  # without it: OUT's, as before
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # --checkpoint-dir=~/...: no shell expands it, the script does
    todo = _foraging_jobs(foraging, monkeypatch, [*base, "--checkpoint-dir=~/runs", "--out", str(tmp_path / "o3")])
    assert todo[0][8][0] == str(tmp_path / "home" / "runs" / "vdn" / "seed3.run.pt")

    # a file already there is never trained over: without --reuse it is refused, and with --reuse it is continued
    # only by its own run (the next test); a record kept by --reuse removes its run's leftover, not another run's
    (keep / "vdn").mkdir(parents=True)
    saved = keep / "vdn" / "seed3.run.pt"
    saved.write_bytes(b"")
    capsys.readouterr()  # (the invocations above printed their tables)
    said = refused("foraging", [*base, "--checkpoint-dir", str(keep), "--jobs", "1", "--runner", "pool"], capsys)
    assert f"{saved} holds a run in progress: give --reuse to continue it, or delete it" in said
    other = foraging.checkpoint_header("vdn", 3, {"env_steps": 2_000_000}, 200, {})  # the 2M grid's run, say
    save_checkpoint(saved, resume.KIND, foraging.ENV_ID, other, {})
    (out / "vdn" / "seed3.json").write_text(json.dumps(_foraging_record("vdn", seed=3, budget={"env_steps": 100},
                                                                        config=json.loads(json.dumps(dataclasses.asdict(
                                                                            foraging.method_config("vdn", [])))))))
    _foraging_jobs(foraging, monkeypatch, [*base, "--checkpoint-dir", str(keep), "--reuse"])
    assert saved.is_file()  # another experiment's run in progress: kept
    saved.write_bytes(b"not a checkpoint")  # nor a file that is no run in progress, after the runs have trained
    _foraging_jobs(foraging, monkeypatch, [*base, "--checkpoint-dir", str(keep), "--reuse"])
    assert saved.read_bytes() == b"not a checkpoint"
    mine = foraging.checkpoint_header("vdn", 3, {"env_steps": 100}, 200,
                                      dataclasses.asdict(foraging.method_config("vdn", [])))
    save_checkpoint(saved, resume.KIND, foraging.ENV_ID, mine, {})
    _foraging_jobs(foraging, monkeypatch, [*base, "--checkpoint-dir", str(keep), "--reuse"])
    assert not saved.exists()  # this run's own leftover (its record is written): removed


@pytest.mark.parametrize("where, said", [
    ("", "--checkpoint-dir must name a folder, got an empty string"),
    ("a-file", "is a file, not a folder"),
])
def test_foraging_checkpoint_dir_is_checked_in_one_line(where, said, capsys, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    argv = ["--methods", "vdn", "--seeds", "3", "--env-steps", "100", "--checkpoint-every", "300", "--out",
            str(tmp_path / "out"), "--jobs", "1", "--runner", "pool",
            f"--checkpoint-dir={tmp_path / where if where else ''}"]
    assert said in refused("foraging", argv, capsys)


def test_foraging_reuse_refuses_a_run_in_progress_saved_by_another_run_in_one_line(tmp_path, capsys):
    # --reuse continues a run in progress only if its header is this run's: another budget is named, not resumed
    from marl_edu.training import resume
    from marl_edu.training.checkpoints import save_checkpoint

    foraging = script("foraging")
    keep = tmp_path / "keep"
    header = foraging.checkpoint_header("vdn", 3, {"env_steps": 200}, 200,
                                        dataclasses.asdict(foraging.method_config("vdn", [])))
    path = save_checkpoint(keep / "vdn" / "seed3.run.pt", resume.KIND, foraging.ENV_ID, header, {})
    argv = ["--methods", "vdn", "--seeds", "3", "--env-steps", "100", "--checkpoint-every", "300", "--reuse",
            "--checkpoint-dir", str(keep), "--out", str(tmp_path / "out"), "--jobs", "1", "--runner", "pool"]
    said = refused("foraging", argv, capsys)
    assert (f"--reuse: {path} holds another run in progress (another budget, config, evaluation period or "
            f"start-state rule)") in said
    assert path.is_file()  # nothing of the user's is lost
    # a run saved before the start states followed from the seed alone (its header has no start_states) is another
    # run too: continued under today's env, its first and second halves would meet different kinds of start states
    mine = foraging.checkpoint_header("vdn", 3, {"env_steps": 100}, 200,
                                      dataclasses.asdict(foraging.method_config("vdn", [])))
    assert foraging.own_progress(save_checkpoint(path, resume.KIND, foraging.ENV_ID, mine, {}), mine)
    before_the_fix = {key: value for key, value in mine.items() if key != "start_states"}
    assert not foraging.own_progress(save_checkpoint(path, resume.KIND, foraging.ENV_ID, before_the_fix, {}), mine)
    assert f"--reuse: {path} holds another run in progress" in refused("foraging", argv, capsys)


def test_foraging_keeps_the_lowest_recorded_seeds_policy_over_sittings(tmp_path, monkeypatch):
    # the 2M grid is committed per seed over sittings; one given other --seeds must not overwrite the policy of a
    # lower seed already recorded (tests/test_results.py replays the kept policy against the lowest seed's record)
    foraging = script("foraging")
    (tmp_path / "vdn").mkdir()
    (tmp_path / "vdn" / "seed1.json").write_text("{}")
    (tmp_path / "vdn" / "seed0.run.pt").write_bytes(b"")  # (a run in progress is no record)
    assert grid.keeps_files(tmp_path / "vdn", 0, [0, 1, 2])  # no lower record: the first seed keeps them
    assert not grid.keeps_files(tmp_path / "vdn", 2, [2, 3])  # seed 1's record is there: it keeps its own
    assert grid.keeps_files(tmp_path / "iql", 2, [2, 3])  # another method's folder: none recorded
    assert not grid.keeps_files(tmp_path / "iql", 3, [2, 3])  # not the invocation's first seed
    todo = _foraging_jobs(foraging, monkeypatch, ["--methods", "vdn", "iql", "--seeds", "2", "3", "--env-steps", "100",
                                                  "--out", str(tmp_path)])
    assert {(job[0], job[1]): job[4] for job in todo} == {("vdn", 2): False, ("vdn", 3): False, ("iql", 2): True,
                                                          ("iql", 3): False}


@pytest.mark.parametrize("argv, said", [
    (["--episodes", "4", "--epsilon-steps", "10"], "--epsilon-steps needs a budget of env steps (--env-steps)"),
    (["--env-steps", "100", "--epsilon-steps", "101"], "--epsilon-steps must be between 1 and --env-steps (100), "
                                                       "got 101"),
    (["--env-steps", "100", "--epsilon-steps", "10", "--set", "epsilon_fraction=0.5"],
     "give --epsilon-steps or --set epsilon_fraction=..., not both"),
])
def test_foraging_epsilon_steps_are_checked_in_one_line(argv, said, capsys, tmp_path):
    base = ["--seeds", "0", "--jobs", "1", "--runner", "pool", "--out", str(tmp_path)]
    assert said in refused("foraging", [*base, *argv], capsys)


def test_foraging_writes_each_runs_files_as_it_ends(tmp_path, monkeypatch):
    # a grid that runs for hours must leave each finished run on disk at once (a list of the runs waited for them all)
    foraging = script("foraging")
    written = []

    def grid(function, todo, *args, **kwargs):
        for method, seed, *_ in todo:
            written.append(sorted(path.name for path in tmp_path.glob("*/seed*.json")))  # before this run ends
            yield _foraging_record(method, seed=seed, evaluations=[[2, 100, 0.1]]), {}

    monkeypatch.setattr(foraging, "run_grid", grid)
    monkeypatch.setattr(foraging, "raw_speed", lambda: 1000.0)
    monkeypatch.setattr(foraging, "figure", lambda rows, path: path)
    assert foraging.main(["--methods", "iql", "--seeds", "0", "1", "--episodes", "4", "--eval-every", "2",
                          "--jobs", "1", "--runner", "pool", "--out", str(tmp_path)]) == 0
    assert written == [[], ["seed0.json"]]  # seed 0's record was on disk while seed 1 still ran


def test_foraging_docstrings_speeds_are_the_committed_runs():
    # the 2M grid's cost estimate reads each learner's speed as a ratio to raw lbforaging timed beside it
    import json

    foraging = script("foraging")
    said = " ".join(foraging.__doc__.split())
    for method in ("iql", "vdn", "qmix", "mappo", "ippo"):
        folder = ROOT / "results" / "foraging" / method
        runs = [json.loads(path.read_text()) for path in sorted(folder.glob("seed*.json"))]
        ratios = [run["steps_per_s"] / run["raw_steps_per_s"] for run in runs]
        low, high = f"{min(ratios):.2f}", f"{max(ratios):.2f}"
        assert f"{method.upper()} {low if low == high else f'{low}-{high}'}" in said, method
    # IQL's and VDN's slowest run is their seed 0's (the machine shared after its yardstick was timed), the others'
    others = []
    for method in ("iql", "vdn"):
        runs = {int(path.stem[4:]): json.loads(path.read_text())
                for path in (ROOT / "results" / "foraging" / method).glob("seed*.json")}
        ratios = {seed: run["steps_per_s"] / run["raw_steps_per_s"] for seed, run in runs.items()}  # seed -> ratio
        assert min(ratios, key=ratios.get) == 0 and f"{ratios[0]:.2f} are their seed 0" in said, method
        others += [ratio for seed, ratio in ratios.items() if seed != 0]
    assert f"their other seeds {min(others):.2f}-{max(others):.2f}" in said


def test_foraging_docstrings_exploration_ends_are_the_committed_runs():
    # the 1M runs' schedules ran over a fraction of 20,000 episodes: the env steps at that episode (each record's
    # evaluations, (episode, env steps, greedy), read between them), over the seeds, to the thousand
    import json

    import numpy as np

    foraging = script("foraging")
    said = " ".join(foraging.__doc__.split())
    for methods, field, fraction in [(("iql", "vdn", "qmix"), "epsilon_fraction", 0.3),
                                     (("mappo", "ippo"), "anneal_fraction", 0.6)]:
        ends = []
        for method in methods:
            for path in (ROOT / "results" / "foraging" / method).glob("seed*.json"):
                run = json.loads(path.read_text())
                assert (run["config"][field], run["episodes"]) == (fraction, 20_000), path
                episodes, steps, _ = np.array(run["evaluations"], dtype=float).T  # (evals,) each
                ends.append(np.interp(fraction * run["episodes"], episodes, steps))
        assert f"{round(min(ends), -3):,.0f}-{round(max(ends), -3):,.0f}" in said, methods
    assert "--epsilon-steps 300000" in said and "30% of 20,000 episodes" in said and "60% of the budget" in said


# -- benchmarks/foraging_food.py: which food a kept Level-Based Foraging policy loads --------------------------------

def test_food_and_levels_read_one_observation_by_hand():
    food = script("foraging_food")
    # 3 food slots then 2 agents, [y, x, level] each: food at (1, 3) level 2 and (4, 6) level 1, an empty slot;
    # the observer at (5, 4) level 1, the other agent at (2, 0) level 2
    obs = np.array([1, 3, 2, 4, 6, 1, -1, -1, 0, 5, 4, 1, 2, 0, 2], dtype=np.float32)
    assert food.food_and_levels(obs, n_food=3, n_agents=2) == ({(1, 3): 2, (4, 6): 1}, [1, 2])
    assert food.food_kind(2, [1, 2]) == "alone"  # the level-2 agent loads it by itself
    assert food.food_kind(2, [1, 1]) == "together"  # 1 + 1: only both
    with pytest.raises(ValueError, match=r"3 food and 2 agents has 15 numbers, got shape \(14,\)"):
        food.food_and_levels(obs[:14], n_food=3, n_agents=2)


class _ScriptedForaging:
    """Two agents of level 1, a level-1 food at (1, 1) and a level-2 one at (5, 5); the first step loads the first
    food, pays each agent 0.25 (scripted: only their sum is counted) and ends the episode."""
    max_food, n_agents, env_id = 2, 2, "Foraging-8x8-2p-2f-v3"
    START = np.array([1, 1, 1, 5, 5, 2, 0, 0, 1, 7, 7, 1], dtype=np.float32)
    END = np.array([5, 5, 2, -1, -1, 0, 0, 0, 1, 7, 7, 1], dtype=np.float32)  # the slot moved up: (5, 5) is first

    def reset(self):
        return np.stack([self.START, self.START])  # (N, O)

    def step(self, actions):
        done = np.ones(2, bool)  # (N,) every food loaded: terminated
        return (np.stack([self.END, self.END]), np.array([0.25, 0.25], np.float32), done,
                {"terminated": done, "truncated": ~done, "step": 1})


def test_loaded_by_kind_counts_each_food_by_who_can_load_it():
    food = script("foraging_food")
    # 3 episodes: each starts with one "alone" food (level 1 <= the agents' highest level, 1) and one "together"
    # food (level 2 > 1) and loads the first: alone 3 of 3, together 0 of 3; team return 0.25 + 0.25 = 0.5 each
    # the level-2 food is still on the field after each: 3 episodes end with food left; none is stuck (one step, under
    # the 20 a stuck ending needs); both agents chose NONE (action 0) at their one step: idle 1.0 each
    counts = food.loaded_by_kind(_ScriptedForaging(), lambda: (lambda obs: np.zeros(2, np.int64)), episodes=3)
    assert counts == {"alone": [3, 3], "together": [0, 3], "team_return": 0.5, "left": 3, "stuck": 0,
                      "idle": [1.0, 1.0]}


def test_stuck_agents_stand_on_at_most_two_joint_cells_over_the_last_twenty_steps():
    food = script("foraging_food")
    still = np.zeros((21, 2, 2))  # (T+1, N, 2) 20 steps, both agents on (0, 0) throughout: one joint cell
    assert food.stuck(still)
    shuttle = still.copy()
    shuttle[1::2, 0] = [0, 1]  # agent 0 steps east and back, again and again: two joint cells
    assert food.stuck(shuttle)
    walk = shuttle.copy()
    walk[-1, 1] = [1, 0]  # agent 1's last step south makes a third joint cell
    assert not food.stuck(walk)
    # ten joint cells, then the shuttle: only the last 20 steps count
    assert food.stuck(np.concatenate([np.arange(10).repeat(4).reshape(10, 2, 2) + 5, shuttle]))
    assert not food.stuck(still[:20])  # 19 steps: too short an episode to call stuck
    with pytest.raises(ValueError, match=r"cells must be \(T\+1, N, 2\).*\(21, 2\)"):
        food.stuck(still[..., 0])


def test_loaded_by_kind_on_the_real_task_with_agents_that_never_act():
    food = script("foraging_food")
    from marl_edu.envs.make import make_env

    env = make_env("Foraging-8x8-2p-3f-v3", seed=0)
    counts = food.loaded_by_kind(env, lambda: (lambda obs: np.zeros(2, np.int64)), episodes=4)
    # NONE for 50 steps loads nothing: 0 of the 3 food of each of 4 episodes, 12 in all, split by the levels drawn
    assert counts["alone"][0] == counts["together"][0] == 0 and counts["team_return"] == 0.0
    # every episode ends with its food on the field and both agents on their start cells for all 50 steps: stuck
    assert (counts["left"], counts["stuck"], counts["idle"]) == (4, 4, [1.0, 1.0])
    assert counts["alone"][1] + counts["together"][1] == 4 * 3
    # the first episode as drawn (seed 0): agents of levels 1 and 1, food of levels 2, 1 and 2 (ForagingEnv's
    # docstring layout): one item one agent loads alone, two that need both
    first = food.loaded_by_kind(make_env("Foraging-8x8-2p-3f-v3", seed=0), lambda: (lambda obs: np.zeros(2, np.int64)),
                                episodes=1)
    assert first == {"alone": [0, 1], "together": [0, 2], "team_return": 0.0, "left": 1, "stuck": 1,
                     "idle": [1.0, 1.0]}


def test_foraging_food_refuses_a_folder_without_kept_policies_in_one_line(capsys, tmp_path):
    (tmp_path / "vdn").mkdir()
    assert f"{tmp_path} holds no kept policy (METHOD/policy.pt) of any method" in refused(
        "foraging_food", ["--out", str(tmp_path)], capsys)
    (tmp_path / "vdn" / "policy.pt").write_bytes(b"")
    assert f"{tmp_path} holds no kept policy (METHOD/policy.pt) of iql" in refused(
        "foraging_food", ["--out", str(tmp_path), "--methods", "vdn", "iql"], capsys)
    assert f"{tmp_path / 'vdn'} holds a policy.pt but no seed<S>.json record: whose policy is it?" in refused(
        "foraging_food", ["--out", str(tmp_path)], capsys)


def test_foraging_value_range_writes_one_value_when_the_ends_read_the_same():
    foraging = script("foraging")
    two = lambda v: f"{v:.2f}"  # noqa: E731
    assert foraging.value_range([0.03, 0.031, 0.029], two) == "0.03"  # (0.029 and 0.031 both read 0.03)
    assert foraging.value_range([0.49, 0.27, 0.36], two) == "0.27-0.49"
    assert foraging.value_range([], two) == "-"


@pytest.mark.parametrize("name, folder", [("compare", "Switch2-v0/coma-gru"), ("fresh", "Switch2-v0/coma-gru")])
def test_a_grid_stopped_with_ctrl_c_is_one_line_and_status_130_with_its_finished_runs_on_disk(name, folder, tmp_path,
                                                                                             monkeypatch, capsys):
    # compare.py and fresh.py printed a traceback from inside the runner on Ctrl-C; now one line, exit status 130,
    # the run that ended before it on disk and no table written from a part of the grid
    module = script(name)
    row = {"env": "Switch2-v0", "method": "coma-gru", "seed": 0, "greedy": 8.0, "episodes_to_solve": 2,
           "seconds_to_solve": 1.0, "wall_s": 2.0, "yardstick_s": [1.0, 1.0], "load": [0.5, 0.5, 0.5]}

    def stopped_grid(function, jobs, *args, **kwargs):
        yield row, {"seed0.json": b"{}"}
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "run_grid", stopped_grid)
    argv = ["--methods", "coma-gru", "--seeds", "0", "1", "--episodes", "4", "--jobs", "1", "--runner", "pool",
            "--out", str(tmp_path)] + (["--envs", "Switch2-v0"] if name == "compare" else [])
    assert module.main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"interrupted: 1 finished run's files are in {tmp_path}; the runs in progress are lost; the same "
                   f"command with --reuse trains only the runs missing"]
    assert (tmp_path / folder / "seed0.json").exists() and not (tmp_path / folder / "seed1.json").exists()
    assert not list(tmp_path.rglob("summary.json"))


def test_keep_and_sweep_stopped_with_ctrl_c_say_so_in_one_line_with_status_130(monkeypatch, capsys):
    # both printed a traceback from inside training; neither writes a file, so the line says what is lost
    keep, sweep = script("keep"), script("sweep")

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(keep, "yardstick_seconds", lambda: 1.0)
    monkeypatch.setattr(keep, "run_seed", stopped)
    assert keep.main(SCRIPTS["keep"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        "interrupted: the seeds printed above finished (keep.py writes no file); the seed in progress is lost"]
    monkeypatch.setattr(sweep, "run_grid", stopped)
    assert sweep.main(SCRIPTS["sweep"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        "interrupted: sweep.py prints its table once every run has finished, and writes no file; the runs of this "
        "sitting are lost"]


def test_foraging_ctrl_c_is_one_line_and_status_130_with_the_finished_runs_on_disk(tmp_path, monkeypatch, capsys):
    # a grid of hours is stopped with Ctrl-C between sittings: the runs that ended are on disk, the ones in progress
    # continue from their saves with --reuse, and the script says so in one line (no traceback), exit status 130
    foraging = script("foraging")

    def stopped_grid(function, jobs, *args, **kwargs):
        yield _foraging_record(jobs[0][0], seed=jobs[0][1], evaluations=[[2, 100, 0.1]]), {}
        raise KeyboardInterrupt

    monkeypatch.setattr(foraging, "run_grid", stopped_grid)
    monkeypatch.setattr(foraging, "raw_speed", lambda: 1000.0)
    argv = ["--methods", "iql", "--seeds", "0", "1", "--env-steps", "100", "--checkpoint-every", "300",
            "--jobs", "1", "--runner", "pool", "--out", str(tmp_path)]
    assert foraging.main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"interrupted: 1 finished run's files are in {tmp_path}; the runs in progress were saved at most "
                   f"300 s ago and continue with --reuse"]
    assert json.loads((tmp_path / "iql" / "seed0.json").read_text())["seed"] == 0
    assert not (tmp_path / "iql" / "seed1.json").exists() and not (tmp_path / "summary.json").exists()


def test_foraging_diagnose_trains_the_run_as_the_grid_does_and_prints_its_windows(capsys):
    # a QMIX run of 64 episodes with an evaluation every 32, diagnosed: its windows' lines, and a final greedy mean
    # equal to the one run_one (the grid's run) records for the same method, seed and budget
    foraging = script("foraging")
    assert foraging.main(["--methods", "qmix", "--seeds", "100", "--episodes", "64", "--eval-every", "32",
                          "--diagnose"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "qmix seed 100, Foraging-8x8-2p-3f-v3, config: the defaults"
    assert lines[1].split() == ["steps", "greedy", "eps", "td_loss", "q_taken", "credit0", "credit1", "|g|", "step",
                                "replay", "all", "last50", "all"]
    assert len(lines) == 2 + 2 + 1  # the run's name and the header, two windows, the final
    row, _ = foraging.run_one(("qmix", 100, 64, 32, False, [], foraging.FINAL_EPISODES, None, None))
    assert lines[-1] == f"  final greedy mean over 100 episodes: {row['final']:.4f}"
    greedy = [float(line.split()[1]) for line in lines[2:4]]
    assert greedy == [round(value, 2) for _, _, value in row["evaluations"]]


@pytest.mark.parametrize("argv, named", [
    (["--methods", "mappo", "coma", "--diagnose"], "not those of mappo, coma"),
    (["--methods", "qmix", "--diagnose", "--reuse"], "writes nothing: not with --redraw or --reuse"),
    (["--methods", "qmix", "--diagnose", "--redraw"], "writes nothing: not with --redraw or --reuse")])
def test_foraging_diagnose_refuses_what_it_cannot_measure(argv, named, capsys):
    assert named in refused("foraging", argv, capsys)


def test_learning_and_competition_stopped_with_ctrl_c_say_so_in_one_line_with_status_130(monkeypatch, capsys,
                                                                                        tmp_path):
    # both printed a traceback from inside training and write their summary only at the end: the line says so
    learning, competition = script("learning"), script("competition")
    calls = []

    def second_stopped(*args, **kwargs):  # the first seed's run (a tiny real one), then Ctrl-C in the second
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    original = learning.run_seed
    monkeypatch.setattr(learning, "run_seed", second_stopped)
    out = tmp_path / "maddpg"
    assert learning.main(["--algo", "maddpg", "--seeds", "0", "1", "--episodes", "4", "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        f"interrupted after 1 of 2 seeds (their rows are printed above): summary.json is written only once every seed "
        f"is done; {out / 'policy.pt'} and run.json are this run's first seed's"]
    assert sorted(path.name for path in out.iterdir() if not path.name.startswith(".")) == ["policy.pt", "run.json"]
    # stopped again in a folder that holds an earlier run's summary: the line says the files no longer match it
    (out / "summary.json").write_text("{}\n")
    calls.clear()
    assert learning.main(["--algo", "maddpg", "--seeds", "0", "1", "--episodes", "4", "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip().endswith("are this run's first seed's, beside an earlier run's summary.json")

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt
        yield  # (a generator, as run_grid is)

    monkeypatch.setattr(competition, "run_grid", stopped)
    assert competition.main(["--seeds", "0", "--episodes", "4"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        "interrupted after 0 finished runs: summary.json is written only once every run and matchup is done, so it "
        "was not; the same command trains the grid again"]


def test_foraging_diagnose_takes_set_without_out_and_a_run_too_short_to_update(capsys):
    # --set would need another --out than the tables' for a grid; --diagnose writes nothing, so it needs none. Eight
    # episodes (one collection of 8 copies) are fewer than a batch of 16: no update, so the window has no figures
    foraging = script("foraging")
    assert foraging.main(["--methods", "vdn", "--seeds", "100", "--episodes", "8", "--eval-every", "8",
                          "--diagnose", "--set", "lr=1e-3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "vdn seed 100, Foraging-8x8-2p-3f-v3, config: lr=1e-3"
    assert lines[1].split() == ["steps", "greedy", "eps", "replay", "all", "last50", "all"]
    assert len(lines) == 4 and lines[-1].startswith("  final greedy mean over 100 episodes: ")
