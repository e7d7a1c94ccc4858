"""``python -m marl_edu``: bad arguments stop in one line before training; a run (discrete or continuous) writes
its outputs; Ctrl-C and --resume; --replay plays a saved policy. (The per-seed runner it shares with the benchmarks is
tested in test_runs.)"""

import dataclasses
import json
import pathlib
import subprocess
import sys

import pytest

from marl_edu.course.cli import config_options, main
from marl_edu.learners.table import ALGORITHMS, CONTINUOUS_ALGORITHMS, LEARNERS
from marl_edu.runs.folder import RunLog
from marl_edu.training.checkpoints import load_policy
from marl_edu.training.evaluation import greedy_return, sampled_returns

# a tiny run's final figures over 5 episodes, not the default 100 (which took most of each run's time)
FEW = ["--final-episodes", "5"]
TINY = ["--episodes", "8", "--n-envs", "4", "--hidden", "8", "--eval-every", "4", *FEW, "--no-progress"]


@pytest.mark.parametrize("argv, message", [
    (["--algo", "happo"], "argument --algo: invalid choice: 'happo'"),
    (["--algo", "coma", "--env", "Switch9-v0"], "unknown ma-gym environment 'Switch9-v0'"),
    (["--algo", "coma", "--episodes", "-5"], "--episodes must be a positive number of episodes, got -5"),
    (["--algo", "coma", "--gamma", "1.5"], "--gamma must be a number in [0, 1], got 1.5"),
    (["--algo", "coma", "--final-episodes", "0"], "--final-episodes must be between 1 and 100,000, got 0"),
    (["--algo", "vdn", "--final-episodes", "1000000"], "--final-episodes must be between 1 and 100,000, got 1,000,000"),
    (["--algo", "maddpg", "--gamma", "-0.1"], "--gamma must be a number in [0, 1], got -0.1"),
    (["--algo", "maddpg", "--feed-forward"],
     "--feed-forward applies to coma, central_qv, central_v, iac, mappo, ippo, iql, vdn and qmix only, not maddpg"),
    (["--algo", "iac", "--actor-gradient", "gumbel"], "--actor-gradient applies to maddpg and iddpg only, not iac"),
    (["--algo", "coma", "--seeds", "1", "1"], "--seeds must be distinct ints in [0, 2147483647], got [1, 1]"),
    (["--algo", "coma", "--seeds", "-1"], "--seeds must be distinct ints in [0, 2147483647], got [-1]"),
    (["--algo", "coma", "--seeds", str(2**64)], f"--seeds must be distinct ints in [0, 2147483647], got [{2**64}]"),
    (["--algo", "coma", "--threads", str(10**20)], "--threads must be at most 256, got 100,000,000,000,000,000,000"),
    (["--algo", "coma", "--threads", "0"], "--threads must be positive, got 0"),
    (["--algo", "maddpg", "--hidden", "200000"], "--hidden must be a positive int at most 4,096, got 200000"),
    (["--algo", "coma", "--n-envs", "100000"], "--n-envs must be a positive int at most 4,096, got 100000"),
    (["--algo", "maddpg", "--batch-size", "10000000"], "--batch-size must be a positive int at most 65,536, got 10000000"),
    (["--algo", "coma", "--episodes", str(10**9)], "--episodes must be at most 10,000,000, got 1,000,000,000"),
    (["--algo", "coma", "--actor-lr", "1e308"], "--actor-lr must be a positive number at most 1, got 1e+308"),
    (["--algo", "maddpg", "--critic-lr", "2"], "--critic-lr must be a positive number at most 1, got 2.0"),
    (["--algo", "coma", "--entropy", "1e308"], "--entropy must be a non-negative number at most 100, got 1e+308"),
    (["--algo", "coma", "--device", "meta"], "--device meta: not a device this machine has; choose one of cpu"),
    (["--algo", "coma", "--device", "xpu"], "--device xpu: not a device this machine has"),
    (["--algo", "coma", "--device", "gpu"], "--device gpu: not a device this machine has"),
    (["--algo", "coma", "--checkpoint-every", "0"], "--checkpoint-every must be a positive number of seconds"),
    (["--episodes", "5"], "the following arguments are required: --algo (or --resume OUT, or --replay POLICY)"),
    (["--algo", "maddpg", "--lam", "0"],
     "--lam applies to coma, central_qv, central_v, iac, mappo, ippo, iql, vdn, qmix, mappo_continuous and "
     "ippo_continuous only, not maddpg"),
    (["--algo", "coma", "--actor-lr", "nan"], "--actor-lr must be a positive number, got nan"),
    (["--algo", "iddpg", "--critic-lr", "inf"], "--critic-lr must be a positive number, got inf"),
    (["--algo", "coma", "--entropy", "nan"], "--entropy must be a non-negative number, got nan"),
    (["--algo", "central_v", "--per-agent-reward"], "--per-agent-reward does not apply to central_v"),
    (["--algo", "mappo", "--per-agent-reward"], "--per-agent-reward does not apply to mappo"),
    (["--algo", "mappo", "--clip", "1.5"], "--clip must be in (0, 1)"),
    (["--algo", "ippo", "--minibatches", "64"], "--minibatches must be a positive int at most 16"),
    (["--algo", "iac", "--episodes", "100", "--eval-every", "500"], "--eval-every must be between 1 and --episodes"),
    (["--algo", "coma", "--episodes", "ten"], "argument --episodes: invalid int value: 'ten'"),
    # the continuous learners train on the particle envs, the discrete ones on ma-gym's
    (["--algo", "maddpg", "--env", "simple_spread_v3"],
     "maddpg acts with discrete actions on the ma-gym envs; simple_spread_v3 is a particle env with continuous forces"),
    (["--algo", "coma", "--env", "simple_adversary_v3"], "coma acts with discrete actions on the ma-gym envs"),
    (["--algo", "maddpg_continuous", "--env", "Switch2-v0"], "maddpg_continuous acts with continuous forces on the "
                                                             "particle envs (simple_spread_v3, simple_adversary_v3), "
                                                             "not on Switch2-v0"),
    (["--algo", "iddpg_continuous", "--env", "simple_spreed_v3"], "unknown particle environment 'simple_spreed_v3'"),
    (["--algo", "maddpg_ensemble", "--env", "ma_gym:Switch2-v0"], "not on ma_gym:Switch2-v0"),
    # options for other learners, and the continuous learners' own options out of range
    (["--algo", "maddpg_continuous", "--lam", "0.5"],
     "--lam applies to coma, central_qv, central_v, iac, mappo, ippo, iql, vdn, qmix, mappo_continuous and "
     "ippo_continuous only, not maddpg_continuous"),
    (["--algo", "maddpg_inferred", "--per-agent-reward"],
     "--per-agent-reward applies to coma, central_qv, central_v, iac, mappo, ippo, mappo_continuous and "
     "ippo_continuous only"),
    (["--algo", "maddpg_ensemble", "--actor-gradient", "gumbel"], "--actor-gradient applies to maddpg and iddpg only, "
                                                                  "not maddpg_ensemble"),
    (["--algo", "coma", "--batch-size", "16"],
     "--batch-size applies to maddpg, iddpg and the continuous MADDPG learners only, not coma"),
    (["--algo", "maddpg", "--team-reward"], "--team-reward applies to the continuous MADDPG learners only, not maddpg"),
    (["--algo", "iac", "--noise-start", "0.3"],
     "--noise-start applies to the continuous MADDPG learners only, not iac"),
    (["--algo", "maddpg_continuous", "--subpolicies", "2"], "--subpolicies applies to maddpg_ensemble only, not "
                                                            "maddpg_continuous"),
    (["--algo", "maddpg_ensemble", "--subpolicies", "1000"], "--subpolicies must be a positive int at most 64, got 1000"),
    (["--algo", "maddpg_ensemble", "--subpolicies", "0"], "--subpolicies must be a positive int, got 0"),
    (["--algo", "maddpg_continuous", "--noise-end", "50"], "--noise-end must be a non-negative number at most 10, got 50.0"),
    (["--algo", "iddpg_continuous", "--noise-start", "nan"], "--noise-start must be a non-negative number, got nan"),
    (["--algo", "maddpg_continuous", "--warmup", "-1"], "--warmup must be a non-negative int, got -1"),
    (["--algo", "maddpg_inferred", "--episodes", "100", "--eval-every", "500"], "--eval-every must be between 1 and "
                                                                                "--episodes (100), got 500"),
    # --replay's own options
    (["--algo", "coma", "--gif", "a.gif"], "--gif applies to --replay only"),
    (["--algo", "maddpg_continuous", "--seed", "1"], "--seed applies to --replay only"),
])
def test_bad_arguments_stop_in_one_line_before_training(argv, message, tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.count("\n") == 1 and message in err and err.startswith("python -m marl_edu: error: ")
    assert not out.exists()  # stopped before anything was trained or written


def stopped_in_one_line(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and err.startswith("python -m marl_edu: error: ")
    return err


def test_an_output_folder_that_cannot_be_written_is_refused_before_training(tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    assert "--out must name a folder, got an empty string" in stopped_in_one_line(
        ["--algo", "coma", "--out", "", *TINY], capsys)
    assert f"--out {tmp_path / 'a-file'} is a file, not a folder" in stopped_in_one_line(
        ["--algo", "coma", "--out", str(tmp_path / "a-file"), *TINY], capsys)
    err = stopped_in_one_line(["--algo", "coma", "--out", str(tmp_path / "a-file" / "out"), *TINY], capsys)
    assert f"--out {tmp_path / 'a-file' / 'out'} cannot be written: Not a directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # no probe or output left behind


def test_an_output_folder_holding_another_run_needs_overwrite(tmp_path, capsys):
    assert main(["--algo", "iac", "--seeds", "1", "2", "--out", str(tmp_path), *TINY]) == 0
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "seed2" / "other_tool.csv").write_text("mine")  # beside the run's files, in its seed folder
    (tmp_path / "seed7").mkdir()
    (tmp_path / "seed7" / "ckpt.bin").write_text("mine")  # a seed folder the run never wrote
    err = stopped_in_one_line(["--algo", "iac", "--seeds", "3", "--out", str(tmp_path), *TINY], capsys)
    assert f"--out {tmp_path} holds another run (curve.png); give --overwrite to replace it" in err
    assert main(["--algo", "iac", "--seeds", "3", "--out", str(tmp_path), "--overwrite", *TINY]) == 0
    files = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*") if path.is_file())
    assert files == [".run.lock", "curve.png", "notes.txt", "returns.csv", "runs.json", "seed2/other_tool.csv",
                     "seed3/greedy.gif", "seed3/policy.pt", "seed7/ckpt.bin"]  # the old run's files gone, no other
    summary = json.loads((tmp_path / "runs.json").read_text())
    assert summary["status"] == "complete" and [row["seed"] for row in summary["seeds"]] == [3]


def test_overwrite_refuses_a_folder_that_is_not_a_run_and_a_linked_seed_folder_removing_nothing(tmp_path, capsys):
    (tmp_path / "seed0").mkdir()
    (tmp_path / "seed0" / "policy.pt").write_text("someone's")
    (tmp_path / "curve.png").write_text("someone's")
    err = stopped_in_one_line(["--algo", "iac", "--out", str(tmp_path), "--overwrite", *TINY], capsys)
    assert "holds curve.png, seed0 but no runs.json: not a run of this command line, so --overwrite removes" in err
    assert main(["--algo", "iac", "--seeds", "1", "--out", str(tmp_path / "run"), *TINY]) == 0
    (tmp_path / "run" / "seed0").symlink_to(tmp_path / "seed0")  # the new run's seed folder, a link elsewhere
    err = stopped_in_one_line(["--algo", "iac", "--out", str(tmp_path / "run"), "--overwrite", *TINY], capsys)
    assert "run/seed0 is not a plain folder (a file or a symbolic link), as a run's seed folder is; nothing was" in err
    assert (tmp_path / "seed0" / "policy.pt").read_text() == "someone's" and (tmp_path / "curve.png").exists()
    assert (tmp_path / "run" / "seed1" / "policy.pt").exists()  # the old run's files too: nothing was removed


def test_a_second_run_or_resume_on_a_folder_in_use_is_refused(tmp_path, capsys):
    from marl_edu.runs.folder import lock
    held = lock(tmp_path)  # as a run in progress holds it, in another process
    err = stopped_in_one_line(["--algo", "iac", "--out", str(tmp_path), *TINY], capsys)
    assert f"--out {tmp_path} is in use by another run that has not ended; wait for it, or choose" in err
    err = stopped_in_one_line(["--algo", "iac", "--out", str(tmp_path), "--overwrite", *TINY], capsys)
    assert "is in use by another run" in err
    held.close()
    assert main(["--algo", "iac", "--out", str(tmp_path), *TINY]) == 0  # free again once the run has ended
    summary = json.loads((tmp_path / "runs.json").read_text())
    (tmp_path / "runs.json").write_text(json.dumps({**summary, "status": "interrupted"}))  # as if stopped: resumable
    held = lock(tmp_path)
    assert "is in use by another run" in stopped_in_one_line(["--resume", str(tmp_path)], capsys)
    held.close()


def test_a_run_is_refused_while_another_process_holds_the_folder(tmp_path, capsys):
    # two runs started together on one --out: the lock is the system's (flock), so it holds across processes; here the
    # other process takes the folder's lock as a run's start does and keeps it until it is stopped
    other = subprocess.Popen([sys.executable, "-c", "import sys, time; from marl_edu.runs.folder import lock; "
                              "import pathlib; held = lock(pathlib.Path(sys.argv[1])); print('held', flush=True); "
                              "time.sleep(120)", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        err = stopped_in_one_line(["--algo", "iac", "--out", str(tmp_path), *TINY], capsys)
        assert f"--out {tmp_path} is in use by another run that has not ended" in err
        assert sorted(path.name for path in tmp_path.iterdir()) == [".run.lock"]  # nothing written
    finally:
        other.kill()
        other.wait(timeout=30)
    assert main(["--algo", "iac", "--out", str(tmp_path), *TINY]) == 0  # the system dropped the lock with the process


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    text = capsys.readouterr().out
    assert stop.value.code == 0
    for option in ("--algo", "--env", "--seeds", "--episodes", "--out", "--overwrite", "--resume",
                   "--checkpoint-every", "--gamma", "--feed-forward", "--lam", "--entropy", "--per-agent-reward",
                   "--actor-gradient", "--team-reward", "--noise-start", "--noise-end", "--subpolicies", "--eval-every",
                   "--replay", "--seed ", "--gif", "--threads", "--final-episodes"):
        assert option in text
    assert all(algo in text for algo in [*ALGORITHMS, *CONTINUOUS_ALGORITHMS])
    assert "runs.json" in text and "greedy.gif" in text and "simple_spread_v3" in text
    flat = " ".join(text.split())  # what Ctrl-C and --resume do with the seed in progress
    assert "--resume OUT continues it to the same result, on every environment" in flat


def test_the_learners_options_come_from_their_configs_fields():
    options = {option.option: option for option in config_options()}
    assert sorted(options) == sorted([  # the options the command line has always had, no more
        "--gamma", "--actor-lr", "--critic-lr", "--hidden", "--n-envs", "--lam", "--lr", "--batch-episodes",
        "--epsilon-end", "--entropy", "--actor-gradient", "--batch-size", "--warmup", "--noise-start", "--noise-end",
        "--subpolicies", "--clip", "--epochs", "--minibatches", "--feed-forward", "--per-agent-reward",
        "--normalise-advantages", "--single-q", "--team-reward"])
    assert (options["--entropy"].field, options["--warmup"].field) == ("entropy_start", "warmup_steps")
    assert options["--actor-gradient"].kind == ("expected", "gumbel") and options["--hidden"].kind is int
    assert (options["--feed-forward"].field, options["--feed-forward"].sets) == ("recurrent", False)
    assert (options["--team-reward"].takers, options["--team-reward"].sets) == (
        ("maddpg_continuous", "iddpg_continuous", "maddpg_inferred", "maddpg_ensemble"), True)
    for option in options.values():  # an option means one thing for every learner it applies to
        for algo in option.takers:
            field = next(f for f in dataclasses.fields(LEARNERS[algo].config) if f.name == option.field)
            assert field.metadata["help"] == option.about, (option.option, algo)
            assert field.metadata.get("switch", field.metadata.get("option", option.option)) == option.option
            assert field.metadata.get("choices", option.kind) == option.kind
            if option.sets is not None:
                assert field.default is (not option.sets), (option.option, algo)  # a switch changes the default
    takers = {algo for option in options.values() for algo in option.takers}
    assert takers == set(LEARNERS)


def test_module_entry_point_exits_non_zero_on_a_bad_argument():
    done = subprocess.run([sys.executable, "-m", "marl_edu", "--algo", "coma", "--episodes", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().endswith("got 0") and done.stdout == ""


@pytest.mark.parametrize("algo", ["iac", "iddpg"])
def test_a_run_writes_every_output(algo, tmp_path, capsys):
    extra = ["--feed-forward"] if algo == "iac" else ["--batch-size", "16", "--warmup", "32"]
    assert main(["--algo", algo, "--seeds", "3", "4", "--out", str(tmp_path), *TINY, *extra]) == 0
    summary = json.loads((tmp_path / "runs.json").read_text())
    assert summary["algo"] == algo and [row["seed"] for row in summary["seeds"]] == [3, 4]
    assert summary["config"]["hidden"] == 8 and summary["config"]["n_envs"] == 4
    row = summary["seeds"][0]
    assert row["updates"] > 0 and "warning" not in capsys.readouterr().out
    assert row["episodes"] >= 8 and row["evaluations"] and row["episodes"] == sum(
        1 for line in (tmp_path / "returns.csv").read_text().splitlines()[1:] if line.startswith("3,"))
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    for seed in (3, 4):
        assert (tmp_path / f"seed{seed}" / "greedy.gif").read_bytes()[:3] == b"GIF"
        agent = load_policy(tmp_path / f"seed{seed}" / "policy.pt", algo=algo, env_id="Switch2-v0")
        replayed = greedy_return(agent, "Switch2-v0").team_return  # recorded rounded to 0.01
        assert replayed == pytest.approx(summary["seeds"][seed - 3]["greedy"], abs=1e-6)
    assert json.loads((tmp_path / "runs.json").read_text())["command"].startswith("python -m marl_edu --algo")


def test_an_untrained_off_policy_run_is_flagged(tmp_path, capsys):
    assert main(["--algo", "maddpg", "--out", str(tmp_path), *TINY]) == 0  # 8 episodes: fewer steps than the warm-up
    out = capsys.readouterr().out
    assert "warning: seed 0 made no update" in out and "SUMMARY algo=maddpg" in out


# -- Ctrl-C and --resume ----------------------------------------------------------------------------------------------

def ctrl_c_at(monkeypatch, episodes: int, run: int = 2):
    """Send this process SIGINT (what Ctrl-C does) once the ``run``-th training loop (seed) has finished ``episodes``
    episodes."""
    import signal

    from marl_edu.training.resume import RunCheckpoint

    original, runs, sent = RunCheckpoint.save, [], []

    def save(self, result, parts):
        if not runs or runs[-1] is not result:
            runs.append(result)
        if len(runs) == run and len(result.episode_returns) >= episodes and not sent:
            sent.append(True)
            signal.raise_signal(signal.SIGINT)
        original(self, result, parts)

    monkeypatch.setattr(RunCheckpoint, "save", save)


def comparable(folder) -> dict:
    """A run's outputs without its timings: returns.csv, every seed's policy and GIF bytes, runs.json's rows."""
    summary = json.loads((folder / "runs.json").read_text())
    timing = {"wall_s", "steps_per_s", "seconds_to_solve"}
    return {"returns": (folder / "returns.csv").read_text(), "config": summary["config"],
            "rows": [{k: v for k, v in row.items() if k not in timing} for row in summary["seeds"]],
            "files": {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.glob("seed*/*"))}}


@pytest.mark.parametrize("algo, extra, stop_at", [
    ("coma", ["--episodes", "48", "--eval-every", "16"], 20),
    ("maddpg", ["--episodes", "24", "--eval-every", "8", "--batch-size", "16", "--warmup", "64", "--env",
                "Switch2-v2"], 10),
])
def test_ctrl_c_saves_the_run_and_resume_finishes_it_to_the_same_bytes(algo, extra, stop_at, tmp_path, capsys,
                                                                      monkeypatch):
    argv = ["--algo", algo, "--seeds", "0", "1", "--n-envs", "4", "--hidden", "8", *FEW, "--no-progress", *extra]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    ctrl_c_at(monkeypatch, stop_at)  # during seed 1
    assert main([*argv, "--out", str(tmp_path / "cut")]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("interrupted: seeds [0] finished; seed 1 saved after ")
    assert err.strip().endswith(f"continue with python -m marl_edu --resume {tmp_path / 'cut'}")
    summary = json.loads((tmp_path / "cut" / "runs.json").read_text())
    assert summary["status"] == "interrupted" and [row["seed"] for row in summary["seeds"]] == [0]
    assert summary["in_progress"]["seed"] == 1 and (tmp_path / "cut" / "seed1" / "run.pt").is_file()
    assert (tmp_path / "cut" / "seed0" / "policy.pt").is_file()  # the finished seed is on disk
    monkeypatch.undo()
    assert main(["--resume", str(tmp_path / "cut"), "--no-progress"]) == 0
    assert "resumed: seeds [0] already finished" in capsys.readouterr().out
    assert comparable(tmp_path / "cut") == comparable(tmp_path / "whole")
    assert not (tmp_path / "cut" / "seed1" / "run.pt").exists()
    assert json.loads((tmp_path / "cut" / "runs.json").read_text())["status"] == "complete"
    assert not list((tmp_path / "cut").rglob("*.tmp")) and not list((tmp_path / "cut").rglob(".probe*"))


def test_resume_sweeps_what_a_kill_after_a_seeds_record_left_and_draws_the_curve(tmp_path):
    assert main(["--algo", "iac", "--seeds", "0", "1", "--out", str(tmp_path), *TINY]) == 0
    summary = json.loads((tmp_path / "runs.json").read_text())
    (tmp_path / "runs.json").write_text(json.dumps({**summary, "status": "running"}))  # killed before "complete"
    (tmp_path / "seed1" / "run.pt").write_bytes(b"stale")  # ... and before the finished seed's run.pt was removed
    (tmp_path / "curve.png").unlink()
    assert main(["--resume", str(tmp_path)]) == 0
    assert not (tmp_path / "seed1" / "run.pt").exists() and (tmp_path / "curve.png").stat().st_size > 0
    assert json.loads((tmp_path / "runs.json").read_text())["status"] == "complete"


def test_resume_refuses_other_options_and_folders_without_a_run(tmp_path, capsys):
    assert "--resume takes the run's own arguments from its runs.json; got also --seeds" in stopped_in_one_line(
        ["--resume", str(tmp_path), "--seeds", "3"], capsys)
    assert f"--resume {tmp_path}: no run of this command line to continue there" in stopped_in_one_line(
        ["--resume", str(tmp_path)], capsys)
    assert main(["--algo", "iac", "--out", str(tmp_path / "done"), *TINY]) == 0
    assert "that run is complete; nothing to continue" in stopped_in_one_line(
        ["--resume", str(tmp_path / "done")], capsys)
    summary = json.loads((tmp_path / "done" / "runs.json").read_text())
    (tmp_path / "done" / "runs.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    assert "the run trains with --threads 1, and torch's sums depend on the thread count, so --threads 2 would" in \
        stopped_in_one_line(["--resume", str(tmp_path / "done"), "--threads", "2"], capsys)


def test_a_real_ctrl_c_exits_130_in_one_line(tmp_path):
    import signal
    import time

    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-m", "marl_edu", "--algo", "coma", "--episodes", "200000",
                              "--n-envs", "4", "--hidden", "8", "--no-progress", "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().startswith("coma on Switch2-v0")  # the header: training starts now
    time.sleep(2.0)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("interrupted: no seed finished; seed 0 saved after ")
    assert json.loads((out / "runs.json").read_text())["in_progress"]["seed"] == 0
    assert (out / "seed0" / "run.pt").is_file()


def test_a_killed_run_resumes_from_its_last_periodic_save_to_the_same_bytes(tmp_path):
    import signal
    import time

    argv = ["--algo", "coma", "--episodes", "400", "--eval-every", "200", "--n-envs", "4", "--hidden", "8", *FEW,
            "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    child = subprocess.Popen([sys.executable, "-m", "marl_edu", *argv, "--checkpoint-every", "0.2", "--out",
                              str(tmp_path / "killed")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().startswith("coma on Switch2-v0")
    deadline = time.monotonic() + 60
    while not (tmp_path / "killed" / "seed0" / "run.pt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)  # no handler runs: only what was on disk before counts
    child.communicate(timeout=60)
    assert json.loads((tmp_path / "killed" / "runs.json").read_text())["status"] == "running"
    assert main(["--resume", str(tmp_path / "killed")]) == 0
    assert comparable(tmp_path / "killed") == comparable(tmp_path / "whole")


def signal_inside(monkeypatch, target, name: str, signum=None, call: int = 1):
    """Send this process ``signum`` (default SIGINT) at the ``call``-th call of ``target.name``, before it runs."""
    import signal

    original, calls = getattr(target, name), []

    def wrapped(*args, **kwargs):
        calls.append(True)
        if len(calls) == call:
            signal.raise_signal(signum or signal.SIGINT)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, wrapped)


def test_ctrl_c_while_a_seed_is_written_keeps_its_files_whole_and_stops_before_the_next(tmp_path, capsys, monkeypatch):
    from marl_edu.runs import folder as run_folder

    signal_inside(monkeypatch, run_folder, "write_curve")  # inside the first seed's outputs, after its policy and GIF
    assert main(["--algo", "coma", "--seeds", "0", "1", "--out", str(tmp_path), *TINY]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("interrupted: seeds [0] finished; continue with")
    summary = json.loads((tmp_path / "runs.json").read_text())
    assert summary["status"] == "interrupted" and summary["in_progress"] is None
    assert [row["seed"] for row in summary["seeds"]] == [0] and not (tmp_path / "seed1").exists()
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "seed0" / "policy.pt").is_file()
    monkeypatch.undo()
    assert main(["--resume", str(tmp_path), "--no-progress"]) == 0
    assert [row["seed"] for row in json.loads((tmp_path / "runs.json").read_text())["seeds"]] == [0, 1]


def test_ctrl_c_while_a_seed_is_measured_finishes_it_then_stops(tmp_path, capsys, monkeypatch):
    from marl_edu.course import cli

    signal_inside(monkeypatch, cli, "rounded")  # after training, before the seed's files: nothing to lose
    assert main(["--algo", "maddpg", "--seeds", "0", "1", "--out", str(tmp_path), *TINY]) == 130
    assert capsys.readouterr().err.startswith("interrupted: seeds [0] finished; continue with")
    assert (tmp_path / "seed0" / "greedy.gif").is_file() and not (tmp_path / "seed0" / "run.pt").exists()


def test_a_second_ctrl_c_while_the_interruption_is_written_changes_nothing(tmp_path, capsys, monkeypatch):
    ctrl_c_at(monkeypatch, 20, run=1)
    signal_inside(monkeypatch, RunLog, "write", call=2)  # the first writes the new run; the second, Ctrl-C's
    assert main(["--algo", "coma", "--episodes", "48", "--eval-every", "16", "--n-envs", "4", "--hidden", "8", *FEW,
                 "--no-progress", "--out", str(tmp_path)]) == 130
    assert capsys.readouterr().err.startswith("interrupted: no seed finished; seed 0 saved after ")
    assert json.loads((tmp_path / "runs.json").read_text())["in_progress"]["seed"] == 0


def test_sigterm_stops_like_ctrl_c_with_status_143(tmp_path, capsys, monkeypatch):
    import signal

    from marl_edu.training.resume import RunCheckpoint

    signal_inside(monkeypatch, RunCheckpoint, "save", signum=signal.SIGTERM)
    assert main(["--algo", "coma", "--out", str(tmp_path), *TINY]) == 143
    assert capsys.readouterr().err.startswith("interrupted: no seed finished; seed 0 saved after 4 episodes")


@pytest.mark.parametrize("signame, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_before_training_stops_in_one_line(signame, status, tmp_path, capsys, monkeypatch):
    import signal

    import marl_edu.course.cli as cli

    signum = getattr(signal, signame)
    signal_inside(monkeypatch, cli, "open_folder", signum=signum)  # while the arguments are checked
    assert main(["--algo", "iac", "--out", str(tmp_path / "a"), *TINY]) == status
    assert capsys.readouterr().err == "interrupted before training started: nothing was written\n"
    assert not (tmp_path / "a" / "runs.json").exists()
    monkeypatch.undo()
    signal_inside(monkeypatch, cli, "_print_start", signum=signum)  # the run's folder holds its runs.json by now
    assert main(["--algo", "iac", "--out", str(tmp_path / "b"), *TINY]) == status
    err = capsys.readouterr().err
    assert err == f"interrupted before training started; start it with python -m marl_edu --resume " \
                  f"{tmp_path / 'b'}\n"
    assert json.loads((tmp_path / "b" / "runs.json").read_text())["status"] == "interrupted"
    monkeypatch.undo()
    assert main(["--resume", str(tmp_path / "b")]) == 0  # and it does


def _wait_for_torch(pid: int, timeout: float = 60.0) -> None:
    """Until process ``pid`` has torch's C++ library mapped: it is importing torch (or past it), its handlers in place
    (``marl_edu/__main__.py`` puts them there before any import)."""
    import time

    deadline = time.monotonic() + timeout
    while "libtorch" not in pathlib.Path(f"/proc/{pid}/maps").read_text():
        assert time.monotonic() < deadline, "the command line did not start loading torch within a minute"
        time.sleep(0.005)


@pytest.mark.skipif(not pathlib.Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps (Linux)")
@pytest.mark.parametrize("signame, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_while_the_command_line_starts_is_one_line(signame, status, tmp_path):
    import signal
    import time

    # (torch and the course's modules take seconds to load.) Several moments of torch's import: a signal that landed
    # while torch's C++ code was importing torch.distributed once aborted the process (SIGABRT, a C++ traceback)
    # instead of the one line (a fresh clone's CI run, 2026-11-27). The moments count from when torch's library is
    # mapped, not from the start: on a loaded machine the interpreter itself can take longer than a fixed delay to
    # start, and a signal before any of this package's code runs is the interpreter's to handle, not ours.
    for delay in (0.0, 0.05, 0.1, 0.2, 0.4):
        child = subprocess.Popen([sys.executable, "-m", "marl_edu", "--algo", "coma", "--no-progress", "--out",
                                  str(tmp_path / f"run{delay}")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        _wait_for_torch(child.pid)
        time.sleep(delay)
        child.send_signal(getattr(signal, signame))
        stdout, stderr = child.communicate(timeout=60)
        assert child.returncode == status, (delay, stderr)
        assert stderr.count("\n") == 1 and stderr.startswith(("python -m marl_edu: interrupted while starting",
                                                              "interrupted before training started",
                                                              "interrupted: no seed finished")), (delay, stderr)


def test_a_full_disk_when_the_run_starts_or_resumes_is_one_line(tmp_path, capsys, monkeypatch):
    import errno

    import marl_edu.base.files as files

    assert main(["--algo", "iac", "--out", str(tmp_path / "done"), *TINY]) == 0
    summary = json.loads((tmp_path / "done" / "runs.json").read_text())
    (tmp_path / "done" / "runs.json").write_text(json.dumps({**summary, "status": "interrupted"}))

    def full(path, write):
        raise files._write_error(path, OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr(files, "atomic_write", full)
    for argv in (["--algo", "iac", "--out", str(tmp_path / "new"), *TINY], ["--resume", str(tmp_path / "done")]):
        capsys.readouterr()
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error: could not write" in err and "No space left on device" in err, err


class _Killed(BaseException):
    """A kill: not an Exception, so no handler of the command line's runs (a real SIGKILL runs none either)."""


def kill_at_write(monkeypatch, k: int) -> list:
    """Kill the run at its ``k``-th file write (1 = the first), as a SIGKILL would: the files written before are on
    disk, this one is not, and a half-written temporary of it stays beside it. Returns the written paths."""
    import marl_edu.training.checkpoints
    import marl_edu.base.files
    import marl_edu.runs.seed
    import marl_edu.base.viz

    writes, original = [], marl_edu.base.files.atomic_write

    def write(path, writer):
        writes.append(pathlib.Path(path))
        if len(writes) == k:
            (pathlib.Path(path).parent / f".{pathlib.Path(path).name}.k1ll3d.tmp").write_bytes(b"half")
            raise _Killed
        return original(path, writer)

    for module in (marl_edu.base.files, marl_edu.training.checkpoints, marl_edu.runs.seed, marl_edu.base.viz):
        monkeypatch.setattr(module, "atomic_write", write)
    return writes


def test_a_kill_at_every_file_write_resumes_to_the_same_files_and_leaves_nothing_behind(tmp_path, monkeypatch):
    argv = ["--algo", "iac", "--seeds", "3", *TINY]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    writes = kill_at_write(monkeypatch, 0)  # (k = 0: counts the writes of a whole run, kills none)
    assert main([*argv, "--out", str(tmp_path / "count")]) == 0
    monkeypatch.undo()
    n_writes = len(writes)
    # runs.json at the start (1); the seed's policy.pt, greedy.gif, curve.png, returns.csv and runs.json (5);
    # returns.csv and runs.json at the end (2): 1 + 5 + 2 = 8
    assert n_writes == 8
    for k in range(1, n_writes + 1):
        out = tmp_path / f"killed{k}"
        kill_at_write(monkeypatch, k)
        with pytest.raises(_Killed):
            main([*argv, "--out", str(out)])
        monkeypatch.undo()
        if not (out / "runs.json").exists():  # killed before the run's first record: nothing to resume, start again
            assert main([*argv, "--out", str(out)]) == 0, k
        else:
            assert main(["--resume", str(out)]) == 0, k
        assert json.loads((out / "runs.json").read_text())["status"] == "complete", k
        assert not list(out.rglob("*.tmp")) and not list(out.rglob("run.pt")), k
        for name in ("seed3/policy.pt", "seed3/greedy.gif", "returns.csv", "curve.png"):
            assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), (k, name)


def test_resume_refuses_a_saved_seed_of_another_run_in_one_line(tmp_path, capsys, monkeypatch):
    argv = ["--algo", "coma", "--episodes", "48", "--eval-every", "16", "--n-envs", "4", "--hidden", "8", *FEW,
            "--no-progress", "--out", str(tmp_path)]
    ctrl_c_at(monkeypatch, 20, run=1)
    assert main(argv) == 130
    monkeypatch.undo()
    summary = json.loads((tmp_path / "runs.json").read_text())
    summary["argv"][summary["argv"].index("--hidden") + 1] = "16"  # the folder's run, as if edited by hand
    (tmp_path / "runs.json").write_text(json.dumps(summary))
    capsys.readouterr()
    assert main(["--resume", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seed0/run.pt was saved by another run (config differ): delete it to train " \
                                    "seed 0 again from its start" in err


def test_resume_continues_a_seed_saved_before_a_config_field_was_added(tmp_path, monkeypatch):
    # a run in progress saved by a version whose PPOConfig had no target_kl (its header's config lacks the field):
    # it ran as the default 0 runs, so it is this run, resumed to the same policy as a run straight through
    from marl_edu.training.checkpoints import load_checkpoint, save_checkpoint

    argv = ["--algo", "mappo", "--episodes", "48", "--eval-every", "16", "--n-envs", "4", "--hidden", "8", *FEW,
            "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    ctrl_c_at(monkeypatch, 20, run=1)
    assert main([*argv, "--out", str(tmp_path / "cut")]) == 130
    monkeypatch.undo()
    saved = tmp_path / "cut" / "seed0" / "run.pt"
    payload = load_checkpoint(saved)
    del payload["config"]["config"]["target_kl"]  # (the header's config, as an older version wrote it)
    save_checkpoint(saved, payload["algo"], payload["env"], payload["config"], payload["state"])
    assert main(["--resume", str(tmp_path / "cut")]) == 0
    assert (tmp_path / "cut" / "seed0" / "policy.pt").read_bytes() == (tmp_path / "whole" / "seed0" /
                                                                       "policy.pt").read_bytes()


# -- the continuous learners and --replay -----------------------------------------------------------------------------

CONTINUOUS_TINY = ["--episodes", "4", "--n-envs", "2", "--hidden", "8", "--eval-every", "2", "--batch-size", "8",
                   "--warmup", "16", *FEW, "--no-progress"]
NAVIGATION_KEYS = ["seed", "team_return", "landmark_distance", "final_landmark_distance", "collisions_per_step",
                   "agent_returns", "sampled", "sampled_starts", "sampled_gap_se", "sampled_as", "episodes",
                   "env_steps", "wall_s", "steps_per_s", "updates", "evaluations", "sampled_evaluations"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three tiny runs, each one seed, trained once for the tests below: ``"discrete"`` (iac on Switch2-v0, seed 3),
    ``"navigation"`` (maddpg_continuous on the default env, with every continuous option given, seed 1) and
    ``"deception"`` (a 2-policy ensemble on simple_adversary_v3, seed 0): their folders and what they printed."""
    import contextlib
    import io

    argvs = {"discrete": ["--algo", "iac", "--seeds", "3", *TINY],
             "navigation": ["--algo", "maddpg_continuous", "--seeds", "1", "--team-reward", "--noise-start", "0.3",
                            "--noise-end", "0.1", "--gamma", "0.9", "--actor-lr", "2e-3", "--critic-lr", "3e-3",
                            *CONTINUOUS_TINY],
             "deception": ["--algo", "maddpg_ensemble", "--env", "simple_adversary_v3", "--subpolicies", "2",
                           *CONTINUOUS_TINY]}
    done = {}
    for name, argv in argvs.items():
        out, printed = tmp_path_factory.mktemp(name), io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main([*argv, "--out", str(out)]) == 0
        done[name] = (out, printed.getvalue())
    return done


def test_a_continuous_run_writes_every_output(runs):
    from marl_edu.learners.continuous import ContinuousMADDPG
    from marl_edu.training.evaluation import evaluate_particle

    out, printed = runs["navigation"]
    summary = json.loads((out / "runs.json").read_text())
    assert summary["algo"] == "maddpg_continuous" and summary["env"] == "simple_spread_v3"  # the default env
    assert summary["status"] == "complete" and summary["optimal"] is None and summary["score_episodes"] == 5
    config = summary["config"]  # every option reached the config
    assert (config["team_reward"], config["noise_start"], config["noise_end"], config["gamma"]) == (True, 0.3, 0.1, 0.9)
    assert (config["actor_lr"], config["critic_lr"], config["hidden"], config["n_envs"]) == (2e-3, 3e-3, 8, 2)
    assert (config["batch_size"], config["warmup_steps"]) == (8, 16)
    (row,) = summary["seeds"]
    assert list(row) == NAVIGATION_KEYS and row["seed"] == 1 and row["updates"] > 0
    assert row["episodes"] == 4 and [episode for episode, _ in row["evaluations"]] == [2, 4]
    assert [episode for episode, _ in row["sampled_evaluations"]] == [2, 4]
    assert row["sampled_as"] == "Gaussian noise, sigma 0.1"  # --noise-end
    assert row["team_return"] == pytest.approx(sum(row["agent_returns"]), abs=0.02)  # the sum over the 3 agents
    assert row["episodes"] == len((out / "returns.csv").read_text().splitlines()[1:])
    assert (out / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "seed1" / "greedy.gif").read_bytes()[:3] == b"GIF"
    agent = load_policy(out / "seed1" / "policy.pt", algo="maddpg_continuous", env_id="simple_spread_v3")
    assert type(agent) is ContinuousMADDPG and agent.config.team_reward and agent.config.hidden == 8
    assert summary["final_episodes"] == 5  # (--final-episodes; the default is 100)
    score = evaluate_particle(agent.greedy_policy(), "simple_spread_v3", 5)  # the final score, independently
    assert (row["team_return"], row["landmark_distance"], row["collisions_per_step"]) == (
        round(score.team_return, 2), round(score.landmark_distance, 3), round(score.collisions_per_step, 3))
    lines = printed.splitlines()
    assert lines[0] == f"maddpg_continuous on simple_spread_v3, 4 episodes per seed, scored without noise and " \
                       f"sampled (Gaussian noise, sigma 0.1) on 5 episodes, outputs in {out}"
    assert lines[1].split() == ["seed", "return", "sampled", "distance", "final", "coll/step", "wall_s", "steps/s"]
    assert lines[2].split()[:4] == ["1", f"{row['team_return']:.2f}", f"{row['sampled']:.2f}",
                                    f"{row['landmark_distance']:.3f}"]
    assert lines[-1] == (f"SUMMARY algo=maddpg_continuous env=simple_spread_v3 median_return={row['team_return']:.2f} "
                         f"min_return={row['team_return']:.2f} landmark_distance={row['landmark_distance']:.3f} "
                         f"collisions_per_step={row['collisions_per_step']:.3f}")  # no "solved", no optimum


def test_a_deception_run_reports_the_adversary_and_the_good_agents(runs):
    out, printed = runs["deception"]
    summary = json.loads((out / "runs.json").read_text())
    assert summary["config"]["n_subpolicies"] == 2
    (row,) = summary["seeds"]
    assert list(row) == [key for key in NAVIGATION_KEYS if "distance" not in key and "collisions" not in key]
    adversary, good, other_good = row["agent_returns"]
    assert good == other_good  # the good agents share their reward
    assert printed.splitlines()[1].split() == ["seed", "return", "sampled", "adversary", "good", "wall_s", "steps/s"]
    assert printed.splitlines()[-1].endswith(f"adversary_return={adversary:.2f} good_return={good:.2f}")
    assert (out / "seed0" / "greedy.gif").read_bytes()[:3] == b"GIF" and (out / "curve.png").is_file()


def replayed(argv, capsys) -> dict:
    """Run ``--replay``; its REPLAY line's values by key (numbers as floats, comma lists as lists of floats; the
    algo, env and sampled_starts as words)."""
    assert main(argv) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("REPLAY ")]
    values = dict(item.split("=", 1) for item in line.split()[1:])
    return {key: value if key in ("algo", "env", "sampled_starts") else [float(v) for v in value.split(",")]
            if "," in value else float(value) for key, value in values.items()}


@pytest.mark.parametrize("name, keys", [
    ("navigation", ["team_return", "landmark_distance", "final_landmark_distance", "collisions_per_step",
                    "agent_returns", "sampled", "sampled_starts", "sampled_gap_se"]),
    ("deception", ["team_return", "agent_returns", "sampled", "sampled_starts", "sampled_gap_se"]),  # an ensemble:
    # the mean over its sub-policies
])
def test_replay_of_a_continuous_policy_gives_the_recorded_score_and_gif(name, keys, runs, tmp_path, capsys):
    out, _ = runs[name]
    (row,) = json.loads((out / "runs.json").read_text())["seeds"]
    gif = tmp_path / "more" / "replay.gif"
    figures = replayed(["--replay", str(out / f"seed{row['seed']}" / "policy.pt"), "--gif", str(gif),
                        "--episodes", "5", "--no-progress"], capsys)  # the run's --final-episodes
    assert [key for key in figures if key not in ("algo", "env", "episodes", "seed")] == keys
    assert {key: figures[key] for key in keys} == {key: row[key] for key in keys}  # the same 5 start states
    assert (figures["episodes"], figures["seed"]) == (5, 10_000)  # (--replay plays 100 by default)
    assert gif.read_bytes()[:3] == b"GIF"
    assert gif.read_bytes() == (out / f"seed{row['seed']}" / "greedy.gif").read_bytes()  # the same episode
    fewer = replayed(["--replay", str(out / f"seed{row['seed']}" / "policy.pt"), "--episodes", "3", "--seed", "5",
                      "--no-progress"], capsys)
    assert (fewer["episodes"], fewer["seed"]) == (3, 5) and fewer["team_return"] != figures["team_return"]


def test_replay_of_a_discrete_policy_gives_the_greedy_return_and_a_gif(runs, tmp_path, capsys):
    out, _ = runs["discrete"]
    (row,) = json.loads((out / "runs.json").read_text())["seeds"]
    policy = out / "seed3" / "policy.pt"
    figures = replayed(["--replay", str(policy), "--seed", "3", "--episodes", "20", "--gif", str(tmp_path / "a.gif")],
                       capsys)
    assert (figures["algo"], figures["env"], figures["episodes"], figures["seed"]) == ("iac", "Switch2-v0", 20, 3)
    assert figures["greedy"] == row["greedy"]  # one greedy episode: exact
    agent = load_policy(policy)
    agent.generator.manual_seed(3)  # the sampled returns: 20 episodes, the env and the actors' samples seeded 3
    assert figures["sampled"] == round(float(sampled_returns(agent, "Switch2-v0", n_episodes=20, seed=3).mean()), 3)
    assert (tmp_path / "a.gif").read_bytes() == (out / "seed3" / "greedy.gif").read_bytes()
    assert (tmp_path / "a.gif").read_bytes()[:3] == b"GIF"


def test_replay_refuses_in_one_line_before_playing(runs, tmp_path, capsys):
    import torch

    from marl_edu.training.checkpoints import save_checkpoint
    from marl_edu.training.resume import KIND

    discrete, navigation = runs["discrete"][0] / "seed3" / "policy.pt", runs["navigation"][0] / "seed1" / "policy.pt"
    in_progress = save_checkpoint(tmp_path / "seed0" / "run.pt", KIND, "Switch2-v0", {"env": "Switch2-v0"},
                                  {"weights": torch.zeros(2)})
    payload = torch.load(navigation, weights_only=True)
    weights = payload["state"]["actors"]
    weights[next(iter(weights))][0, 0] = float("nan")
    torch.save(payload, tmp_path / "nan.pt")  # (save_checkpoint would refuse it)
    gif = tmp_path / "never.gif"
    cases = [
        ([str(tmp_path / "missing.pt")], "no checkpoint at"),
        ([str(tmp_path)], "is a folder, not a policy file"),
        ([str(runs["discrete"][0] / "runs.json")], "is not a readable checkpoint"),
        ([str(in_progress)], "is a run in progress saved by Ctrl-C, not a policy: finish it with --resume"),
        ([str(tmp_path / "nan.pt")], "non-finite"),
        ([str(discrete), "--env", "Switch2-v2"], "the policy does not fit Switch2-v2 (O differs): it was built for "
                                                 "N=2 agents, O=2 obs dims, A=5 actions, and Switch2-v2 has N=2, O=3"),
        ([str(discrete), "--env", "simple_spread_v3"], "iac acts with discrete actions on the ma-gym envs"),
        ([str(navigation), "--env", "simple_adversary_v3"], "simple_adversary_v3 has N=3, O=10, A=2"),
        ([str(navigation), "--env", "Switch2-v0"], "maddpg_continuous acts with continuous forces on the particle"),
        ([str(discrete), "--algo", "iac"], "--replay plays a saved policy without training: --algo does not apply"),
        ([str(discrete), "--final-episodes", "5"], "--replay plays a saved policy without training: --final-episodes "
                                                   "does not apply"),
        ([str(discrete), "--seeds", "1", "2", "--out", "x"], "--seeds, --out do not apply"),
        ([str(discrete), "--episodes", "0"], "--episodes must be between 1 and 100,000 with --replay, got 0"),
        ([str(discrete), "--seed", "-1"], "--seed must be an int in [0, 2147483647], got -1"),
        ([str(discrete), "--gif", str(tmp_path / "a.png")], "--gif must name a .gif file"),
        ([str(discrete), "--gif", str(tmp_path)], "--gif must name a .gif file"),
    ]
    for argv, message in cases:
        err = stopped_in_one_line(["--replay", *argv, "--gif", str(gif)] if "--gif" not in argv
                                  else ["--replay", *argv], capsys)
        assert message in err, (argv, err)
        assert not gif.exists()  # nothing played, nothing written


def test_ctrl_c_in_a_continuous_run_keeps_the_finished_seeds_and_resume_continues_the_seed_in_progress(
        tmp_path, capsys, monkeypatch):
    import signal

    import marl_edu.training.loops

    argv = ["--algo", "iddpg_continuous", "--seeds", "0", "1", *CONTINUOUS_TINY]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    batches, runs_seen = marl_edu.training.loops.Transitions.batches, []

    def ctrl_c_in_seed_1(path):  # Ctrl-C mid-run, some env steps into the second seed
        if not runs_seen or runs_seen[-1][0] is not path:
            runs_seen.append([path, 0])
        runs_seen[-1][1] += 1
        if len(runs_seen) == 2 and runs_seen[-1][1] == 20:
            signal.raise_signal(signal.SIGINT)
        return batches(path)

    monkeypatch.setattr(marl_edu.training.loops.Transitions, "batches", ctrl_c_in_seed_1)
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "cut")]) == 130
    err = capsys.readouterr().err  # the particle envs' runs are saved in progress (envs.family: resumable)
    summary = json.loads((tmp_path / "cut" / "runs.json").read_text())
    assert summary["status"] == "interrupted" and [row["seed"] for row in summary["seeds"]] == [0]
    episodes = summary["in_progress"]["episodes"]
    assert summary["in_progress"] == {"seed": 1, "checkpoint": "seed1/run.pt", "episodes": episodes}  # (mid-episode)
    assert err == (f"interrupted: seeds [0] finished; seed 1 saved after {episodes} episodes; continue with python -m "
                   f"marl_edu --resume {tmp_path / 'cut'}\n")
    assert (tmp_path / "cut" / "seed0" / "policy.pt").is_file() and (tmp_path / "cut" / "seed1" / "run.pt").is_file()
    monkeypatch.undo()
    assert main(["--resume", str(tmp_path / "cut"), "--no-progress"]) == 0
    assert comparable(tmp_path / "cut") == comparable(tmp_path / "whole")  # seed 1 continued to the same bits
    assert not list((tmp_path / "cut").rglob("*.tmp")) and not list((tmp_path / "cut").rglob(".probe*"))


def test_a_learner_added_as_one_table_row_trains_saves_and_replays(tmp_path, capsys, monkeypatch):
    """Adding a learner is its class and one row of learners.LEARNERS: the command line's --algo, its options and
    their defaults, the policy file and --replay follow from the row."""
    import dataclasses

    from marl_edu.learners.coma import COMA
    from marl_edu.learners.table import LEARNERS

    class TwinCOMA(COMA):  # a "new" learner: COMA under another name
        pass

    monkeypatch.setitem(LEARNERS, "twin_coma", dataclasses.replace(LEARNERS["coma"], learner=TwinCOMA,
                                                                   about="COMA's twin"))
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "twin_coma: COMA's twin" in help_text
    assert ("--lam LAM coma, central_qv, central_v, iac, mappo, ippo, iql, vdn, qmix, twin_coma, mappo_continuous "
            "and ippo_continuous: TD(lambda)") in help_text
    out = tmp_path / "out"
    assert main(["--algo", "twin_coma", "--episodes", "4", "--n-envs", "2", "--hidden", "8", "--lam", "0.5", *FEW,
                 "--eval-every", "2", "--out", str(out), "--no-progress"]) == 0
    assert "SUMMARY algo=twin_coma" in capsys.readouterr().out
    recorded = json.loads((out / "runs.json").read_text())
    assert recorded["config"]["lam"] == 0.5 and recorded["status"] == "complete"
    assert type(load_policy(out / "seed0" / "policy.pt")) is TwinCOMA
    assert main(["--replay", str(out / "seed0" / "policy.pt"), "--episodes", "2", "--no-progress"]) == 0
    assert f"greedy={recorded['seeds'][0]['greedy']}" in capsys.readouterr().out


# -- round three (issue 47): every new learner interrupted every way, resumed to the same bytes ------------------------

# the learners that came after the interrupt tests above, one tiny run each (three collections of K = 4 episodes; of
# K = 2 on the particle envs, whose episodes cost more), and the signal each is stopped with (both signals, each on
# about half of them); discrete navigation's runs too
NEW_LEARNERS = [
    ("iql", "Switch2-v0", "SIGINT", ["--batch-episodes", "4"]),
    ("vdn", "Switch2-v0", "SIGTERM", ["--batch-episodes", "4"]),
    ("qmix", "Switch2-v0", "SIGINT", ["--batch-episodes", "4"]),
    ("ippo", "Switch2-v0", "SIGTERM", []),
    ("mappo", "Switch2-v0", "SIGINT", []),
    ("mappo_continuous", "simple_spread_v3", "SIGTERM", ["--n-envs", "2", "--minibatches", "2"]),
    ("vdn", "simple_spread_v3_discrete", "SIGINT", ["--n-envs", "2", "--batch-episodes", "2"]),
]


def kill_at_save(monkeypatch, n: int) -> None:
    """Kill the run, as ``kill_at_write`` does, at its ``n``-th save of a run in progress (``seed<S>/run.pt``): the
    learner's whole state, mid-run."""
    import marl_edu.training.checkpoints

    saves, original = [], marl_edu.training.checkpoints.atomic_write

    def write(path, writer):
        if pathlib.Path(path).name == "run.pt":
            saves.append(path)
            if len(saves) == n:
                (pathlib.Path(path).parent / ".run.pt.k1ll3d.tmp").write_bytes(b"half")
                raise _Killed
        return original(path, writer)

    monkeypatch.setattr(marl_edu.training.checkpoints, "atomic_write", write)


@pytest.fixture
def small_gifs():
    """Every GIF of the test drawn from frames thinned to about 64 pixels wide (quantizing discrete navigation's
    700 x 700 frames took 7 s of an 11 s run; Switch's, 0.9 s of 2.8), through its own patch, which the test's
    monkeypatch.undo() keeps: every run of the test writes the same GIFs from the same episodes."""
    import marl_edu.runs.seed

    save_gif = marl_edu.runs.seed.save_gif

    def small_gif(frames, path, **kwargs):
        step = max(1, frames[0].shape[1] // 64)
        return save_gif([frame[::step, ::step] for frame in frames], path, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(marl_edu.runs.seed, "save_gif", small_gif)
        yield


@pytest.mark.parametrize("algo, env_id, signame, extra", NEW_LEARNERS, ids=lambda v: v if isinstance(v, str) else "")
def test_every_new_learner_killed_stopped_and_killed_again_resumes_to_the_same_bytes(algo, env_id, signame, extra,
                                                                                     tmp_path, capsys, monkeypatch,
                                                                                     small_gifs):
    import signal

    from marl_edu.training.resume import RunCheckpoint

    K = int(extra[extra.index("--n-envs") + 1]) if "--n-envs" in extra else 4  # episodes per collection
    argv = ["--algo", algo, "--env", env_id, "--seeds", "0", "--episodes", str(3 * K), "--n-envs", str(K),
            "--hidden", "8", "--eval-every", str(3 * K), "--final-episodes", "1", "--no-progress", *extra]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    out = tmp_path / "cut"
    # 1. killed (SIGKILL: no handler runs) while its second save in progress is written: the first one is on disk
    kill_at_save(monkeypatch, 2)
    with pytest.raises(_Killed):
        main([*argv, "--checkpoint-every", "1e-9", "--out", str(out)])
    monkeypatch.undo()
    assert json.loads((out / "runs.json").read_text())["status"] == "running"
    assert (out / "seed0" / "run.pt").is_file()
    # 2. resumed, then stopped by the signal after its next collection: saved again, one line, 130 or 143
    signal_inside(monkeypatch, RunCheckpoint, "save", signum=getattr(signal, signame))
    capsys.readouterr()
    assert main(["--resume", str(out), "--no-progress"]) == {"SIGINT": 130, "SIGTERM": 143}[signame]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"interrupted: no seed finished; seed 0 saved after {2 * K} ")
    monkeypatch.undo()
    # 3. resumed and killed at a write of its outputs (the k-th, k the learner's row: the table covers writes 1-7)
    k = [row[:2] for row in NEW_LEARNERS].index((algo, env_id)) + 1
    writes = kill_at_write(monkeypatch, k)
    with pytest.raises(_Killed):
        main(["--resume", str(out), "--no-progress"])
    monkeypatch.undo()
    # 4. resumed to the end: the same bytes as the run that was never stopped, and nothing left behind
    assert main(["--resume", str(out), "--no-progress"]) == 0, writes[-1]
    assert comparable(out) == comparable(tmp_path / "whole")
    assert json.loads((out / "runs.json").read_text())["status"] == "complete"
    assert not list(out.rglob("*.tmp")) and not list(out.rglob("run.pt")) and not list(out.rglob(".probe*"))
