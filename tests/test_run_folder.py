"""run_folder: what a run owns in its folder, and the temporaries a killed run left, removed without touching
anything else."""

from marl_edu.run_folder import remove_run, remove_temporaries, run_files


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


def test_run_files_and_remove_run(tmp_path):
    make_folder(tmp_path)
    assert [path.name for path in run_files(tmp_path)] == ["curve.png", "returns.csv", "runs.json", "seed0", "seed3"]
    remove_run(tmp_path)
    assert run_files(tmp_path) == [] and (tmp_path / "mine.txt").exists() and (tmp_path / "notes" / "x.md").exists()
