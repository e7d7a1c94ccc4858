"""ipywidgets panels for the notebooks: an explorer that steps through a recorded episode, a
hyperparameter panel whose button trains and draws the new learning curve over a reference run, an
explorer of COMA's counterfactual baseline and advantage, a panel that refits VDN and QMIX to a
one-step matrix game, and one that trains MAPPO or IPPO."""

from __future__ import annotations

import dataclasses
import html
import io
from typing import Callable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from PIL import Image

from marl_edu.base.viz import plot_learning_curve, plot_q_tables, upscale
from marl_edu.data.rollout import Episode
from marl_edu.learners.coma import COMA, COMAConfig, counterfactual_baseline
from marl_edu.learners.continuous import ContinuousIDDPG, ContinuousMADDPG, ContinuousMADDPGConfig
from marl_edu.learners.maddpg import MADDPG, MADDPGConfig
from marl_edu.learners.matrix_game import METHODS, action_probs, optimum, payoff_matrix, train_matrix_game
from marl_edu.learners.ppo import IPPO, MAPPO, PPOConfig
from marl_edu.learners.table import LEARNERS, algo_name_of_class
from marl_edu.training import loops


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
        rows = ["<tr><th>agent i</th><th>obs o_{i,t}</th><th>action a_{i,t}</th><th>reward r_{i,t}</th><th>done</th>"
                "<th>return up to t</th></tr>"]
        for i in range(N):
            if t < T:
                obs = np.round(episode.obs[t, i].astype(np.float64), 2).tolist()
                act = action_meanings[episode.actions[t, i]]
                cells = [obs, act, f"{episode.rewards[t, i]:+.1f}", bool(episode.dones[t, i])]
            else:
                cells = [np.round(episode.next_obs[T - 1, i].astype(np.float64), 2).tolist(), "—", "—", "episode over"]
            so_far = episode.rewards[: t + 1, i].sum(dtype=np.float64)  # r_{i,0} + ... + r_{i,t}
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in [i, *cells, f"{so_far:+.1f}"])
                        + "</tr>")
        table.value = (f"<b>t = {t}</b> : the scene the agents observe; each row: what agent i sees, does and gets at step t"
                       f"<table style='border-collapse:collapse'>{''.join(rows)}</table>")

    slider.observe(lambda change: show(change["new"]), names="value")
    show(0)
    return widgets.VBox([slider, image, table])


# ----------------------------------------------------------------------------------------------
# Hyperparameter panel: sliders, a button that trains, and the curve over a reference run
# ----------------------------------------------------------------------------------------------

def _figure_png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def plot_runs(reference: dict | None, run: dict | None, optimal: float | None = None, random: float | None = None,
              window: int = 50, evaluation_label: str = "greedy"):
    """Learning curves of a reference run and a new run on one set of axes; returns the figure.

    Each run is a dict with ``episode_returns`` (episodes,) (team return of every training episode; may be empty) and
    ``evaluations``, a list of ``(episode, team return of an evaluation)``; ``label`` names it in the legend;
    ``sampled_evaluations`` (optional, same form): the sampled policy's at the same episodes, drawn as rings twice the
    dots' size, so a ring around its dot says the two agree.
    ``evaluation_label`` says what the evaluations (the dots) played, in the legend and the title: "greedy" (the
    argmax of a discrete policy, Switch's learners) or, for the continuous learners, "noise-free" (the forces
    mu_i(o_{i,t}) without exploration noise).
    """
    fig, ax = plt.subplots(figsize=(8, 3.8))
    lines = {"optimal": optimal, "random": random}  # drawn once, with the first curve
    for name, data, color in (("reference", reference, "0.55"), ("your run", run, "C0")):
        if not data:
            continue
        if data["episode_returns"]:  # (a reference may keep its evaluations only)
            plot_learning_curve(data["episode_returns"], optimal=lines.pop("optimal", None),
                                random=lines.pop("random", None), label=data.get("label", name), window=window,
                                ax=ax, color=color)
        if data["evaluations"]:
            episodes, evaluated = zip(*data["evaluations"])
            ax.plot(episodes, evaluated, "o", color=color, markersize=3.5,
                    label=f"{data.get('label', name)}: {evaluation_label}")
        if data.get("sampled_evaluations"):
            episodes, sampled = zip(*data["sampled_evaluations"])
            # a ring twice the dot's size: centred on its dot where the two agree
            ax.plot(episodes, sampled, "o", color=color, markersize=8, markerfacecolor="none", markeredgewidth=1.2,
                    label=f"{data.get('label', name)}: sampled")
    if optimal is not None:
        ax.set_ylim(top=optimal + 1.5)
    sampled = any(data and data.get("sampled_evaluations") for data in (reference, run))
    ax.set_title(f"team return per training episode (exploring) and {evaluation_label} evaluations (dots"
                 + ("; rings: sampled" if sampled else "") + ")")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=7)
    return fig


def training_panel(controls: dict[str, widgets.Widget], train: Callable[..., dict], reference: dict | None = None,
                   optimal: float | None = None, random: float | None = None,
                   evaluation_label: str = "greedy") -> widgets.VBox:
    """Sliders for hyperparameters and a button that runs ``train(**values)`` and draws the result.

    controls: name -> widget; the button calls ``train(**{name: widget.value})``, which returns a run
    dict (``episode_returns``, ``evaluations``, optionally ``label``), drawn over ``reference``.
    The panel's ``status`` line reports the run's last evaluation return, or the error for a bad setting;
    ``evaluation_label`` names those evaluations there and in the plot ("greedy", or "noise-free": see ``plot_runs``).
    """
    button = widgets.Button(description="train", button_style="primary", icon="play")
    progress = widgets.Output()
    image = widgets.Image(format="png", value=_figure_png(plot_runs(reference, None, optimal, random,
                                                                    evaluation_label=evaluation_label)))
    status = widgets.HTML("Move the sliders, then press <b>train</b>. The grey curve is the committed reference run.")

    def on_click(_button) -> None:
        values = {name: control.value for name, control in controls.items()}
        button.disabled = True
        status.value = "training ..."
        progress.clear_output()
        error = None
        with progress:  # in a kernel, Output shows and swallows any exception raised inside it: catch ours here
            try:
                run = train(**values)
            except ValueError as bad_setting:
                error = bad_setting
            finally:
                button.disabled = False
        if error is not None:
            status.value = f"<b>not trained:</b> {html.escape(str(error))}"
            return
        image.value = _figure_png(plot_runs(reference, run, optimal, random, evaluation_label=evaluation_label))
        panel.run, panel.settings = run, values  # the last press's run dict and the slider values it trained with
        last = run["evaluations"][-1][1] if run["evaluations"] else float("nan")
        ran, asked = len(run["episode_returns"]), values.get("episodes")
        rounded = (f" ({asked} asked for: the parallel env copies finish their episodes together)"
                   if asked is not None and ran != asked else "")
        status.value = (f"done: {ran} episodes{rounded}, last {evaluation_label} team return <b>{last:.2f}</b>"
                        + (f" (optimum {optimal:.2f})" if optimal is not None else ""))

    button.on_click(on_click)
    grid = widgets.GridBox(list(controls.values()), layout=widgets.Layout(grid_template_columns="repeat(2, 360px)"))
    panel = widgets.VBox([grid, button, progress, status, image])
    panel.button, panel.status, panel.image = button, status, image  # handles for tests and the browser test
    panel.run = panel.settings = None  # (tools/panel_pictures.py reads the last press's)
    return panel


def _log_slider(value: float, low: int, high: int, description: str, style: dict) -> widgets.SelectionSlider:
    """A slider over 1, 2, 3 and 5 times each power of ten from 10**low to 10**high, starting at ``value`` (added to
    the steps if it is not one of them). Unlike a FloatLogSlider, whose browser side snaps its value to the nearest
    step (2e-3 becomes 1.8e-3), the value the learner sees is the value the panel trains with."""
    steps = sorted({round(m * 10.0 ** e, 12) for e in range(low, high) for m in (1, 2, 3, 5)} | {10.0 ** high, value})
    return widgets.SelectionSlider(options=[(f"{v:.0e}" if v < 0.1 else f"{v:g}", v) for v in steps], value=value,
                                   description=description, style=style)


def _learning_rate_slider(value: float, description: str, style: dict) -> widgets.SelectionSlider:
    """A learning-rate slider from 1e-5 to 1e-2 (1, 2, 3 and 5 per decade)."""
    return _log_slider(value, -5, -2, description, style)


def maddpg_panel(reference: dict | None = None, env_id: str = "Switch2-v2", optimal: float | None = None,
                 random: float | None = None, episodes: int = LEARNERS[algo_name_of_class(MADDPG)].episodes,
                 seed: int = 0) -> widgets.VBox:
    """The MADDPG hyperparameter panel: learning rates, gamma, tau, batch size, episodes and seed.

    The button trains MADDPG (``loops.train``) with the other hyperparameters at their defaults
    (``MADDPGConfig``) and draws the new run over ``reference`` (a run dict, see ``plot_runs``).
    """
    defaults = MADDPGConfig()
    style = {"description_width": "90px"}
    controls = {
        "actor_lr": _learning_rate_slider(defaults.actor_lr, "actor lr", style),
        "critic_lr": _learning_rate_slider(defaults.critic_lr, "critic lr", style),
        "gamma": widgets.FloatSlider(defaults.gamma, min=0.0, max=1.0, step=0.01, description="gamma", style=style),
        "tau": _log_slider(defaults.tau, -4, 0, "tau", style),
        "batch_size": widgets.SelectionSlider(options=[32, 64, 128, 256, 512, 1024], value=defaults.batch_size,
                                              description="batch size", style=style),
        "episodes": widgets.IntSlider(episodes, min=50, max=3000, step=50, description="episodes", style=style),
        "seed": widgets.IntSlider(seed, min=0, max=9, description="seed", style=style),
    }

    def train(actor_lr, critic_lr, gamma, tau, batch_size, episodes, seed) -> dict:
        config = dataclasses.replace(defaults, actor_lr=actor_lr, critic_lr=critic_lr, gamma=gamma, tau=tau,
                                     batch_size=batch_size)
        run = loops.train(MADDPG, env_id, episodes, config, seed=seed, eval_every=max(episodes // 10, 16))
        return {"episode_returns": run.episode_returns, "evaluations": run.evaluations,
                "sampled_evaluations": run.sampled_evaluations,
                "label": f"your run (seed {seed})"}

    return training_panel(controls, train, reference, optimal, random)


def coma_panel(reference: dict | None = None, env_id: str = "Switch2-v0", optimal: float | None = None,
               random: float | None = None, episodes: int = LEARNERS[algo_name_of_class(COMA)].episodes,
               seed: int = 0) -> widgets.VBox:
    """The COMA hyperparameter panel: learning rates, lambda, entropy bonus, episodes per batch,
    recurrent or feed-forward actors, episodes and seed.

    The button trains COMA (``loops.train``) with the other hyperparameters at their defaults
    (``COMAConfig``) and draws the new run over ``reference`` (a run dict, see ``plot_runs``).
    """
    defaults = COMAConfig()
    style = {"description_width": "105px"}  # wide enough for "episodes/batch" (seen in the browser test)
    controls = {
        "actor_lr": _learning_rate_slider(defaults.actor_lr, "actor lr", style),
        "critic_lr": _learning_rate_slider(defaults.critic_lr, "critic lr", style),
        "lam": widgets.FloatSlider(defaults.lam, min=0.0, max=1.0, step=0.05, description="lambda", style=style),
        "entropy_start": widgets.FloatSlider(defaults.entropy_start, min=0.0, max=0.5, step=0.01,
                                             description="entropy", style=style),
        "n_envs": widgets.SelectionSlider(options=[4, 8, 16, 32, 64], value=defaults.n_envs,
                                          description="episodes/batch", style=style),
        "recurrent": widgets.Checkbox(defaults.recurrent, description="GRU actors (off: feed-forward)", indent=False,
                                      layout=widgets.Layout(width="340px")),
        "episodes": widgets.IntSlider(episodes, min=16, max=20000, step=16, description="episodes", style=style),
        "seed": widgets.IntSlider(seed, min=0, max=9, description="seed", style=style),
    }

    def train(actor_lr, critic_lr, lam, entropy_start, n_envs, recurrent, episodes, seed) -> dict:
        config = dataclasses.replace(defaults, actor_lr=actor_lr, critic_lr=critic_lr, lam=lam,
                                     entropy_start=entropy_start, n_envs=n_envs, recurrent=recurrent)
        run = loops.train(COMA, env_id, episodes, config, seed=seed, eval_every=max(episodes // 20, n_envs))
        return {"episode_returns": run.episode_returns, "evaluations": run.evaluations,
                "sampled_evaluations": run.sampled_evaluations,
                "label": f"your run (seed {seed})"}

    return training_panel(controls, train, reference, optimal, random)


def ppo_panel(reference: dict | None = None, env_id: str = "Switch2-v0", optimal: float | None = None,
              random: float | None = None, episodes: int = 3008, seed: int = 0) -> widgets.VBox:
    """The PPO panel: MAPPO or IPPO, the clip range, epochs and minibatches per batch, the actor's learning rate, the
    entropy bonus, episodes and seed.

    At the defaults (MAPPO, ``PPOConfig``, 3,008 episodes, a multiple of the 16 env copies, seed 0) the press solves
    Switch2-v0 and ends solved; with 2,000 episodes the entropy bonus decays sooner and seed 0 ends with one agent home.

    The button trains the chosen learner (``loops.train``, the on-policy loop) with the other hyperparameters at
    their defaults (``PPOConfig``) and draws the new run over ``reference`` (a run dict, see ``plot_runs``).
    """
    defaults = PPOConfig()
    style = {"description_width": "105px"}
    controls = {
        "learner": widgets.ToggleButtons(options=[("MAPPO: V(s)", algo_name_of_class(MAPPO)),
                                                  ("IPPO: V(h_i)", algo_name_of_class(IPPO))],
                                         value=algo_name_of_class(MAPPO), description="learner", style=style),
        "clip": widgets.FloatSlider(defaults.clip, min=0.05, max=0.95, step=0.05, description="clip c",
                                    style=style),
        "epochs": widgets.IntSlider(defaults.epochs, min=1, max=16, description="epochs", style=style),
        "minibatches": widgets.SelectionSlider(options=[1, 2, 4, 8, 16], value=defaults.minibatches,
                                               description="minibatches", style=style),
        "actor_lr": _learning_rate_slider(defaults.actor_lr, "actor lr", style),
        "entropy_start": widgets.FloatSlider(defaults.entropy_start, min=0.0, max=0.5, step=0.01,
                                             description="entropy", style=style),
        "episodes": widgets.IntSlider(episodes, min=16, max=6000, step=16, description="episodes", style=style),
        "seed": widgets.IntSlider(seed, min=0, max=9, description="seed", style=style),
    }

    def train(learner, clip, epochs, minibatches, actor_lr, entropy_start, episodes, seed) -> dict:
        config = dataclasses.replace(defaults, clip=clip, epochs=epochs, minibatches=minibatches, actor_lr=actor_lr,
                                     entropy_start=entropy_start)
        run = loops.train(learner, env_id, episodes, config, seed=seed, eval_every=max(episodes // 20, config.n_envs))
        return {"episode_returns": run.episode_returns, "evaluations": run.evaluations,
                "sampled_evaluations": run.sampled_evaluations,
                "label": f"your {learner.upper()} (seed {seed})"}

    return training_panel(controls, train, reference, optimal, random)

def continuous_maddpg_panel(reference: dict | None = None, env_id: str = "simple_spread_v3", episodes: int = 160,
                            seed: int = 0) -> widgets.VBox:
    """The continuous MADDPG panel: learning rates, starting exploration noise, tau, batch size, a centralised or
    independent critic, episodes and seed.

    The button trains ``loops.train`` (``ContinuousMADDPG``, or ``ContinuousIDDPG`` with the box off) with
    the other hyperparameters at their defaults (``ContinuousMADDPGConfig``); the dots are the noise-free policy's
    mean team return on 5 evaluation episodes, the rings the sampled policy's (with the exploration noise's
    last sigma, ``noise_end``; 10 episodes), drawn over ``reference`` (a run dict, see ``plot_runs``).
    """
    defaults = ContinuousMADDPGConfig()
    style = {"description_width": "90px"}
    controls = {
        "actor_lr": _learning_rate_slider(defaults.actor_lr, "actor lr", style),
        "critic_lr": _learning_rate_slider(defaults.critic_lr, "critic lr", style),
        "noise_start": widgets.FloatSlider(defaults.noise_start, min=0.0, max=2.0, step=0.05, description="noise",
                                           style=style),
        "tau": _log_slider(defaults.tau, -4, 0, "tau", style),
        "batch_size": widgets.SelectionSlider(options=[32, 64, 128, 256, 512, 1024], value=defaults.batch_size,
                                              description="batch size", style=style),
        "centralised": widgets.Checkbox(True, description="centralised critics (off: independent DDPG)",
                                        indent=False, layout=widgets.Layout(width="340px")),
        "episodes": widgets.IntSlider(episodes, min=96, max=4000, step=16, description="episodes", style=style),
        "seed": widgets.IntSlider(seed, min=0, max=9, description="seed", style=style),
    }

    def train(actor_lr, critic_lr, noise_start, tau, batch_size, centralised, episodes, seed) -> dict:
        config = dataclasses.replace(defaults, actor_lr=actor_lr, critic_lr=critic_lr, noise_start=noise_start,
                                     tau=tau, batch_size=batch_size)
        learner = ContinuousMADDPG if centralised else ContinuousIDDPG
        run = loops.train(learner, env_id, episodes, config, seed=seed, eval_every=max(episodes // 8, 16),
                          eval_episodes=5)
        return {"episode_returns": run.episode_returns, "evaluations": run.evaluations,
                "sampled_evaluations": run.sampled_evaluations,
                "label": f"your {'MADDPG' if centralised else 'independent DDPG'} (seed {seed})"}

    return training_panel(controls, train, reference, evaluation_label="noise-free")


# ----------------------------------------------------------------------------------------------
# COMA's advantage explorer
# ----------------------------------------------------------------------------------------------

def advantage_explorer(action_meanings: list[str], q: list[float] | None = None,
                       pi: list[float] | None = None) -> widgets.VBox:
    """Sliders for one agent i's Q-values Q(s, (a_{-i}, k)) and policy weights pi(k), per action k.

    Shows the counterfactual baseline Qbar_i = sum_k pi(k) Q(s, (a_{-i}, k)) and every action's
    advantage Q(s, (a_{-i}, k)) - Qbar_i, next to the "advantage" against a state-value baseline V(s)
    (its own slider): Q - V, which is not centred on this agent's policy. Policy weights are
    normalised to probabilities.
    """
    A = len(action_meanings)
    q = list(q) if q is not None else [0.0] * A
    pi = list(pi) if pi is not None else [1.0 / A] * A
    if len(q) != A or len(pi) != A:
        raise ValueError(f"q and pi need one value per action ({A}), got {len(q)} and {len(pi)}")
    if not all(0.0 <= p <= 1.0 for p in pi) or not all(-10.0 <= v <= 10.0 for v in q):
        raise ValueError(f"pi weights must be in [0, 1] and Q-values in [-10, 10] (the sliders' ranges), "
                         f"got pi={pi}, q={q}")
    style = {"description_width": "110px"}
    q_sliders = [widgets.FloatSlider(value=v, min=-10, max=10, step=0.1, description=f"Q({m})", style=style)
                 for v, m in zip(q, action_meanings)]
    pi_sliders = [widgets.FloatSlider(value=v, min=0, max=1, step=0.01, description=f"pi({m}) weight", style=style)
                  for v, m in zip(pi, action_meanings)]
    v_slider = widgets.FloatSlider(value=0.0, min=-10, max=10, step=0.1, description="V(s)", style=style)
    image = widgets.Image(format="png")
    summary = widgets.HTML()

    def show(_change=None) -> None:
        weights = np.array([s.value for s in pi_sliders], dtype=np.float64)
        probs = weights / weights.sum() if weights.sum() > 0 else np.full(A, 1.0 / A)  # (A,)
        q_values = torch.tensor([s.value for s in q_sliders], dtype=torch.float64)  # (A,)
        baseline = counterfactual_baseline(q_values, torch.as_tensor(probs)).item()
        advantages = (q_values - baseline).numpy()  # (A,)
        versus_v = (q_values - v_slider.value).numpy()  # (A,)
        fig, ax = plt.subplots(figsize=(7, 3))
        x = np.arange(A)
        ax.bar(x - 0.2, advantages, width=0.4, label=r"COMA: $Q(s, (\mathbf{a}_{-i}, k)) - \bar{Q}_i$")
        ax.bar(x + 0.2, versus_v, width=0.4, color="0.6", label=r"state-value baseline: $Q - V(s)$")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x, [f"{m}\npi={p:.2f}" for m, p in zip(action_meanings, probs)])
        ax.set_xlabel(r"action $k$ of agent $i$ (and its probability $\pi(k)$)")
        ax.set_ylabel("advantage of action k")
        ax.set_title(rf"counterfactual baseline $\bar{{Q}}_i$ = {baseline:.2f}")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
        image.value = _figure_png(fig)
        expected = float((probs * advantages).sum())  # sum_k pi(k) (Q_k - Qbar_i) = 0 always
        summary.value = (f"baseline Q&#772;<sub>i</sub> = sum_k pi(k) Q_k = <b>{baseline:.2f}</b>; policy-weighted "
                         f"mean of the COMA advantages: "
                         f"<b>{expected:+.2f}</b> (always 0); of Q - V: <b>{float((probs * versus_v).sum()):+.2f}</b>")

    for slider in [*q_sliders, *pi_sliders, v_slider]:
        slider.observe(show, names="value")
    show()
    columns = widgets.HBox([widgets.VBox(q_sliders + [v_slider]), widgets.VBox(pi_sliders)])
    panel = widgets.VBox([columns, summary, image])
    panel.q_sliders, panel.pi_sliders, panel.v_slider, panel.summary, panel.image = (
        q_sliders, pi_sliders, v_slider, summary, image)
    return panel


# ----------------------------------------------------------------------------------------------
# Value decomposition on a one-step matrix game
# ----------------------------------------------------------------------------------------------

def vdn_threshold(penalty: float, reward: float = 8.0) -> float:
    """The probability of action 0 above which VDN's greedy joint action is the penalty game's optimum (0, 0), when
    both agents explore independently with P(action 0) = p and the other two actions equally: agent 0's action 0 is
    worth p reward + (1 - p) penalty on average, its other actions p penalty, so action 0 wins iff
    p > -penalty / (reward - 2 penalty) (0.375 for the default -12 and 8). ``payoff_matrix`` checks both numbers."""
    payoff_matrix(penalty, reward)
    return -penalty / (reward - 2.0 * penalty)


def matrix_game_panel(penalty: float = -12.0, p0: float = 1.0 / 3.0, seed: int = 0) -> widgets.VBox:
    """Sliders for the penalty game's ``penalty`` (``matrix_game.payoff_matrix``), the probability ``p0`` with which
    each exploring agent plays action 0 (the other two share the rest) and the seed. Every change refits VDN and
    QMIX (``train_matrix_game``, about a second each) and redraws the payoff beside both learned Q_tot tables, each
    with the joint action its agents play outlined, and a line per method: what it plays, what that earns, and VDN's
    answer by hand (``vdn_threshold``)."""
    payoff_matrix(penalty)  # a bad starting value is a ValueError here, not a broken panel
    if isinstance(p0, bool) or not isinstance(p0, (int, float)) or not 0.05 <= p0 <= 0.95:
        raise ValueError(f"p0 must be a probability in [0.05, 0.95] (the slider's range), got {p0!r}")
    style = {"description_width": "110px"}
    layout = widgets.Layout(width="420px")
    penalty_slider = widgets.FloatSlider(value=float(penalty), min=-20.0, max=0.0, step=1.0, description="penalty",
                                         continuous_update=False, style=style, layout=layout)
    steps = sorted({round(0.05 * k, 2) for k in range(1, 20)} | {float(p0)})
    p0_slider = widgets.SelectionSlider(
        options=[(("1/3 (uniform)" if abs(v - 1 / 3) < 1e-9 else f"{v:.2f}"), v) for v in steps], value=float(p0),
        description="P(action 0)", continuous_update=False, style=style, layout=layout)
    seed_slider = widgets.IntSlider(value=seed, min=0, max=9, description="seed", continuous_update=False,
                                    style=style, layout=layout)
    image = widgets.Image(format="png")
    summary = widgets.HTML()

    def show(_change=None) -> None:
        c, p, s = penalty_slider.value, p0_slider.value, seed_slider.value
        payoff = payoff_matrix(c)  # (3, 3)
        probs = action_probs(3, p)  # (3,)
        fits = {name: train_matrix_game(payoff, name, probs=probs, seed=s) for name in METHODS}  # vdn, qmix
        best, value = optimum(payoff)
        tables = {f"payoff R (optimum {best})": payoff.numpy(),
                  **{f"{name.upper()}'s Q_tot": fit.q_tot.numpy() for name, fit in fits.items()}}
        greedy = {f"payoff R (optimum {best})": best,
                  **{f"{name.upper()}'s Q_tot": fit.greedy for name, fit in fits.items()}}
        axes = plot_q_tables(tables, greedy)
        image.value = _figure_png(axes[0].figure)
        threshold = vdn_threshold(c)
        lines = [f"penalty {c:g}, each agent plays action 0 with probability {p:.2f}: optimum {best}, payoff "
                 f"{value:g}"]
        for name, fit in fits.items():
            lines.append(f"<b>{name.upper()}</b> plays {fit.greedy}: payoff <b>{fit.payoff:g}</b>")
        lines.append(f"by hand, VDN plays (0, 0) when P(action 0) &gt; {threshold:.3f} "
                     f"({'yes' if p > threshold else 'no'} here)")
        summary.value = "<br>".join(lines)

    for slider in (penalty_slider, p0_slider, seed_slider):
        slider.observe(show, names="value")
    show()
    panel = widgets.VBox([widgets.HBox([penalty_slider, p0_slider]), seed_slider, summary, image])
    panel.penalty, panel.p0, panel.seed, panel.summary, panel.image = (penalty_slider, p0_slider, seed_slider,
                                                                       summary, image)
    return panel
