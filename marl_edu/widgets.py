"""ipywidgets panels for the notebooks. Part I: an explorer that steps through a recorded episode."""

from __future__ import annotations

import html
import io

import ipywidgets as widgets
import numpy as np
from PIL import Image

from marl_edu.rollout import Episode
from marl_edu.viz import upscale


def _png(frame: np.ndarray, scale: int = 2) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(upscale(frame, scale)).save(buffer, format="PNG")
    return buffer.getvalue()


def episode_explorer(episode: Episode, action_meanings: list[str]) -> widgets.VBox:
    """A slider over the steps of a recorded episode (``run_episode(..., record_frames=True)``).

    At step t it shows the scene after t steps and, for every agent, what it observed, what it did,
    what it got and whether it is done, so the loop obs -> actions -> next_obs, rewards, dones can
    be followed one step at a time.
    """
    if episode.frames is None:
        raise ValueError("the episode has no frames: record it with run_episode(env, policy, record_frames=True)")
    T, N = episode.actions.shape
    slider = widgets.IntSlider(value=0, min=0, max=T, description="step t", continuous_update=True,
                               layout=widgets.Layout(width="420px"))
    image = widgets.Image(format="png")
    table = widgets.HTML()

    def show(t: int) -> None:
        image.value = _png(episode.frames[t])
        rows = ["<tr><th>agent</th><th>obs o_t</th><th>action a_t</th><th>reward r_t</th><th>done</th>"
                "<th>return up to t</th></tr>"]
        for i in range(N):
            if t < T:
                obs = np.round(episode.obs[t, i].astype(np.float64), 2).tolist()
                act = action_meanings[episode.actions[t, i]]
                cells = [obs, act, f"{episode.rewards[t, i]:+.1f}", bool(episode.dones[t, i])]
            else:
                cells = [np.round(episode.next_obs[T - 1, i].astype(np.float64), 2).tolist(), "—", "—", "episode over"]
            so_far = episode.rewards[: t + 1, i].sum(dtype=np.float64)  # r_0 + ... + r_t
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in [i, *cells, f"{so_far:+.1f}"])
                        + "</tr>")
        table.value = (f"<b>t = {t}</b> : the scene the agents observe; each row: what agent i sees, does and gets at step t"
                       f"<table style='border-collapse:collapse'>{''.join(rows)}</table>")

    slider.observe(lambda change: show(change["new"]), names="value")
    show(0)
    return widgets.VBox([slider, image, table])
