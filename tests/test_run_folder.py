"""run_folder: what a run owns in its folder, the temporaries a killed run left and what --overwrite removes, each
removed without touching anything else; the folder's lock."""

import pytest

from marl_edu.runs.folder import lock, overwritten, remove_run, remove_temporaries, run_files


def make_folder(root):
    (root / "seed0").mkdir(parents=True)
    (root / "seed3").mkdir()
    (root / "notes").mkdir()
    for name in ("runs.json", "returns.csv", "curve.png", "seed0/policy.pt", "seed0/greedy.gif", "mine.txt",
                 "notes/x.md", "seed0/other_tool.csv"):
        (root / name).write_text("x")
    # a kill between atomic_write's write and rename leaves .NAME.xxxx.tmp beside NAME
    stale = [".runs.json.a1b2c3.tmp", "seed0/.run.pt.zz9.tmp", "seed3/.policy.pt.q.tmp"]
    others = [".mine.txt.k2.tmp", "notes/.runs.json.k3.tmp", "seed0/.other_tool.csv.k4.tmp", ".runs.json.tmp"]
    for name in stale + others:
        (root / name).write_text("")
    return stale, others


def test_a_killed_runs_temporaries_are_removed_and_nothing_else(tmp_path):
    stale, others = make_folder(tmp_path)
    removed = remove_temporaries(tmp_path)
    assert sorted(path.relative_to(tmp_path).as_posix() for path in removed) == sorted(stale)
    assert all(not (tmp_path / name).exists() for name in stale)
    assert all((tmp_path / name).exists() for name in others)
    assert remove_temporaries(tmp_path / "missing") == [] and remove_temporaries(tmp_path) == []


def test_run_files_names_what_a_run_would_write(tmp_path):
    make_folder(tmp_path)
    assert [path.name for path in run_files(tmp_path)] == ["curve.png", "returns.csv", "runs.json", "seed0", "seed3"]
    assert run_files(tmp_path / "missing") == []


def names(paths, root):
    return sorted(path.relative_to(root).as_posix() for path in paths)


def test_overwrite_removes_only_the_recorded_runs_files(tmp_path):
    stale, others = make_folder(tmp_path)  # runs.json is there: the run recorded seeds 0 and 3
    (tmp_path / "seed7").mkdir()
    (tmp_path / "seed7" / "ckpt.bin").write_text("another tool's")  # a seed folder the run never wrote
    removed = overwritten(tmp_path, [0, 3], [1])
    assert names(removed, tmp_path) == sorted(["runs.json", "returns.csv", "curve.png", "seed0/policy.pt",
                                               "seed0/greedy.gif", *stale])
    remove_run(tmp_path, removed)
    left = names((path for path in tmp_path.rglob("*") if path.is_file()), tmp_path)
    assert left == sorted(["mine.txt", "notes/x.md", "seed0/other_tool.csv", "seed7/ckpt.bin", *others])
    assert not (tmp_path / "seed3").exists()  # emptied by the removal, so removed; seed0 keeps the other tool's file


def test_overwrite_of_what_is_not_a_run_is_refused_before_anything_is_removed(tmp_path):
    make_folder(tmp_path)
    before = names(tmp_path.rglob("*"), tmp_path)
    (tmp_path / "runs.json").unlink()
    with pytest.raises(ValueError, match=r"holds curve.png, returns.csv, seed0 but no runs.json: not a run of this"):
        overwritten(tmp_path, [], [0])
    assert names(tmp_path.rglob("*"), tmp_path) == [name for name in before if name != "runs.json"]
    assert overwritten(tmp_path / "empty", [], [0]) == []  # nothing there: nothing to remove, nothing refused


def test_a_seed_folder_that_is_a_link_or_a_file_is_refused(tmp_path):
    make_folder(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "policy.pt").write_text("not the run's")
    (tmp_path / "seed5").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match=r"seed5 is not a plain folder \(a file or a symbolic link\)"):
        overwritten(tmp_path, [0, 5], [0])
    with pytest.raises(ValueError, match=r"seed5 is not a plain folder"):
        overwritten(tmp_path, [0], [5])  # the new run would write through it
    (tmp_path / "seed6").write_text("a file")
    with pytest.raises(ValueError, match=r"seed6 is not a plain folder"):
        overwritten(tmp_path, [6], [0])
    assert (tmp_path / "elsewhere" / "policy.pt").exists() and (tmp_path / "runs.json").exists()


def test_a_file_the_new_run_would_write_that_is_not_the_old_runs_is_refused(tmp_path):
    make_folder(tmp_path)
    (tmp_path / "seed9").mkdir()
    (tmp_path / "seed9" / "policy.pt").write_text("someone's")
    with pytest.raises(ValueError, match=r"seed9/policy.pt was not written by the run in .* seeds are \[0, 3\]"):
        overwritten(tmp_path, [0, 3], [9])
    assert (tmp_path / "seed9" / "policy.pt").read_text() == "someone's"


def test_the_folder_lock_is_held_by_one_run_at_a_time(tmp_path):
    first = lock(tmp_path)
    with pytest.raises(ValueError, match=f"--out {tmp_path} is in use by another run that has not ended"):
        lock(tmp_path)
    first.close()  # (the system also drops it when the process ends, however it ends)
    lock(tmp_path).close()
    assert run_files(tmp_path) == []  # the lock's file is not a run's output


def test_a_seed_is_recorded_in_runs_json_only_once_its_files_and_curve_are_written(tmp_path, monkeypatch):
    import json

    import marl_edu.runs.folder as run_folder
    from marl_edu.training.loops import TrainResult

    order = []
    recorded = lambda: (tmp_path / "runs.json").exists() and json.loads((tmp_path / "runs.json").read_text())["seeds"]
    monkeypatch.setattr(run_folder, "save_artifacts", lambda *args: order.append(("files", recorded())))
    monkeypatch.setattr(run_folder, "write_curve", lambda *args: order.append(("curve", recorded())))
    log = run_folder.RunLog(tmp_path, {"env": "Switch2-v0", "algo": "coma"}, 8.3)
    log.finish_seed(TrainResult(agent=None, episode_returns=[1.0, 2.5]), {"seed": 4})
    assert order == [("files", False), ("curve", False)]  # a kill anywhere before runs.json: the seed is not recorded
    assert recorded() == [{"seed": 4}]
    assert (tmp_path / "returns.csv").read_text() == "seed,episode,team_return\n4,1,1.00\n4,2,2.50\n"
