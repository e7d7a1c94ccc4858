"""The exact optimal team return of Switch, by exhaustive dynamic programming over joint states.

Why: a learning curve means little without the ceiling. Switch is small enough to solve exactly:
the joint state is every agent's cell (an agent standing on its goal is done and stays there), the
joint action is one of A^N, and the episode lasts at most ``max_steps`` steps. Finite-horizon
dynamic programming over all of them gives the best achievable team return,

    V_H(s) = 0,        V_t(s) = max_u [ R(s, u) + V_{t+1}(s'(s, u)) ],        answer = V_0(s_0),

where R(s, u) is the sum of the agents' rewards for the step. The transition follows ma-gym's own
Switch rules: agents move one after another in index order; a move into a wall, off the grid or
into a cell occupied at that moment fails (the agent stays put); a done agent does not move and
gets 0; the others get the step cost, or +5 on the step they arrive.

Rewards are kept as integer tenths (-1 per step, +50 on arrival), so the sums are exact.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from marl_edu.envs.batched_switch import ARRIVAL_REWARD  # what ma-gym's Switch.step pays (not an attribute of the env)
from marl_edu.envs.magym import MultiAgentEnv, resolve_env_id

_MOVES = {0: (1, 0), 1: (0, -1), 2: (-1, 0), 3: (0, 1), 4: (0, 0)}  # DOWN, LEFT, UP, RIGHT, NOOP
_NOOP = 4


@dataclass(frozen=True)
class OptimalPlan:
    """The optimum of one Switch environment.

    team_return: the best achievable sum of all agents' rewards over one episode.
    joint_actions: int ``(T, N)``, one optimal plan, played from reset until every agent is done.
    agent_returns: float ``(N,)``, each agent's return under that plan.
    arrival_steps: int ``(N,)``, the step (1-based) at which each agent arrives under that plan.
    """

    env_id: str
    team_return: float
    joint_actions: np.ndarray
    agent_returns: np.ndarray
    arrival_steps: np.ndarray


def _tenths(x: float) -> int:
    t = round(x * 10)
    if abs(t - x * 10) > 1e-9:
        raise ValueError(f"reward {x} is not a whole number of tenths")
    return int(t)


def _switch_model(env_id: str):
    """Read the layout of a Switch env (walls, starts, goals, costs) off a real instance."""
    env = MultiAgentEnv(env_id, seed=0)
    raw = env._env.unwrapped
    if type(raw).__name__ != "Switch":
        raise ValueError(f"exact planning is implemented for the Switch environments only, not {env_id!r}")
    walls = raw._base_grid == -1  # (rows, cols) bool
    rows, cols = walls.shape
    cells = [(r, c) for r in range(rows) for c in range(cols) if not walls[r, c]]
    index = {cell: i for i, cell in enumerate(cells)}
    n_cells, n_actions = len(cells), env.n_actions
    move_to = np.full((n_cells, n_actions), -1, dtype=np.int64)  # (C, A) target cell, -1 = wall/off grid
    for i, (r, c) in enumerate(cells):
        for a, (dr, dc) in _MOVES.items():
            move_to[i, a] = index.get((r + dr, c + dc), -1)
    starts = np.array([index[tuple(raw.init_agent_pos[i])] for i in range(env.n_agents)])  # (N,)
    goals = np.array([index[tuple(raw.final_agent_pos[i])] for i in range(env.n_agents)])  # (N,)
    return env, move_to, starts, goals, _tenths(raw._step_cost), _tenths(ARRIVAL_REWARD)


def _step(pos: np.ndarray, actions: np.ndarray, move_to: np.ndarray, goals: np.ndarray,
          step_cost: int, arrival: int) -> tuple[np.ndarray, np.ndarray]:
    """ma-gym's Switch rules for P joint states at once: positions ``(P, N)`` and one joint action ``(N,)``
    -> next positions ``(P, N)`` and each agent's reward in tenths ``(P, N)``."""
    pos = pos.copy()  # (P, N)
    rewards = np.zeros(pos.shape, dtype=np.int64)  # (P, N)
    for i in range(pos.shape[1]):  # agents move one after another, in index order
        done = pos[:, i] == goals[i]  # (P,) a done agent stays on its goal
        target = move_to[pos[:, i], actions[i]]  # (P,)
        vacant = target >= 0  # (P,) ... and no other agent stands there right now:
        for j in range(pos.shape[1]):
            if j != i:
                vacant &= pos[:, j] != target
        moves = ~done & vacant
        pos[moves, i] = target[moves]
        arrived = ~done & (pos[:, i] == goals[i])
        rewards[:, i] = np.where(done, 0, np.where(arrived, arrival, step_cost))
    return pos, rewards


@functools.lru_cache(maxsize=8)
def optimal_plan(env_id: str = "Switch2-v0", shortcut: bool = True) -> OptimalPlan:
    """Solve a Switch environment exactly (Switch2: instant; Switch4: a few seconds). See module doc. ``shortcut``:
    stop the backward induction once the values stop changing (exact, see below; False: every one of the H steps, the
    plain path the tests hold it to)."""
    env_id = resolve_env_id(env_id)
    env, move_to, starts, goals, step_cost, arrival = _switch_model(env_id)
    N, A, H, C = env.n_agents, env.n_actions, env.max_steps, move_to.shape[0]

    # Every joint state: N distinct cells, (P, N). Encoded as base-C numbers for lookup.
    states = np.array(list(itertools.permutations(range(C), N)), dtype=np.int64)  # (P, N)
    powers = C ** np.arange(N)  # (N,)
    lookup = np.full(C**N, -1, dtype=np.int64)
    lookup[states @ powers] = np.arange(len(states))
    joint = np.array(list(itertools.product(range(A), repeat=N)), dtype=np.int64)  # (A^N, N), agent 0 first

    # One step of the env's rules for every (state, joint action) pair.
    next_state = np.empty((len(states), len(joint)), dtype=np.int64)  # (P, A^N)
    reward = np.empty((len(states), len(joint)), dtype=np.int64)  # (P, A^N) team reward in tenths
    for u, actions in enumerate(joint):
        pos, rewards = _step(states, actions, move_to, goals, step_cost, arrival)  # (P, N), (P, N)
        next_state[:, u] = lookup[pos @ powers]
        reward[:, u] = rewards.sum(axis=1)

    # Finite-horizon dynamic programming, backwards from the time limit.
    value = np.zeros(len(states), dtype=np.int64)  # V_H = 0, (P,)
    previous = value
    best = np.empty((H, len(states)), dtype=np.int64)  # (H, P) an optimal joint action per step
    n_noops = (joint == _NOOP).sum(axis=1)  # (A^N,) among equally good joint actions, prefer waiting
    for t in reversed(range(H)):
        if shortcut and t + 2 < H and np.array_equal(value, previous):
            # V_{t+1} = V_{t+2}: then Q_t = Q_{t+1}, so step t's choice and value are step t+1's, and so on back
            # to the start (every state is done or home within a few steps, long before the time limit is far)
            best[:t + 1] = best[t + 1]
            break
        q = reward + value[next_state]  # (P, A^N)
        # q is an integer (tenths) and n_noops <= N < N + 1, so scaling q by N + 1 before adding the
        # NOOP count keeps every strict order of q and only breaks ties, in favour of waiting.
        best[t] = (q * (N + 1) + n_noops).argmax(axis=1)
        previous, value = value, q.max(axis=1)

    # Play the plan forward from the start to read off the actions and each agent's rewards.
    s = int(lookup[starts @ powers])
    agent_tenths, arrival_steps, plan = np.zeros(N, dtype=np.int64), np.zeros(N, dtype=np.int64), []
    for t in range(H):
        if (states[s] == goals).all():
            break
        actions = joint[best[t, s]]
        plan.append(actions)
        pos, rewards = _step(states[s][None], actions, move_to, goals, step_cost, arrival)  # (1, N), (1, N)
        agent_tenths += rewards[0]
        arrival_steps[rewards[0] == arrival] = t + 1
        s = int(lookup[pos[0] @ powers])
    assert agent_tenths.sum() == value[int(lookup[starts @ powers])]
    return OptimalPlan(env_id=env_id, team_return=float(agent_tenths.sum()) / 10,
                       joint_actions=np.array(plan, dtype=np.int64).reshape(-1, N),
                       agent_returns=agent_tenths / 10, arrival_steps=arrival_steps)


def optimal_team_return(env_id: str = "Switch2-v0") -> float:
    """The exact optimal team return (sum over agents and steps) of a Switch environment."""
    return optimal_plan(env_id).team_return


def best_response_return(env_id: str, joint_actions, free) -> float:
    """The best team return of an episode in which the agents in ``free`` may play anything and every other agent j
    plays ``joint_actions[t, j]`` at step t again (and NOOP after them): how far a played episode is from the optimum
    when only some agents change their moves. ``joint_actions``: int ``(T, N)``, an episode's actions, T <= the
    episode's limit; ``free``: distinct agent indices.

    Why: a learner that keeps a path a few steps longer than the optimum's may be one agent's change away from it
    (what one agent's exploration can find while the others play on) or need several agents to change together (what
    independent exploration rarely tries). The others' moves are kept as played (open loop): an agent whose move is
    blocked by a changed one does not react, where its policy might.

    Forward dynamic programming over the joint cells: the fixed agents' actions depend on the step only, so the best
    return to each joint cell at step t is all the future needs, B_{t+1}(s') = max over (s, u_free) leading to s' of
    [B_t(s) + R(s, u)], and the answer is max_s B_H(s)."""
    env_id = resolve_env_id(env_id)
    env, move_to, starts, goals, step_cost, arrival = _switch_model(env_id)
    N, A, H, C = env.n_agents, env.n_actions, env.max_steps, move_to.shape[0]
    plan = np.asarray(joint_actions)
    if plan.ndim != 2 or plan.shape[1] != N or not 1 <= plan.shape[0] <= H:
        raise ValueError(f"joint_actions must be (T, N) = (T, {N}) with 1 <= T <= {H} on {env_id}, got shape "
                         f"{plan.shape}")
    if not np.issubdtype(plan.dtype, np.integer) or plan.min() < 0 or plan.max() >= A:
        raise ValueError(f"joint_actions must be integer actions in [0, {A}), got dtype {plan.dtype} with values "
                         f"{plan.min()}..{plan.max()}")
    try:
        free = list(free)
    except TypeError:
        raise ValueError(f"free must be a sequence of agent indices, got {free!r}") from None
    if (any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in free) or len(set(free)) != len(free)
            or any(not 0 <= i < N for i in free)):
        raise ValueError(f"free must be distinct integer agent indices in [0, {N}), got {free}")
    free = [int(i) for i in free]
    plan = np.concatenate([plan, np.full((H - len(plan), N), _NOOP)])  # (H, N) NOOP after the played actions
    choices = np.array(list(itertools.product(range(A), repeat=len(free))), dtype=np.int64)  # (A^k, k)
    powers = C ** np.arange(N)  # (N,) a joint cell as one base-C number
    cells, best = starts[None].copy(), np.zeros(1, dtype=np.int64)  # (P, N) reachable joint cells, (P,) best tenths
    for t in range(H):
        reached, totals = [], []
        for choice in choices:
            actions = plan[t].copy()  # (N,)
            actions[free] = choice
            moved, rewards = _step(cells, actions, move_to, goals, step_cost, arrival)  # (P, N), (P, N)
            reached.append(moved)
            totals.append(best + rewards.sum(axis=1))
        reached, totals = np.concatenate(reached), np.concatenate(totals)  # (P * A^k, N), (P * A^k,)
        keys = reached @ powers  # (P * A^k,)
        order = np.lexsort((-totals, keys))  # by joint cell, the best total first within each
        first = np.ones(len(order), dtype=bool)
        first[1:] = keys[order][1:] != keys[order][:-1]
        cells, best = reached[order][first], totals[order][first]  # (P', N), (P',)
    return float(best.max()) / 10


# ----------------------------------------------------------------------------------------------
# Deterministic policies that see only the agent's own cell
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PositionPolicyCensus:
    """Every deterministic joint policy in which each agent's action depends on its own cell only.

    probability: team return -> the probability that such a policy, with each agent's action in each
        cell drawn uniformly at random, earns exactly that return (the values sum to 1).
    solutions: the joint action sequences ``(T, N)`` of the policies that earn at least ``threshold``,
        each played from reset until every agent is done, with their team returns.
    """

    env_id: str
    probability: dict[float, float]
    solutions: list[tuple[float, np.ndarray]]

    @property
    def best_return(self) -> float:
        return max(self.probability)


def position_policy_census(env_id: str = "Switch2-v0", threshold: float = 8.0,
                           progress: bool = True) -> PositionPolicyCensus:
    """Enumerate the deterministic policies pi_i(cell) of a Switch environment exactly (Switch2: seconds).

    From the fixed start such a policy only matters on the cells it visits, so the table is filled in
    lazily: the first time agent i stands on a cell, branch over its A possible entries, each with
    probability 1/A. Nothing is random after that, so if a joint position comes back the agents are in
    a loop that lasts until the time limit, and every agent not yet home pays the step cost each step.
    """
    env_id = resolve_env_id(env_id)
    env, move_to, starts, goals, step_cost, arrival = _switch_model(env_id)
    N, A, H = env.n_agents, env.n_actions, env.max_steps
    probability: dict[int, float] = {}
    solutions: list[tuple[float, np.ndarray]] = []
    bar = tqdm(total=1.0, desc=f"{env_id}: position-only tables", disable=not progress, leave=False,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}")  # share of all tables counted so far

    def record(total: int, mass: float, played: list) -> None:
        bar.update(mass)
        probability[total] = probability.get(total, 0.0) + mass
        if total >= _tenths(threshold):
            solutions.append((total / 10, np.array(played, dtype=np.int64).reshape(-1, N)))

    def explore(pos: tuple, t: int, table: dict, total: int, visited: set, mass: float, played: list) -> None:
        home = [pos[i] == goals[i] for i in range(N)]
        if all(home) or t == H:
            return record(total, mass, played)
        if pos in visited:  # a loop: the same joint position again, with the same table
            return record(total + step_cost * home.count(False) * (H - t), mass, played)
        new = [i for i in range(N) if not home[i] and (i, pos[i]) not in table]
        if new:  # agent i stands on this cell for the first time: try every entry of its table
            i = new[0]
            for a in range(A):
                table[(i, pos[i])] = a
                explore(pos, t, table, total, visited, mass / A, played)
            del table[(i, pos[i])]
            return
        actions = np.array([_NOOP if home[i] else table[(i, pos[i])] for i in range(N)])  # (N,)
        next_pos, rewards = _step(np.array(pos)[None], actions, move_to, goals, step_cost, arrival)  # (1, N)
        visited.add(pos)
        explore(tuple(next_pos[0].tolist()), t + 1, table, total + int(rewards.sum()), visited, mass,
                played + [actions])
        visited.remove(pos)

    explore(tuple(starts.tolist()), 0, {}, 0, set(), 1.0, [])
    bar.close()
    return PositionPolicyCensus(env_id=env_id, probability={k / 10: v for k, v in sorted(probability.items())},
                                solutions=solutions)
