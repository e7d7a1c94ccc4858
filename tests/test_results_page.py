"""results/README.md, the generated page of the committed runs (tools/results_page.py): the committed page is the one
the files give, every committed summary is on it, one cell checked by hand from its json files, and --check."""

import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
PAGE = RESULTS / "README.md"

spec = importlib.util.spec_from_file_location("results_page", ROOT / "tools" / "results_page.py")
results_page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_page)


@pytest.fixture(scope="module")
def generated() -> str:
    return results_page.page()


def test_the_committed_page_is_what_its_files_give(generated):
    # fails when a run's files changed (or the page was edited) and the page was not regenerated
    assert PAGE.read_text() == generated, "results/README.md is out of date: run python tools/results_page.py"


def test_every_committed_summary_is_on_the_page(generated):
    # a benchmark's new folder of results must get a section (or a place in one): nothing committed is left off
    summaries = sorted(path.relative_to(RESULTS).parent.as_posix() for path in RESULTS.glob("**/summary.json")
                       if not path.is_relative_to(RESULTS / "tmp"))  # (gitignored: a checkout's own tuning runs)
    assert len(summaries) >= 15
    missing = [folder for folder in summaries if f"results/{folder}/" not in generated]
    assert missing == []


def test_every_committed_comparison_run_has_its_row(generated):
    # every method folder of benchmarks/compare.py's results (results/compare/ENV/METHOD/seed<S>.json) is a row
    folders = sorted({path.parent for path in (RESULTS / "compare").glob("*/*/seed*.json")})
    assert len(folders) >= 50
    missing = [f"{folder.parent.name}/{folder.name}" for folder in folders
               if f"| {folder.parent.name} | {folder.name} |" not in generated]
    assert missing == []


def _load(*parts: str) -> dict:
    return json.loads(RESULTS.joinpath(*parts).read_text())


def test_a_comparison_row_by_hand(generated):
    # Switch2-v0, coma-gru, seeds 0-4: what the five seed<S>.json files hold
    runs = [_load("compare", "Switch2-v0", "coma-gru", f"seed{seed}.json") for seed in range(5)]
    assert [run["greedy"] for run in runs] == [8.3, 8.2, 7.7, 8.2, 8.2]
    assert [run["episodes_to_solve"] for run in runs] == [3600, 3008, 4608, 3408, 2608]
    assert [run["seconds_to_solve"] for run in runs] == [8.8, 7.2, 11.9, 7.7, 6.3]
    # median greedy: sorted 7.7, 8.2, 8.2, 8.2, 8.3 -> the middle one, 8.2; min 7.7
    # solved at the end (greedy >= 8.3 - 0.3 = 8.0): 8.3, 8.2, 8.2, 8.2 -> 4 of 5; solved at some point: all 5 (seed 2
    # solved at episode 4608 and ended at 7.7)
    # to solve, over those 5 seeds: episodes sorted 2608, 3008, 3408, 3600, 4608 -> the middle one, 3408;
    # seconds sorted 6.3, 7.2, 7.7, 8.8, 11.9 -> 7.7, printed as 8 s
    assert "| Switch2-v0 | coma-gru | 8.2 | 7.7 | 4/5 | 3408 ep / 8 s (5/5) | 6000 |" in generated
    # the per-seed row of the same runs: every seed solved at some point; the final policy sampled (100 episodes each:
    # 8.261, 8.181, 7.846, 8.14, 8.098 in the records, one decimal each) beside its greedy return
    assert [run["sampled"] for run in runs] == [8.261, 8.181, 7.846, 8.14, 8.098]
    assert ("| coma-gru | 6000 | 8.3, 8.2, 7.7, 8.2, 8.2 | 8.3, 8.2, 7.8, 8.1, 8.1 | 3600, 3008, 4608, 3408, 2608 |"
            in generated)


def test_a_first_solve_by_hand(generated):
    # MADDPG on Switch2-v2 (benchmarks/learning.py), seed 0's greedy evaluations: the first at 8.3 - 0.3 = 8.0 or more
    # is episode 600's 8.2 (every one before it is below: -10.0 up to 200, -0.6 at 250-300, 6.3 at 350, 7.6 at 401,
    # 7.8 at 450, 7.9 at 501, a hair short, and -3.5 at 550, one agent home late)
    seed0 = _load("maddpg", "Switch2-v2", "summary.json")["seeds"][0]
    assert seed0["evaluations"][:12] == [[50, -10.0], [100, -10.0], [160, -10.0], [200, -10.0], [250, -0.6],
                                         [300, -0.6], [350, 6.3], [401, 7.6], [450, 7.8], [501, 7.9], [550, -3.5],
                                         [600, 8.2]]
    assert results_page.first_solve(seed0["evaluations"], 8.3) == 600
    row = next(line for line in generated.splitlines() if line.startswith("| `results/maddpg/Switch2-v2` |"))
    assert "| 600, " in row


def test_numbers_are_never_negative_zero():
    assert [results_page.number(value) for value in (-0.04, 0.04, -0.06, None)] == ["0.0", "0.0", "-0.1", "-"]
    assert results_page.number(-0.0004, 3) == "0.000" and results_page.number(2059.6, 0) == "2060"


def test_the_comparison_command_gives_every_budget():
    summary = {"seeds": [0, 1], "table": [{"method": "coma-gru", "episodes": 6000},
                                          {"method": "vdn-gru", "episodes": 3000},
                                          {"method": "central_v-gru", "episodes": 6000}]}
    assert results_page.compare_command("Switch2-v0", summary) == (
        "benchmarks/compare.py --envs Switch2-v0 --methods coma-gru vdn-gru central_v-gru --seeds 0 1 "
        "--episodes 6000 vdn-gru=3000")


def test_check_names_a_stale_or_missing_page_and_writes_nothing(tmp_path, monkeypatch, capsys, generated):
    page = tmp_path / "README.md"
    monkeypatch.setattr(results_page, "PAGE", page)
    monkeypatch.setattr(results_page, "page", lambda: generated)
    monkeypatch.setattr(results_page, "ROOT", tmp_path)  # (the page is named relative to it)
    assert results_page.main(["--check"]) == 1  # missing
    assert not page.exists()
    assert "| 3408 ep" in generated
    page.write_text(generated.replace("| 3408 ep", "| 3409 ep"))  # one figure edited by hand
    assert results_page.main(["--check"]) == 1
    assert "out of date: README.md" in capsys.readouterr().out
    assert results_page.main([]) == 0 and page.read_text() == generated  # written
    assert results_page.main(["--check"]) == 0


def test_the_tuning_sections_the_page_and_notebooks_name_are_headings_of_tuning_md(generated):
    # the page and the notebooks point at benchmarks/TUNING.md's sections by their titles, quoted after
    # "`benchmarks/TUNING.md`: ": a renamed section must not leave a dead name
    import re

    headings = [line.removeprefix("## ") for line in (ROOT / "benchmarks" / "TUNING.md").read_text().splitlines()
                if line.startswith("## ")]
    texts = [generated] + ["".join(cell["source"]) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
                           for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "markdown"]
    named = [title for text in texts
             for listed in re.findall(r"`benchmarks/TUNING\.md`: (.*?)\.(?:\s|\)|$)", " ".join(text.split()))
             for title in re.findall(r'"([^"]+)"', listed) if title != "Speed"]
    named += [title for text in texts  # (and the form (`benchmarks/TUNING.md`, "its title"))
              for title in re.findall(r'`benchmarks/TUNING\.md`, "([^"]+)"', " ".join(text.split()))]
    assert len(named) >= 7  # (the page's fresh and Switch3/4 sections, notebook 16's section 3, ...)
    for title in named:
        assert any(heading.startswith(title) for heading in headings), title
