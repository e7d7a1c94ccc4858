import numpy as np
import pytest

from marl_edu.envs import make_env
from marl_edu.rollout import run_episode
from marl_edu.viz import plot_ctde
from marl_edu.widgets import episode_explorer

DOWN, NOOP = 0, 4


def test_explorer_follows_the_slider():
    env = make_env("Switch2-v0")
    episode = run_episode(env, lambda obs: np.array([DOWN, NOOP]), record_frames=True)
    panel = episode_explorer(episode, env.action_meanings)
    slider, image, table = panel.children
    assert (slider.min, slider.max) == (0, 50)  # t = 0 .. T: T steps and the final scene
    first_image = image.value
    slider.value = 1
    # after one DOWN agent 0 stands at (1, 1): obs (0.5, 0.17); 1 step cost so far
    # the return up to and including t=1 is two step costs: -0.2
    assert "<td>[0.5, 0.17]</td>" in table.value and "<td>-0.2</td></tr>" in table.value
    assert image.value != first_image  # the picture changed with the step
    slider.value = 50
    assert "episode over" in table.value


def test_explorer_needs_frames():
    episode = run_episode(make_env("Switch2-v0"), lambda obs: np.array([NOOP, NOOP]))
    with pytest.raises(ValueError, match="record_frames=True"):
        episode_explorer(episode, ["D", "L", "U", "R", "N"])


def test_ctde_diagram_draws_one_actor_per_agent():
    ax = plot_ctde(3)
    texts = [t.get_text() for t in ax.texts]
    assert sum(t.startswith("actor ") for t in texts) == 3
    with pytest.raises(ValueError, match="n_agents must be an int in"):
        plot_ctde(0)
