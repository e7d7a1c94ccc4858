"""Which food a kept Level-Based Foraging policy loads: food one agent can load by itself against food that needs both.

A run's team return says how much food was loaded, not which. On ``Foraging-8x8-2p-3f-v3`` a food item is loaded when
the agents next to it who choose LOAD on the same step have levels adding up to its level, so an item no higher
than the highest agent's level can be loaded by that agent alone ("alone"), and a higher one only by both together
("together": the coordination the value-decomposition learners are for). This replays each kept policy
(``benchmarks/foraging.py``'s OUT/METHOD/policy.pt, the final policy of the method's lowest recorded seed) greedily
for 100 episodes from the start states of a run's final evaluation (the env seeded 0) and counts, per kind, the items
there were at the start and the items loaded by the end; and what a policy that leaves food does instead: the episodes
that ended with food on the field, how many of them ended stuck (the agents on at most two joint cells over the last
20 steps: standing still, or one agent, or both in step, stepping back and forth; ``stuck``) and each agent's share
of NONE among its actions.

    .venv/bin/python benchmarks/foraging_food.py --out results/foraging        # prints, writes OUT/food.json
    .venv/bin/python benchmarks/foraging_food.py --out results/tmp/tuning --methods iql vdn

It reads the food and the agents' levels from agent 0's observation at the start and at the end of each episode
(``envs.foraging.ForagingEnv``'s layout: ``[y, x, level]`` of each food still on the field, then of each agent), so
it needs a task whose agents see the whole grid (no ``-2s``: refused). The mean team return printed beside the counts
is that of the same greedy episodes as the run's final evaluation (``evaluation.greedy_team_return``: the env seeded
its family's ``eval_seed``, a fresh greedy policy per episode), so it equals the run record's ``final``; a test
replays one method and holds OUT/food.json to the records. Run it again whenever a kept policy changes (a method's
first seed committed): it counts the methods given (default all) and keeps the others' counts in OUT/food.json.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from foraging import FINAL_EPISODES  # (benchmarks/foraging.py: a run's final evaluation, 100 episodes)
from marl_edu.base.files import atomic_write_text
from marl_edu.data.rollout import run_episode
from marl_edu.envs.make import family, make_env
from marl_edu.runs.grid import open_out
from marl_edu.runs.seed import load_replay_policy

ROOT = pathlib.Path(__file__).resolve().parent.parent
KINDS = ("alone", "together")
STUCK_WINDOW = 20  # steps at the end of an episode over which stuck agents stand on at most two joint cells
NONE = 0  # lbforaging's Action.NONE (envs.foraging.ForagingEnv.action_meanings[0])


def food_and_levels(obs: np.ndarray, n_food: int, n_agents: int) -> tuple[dict[tuple[int, int], int], list[int]]:
    """What one agent's observation ``(O,)`` of a full-view task says: the food on the field ``{(y, x): level}``
    (its first 3F numbers, ``[y, x, level]`` per slot, an empty slot at level 0) and the agents' levels (the next 3N
    numbers, ``[y, x, level]`` per agent, the observer first). ValueError if O is not 3F + 3N."""
    obs = np.asarray(obs)
    if obs.shape != (3 * (n_food + n_agents),):
        raise ValueError(f"an observation of a full-view task with {n_food} food and {n_agents} agents has "
                         f"{3 * (n_food + n_agents)} numbers, got shape {obs.shape}")
    slots = obs[:3 * n_food].reshape(n_food, 3)  # (F, 3) [y, x, level]
    food = {(int(y), int(x)): int(level) for y, x, level in slots if level > 0}
    levels = [int(level) for level in obs[3 * n_food:].reshape(n_agents, 3)[:, 2]]  # (N,)
    return food, levels


def food_kind(level: int, agent_levels: list[int]) -> str:
    """``"alone"`` if the highest agent's level reaches the food's ``level`` (that agent loads it by itself), else
    ``"together"``."""
    return "alone" if level <= max(agent_levels) else "together"


def stuck(cells: np.ndarray, window: int = STUCK_WINDOW) -> bool:
    """Whether agents whose joint cells over an episode are ``cells`` ``(T+1, N, 2)`` (``[y, x]`` per agent, before
    the first step and after each) stood on at most two joint cells over the last ``window`` steps: standing still,
    or one agent (or both, in step) stepping back and forth. An episode shorter than ``window`` steps is not called
    stuck."""
    cells = np.asarray(cells)
    if cells.ndim != 3 or cells.shape[-1] != 2:
        raise ValueError(f"cells must be (T+1, N, 2), [y, x] per agent, got shape {cells.shape}")
    if len(cells) - 1 < window:
        return False
    return len({tuple(row.ravel().tolist()) for row in cells[-(window + 1):]}) <= 2


def loaded_by_kind(env, make_policy, episodes: int) -> dict:
    """Play ``episodes`` episodes of ``env`` (a full-view ``ForagingEnv``) with a fresh ``make_policy()`` each (obs
    ``(N, O)`` -> actions ``(N,)``; ``rollout.run_episode``, one torch thread) and count the food: ``{"alone":
    [loaded, at the start], "together": [...], "team_return": the episodes' mean, "left": the episodes that ended
    with food on the field, "stuck": those of them whose agents were stuck at the end (``stuck``), "idle": each
    agent's share of its actions that were NONE (action 0)}``: what a policy that leaves food does instead."""
    n_food, n_agents = env.max_food, env.n_agents
    counts = {kind: [0, 0] for kind in KINDS}
    returns, left_episodes, stuck_episodes, idle, steps = [], 0, 0, np.zeros(n_agents, dtype=np.int64), 0
    for _ in range(episodes):
        episode = run_episode(env, make_policy(), threads=1)
        start, levels = food_and_levels(episode.obs[0, 0], n_food, n_agents)  # agent 0's view at the first step
        left, _ = food_and_levels(episode.next_obs[-1, 0], n_food, n_agents)  # ... and after the last
        for place, level in start.items():
            kind = food_kind(level, levels)
            counts[kind][1] += 1
            counts[kind][0] += place not in left
        returns.append(episode.team_return)
        views = np.concatenate([episode.obs[:1, 0], episode.next_obs[:, 0]])  # (T+1, O) agent 0's, all agents' cells
        cells = views[:, 3 * n_food:].reshape(len(views), n_agents, 3)[..., :2]  # (T+1, N, 2) [y, x]
        left_episodes += bool(left)
        stuck_episodes += bool(left) and stuck(cells)
        idle += (np.asarray(episode.actions) == NONE).sum(axis=0)  # (N,)
        steps += len(episode.actions)
    return {**counts, "team_return": float(np.mean(returns)), "left": left_episodes, "stuck": stuck_episodes,
            "idle": [round(float(n) / steps, 4) for n in idle]}


def kept_methods(out: pathlib.Path) -> list[str]:
    """The methods with a kept policy in ``out`` (OUT/METHOD/policy.pt), sorted."""
    return sorted(path.parent.name for path in out.glob("*/policy.pt"))


def policy_seed(folder: pathlib.Path) -> int:
    """The seed whose final policy OUT/METHOD/policy.pt is: the lowest recorded (``runs.grid.keeps_files``)."""
    seeds = [int(p.stem.removeprefix("seed")) for p in folder.glob("seed*.json") if p.stem[4:].isdigit()]
    if not seeds:
        raise ValueError(f"{folder} holds a policy.pt but no seed<S>.json record: whose policy is it?")
    return min(seeds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--out", type=str, default=str(ROOT / "results" / "foraging"),
                        help="a benchmarks/foraging.py results folder (default: results/foraging)")
    parser.add_argument("--methods", nargs="+", default=None,
                        help="the methods to count again (default: every kept policy's); OUT/food.json keeps the "
                             "others' counts")
    args = parser.parse_args(argv)
    out, held = open_out(parser, args.out)  # (one script at a time: foraging.py may be writing its grid here)
    try:
        found = kept_methods(out)
        methods = found if args.methods is None else args.methods
        missing = [method for method in methods if method not in found]
        if not found or missing:
            parser.error(f"{out} holds no kept policy (METHOD/policy.pt) of {', '.join(missing) or 'any method'}")
        kept = {}
        for method in methods:
            try:
                seed = policy_seed(out / method)
                agent, _, env_id = load_replay_policy(str(out / method / "policy.pt"))
            except ValueError as error:
                parser.error(str(error))
            if "-2s" in env_id:  # (a partial view: food out of sight would count as loaded)
                parser.error(f"{out / method / 'policy.pt'} plays {env_id}, whose agents see only around themselves: "
                             f"the food is counted from a full view")
            kept[method] = seed, agent, env_id
        path = out / "food.json"
        figures = json.loads(path.read_text()) if path.exists() else {"methods": {}}  # (other methods' counts kept)
        print(f"{'method':>6} {'seed':>4} {'alone: loaded':>14} {'together: loaded':>17} {'team return':>11} "
              f"{'food left':>9} {'stuck':>5}  NONE, per agent")
        for method, (seed, agent, env_id) in kept.items():
            env_seed = family(env_id).eval_seed  # the final evaluation's start states
            counts = loaded_by_kind(make_env(env_id, seed=env_seed), agent.greedy_policy, FINAL_EPISODES)
            figures["env_seed"], figures["episodes"] = env_seed, FINAL_EPISODES
            figures["methods"][method] = {"policy_seed": seed, "env": env_id, **counts}
            alone, together = counts["alone"], counts["together"]
            print(f"{method:>6} {seed:>4} {alone[0]:>4} of {alone[1]:<3} {alone[0] / max(alone[1], 1):4.0%} "
                  f"{together[0]:>6} of {together[1]:<3} {together[0] / max(together[1], 1):4.0%} "
                  f"{counts['team_return']:11.4f} {counts['left']:>9} {counts['stuck']:>5}  "
                  f"{', '.join(f'{share:.0%}' for share in counts['idle'])}", flush=True)
        figures["methods"] = dict(sorted(figures["methods"].items()))
        atomic_write_text(path, json.dumps(figures, indent=1) + "\n")
        print(f"wrote {path}")
        return 0
    finally:  # (parser.error's exit too)
        if held is not None:
            held.close()


if __name__ == "__main__":
    sys.exit(main())
