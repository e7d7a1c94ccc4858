"""The pictures of a training panel's press (tools/panel_pictures.py): a notebook that shows one shows its committed
file right under the panel, the press was made at the panel's defaults as they are today (a changed default makes the
picture stale: run the tool again), and what the notebook says about the press is what the press's record holds."""

import base64
import importlib.util
import json
import pathlib

import nbformat
import pytest

from marl_edu.envs.planning import optimal_team_return
from marl_edu.learners.ppo import PPOConfig
from marl_edu.runs.seed import solved_threshold

ROOT = pathlib.Path(__file__).resolve().parent.parent
PICTURES = ["13_ippo_and_mappo"]  # the notebooks whose panel has a committed picture
spec = importlib.util.spec_from_file_location("panel_pictures", ROOT / "tools" / "panel_pictures.py")
panel_pictures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(panel_pictures)


def _record(name: str) -> dict:
    return json.loads(panel_pictures.paths(name)[1].read_text())


@pytest.mark.parametrize("name", PICTURES)
def test_each_picture_is_shown_right_under_its_panel(name):
    cells = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]
    panel = [i for i, cell in enumerate(cells) if cell["cell_type"] == "code"
             and panel_pictures.PANEL_CALL.search("".join(cell["source"]))]
    assert len(panel) == 1
    below = cells[panel[0] + 1]
    assert below["cell_type"] == "markdown" and f"](../media/panel_{name}.png)" in "".join(below["source"])
    assert panel_pictures.paths(name)[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_notebook_13s_press_was_made_at_the_panels_defaults():
    config = PPOConfig()
    assert _record("13_ippo_and_mappo")["settings"] == {
        "learner": "mappo", "clip": config.clip, "epochs": config.epochs, "minibatches": config.minibatches,
        "actor_lr": config.actor_lr, "entropy_start": config.entropy_start, "episodes": 3008, "seed": 0}


def test_notebook_13s_words_about_its_press_are_the_records():
    # the caption under the panel, and section 4's "that press solves Switch2 and ends solved ... the greedy dots fall
    # back to one agent home once after the first solve while the sampled rings do not fall"
    record = _record("13_ippo_and_mappo")
    line = solved_threshold(optimal_team_return("Switch2-v0"))  # 8.0: within 0.3 of the optimum 8.3
    greedy = [(episode, round(value, 1)) for episode, value in record["evaluations"]]
    sampled = [value for _, value in record["sampled_evaluations"]]
    assert record["episodes"] == 3008 and len(sampled) == len(greedy)
    nobody = [episode for episode, value in greedy if value == -10.0]  # -10: 50 steps of -0.1 for both, nobody home
    assert nobody == [160, 304, 464, 608]
    first = next(k for k, (_, value) in enumerate(greedy) if value >= line)
    assert greedy[first - 1] == (752, -0.6) and greedy[first][0] == 912  # one agent home, then the first solve
    one_home = [episode for episode, value in greedy[first:] if -5 < value < 5]  # -0.6: one home, the other never
    assert one_home == [1200]  # falls back once
    assert all(value >= 7.8 for episode, value in greedy if episode >= 1360) and greedy[-1][1] == 8.2
    assert round(sampled[0]) == -3 and round(sampled[-1], 1) == 8.2  # the rings climb from about -3 to 8.2 ...
    assert min(sampled[first:]) > 5  # ... and never fall back to one agent home after the first solve
    assert "last greedy team return <b>8.20</b>" in record["status"]


def _notebook(tmp_path, *sources) -> pathlib.Path:
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources]), path)
    return path


def test_the_tool_presses_the_panel_the_notebook_built_and_reads_what_it_drew(tmp_path):
    # a made-up panel whose run depends on its slider; the notebook assigns _ itself, as the course's do, and has a
    # cell after the panel that must not run (it would fail)
    path = _notebook(tmp_path, "import ipywidgets as w\nfrom marl_edu.course.widgets import training_panel\n_ = 7",
                     "training_panel({'episodes': w.IntSlider(12)}, lambda episodes: {'episode_returns': [0.0] * "
                     "episodes, 'evaluations': [(episodes, 1.5)], 'sampled_evaluations': [(episodes, 2.5)]})",
                     "raise RuntimeError('the tool ran past the panel')")
    record = panel_pictures.press(path)
    assert record["settings"] == {"episodes": 12} and record["episodes"] == 12
    assert record["evaluations"] == [[12, 1.5]] and record["sampled_evaluations"] == [[12, 2.5]]
    assert "last greedy team return <b>1.50</b>" in record["status"]
    assert base64.b64decode(record["png"])[:4] == b"\x89PNG"


def test_the_tool_refuses_a_notebook_without_one_panel(tmp_path):
    with pytest.raises(ValueError, match="found 0"):
        panel_pictures.press(_notebook(tmp_path, "x = 1"))
    with pytest.raises(ValueError, match="no notebook"):
        panel_pictures.press(tmp_path / "missing.ipynb")
