import numpy as np
import pytest
from PIL import Image

from marl_edu.base.viz import moving_average, plot_learning_curve, plot_seed_evaluations, save_gif, show_gif
from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import make_env


def test_moving_average_by_hand():
    # window 2 over [1, 2, 3, 4]: [1/1, (1+2)/2, (2+3)/2, (3+4)/2] = [1, 1.5, 2.5, 3.5]
    np.testing.assert_allclose(moving_average([1, 2, 3, 4], 2), [1.0, 1.5, 2.5, 3.5])
    np.testing.assert_allclose(moving_average([1, 2, 3], 1), [1, 2, 3])
    with pytest.raises(ValueError, match="window must be a positive int"):
        moving_average([1, 2], 0)


def test_learning_curve_has_labels_and_reference_lines():
    ax = plot_learning_curve([1.0, 2.0, 3.0], optimal=8.3, random=-9.0, window=2)
    assert ax.get_xlabel() == "episode" and "team return" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("exact optimum (8.30)" in s for s in labels) and any("random policy (-9.00)" in s for s in labels)
    with pytest.raises(ValueError, match=r"returns: expected shape \(episodes,\)"):
        plot_learning_curve(np.zeros((3, 2)))


def test_save_gif_roundtrip_and_determinism(tmp_path):
    env = make_env("Switch2-v0")
    frames = run_episode(env, lambda obs: np.array([0, 4]), record_frames=True).frames[:5]
    path = save_gif(frames, tmp_path / "a.gif", fps=5, scale=2, hold_last=3)
    gif = Image.open(path)
    durations = []
    for k in range(gif.n_frames):
        gif.seek(k)
        durations.append(gif.info["duration"])
    # agent 0 moves down once, then bumps into the wall below: frames 1..4 (and the 3 held) are
    # identical, and Pillow merges identical neighbours into one longer frame: 3 frames shown,
    # lasting (5 + 3) x 1000 / 5 ms = 1600 ms in all.
    assert gif.n_frames == 3 and sum(durations) == 1600
    assert gif.size == (frames[0].shape[1] * 2, frames[0].shape[0] * 2)  # (W, H) doubled
    again = save_gif(frames, tmp_path / "b.gif", fps=5, scale=2, hold_last=3)
    assert path.read_bytes() == again.read_bytes()  # same frames, same bytes: nbval can compare them
    assert show_gif(path).data == path.read_bytes()


def test_a_gif_that_cannot_be_written_leaves_the_old_one_whole(tmp_path, monkeypatch):
    """Pillow writes a GIF frame by frame: a disk that fills up midway must not leave half a GIF, under the real
    name or beside it."""
    import errno
    import os

    frame = np.zeros((4, 6, 3), dtype=np.uint8)
    path = save_gif([frame, frame + 50], tmp_path / "a.gif")
    before = path.read_bytes()

    def full_disk(image, fp, *args, **kwargs):  # as Pillow does: open a path it is given, write, fail
        file = open(fp, "wb") if isinstance(fp, (str, os.PathLike)) else fp
        file.write(b"GIF89a half a gif")
        file.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Image.Image, "save", full_disk)
    with pytest.raises(OSError, match=f"^could not write {path}: {os.strerror(errno.ENOSPC)}$"):
        save_gif([frame + 100, frame], path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["a.gif"]


def test_gif_bad_inputs(tmp_path):
    frame = np.zeros((4, 4, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match="frames is empty"):
        save_gif([], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="expected uint8 RGB"):
        save_gif([frame.astype(np.float32)], tmp_path / "x.gif")
    with pytest.raises(ValueError, match=r"frames\[1\]: expected shape \(H=4, W=4, 3\)"):
        save_gif([frame, np.zeros((5, 4, 3), dtype=np.uint8)], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="fps must be in"):
        save_gif([frame], tmp_path / "x.gif", fps=0)
    with pytest.raises(ValueError, match="must end in .gif"):
        save_gif([frame], tmp_path / "x.png")
    with pytest.raises(ValueError, match="no GIF at"):
        show_gif(tmp_path / "missing.gif")


def test_seed_evaluations_one_line_per_seed():
    rows = [{"seed": 0, "evaluations": [(50, -10.0), (100, 8.0)]}, {"seed": 1, "evaluations": [(50, -0.6)]}]
    ax = plot_seed_evaluations(rows, optimal=8.3, title="t")
    assert [line.get_label() for line in ax.lines] == ["seed 0", "seed 1", "exact optimum (8.3)"]
    assert list(ax.lines[0].get_ydata()) == [-10.0, 8.0]
    with pytest.raises(ValueError, match="seed 2 has no evaluations"):
        plot_seed_evaluations([{"seed": 2, "evaluations": []}])


def test_env_step_evaluations_one_line_per_seed_in_millions_of_steps():
    from marl_edu.base.viz import plot_env_step_evaluations

    rows = [{"seed": 0, "evaluations": [(200, 9_800, 0.1), (400, 19_500, 0.5)]},
            {"seed": 1, "evaluations": [(200, 10_000, 0.0)]}]
    ax = plot_env_step_evaluations(rows, target=0.8, title="t")
    assert [line.get_label() for line in ax.lines] == ["seed 0", "seed 1", "target (0.8)"]
    np.testing.assert_allclose(ax.lines[0].get_xdata(), [0.0098, 0.0195])  # 9,800 and 19,500 steps, in millions
    assert list(ax.lines[0].get_ydata()) == [0.1, 0.5]
    assert ax.get_xlabel() == "env steps (millions)"
    with pytest.raises(ValueError, match="seed 2 has no evaluations"):
        plot_env_step_evaluations([{"seed": 2, "evaluations": []}])
    with pytest.raises(ValueError, match=r"seed 3: each evaluation must be \(episode, env steps, greedy"):
        plot_env_step_evaluations([{"seed": 3, "evaluations": [(200, 0.5)]}])


def test_seed_band_by_hand_and_comparison_plot():
    from marl_edu.base.viz import plot_comparison, seed_band

    rows = [{"evaluations": [(50, -10.0), (100, 2.0), (150, 8.0)]}, {"evaluations": [(52, -10.0), (102, 8.0)]}]
    episodes, greedy = seed_band(rows)
    # cut to the shorter run (2 evaluations); episodes (50 + 52) / 2 = 51 and (100 + 102) / 2 = 101
    np.testing.assert_allclose(episodes, [51.0, 101.0])
    np.testing.assert_allclose(greedy, [[-10.0, 2.0], [-10.0, 8.0]])
    ax = plot_comparison({"coma-gru": rows, "coma-ff": rows}, optimal=8.3, title="t")
    assert ax.get_xlabel() == "training episode" and ax.get_ylabel() == "greedy team return"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["coma-gru (mean of 2 seeds; band: min to max)", "coma-ff (mean of 2 seeds; band: min to max)",
                      "exact optimum (8.3)"]
    assert ax.get_lines()[0].get_linewidth() > ax.get_lines()[1].get_linewidth()  # a line under another still shows
    assert ax.get_lines()[1].get_linestyle() == "--"  # feed-forward variants are dashed
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [-10.0, 5.0])  # mean over seeds: (2 + 8) / 2
    with pytest.raises(ValueError, match="every run needs at least one evaluation"):
        seed_band([{"evaluations": []}])


def test_env_step_band_by_hand_and_its_plot():
    from marl_edu.base.viz import env_step_band, plot_env_step_band

    # two runs evaluated at different env steps (every so many episodes, episodes of different lengths): A at 100, 300
    # and 500, B at 200, 400 and 600. Both cover 200 (B's first) to 500 (A's last); every evaluation in that range
    # is a point: 200, 300, 400, 500, each run read on a straight line between its own evaluations
    curves = [[(100, 0.0), (300, 0.4), (500, 0.8)], [(200, 0.2), (400, 0.2), (600, 1.0)]]
    steps, values = env_step_band(curves)
    np.testing.assert_allclose(steps, [200, 300, 400, 500])
    np.testing.assert_allclose(values, [[0.2,  # A at 200: halfway from (100, 0.0) to (300, 0.4)
                                         0.4, 0.6,  # at 300 its own; at 400 halfway from 0.4 to 0.8
                                         0.8],
                                        [0.2, 0.2, 0.2,  # B at 300: halfway from (200, 0.2) to (400, 0.2)
                                         0.6]])  # B at 500: 0.2 + (1.0 - 0.2) x (500 - 400) / (600 - 400)
    # (paired by index, A's first with B's first, the mean 0.1 would stand at env step 150, where B has no value)
    ax = plot_env_step_band(curves, color="C6", linestyle="--", label="published", band_alpha=0.08)
    line, = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [0.0002, 0.0003, 0.0004, 0.0005])  # in millions
    np.testing.assert_allclose(line.get_ydata(), [0.2, 0.3, 0.4, 0.7])  # means: (0.4 + 0.2) / 2, (0.8 + 0.6) / 2
    assert line.get_linestyle() == "--" and line.get_label() == "published"
    band, = ax.collections
    assert band.get_alpha() == 0.08
    np.testing.assert_allclose(band.get_paths()[0].vertices[:, 1].min(), 0.2)  # the band's floor: the lowest run
    np.testing.assert_allclose(band.get_paths()[0].vertices[:, 1].max(), 0.8)  # its ceiling: the highest
    # one run: its own evaluations; runs evaluated at the same env steps: as they are
    alone = env_step_band(curves[:1])
    np.testing.assert_allclose(alone[0], [100, 300, 500])
    np.testing.assert_allclose(alone[1], [[0.0, 0.4, 0.8]])
    same = env_step_band([[(100, 0.1), (200, 0.5)], [(100, 0.3), (200, 0.9)]])
    np.testing.assert_allclose(same[1], [[0.1, 0.5], [0.3, 0.9]])
    with pytest.raises(ValueError, match="at least one run"):
        env_step_band([[(100, 0.1)], []])
    with pytest.raises(ValueError, match="an \\(env steps, value\\) pair"):
        env_step_band([[(0, 100, 0.1)]])
    with pytest.raises(ValueError, match="finite"):
        env_step_band([[(100, float("nan"))]])
    with pytest.raises(ValueError, match="run 1's env steps must increase"):
        env_step_band([[(100, 0.1)], [(200, 0.1), (200, 0.2)]])
    with pytest.raises(ValueError, match="share no env steps \\(the latest first evaluation, 300, comes after the "
                                         "earliest last one, 200\\)"):
        env_step_band([[(100, 0.1), (200, 0.2)], [(300, 0.3)]])


def test_downscale_averages_blocks_by_hand():
    import numpy as np
    import pytest

    from marl_edu.base.viz import downscale

    frame = np.zeros((4, 4, 3), dtype=np.uint8)  # (H, W, 3)
    frame[:2, :2] = 100  # the top-left 2x2 block: one pixel of 100
    frame[0, 2:] = 200  # the top-right block: two pixels of 200, two of 0 -> (200 + 200 + 0 + 0) / 4 = 100
    small = downscale(frame, 2)  # (2, 2, 3)
    assert small.shape == (2, 2, 3) and small.dtype == np.uint8
    assert small[..., 0].tolist() == [[100, 100], [0, 0]]
    for bad in (0, 5, 1.5, True):
        with pytest.raises(ValueError, match=r"factor must be an int in \[1, 4\]"):
            downscale(frame, bad)


def test_side_by_side_puts_panels_in_a_row_with_a_grey_gap_between():
    import numpy as np
    import pytest

    from marl_edu.base.viz import side_by_side

    a = np.full((2, 3, 3), 10, dtype=np.uint8)  # (H, W, 3) = (2, 3, 3)
    b = np.full((2, 1, 3), 20, dtype=np.uint8)  # (2, 1, 3): panels may differ in width, not in height
    row = side_by_side([a, b, a], gap=2)  # widths 3 + 2 + 1 + 2 + 3 = 11
    assert row.shape == (2, 11, 3) and row.dtype == np.uint8
    assert row[0, :, 0].tolist() == [10, 10, 10, 150, 150, 20, 150, 150, 10, 10, 10]  # grey: the envs draw on white
    assert side_by_side([a], gap=2).tolist() == a.tolist()  # one panel: no gap
    assert side_by_side([a, b], gap=0).shape == (2, 4, 3)
    with pytest.raises(ValueError, match=r"panels\[1\]: expected shape \(H=2, W, 3\), got \(3, 1, 3\)"):
        side_by_side([a, np.zeros((3, 1, 3), np.uint8)])
    with pytest.raises(ValueError, match="panels is empty"):
        side_by_side([])
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="gap must be a non-negative int"):
            side_by_side([a, b], gap=bad)
    assert side_by_side([a, b], gap=np.int64(1)).shape == (2, 5, 3)  # a numpy int is an int
    with pytest.raises(ValueError, match="panels\\[1\\]: expected uint8 RGB, got dtype float64"):
        side_by_side([a, b.astype(np.float64)])


def test_outcome_counts_by_hand_and_outcome_plot():
    from marl_edu.base.viz import SWITCH_OUTCOMES, outcome_counts, plot_outcomes

    rows = [{"evaluations": [(50, -10.0), (100, -0.6), (150, 8.1)]},
            {"evaluations": [(50, -10.0), (100, 7.0), (150, -2.0)]}]
    episodes, counts = outcome_counts(rows)
    np.testing.assert_allclose(episodes, [50.0, 100.0, 150.0])
    # levels best first: solved (>= 8.0), both home (>= 0), one home (>= -9), nobody (-10)
    # episode 50: both runs at -10 -> nobody 2; episode 100: -0.6 one home, 7.0 both home;
    # episode 150: 8.1 solved, -2.0 one home
    assert counts.tolist() == [[0, 0, 1], [0, 1, 0], [0, 1, 1], [2, 0, 0]]
    assert (counts.sum(axis=0) == 2).all()  # every run at exactly one level
    assert outcome_counts(rows, (("solved", 8.0), ("anything else", -np.inf)))[1].tolist() == [[0, 0, 1], [2, 2, 1]]
    with pytest.raises(ValueError, match="strictly decreasing"):
        outcome_counts(rows, (("low", -9.0), ("high", 8.0)))
    ax = plot_outcomes(rows, color="C1", title="t")
    assert [t.get_label() for t in ax.collections] == [name for name, _ in SWITCH_OUTCOMES]
    assert ax.get_ylim() == (0.0, 2.0) and ax.get_ylabel() == "runs (of 2), greedy" and ax.get_title() == "t"
    assert ax.collections[0].get_facecolor()[0][3] == 1.0  # the best level in the method's full colour
    assert ax.collections[1].get_facecolor()[0][3] < 1.0  # each lower level paler


def test_qmix_diagram_names_every_mixer_tensor_with_its_shape():
    from marl_edu.base.viz import plot_qmix

    ax = plot_qmix()
    text = " ".join(t.get_text() for t in ax.texts)
    for shape in ["W_1 (B, N, E)", "v_1 (B, 1, E)", "w_2 (B, E, 1)", "v_2 (B, 1, 1)", "q_taken = [Q_0(h_0, a_0), "
                  "Q_1(h_1, a_1)]  (B, N)", "hidden (B, 1, E)", "Q_tot (B,)", "state s\n(B, S)"]:
        assert shape in text, shape
    assert text.count("|MLP(s)|") == 2  # abs() on the two weights, not on the biases
    arrows = [t.arrow_patch for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    # dashed: one arrow from each of the 4 hypernetworks into the mixer (parameters, not inputs); solid: the rest
    assert sum(a.get_linestyle() == "--" for a in arrows) == 4 and len(arrows) == 12


def test_q_tables_write_every_entry_and_outline_the_greedy_joint_action():
    from marl_edu.base.viz import plot_q_tables

    payoff = [[8.0, -12.0], [-12.0, -0.04]]
    axes = plot_q_tables({"R": payoff, "mine": np.zeros((2, 2))}, greedy={"mine": (1, 0)})
    assert len(axes) == 2 and [ax.get_title() for ax in axes] == ["R", "mine"]
    assert sorted(t.get_text() for t in axes[0].texts) == ["-12.0", "-12.0", "0.0", "8.0"]  # -0.04 reads 0.0
    outline = [p for p in axes[1].patches if not p.get_fill()]
    assert len(outline) == 1 and outline[0].get_xy() == (-0.5, 0.5)  # column a_1 = 0, row a_0 = 1
    assert not [p for p in axes[0].patches if not p.get_fill()]  # nothing outlined where no greedy action is given
    with pytest.raises(ValueError, match=r"tables\['x'\]: expected shape \(A, A\)"):
        plot_q_tables({"x": np.zeros((2, 3))})
    with pytest.raises(ValueError, match="tables is empty"):
        plot_q_tables({})


def test_sampled_evaluations_are_drawn_dotted_beside_the_greedy_ones_where_recorded():
    from marl_edu.base.viz import plot_comparison, plot_env_step_evaluations, seed_band

    old = {"seed": 0, "evaluations": [(50, -10.0), (100, 8.0)]}  # recorded before sampled evaluations were kept
    new = {"seed": 1, "evaluations": [(50, -10.0), (100, 8.0)], "sampled_evaluations": [(50, -9.5), (100, 6.5)]}
    ax = plot_seed_evaluations([old, new], optimal=8.3)
    assert [line.get_label() for line in ax.lines] == ["seed 0", "seed 1", "_seed 1, sampled", "exact optimum (8.3)"]
    # the legend names the seeds (the y label says which line is sampled) and sits under the axes, off the late runs
    legend = ax.get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["seed 0", "seed 1", "exact optimum (8.3)"]
    assert legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted()).y0 < 0  # below the axes
    assert ax.lines[2].get_linestyle() == ":" and ax.lines[2].get_color() == ax.lines[1].get_color()
    assert list(ax.lines[2].get_ydata()) == [-9.5, 6.5] and "dotted: sampled" in ax.get_ylabel()
    assert plot_seed_evaluations([old]).get_ylabel() == "greedy team return"  # old records: greedy only, as before
    # the sampled mean over seeds: (-9.5 + -8.5) / 2 = -9.0 and (6.5 + 7.5) / 2 = 7.0
    other = {"seed": 2, "evaluations": [(50, -0.6), (100, 8.3)], "sampled_evaluations": [(50, -8.5), (100, 7.5)]}
    np.testing.assert_allclose(seed_band([new, other], "sampled_evaluations")[1], [[-9.5, 6.5], [-8.5, 7.5]])
    ax = plot_comparison({"coma-gru": [new, other], "vdn-gru": [old]})
    assert [line.get_label() for line in ax.lines] == [
        "coma-gru (mean of 2 seeds; band: min to max)", "coma-gru, sampled",
        "vdn-gru (mean of 1 seeds; band: min to max)"]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [-9.0, 7.0])
    lbf = {"seed": 0, "evaluations": [(200, 10_000, 0.1)], "sampled_evaluations": [(200, 10_000, 0.6)]}
    ax = plot_env_step_evaluations([lbf])
    assert list(ax.lines[1].get_ydata()) == [0.6] and ax.lines[1].get_linestyle() == ":"
    with pytest.raises(ValueError, match=r"every run needs at least one evaluation \(sampled_evaluations\)"):
        seed_band([old], "sampled_evaluations")
