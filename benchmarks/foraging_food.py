"""Which food a kept Level-Based Foraging policy loads: food one agent can load by itself against food that needs both.

A run's team return says how much food was loaded, not which. On ``Foraging-8x8-2p-3f-v3`` a food item is loaded when
the agents next to it who choose LOAD on the same step have levels adding up to its level, so an item no higher
than the highest agent's level can be loaded by that agent alone ("alone"), and a higher one only by both together
("together": the coordination the value-decomposition learners are for). This replays each kept policy
(``benchmarks/foraging.py``'s OUT/METHOD/policy.pt, the final policy of the method's lowest recorded seed) greedily
for 100 episodes from the start states of a run's final evaluation (the env seeded 0) and counts, per kind, the items
there were at the start and the items loaded by the end.

    .venv/bin/python benchmarks/foraging_food.py --out results/foraging_2m     # prints, writes OUT/food.json
    .venv/bin/python benchmarks/foraging_food.py --out results/foraging --methods iql vdn mappo

It reads the food and the agents' levels from agent 0's observation at the start and at the end of each episode
(``envs.foraging.ForagingEnv``'s layout: ``[y, x, level]`` of each food still on the field, then of each agent), so
it needs a task whose agents see the whole grid (no ``-2s``). The mean team return printed beside the counts is the
same 100 greedy episodes' and equals the run record's ``final`` (tests/test_results.py holds OUT/food.json to that).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from marl_edu.base.files import atomic_write_text
from marl_edu.envs.make import make_env
from marl_edu.runs.seed import load_replay_policy

ROOT = pathlib.Path(__file__).resolve().parent.parent
EPISODES = 100  # as a run's final evaluation
SEED = 0  # the env's seed: the final evaluation's start states
KINDS = ("alone", "together")


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


def loaded_by_kind(env, make_policy, episodes: int) -> dict:
    """Play ``episodes`` episodes of ``env`` (``ForagingEnv``'s interface) with a fresh ``make_policy()`` each (obs
    ``(N, O)`` -> actions ``(N,)``) and count the food: ``{"alone": [loaded, at the start], "together": [...],
    "team_return": mean}``."""
    n_food, n_agents = env.max_food, env.n_agents
    counts = {kind: [0, 0] for kind in KINDS}
    returns = []
    for _ in range(episodes):
        obs = env.reset()  # (N, O)
        start, levels = food_and_levels(obs[0], n_food, n_agents)
        policy, total, done = make_policy(), 0.0, False
        while not done:
            obs, rewards, dones, _ = env.step(policy(obs))
            total, done = total + float(np.sum(rewards)), bool(dones.all())
        left, _ = food_and_levels(obs[0], n_food, n_agents)
        for place, level in start.items():
            kind = food_kind(level, levels)
            counts[kind][1] += 1
            counts[kind][0] += place not in left
        returns.append(total)
    return {**counts, "team_return": float(np.mean(returns))}


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=str, default=str(ROOT / "results" / "foraging_2m"),
                        help="a benchmarks/foraging.py results folder (default: results/foraging_2m)")
    parser.add_argument("--methods", nargs="+", default=None, help="the methods (default: every kept policy's)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    found = kept_methods(out)
    methods = found if args.methods is None else args.methods
    missing = [method for method in methods if method not in found]
    if not found or missing:
        parser.error(f"{out} holds no kept policy (METHOD/policy.pt) of {', '.join(missing) or 'any method'}")
    try:
        kept = {method: (policy_seed(out / method), *load_replay_policy(str(out / method / "policy.pt"))[::2])
                for method in methods}  # method -> (its seed, the learner, the env it plays)
    except ValueError as error:
        parser.error(str(error))
    figures = {"env_seed": SEED, "episodes": EPISODES, "methods": {}}
    print(f"{'method':>6} {'seed':>4} {'alone: loaded':>14} {'together: loaded':>17} {'team return':>11}")
    for method, (seed, agent, env_id) in kept.items():
        counts = loaded_by_kind(make_env(env_id, seed=SEED), agent.greedy_policy, EPISODES)
        figures["methods"][method] = {"policy_seed": seed, "env": env_id, **counts}
        alone, together = counts["alone"], counts["together"]
        print(f"{method:>6} {seed:>4} {alone[0]:>4} of {alone[1]:<3} {alone[0] / max(alone[1], 1):4.0%} "
              f"{together[0]:>6} of {together[1]:<3} {together[0] / max(together[1], 1):4.0%} "
              f"{counts['team_return']:11.4f}", flush=True)
    atomic_write_text(out / "food.json", json.dumps(figures, indent=1) + "\n")
    print(f"wrote {out / 'food.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
