import numpy as np
import pytest

from marl_edu.base.viz import plot_ctde
from marl_edu.course.widgets import episode_explorer
from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import make_env

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


def _fake_run(lr, episodes):
    # a made-up run whose numbers depend on the sliders, so the test sees them arrive
    return {"episode_returns": [-10.0 + lr * k for k in range(episodes)], "evaluations": [(episodes, 8.0 + lr)]}


def test_panel_button_trains_with_the_slider_values_and_redraws():
    import ipywidgets as widgets

    from marl_edu.course.widgets import training_panel

    calls = []
    controls = {"lr": widgets.FloatSlider(0.1), "episodes": widgets.IntSlider(20, min=1, max=100)}

    def train(lr, episodes):
        calls.append((lr, episodes))
        return _fake_run(lr, episodes)

    panel = training_panel(controls, train, reference=_fake_run(0.05, 30), optimal=8.3, random=-9.1)
    before = panel.image.value
    controls["lr"].value, controls["episodes"].value = 0.2, 40
    panel.button.click()
    assert calls == [(0.2, 40)]
    assert "last greedy team return <b>8.20</b>" in panel.status.value  # 8.0 + lr = 8.2
    assert panel.image.value != before and panel.image.value[:4] == b"\x89PNG"
    assert panel.settings == {"lr": 0.2, "episodes": 40} and panel.run == _fake_run(0.2, 40)  # the press, kept


def test_panel_says_when_more_episodes_ran_than_asked_for():
    # 16 env copies stepped together finish their 50-step episodes together: 100 asked -> 7 * 16 = 112 run
    import ipywidgets as widgets

    from marl_edu.course.widgets import training_panel

    panel = training_panel({"episodes": widgets.IntSlider(100, max=200)}, lambda episodes: _fake_run(0.1, 112))
    panel.button.click()
    assert panel.status.value.startswith("done: 112 episodes (100 asked for: the parallel env copies finish "
                                         "their episodes together), last greedy"), panel.status.value
    exact = training_panel({"episodes": widgets.IntSlider(100, max=200)}, lambda episodes: _fake_run(0.1, 100))
    exact.button.click()
    assert exact.status.value.startswith("done: 100 episodes, last greedy"), exact.status.value


@pytest.mark.parametrize("in_a_kernel", [False, True])
def test_panel_reports_a_bad_setting_instead_of_raising(monkeypatch, in_a_kernel):
    import ipywidgets as widgets

    import marl_edu.course.widgets
    from marl_edu.course.widgets import training_panel

    class KernelOutput(widgets.Output):
        def __exit__(self, etype, evalue, tb):  # what ipywidgets' Output does in a kernel: show the error, swallow it
            super().__exit__(etype, evalue, tb)
            return True

    if in_a_kernel:
        monkeypatch.setattr(marl_edu.course.widgets.widgets, "Output", KernelOutput)

    def train(gamma):
        raise ValueError(f"gamma must be a number in [0, 1], got {gamma}")

    panel = training_panel({"gamma": widgets.FloatText(1.5)}, train)
    panel.button.click()
    assert "not trained:</b> gamma must be a number in [0, 1], got 1.5" in panel.status.value
    assert not panel.button.disabled


def test_maddpg_panel_runs_a_real_short_training():
    from marl_edu.course.widgets import maddpg_panel

    panel = maddpg_panel(episodes=50, seed=1)
    names = [child.description for child in panel.children[0].children]
    assert names == ["actor lr", "critic lr", "gamma", "tau", "batch size", "episodes", "seed"]
    panel.children[0].children[4].value = 32  # a small batch so the 50 episodes update often
    panel.button.click()
    episodes_done = int(panel.status.value.split()[1])  # "done: 52 episodes, ..." (16 envs finish together)
    assert panel.status.value.startswith("done: ") and episodes_done >= 50


def test_coma_panel_runs_a_real_short_training(monkeypatch):
    import marl_edu.training.loops
    from marl_edu.course.widgets import coma_panel

    configs = []

    def spy(learner, env_id, episodes, config, **kwargs):  # the real training, with its config recorded
        configs.append((learner, config))
        return train(learner, env_id, episodes, config, **kwargs)

    train = marl_edu.training.loops.train
    monkeypatch.setattr(marl_edu.training.loops, "train", spy)
    panel = coma_panel(episodes=200, seed=1)
    names = [child.description for child in panel.children[0].children]
    assert names == ["actor lr", "critic lr", "lambda", "entropy", "episodes/batch",
                     "GRU actors (off: feed-forward)", "episodes", "seed"]
    panel.children[0].children[5].value = False  # feed-forward actors reach the learner
    panel.children[0].children[6].value = 32     # a short run: 2 batches of 16 episodes
    before = panel.image.value
    panel.button.click()
    assert panel.status.value.startswith("done: 32 episodes, last greedy team return"), panel.status.value
    assert panel.image.value != before
    from marl_edu.learners.coma import COMA

    assert configs[0][0] is COMA and configs[0][1].recurrent is False and configs[0][1].lam == 0.8


def test_advantage_explorer_by_hand():
    from marl_edu.course.widgets import advantage_explorer

    panel = advantage_explorer(["D", "L", "U"], q=[1.0, 2.0, 4.0], pi=[0.5, 0.25, 0.25])
    # b = 0.5 * 1 + 0.25 * 2 + 0.25 * 4 = 2.0
    assert "<b>2.00</b>" in panel.summary.value and "<b>+0.00</b> (always 0)" in panel.summary.value
    before = panel.image.value
    panel.q_sliders[2].value = 0.0  # b = 0.5 + 0.5 + 0 = 1.0
    assert "<b>1.00</b>" in panel.summary.value and panel.image.value != before
    panel.v_slider.value = 3.0  # Q - V = [-2, -1, -3], policy-weighted: -1 - 0.25 - 0.75 = -2.0
    assert "of Q - V: <b>-2.00</b>" in panel.summary.value
    panel.pi_sliders[1].value = 1.0  # weights 0.5, 1, 0.25 -> pi = 2/7, 4/7, 1/7; b = 2/7 * 1 + 4/7 * 2 + 0 = 10/7
    assert "<b>1.43</b>" in panel.summary.value
    with pytest.raises(ValueError, match="one value per action \\(3\\), got 2 and 3"):
        advantage_explorer(["D", "L", "U"], q=[1.0, 2.0])
    with pytest.raises(ValueError, match="pi weights must be in \\[0, 1\\]"):
        advantage_explorer(["D", "L", "U"], pi=[2.0, 1.0, 1.0])


def test_continuous_maddpg_panel_trains_the_chosen_critic(monkeypatch):
    import marl_edu.training.loops
    from marl_edu.course.widgets import continuous_maddpg_panel

    learners = []

    def spy(learner, env_id, episodes, config, **kwargs):  # the real training, with its learner and config recorded
        learners.append((learner, config))
        return train(learner, env_id, episodes, config, **kwargs)

    train = marl_edu.training.loops.train
    monkeypatch.setattr(marl_edu.training.loops, "train", spy)
    panel = continuous_maddpg_panel(episodes=96, seed=1)
    controls = panel.children[0].children
    assert [c.description for c in controls] == ["actor lr", "critic lr", "noise", "tau", "batch size",
                                                 "centralised critics (off: independent DDPG)", "episodes", "seed"]
    controls[4].value, controls[5].value = 32, False  # a small batch, and independent critics
    panel.button.click()
    # the dots of a continuous learner are its noise-free policy's evaluations, not greedy ones
    assert panel.status.value.startswith("done: 96 episodes, last noise-free team return"), panel.status.value
    learner, config = learners[0]
    from marl_edu.learners.continuous import ContinuousIDDPG

    assert learner is ContinuousIDDPG and config.batch_size == 32


def test_plot_runs_draws_a_reference_that_kept_only_its_evaluations():
    from marl_edu.course.widgets import plot_runs

    fig = plot_runs({"episode_returns": [], "evaluations": [(200, -60.0), (400, -50.0)], "label": "ref"},
                    {"episode_returns": [-70.0] * 32, "evaluations": [(32, -65.0)], "label": "mine"}, window=16)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "ref: greedy" in labels and not any(label.startswith("ref (") for label in labels)  # no empty curve
    assert any(label.startswith("mine") and "greedy" not in label for label in labels)  # the run's own curve
    assert fig.axes[0].get_title().endswith("and greedy evaluations (dots)")  # the default: Switch's learners
    # a run that kept its sampled evaluations: rings twice the greedy dots' size, so a ring shows around its dot where
    # the two agree (a ring the dot's size hid under it), and the title says so
    fig = plot_runs(None, {"episode_returns": [], "evaluations": [(32, -10.0)], "sampled_evaluations": [(32, -9.4)],
                           "label": "mine"})
    sampled = [line for line in fig.axes[0].lines if line.get_label() == "mine: sampled"]
    assert len(sampled) == 1 and list(sampled[0].get_ydata()) == [-9.4] and sampled[0].get_markerfacecolor() == "none"
    greedy = [line for line in fig.axes[0].lines if line.get_label() == "mine: greedy"]
    assert len(greedy) == 1 and sampled[0].get_markersize() >= 2 * greedy[0].get_markersize()
    assert fig.axes[0].get_title().endswith("and greedy evaluations (dots; rings: sampled)")


def test_plot_runs_and_the_panel_name_the_evaluations_they_are_given():
    import ipywidgets as widgets

    from marl_edu.course.widgets import plot_runs, training_panel

    reference = {"episode_returns": [-70.0] * 32, "evaluations": [(16, -66.0), (32, -64.0)], "label": "ref"}
    fig = plot_runs(reference, _fake_run(0.1, 20) | {"label": "mine"}, window=8, evaluation_label="noise-free")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "ref: noise-free" in labels and "mine: noise-free" in labels
    assert not any("greedy" in label for label in labels), labels
    assert fig.axes[0].get_title() == ("team return per training episode (exploring) and noise-free evaluations "
                                       "(dots)")
    panel = training_panel({"episodes": widgets.IntSlider(20)}, lambda episodes: _fake_run(0.1, episodes),
                           evaluation_label="noise-free")
    panel.button.click()
    # the last evaluation of _fake_run(0.1, 20) is 8.0 + 0.1
    assert panel.status.value == "done: 20 episodes, last noise-free team return <b>8.10</b>", panel.status.value


def test_panels_start_at_the_defaults_exactly_and_default_to_the_command_lines_budget():
    # a FloatLogSlider's browser side snaps 2e-3 to the nearest quarter decade, 10**-2.75 = 1.78e-3: the panels use
    # sliders over 1, 2, 3 and 5 per decade that hold each default exactly
    from marl_edu.learners.table import LEARNERS
    from marl_edu.learners.coma import COMAConfig
    from marl_edu.learners.continuous import ContinuousMADDPGConfig
    from marl_edu.learners.maddpg import MADDPGConfig
    from marl_edu.course.widgets import coma_panel, continuous_maddpg_panel, maddpg_panel

    for panel, defaults, budget in [(maddpg_panel(), MADDPGConfig(), LEARNERS["maddpg"].episodes),
                                    (coma_panel(), COMAConfig(), LEARNERS["coma"].episodes),
                                    (continuous_maddpg_panel(), ContinuousMADDPGConfig(), None)]:
        controls = {child.description: child for child in panel.children[0].children}
        assert controls["actor lr"].value == defaults.actor_lr and controls["critic lr"].value == defaults.critic_lr
        assert "tau" not in controls or controls["tau"].value == defaults.tau
        assert controls["actor lr"].options[0] == ("1e-05", 1e-05) and controls["actor lr"].options[-1][1] == 0.01
        if budget is not None:
            assert controls["episodes"].value == budget


def test_vdn_threshold_by_hand():
    from marl_edu.course.widgets import vdn_threshold

    # agent 0's action 0 is worth 8 p - 12 (1 - p), its others -12 p: equal at 20 p - 12 = -12 p, p = 12/32 = 0.375
    assert vdn_threshold(-12.0) == pytest.approx(0.375)
    assert vdn_threshold(-8.0) == pytest.approx(1 / 3)  # uniform exploration's edge: VDN solves iff penalty > -8
    assert vdn_threshold(0.0) == 0.0  # no penalty: any exploration finds (0, 0)
    with pytest.raises(ValueError, match="penalty must be a number"):
        vdn_threshold(1.0)


def test_matrix_game_panel_refits_both_methods_when_a_slider_moves(monkeypatch):
    import marl_edu.training.loops
    from marl_edu.course.widgets import matrix_game_panel

    calls = []

    def spy(payoff, method, probs=None, seed=0, **kwargs):  # the real fit, with what the panel asked for recorded
        calls.append((payoff[0, 1].item(), method, round(float(probs[0]), 3), seed))
        return train_matrix_game(payoff, method, probs=probs, seed=seed, **kwargs)

    train_matrix_game = marl_edu.course.widgets.train_matrix_game
    monkeypatch.setattr(marl_edu.course.widgets, "train_matrix_game", spy)
    panel = matrix_game_panel()
    assert calls == [(-12.0, "vdn", 0.333, 0), (-12.0, "qmix", 0.333, 0)]
    # uniform exploration: both miss the optimum (notebook 11's by-hand VDN values and its QMIX runs)
    assert "<b>VDN</b> plays (1, 1): payoff <b>0</b>" in panel.summary.value
    assert "QMIX</b> plays" in panel.summary.value and "(0, 0): payoff <b>8</b>" not in panel.summary.value
    assert "P(action 0) &gt; 0.375 (no here)" in panel.summary.value
    before = panel.image.value
    panel.p0.value = 0.5  # above 0.375: VDN's agents now play the optimum
    assert calls[-2:] == [(-12.0, "vdn", 0.5, 0), (-12.0, "qmix", 0.5, 0)]
    assert "<b>VDN</b> plays (0, 0): payoff <b>8</b>" in panel.summary.value and "(yes here)" in panel.summary.value
    assert panel.image.value != before and panel.image.value[:4] == b"\x89PNG"
    panel.penalty.value = -4.0
    assert calls[-1][0] == -4.0 and "P(action 0) &gt; 0.250" in panel.summary.value  # 4 / (8 + 8)
    assert [o[0] for o in panel.p0.options][:2] == ["0.05", "0.10"] and "1/3 (uniform)" in dict(panel.p0.options)
    with pytest.raises(ValueError, match=r"p0 must be a probability in \[0.05, 0.95\]"):
        matrix_game_panel(p0=0.99)
    with pytest.raises(ValueError, match="penalty must be a number"):
        matrix_game_panel(penalty=5.0)


def test_ppo_panel_trains_the_chosen_learner_with_the_sliders_values(monkeypatch):
    import marl_edu.training.loops
    from marl_edu.learners.ppo import PPOConfig
    from marl_edu.course.widgets import ppo_panel

    calls = []

    def spy(learner, env_id, episodes, config, **kwargs):  # the real training, with what the panel asked for recorded
        calls.append((config, learner))
        return train(learner, env_id, episodes, config, **kwargs)

    train = marl_edu.training.loops.train
    monkeypatch.setattr(marl_edu.training.loops, "train", spy)
    panel = ppo_panel(seed=1)
    controls = {child.description: child for child in panel.children[0].children}
    assert list(controls) == ["learner", "clip c", "epochs", "minibatches", "actor lr", "entropy", "episodes", "seed"]
    defaults = PPOConfig()
    assert (controls["clip c"].value, controls["epochs"].value, controls["minibatches"].value,
            controls["actor lr"].value) == (defaults.clip, defaults.epochs, defaults.minibatches, defaults.actor_lr)
    controls["learner"].value = "ippo"
    controls["clip c"].value = 0.1
    controls["epochs"].value = 2
    controls["episodes"].value = 32  # a short run: 2 batches of 16 episodes
    before = panel.image.value
    panel.button.click()
    assert panel.status.value.startswith("done: 32 episodes, last greedy team return"), panel.status.value
    assert panel.image.value != before
    config, learner = calls[0]
    assert learner == "ippo" and config.clip == 0.1 and config.epochs == 2 and config.lam == defaults.lam
