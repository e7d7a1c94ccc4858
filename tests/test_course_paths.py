"""marl_edu.base.course_paths: the committed results found through the package, and new GIFs written beside a notebook
that runs outside the course's own notebooks/ folder."""

import pytest

from marl_edu.base import course_paths
from marl_edu.base import viz
from marl_edu.base.course_paths import COURSE_ROOT, media_dir, results_dir


def test_results_are_found_through_the_package():
    assert results_dir() == COURSE_ROOT / "results"
    assert (results_dir("coma", "Switch2-v0") / "run.json").is_file()


def test_a_missing_results_folder_is_one_clear_line():
    with pytest.raises(FileNotFoundError, match=r"no results/coma/Switch9-v0 in the course.*holds \[.*'Switch2-v0'"):
        results_dir("coma", "Switch9-v0")


def test_a_package_without_its_clone_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setattr(course_paths, "RESULTS_DIR", tmp_path / "results")
    with pytest.raises(FileNotFoundError, match="install the course from its clone with 'make setup'"):
        results_dir("coma")


def test_gifs_go_to_the_course_media_only_from_the_course(tmp_path):
    assert media_dir(COURSE_ROOT / "notebooks") == COURSE_ROOT / "media"
    assert media_dir(COURSE_ROOT) == COURSE_ROOT / "media"
    copy = tmp_path / "my_notebooks"
    copy.mkdir()
    assert media_dir(copy) == copy / "media"


def test_save_gif_from_a_copy_of_the_notebooks_writes_beside_it(tmp_path, monkeypatch):
    import numpy as np
    monkeypatch.chdir(tmp_path)
    frames = [np.zeros((4, 4, 3), np.uint8), np.full((4, 4, 3), 255, np.uint8)]
    written = viz.save_gif(frames, "mine.gif")
    assert written == tmp_path / "media" / "mine.gif" and written.is_file()
    assert not (COURSE_ROOT / "media" / "mine.gif").exists()
