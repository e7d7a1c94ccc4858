import numpy as np
import pytest

from marl_edu.envs.make import make_env
from marl_edu.envs.planning import best_response_return, optimal_plan, optimal_team_return


def replay(env_id, joint_actions):
    """Play a fixed plan in the real ma-gym env; return the per-agent returns and steps taken."""
    env = make_env(env_id)
    env.reset()
    returns = np.zeros(env.n_agents)
    for actions in joint_actions:
        _, rewards, dones, info = env.step(actions)
        returns += rewards
    return returns, dones, info


def test_switch2_optimum_by_hand():
    # The corridor (row 1, cols 2-4) is one cell wide, so one agent waits while the other passes.
    # Each agent needs 7 moves. The first arrives at step 7: 6 step costs then +5 = 5 - 0.6 = 4.4.
    # The second cannot enter the corridor before step 7 (the first is still leaving it), so it
    # arrives 5 steps later, at step 12: 11 step costs then +5 = 5 - 1.1 = 3.9.
    # Team return = 4.4 + 3.9 = 8.3.
    plan = optimal_plan("Switch2-v0")
    assert plan.team_return == pytest.approx(8.3)
    assert sorted(plan.arrival_steps.tolist()) == [7, 12]
    assert sorted(plan.agent_returns.tolist()) == pytest.approx([3.9, 4.4])
    assert optimal_team_return("ma_gym:Switch2-v0") == pytest.approx(8.3)


def test_switch3_optimum_by_hand():
    # Agents 0 and 2 both go right (top row and bottom row), agent 1 goes left along the top row.
    # Agent 0 passes first and arrives at step 7: 5 - 6 x 0.1 = 4.4. Agent 2 follows one cell behind it through the
    # corridor and arrives at step 8: 5 - 0.7 = 4.3. Agent 1 waits until both have left the corridor and arrives at
    # step 14: 5 - 1.3 = 3.7. Team return = 4.4 + 4.3 + 3.7 = 12.4, between Switch2's 8.3 and Switch4's 16.1.
    plan = optimal_plan("Switch3-v0")
    assert plan.arrival_steps.tolist() == [7, 14, 8]
    assert plan.agent_returns.tolist() == pytest.approx([4.4, 3.7, 4.3])
    assert plan.team_return == pytest.approx(12.4) == optimal_team_return("Switch3-v3")


@pytest.mark.parametrize("env_id", ["Switch2-v0", "Switch2-v2", "Switch3-v0", "Switch4-v0"])
def test_the_plan_replayed_in_the_real_env_earns_the_optimum(env_id):
    plan = optimal_plan(env_id)
    returns, dones, info = replay(env_id, plan.joint_actions)
    assert dones.all() and info["terminated"].all()  # every agent arrived: no time-limit ending
    np.testing.assert_allclose(returns, plan.agent_returns, atol=1e-5)
    assert returns.sum() == pytest.approx(plan.team_return, abs=1e-5)
    if env_id == "Switch4-v0":  # (here, not in a test of its own: Switch4's plan takes about 6 s to solve)
        # Two corridors' worth of agents share one corridor, so more waiting: less than 2 x 8.3 = 16.6.
        assert 8.3 < plan.team_return < 16.6


@pytest.mark.parametrize("env_id", [f"Switch{n}-v{v}" for n in (2, 3) for v in range(4)])
def test_the_shortcut_plan_is_the_plain_backward_inductions(env_id):
    # optimal_plan stops once V_{t+1} = V_{t+2} (then every earlier step's choice is step t+1's); the plain path runs
    # all 50 steps: the same plan, action by action, the same returns and arrival steps (Switch4's plain one: 17 s)
    fast, plain = optimal_plan(env_id), optimal_plan(env_id, shortcut=False)
    assert fast.team_return == plain.team_return
    for name in ("joint_actions", "agent_returns", "arrival_steps"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name))


def test_no_plan_beats_the_optimum():
    # Every plan the random search finds earns at most the DP value.
    rng = np.random.default_rng(0)
    best = optimal_team_return("Switch2-v0")
    for _ in range(200):
        returns, _, _ = replay("Switch2-v0", rng.integers(0, 5, size=(50, 2)))
        assert returns.sum() <= best + 1e-6


def test_bad_ids():
    with pytest.raises(ValueError, match="Switch environments only"):
        optimal_plan("PredatorPrey5x5-v0")
    with pytest.raises(ValueError, match="unknown ma-gym environment"):
        optimal_plan("Switch5-v0")


def test_position_only_policies_census():
    from marl_edu.envs.planning import position_policy_census

    census = position_policy_census("Switch2-v0")
    assert sum(census.probability.values()) == pytest.approx(1.0)
    assert census.best_return == pytest.approx(optimal_team_return("Switch2-v0"))  # reachable, but how often?
    assert len(census.solutions) == 6  # measured; every one is checked below
    p_solved = 0.0
    for team_return, joint_actions in census.solutions:
        env = make_env("Switch2-v0")
        obs, table, total, dones = env.reset(), {}, 0.0, np.zeros(env.n_agents, dtype=bool)
        for actions in joint_actions:  # (N,) one joint action per step
            for i, a in enumerate(actions):
                if not dones[i]:  # agents at home no longer act
                    # a position-only policy: the same cell always gets the same action
                    assert table.setdefault((i, tuple(obs[i])), a) == a
            obs, rewards, dones, _ = env.step(actions)
            total += rewards.sum()
        assert dones.all() and total == pytest.approx(team_return, abs=1e-5) and team_return >= 8.0
        # each (agent, cell) entry of the table was one uniform choice among A = 5 actions
        p_solved += 5.0 ** -len(table)
    # 4 tables of 18 entries and 2 of 20: 4 * 5^-18 + 2 * 5^-20 = 1.0486e-12 + 0.0210e-12
    assert p_solved == pytest.approx(4 * 5.0**-18 + 2 * 5.0**-20)
    assert sum(p for r, p in census.probability.items() if r >= 8.0) == pytest.approx(p_solved)


# Two agents who rush the corridor at once: each plays its own shortest path, Down, Right (Left) x5, Up, from step 0.
D, L, U, R, NOOP = 0, 1, 2, 3, 4
RUSH = np.array([[D, D], [R, L], [R, L], [R, L], [R, L], [R, L], [U, U]])  # (T=7, N=2)


def test_the_played_episode_alone_is_its_own_return():
    # Nobody free: the plan is played as it stands. In the rush agent 0 reaches (1,3) at step 3, agent 1 is held at
    # (1,4) and neither gets past the other: both pay 0.1 for each of the 50 steps, 2 x 50 x -0.1 = -10.0.
    assert best_response_return("Switch2-v0", RUSH, free=()) == pytest.approx(-10.0)
    # The optimal plan, played as it stands, earns the optimum.
    plan = optimal_plan("Switch2-v0")
    assert best_response_return("Switch2-v0", plan.joint_actions, free=()) == pytest.approx(8.3)


def test_every_agent_free_is_the_optimum():
    for env_id in ("Switch2-v0", "Switch3-v0"):
        n_agents = optimal_plan(env_id).joint_actions.shape[1]
        stay = np.full((1, n_agents), NOOP)
        assert best_response_return(env_id, stay, free=range(n_agents)) == pytest.approx(optimal_team_return(env_id))


def test_one_agent_free_against_the_others_fixed_moves_by_hand():
    # Agent 1 stands still all episode (its actions end at once: NOOP after them) and pays 50 x -0.1 = -5.0; agent 0,
    # free, walks its 7 moves undisturbed: 5 - 6 x 0.1 = 4.4. Team: -0.6. The same the other way round.
    stay = np.array([[NOOP, NOOP]])
    assert best_response_return("Switch2-v0", stay, free=[0]) == pytest.approx(-0.6)
    assert best_response_return("Switch2-v0", stay, free=[1]) == pytest.approx(-0.6)
    # In the rush, agent 1 free: agent 0 keeps its shortest path (home at step 7, 4.4) and leaves (1,5) on its move of
    # step 6 (1-based); agent 1 moves after it in the same step, so it can step Down into (1,5) at step 6, then Left
    # x5 and Up: home at step 12, 5 - 1.1 = 3.9. Team 8.3, the optimum: one agent's change away.
    assert best_response_return("Switch2-v0", RUSH, free=[1]) == pytest.approx(8.3)
    # Agent 0 free: agent 1 keeps its path, on (1,1) after step 5 and (1,0) after step 6. Agent 0 moves first in each
    # step, so (1,1) is still taken when it moves at step 6; it steps Down at step 7 at the earliest, Right x5, Up:
    # home at step 13, 5 - 1.2 = 3.8. Team 4.4 + 3.8 = 8.2: the order the agents move in costs a step.
    assert best_response_return("Switch2-v0", RUSH, free=[0]) == pytest.approx(8.2)


def test_best_response_refuses_bad_input():
    with pytest.raises(ValueError, match="joint_actions"):
        best_response_return("Switch2-v0", np.zeros((3, 3), dtype=np.int64), free=[0])  # three agents on Switch2
    with pytest.raises(ValueError, match="joint_actions"):
        best_response_return("Switch2-v0", np.full((3, 2), 5), free=[0])  # no action 5
    with pytest.raises(ValueError, match="joint_actions"):
        best_response_return("Switch2-v0", np.zeros((3, 2), dtype=np.float32), free=[0])  # not integers
    with pytest.raises(ValueError, match="joint_actions"):
        best_response_return("Switch2-v0", np.zeros((51, 2), dtype=np.int64), free=[0])  # longer than an episode
    with pytest.raises(ValueError, match="free"):
        best_response_return("Switch2-v0", RUSH, free=[2])
    with pytest.raises(ValueError, match="free"):
        best_response_return("Switch2-v0", RUSH, free=[0, 0])
    with pytest.raises(ValueError, match="free"):
        best_response_return("Switch2-v0", RUSH, free=[1.7])  # not an index
    with pytest.raises(ValueError, match="free"):
        best_response_return("Switch2-v0", RUSH, free=1)  # not a sequence
    with pytest.raises(ValueError, match="Switch"):
        best_response_return("PredatorPrey5x5-v0", RUSH, free=[0])
