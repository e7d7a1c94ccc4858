"""The course's website as tools/site.py lays it out (no Sphinx here: tests/browser/test_site.py reads the built site):
the course's order and parts from notebook 00's map, the results pages built from results/ and agreeing with its files,
and the README's link to the published site."""

import importlib.util
import json
import pathlib
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

spec = importlib.util.spec_from_file_location("tools_site", ROOT / "tools" / "site.py")
site = importlib.util.module_from_spec(spec)
spec.loader.exec_module(site)


def test_the_map_lists_every_notebook_once_in_its_part():
    parts = site.course_map()
    names = [name for _, notebooks in parts for name in notebooks]
    assert sorted(names) == sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
    assert len(names) == len(set(names))
    assert parts[0] == ("I foundations", ["00_overview.ipynb", "01_information_flow.ipynb",
                                          "02_shape_bookkeeping.ipynb"])
    assert [part for part, _ in parts][-2:] == ["capstones", "reference"]


def _map_notebook(tmp_path, rows: list[str]) -> pathlib.Path:
    table = "\n".join(["## The map", "", "| part | notebook | what you leave with |", "|---|---|---|", *rows, "",
                       "After the table."])
    path = tmp_path / "00_overview.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": [table]}]}))
    return path


def test_a_map_row_without_a_part_continues_the_part_above(tmp_path):
    path = _map_notebook(tmp_path, ["| I one | **00 overview** (here) | x |", "| | [01 a](01_a.ipynb) | y |",
                                    "| II two | [02 b](02_b.ipynb#section) | z |"])
    assert site.course_map(path) == [("I one", ["00_overview.ipynb", "01_a.ipynb"]), ("II two", ["02_b.ipynb"])]


def test_a_map_whose_first_row_has_no_part_is_refused(tmp_path):
    with pytest.raises(ValueError, match="names no part"):
        site.course_map(_map_notebook(tmp_path, ["| | [01 a](01_a.ipynb) | y |"]))


@pytest.mark.parametrize("part, title", [("I foundations", "I. Foundations"), ("VI beyond", "VI. Beyond"),
                                         ("capstones", "Capstones"), ("reference", "Reference")])
def test_part_titles(part, title):
    assert site.part_title(part) == title


def test_headings_move_up_a_level_outside_code():
    lines = ["## Title", "text", "```bash", "## a comment, not a heading", "```", "### Sub"]
    assert site.shift_headings(lines) == ["# Title", "text", "```bash", "## a comment, not a heading", "```",
                                          "## Sub"]


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return site.results_pages()


def test_every_results_section_is_on_one_page(pages):
    # each section of results/README.md (tools/results_page.py) but its introduction is on exactly one site page
    def text(lines):  # headings without their level: a page of one section moves them up one
        return "\n".join(line.lstrip("#") for line in lines)

    for section in site.results_page.SECTIONS[1:]:
        holders = [name for name, page in pages.items() if text(section()).strip() in text(page.splitlines())]
        assert len(holders) == 1, (section.__name__, holders)
    assert set(pages) == {"results/index.md", *(f"results/{name}.md" for name, _, _ in site.RESULTS_PAGES)}
    assert all(text.startswith(site.GENERATED) for text in pages.values())


def test_a_results_page_shows_what_its_files_hold(pages):
    # read apart from the page's code: every Switch2-v0 method's final greedy return per seed, from its seed files
    folder = ROOT / "results" / "compare" / "Switch2-v0"
    summary = json.loads((folder / "summary.json").read_text())
    text = pages["results/switch2.md"]
    for entry in summary["table"]:
        greedy = [json.loads((folder / entry["method"] / f"seed{seed}.json").read_text())["greedy"]
                  for seed in summary["seeds"]]
        row = f"| {entry['method']} | {entry['episodes']} | " + ", ".join(f"{value:.1f}" for value in greedy) + " |"
        assert row.replace("-0.0", "0.0") in text, row
    assert f"benchmarks/compare.py --envs Switch2-v0 --methods {summary['table'][0]['method']}" in text


def test_the_readme_links_to_the_published_site_first():
    repository = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    owner, name = repository.removeprefix("https://github.com/").split("/")
    address = f"https://{owner}.github.io/{name}/"
    assert address in "\n".join((ROOT / "README.md").read_text().splitlines()[:10])
