"""The baselines change only the critic: what it sees, and the advantage (a TD error) it gives the actor."""

import pytest
import torch

from marl_edu.baselines import IACV, IDDPG, CentralV
from marl_edu.coma import COMA, COMAConfig
from marl_edu.maddpg import MADDPG, MADDPGConfig

OBS = torch.tensor([[[[0.1, 0.2], [0.3, 0.4]], [[0.5, 0.6], [0.7, 0.8]]]])  # (B=1, T+1=2, N=2, O=2)
ACTIONS = torch.tensor([[[1, 2], [3, 4]]])  # (B=1, T+1=2, N=2)


def test_central_v_sees_the_state_once_per_agent_row():
    rows = CentralV(2, 2, 5).critic_rows(OBS, ACTIONS)  # (B*(T+1), N, S=4)
    assert rows.shape == (2, 2, 4)
    # s_0 = [o_1, o_2] = [0.1, 0.2, 0.3, 0.4], the same in both agents' rows; no actions anywhere
    assert torch.equal(rows[0, 0], torch.tensor([0.1, 0.2, 0.3, 0.4])) and torch.equal(rows[0, 1], rows[0, 0])


def test_iac_sees_its_own_observation_and_id_only():
    rows = IACV(2, 2, 5).critic_rows(OBS, ACTIONS)  # (B*(T+1), N, O+N = 4)
    assert rows.shape == (2, 2, 4)
    assert torch.equal(rows[1, 0], torch.tensor([0.5, 0.6, 1.0, 0.0]))  # step 1, agent 0: [o^0_1, id 0]
    assert torch.equal(rows[1, 1], torch.tensor([0.7, 0.8, 0.0, 1.0]))  # step 1, agent 1: [o^1_1, id 1]


def _constant_critic(learner, value: float):
    """Make V(x) = value for every input: zero weights, last bias = value."""
    with torch.no_grad():
        for p in learner.critic.parameters():
            p.zero_()
        learner.critic.net[-1].bias.fill_(value)
    return learner


@pytest.mark.parametrize("learner_class", [CentralV, IACV])
def test_td_error_advantage_by_hand(learner_class):
    learner = _constant_critic(learner_class(2, 2, 5, COMAConfig(gamma=0.5)), 2.0)
    # one episode of 2 steps; agent rewards (1.0, 0.5) then (-1.0, 0.0); the second step is terminal
    batch = {"actions": torch.tensor([[[1, 2], [3, 4], [0, 0]]]),
             "rewards": torch.tensor([[[1.0, 0.5], [-1.0, 0.0]]]),  # (B, T, N)
             "dones": torch.tensor([[0.0, 1.0]])}  # (B, T)
    obs = torch.zeros(1, 3, 2, 2)  # (B, T+1, N, O)
    rows = learner.critic_rows(obs, batch["actions"])
    # team rewards 1.5 and -1.0; V = 2 everywhere, gamma = 0.5:
    #   delta_0 = 1.5 + 0.5 * (1 - 0) * 2 - 2 = 0.5,   delta_1 = -1.0 + 0.5 * (1 - 1) * 2 - 2 = -3.0
    advantage = learner.advantage(rows, batch, pi=None)  # (B, T, N)
    assert advantage.shape == (1, 2, 2)
    assert torch.allclose(advantage, torch.tensor([[[0.5, 0.5], [-3.0, -3.0]]]))
    # own rewards (the seed design): row i uses r_i: delta_{0,0} = 1 + 1 - 2 = 0.0, delta_{1,0} = 0.5 + 1 - 2 = -0.5
    learner.config.team_reward = False
    assert torch.allclose(learner.advantage(rows, batch, pi=None)[0, 0], torch.tensor([0.0, -0.5]))


def test_value_critic_targets_and_loss_by_hand():
    learner = _constant_critic(IACV(2, 2, 5, COMAConfig(gamma=0.5, lam=0.5)), 2.0)
    learner.target_critic.load_state_dict(learner.critic.state_dict())
    batch = {"actions": torch.zeros(1, 3, 2, dtype=torch.long), "rewards": torch.tensor([[[1.0, 0.5], [-1.0, 0.0]]]),
             "dones": torch.tensor([[0.0, 1.0]]), "step_mask": torch.ones(1, 2)}
    rows = learner.critic_rows(torch.zeros(1, 3, 2, 2), batch["actions"])
    # G_1 = -1.0 (terminal);  G_0 = 1.5 + 0.5 * ((1 - 0.5) * 2 + 0.5 * (-1.0)) = 1.5 + 0.5 * 0.5 = 1.75
    targets = learner.critic_targets(rows, batch)  # (B, T, N)
    assert torch.allclose(targets, torch.tensor([[[1.75, 1.75], [-1.0, -1.0]]]))
    # loss = mean of (2 - 1.75)^2 = 0.0625 and (2 + 1)^2 = 9 over 2 steps x 2 rows = 4.53125
    assert learner.critic_loss(rows, batch, targets).item() == pytest.approx(4.53125)


def test_on_policy_baselines_share_comas_actor_for_a_seed():
    coma, central, iac = (cls(2, 2, 5, seed=7) for cls in (COMA, CentralV, IACV))
    for other in (central, iac):
        for p, q in zip(coma.actor.parameters(), other.actor.parameters()):
            assert torch.equal(p, q)
    assert central.critic.in_dim == 4 and iac.critic.in_dim == 4 and central.critic.out_dim == 1


def test_iddpg_critic_ignores_the_other_agents():
    learner = IDDPG(2, 3, 5, MADDPGConfig(hidden=8))
    obs = torch.arange(6.0).reshape(1, 2, 3)  # (B, N, O)
    actions = torch.eye(5)[[1, 4]].unsqueeze(0)  # (B, N, A): agent 0 did 1, agent 1 did 4
    x = learner.critic_input(0, obs, actions)  # (B, O + A)
    assert torch.equal(x, torch.tensor([[0.0, 1.0, 2.0, 0.0, 1.0, 0.0, 0.0, 0.0]]))
    other_obs, other_actions = obs.clone(), actions.clone()
    other_obs[:, 1] += 5.0
    other_actions[:, 1] = torch.eye(5)[0]
    assert torch.equal(learner.critics[0](learner.critic_input(0, other_obs, other_actions)), learner.critics[0](x))
    assert MADDPG(2, 3, 5).critic_input(0, obs, actions).shape == (1, 2 * (3 + 5))  # the centralised one


def test_iddpg_update_runs_and_keeps_the_actors_of_maddpg():
    import numpy as np

    maddpg, iddpg = MADDPG(2, 3, 5, seed=2), IDDPG(2, 3, 5, seed=2)
    for p, q in zip(maddpg.actors.parameters(), iddpg.actors.parameters()):
        assert torch.equal(p, q)
    rng = np.random.default_rng(0)
    batch = {"obs": rng.random((4, 2, 3)), "actions": np.eye(5)[rng.integers(0, 5, (4, 2))],
             "rewards": rng.random((4, 2)), "next_obs": rng.random((4, 2, 3)), "dones": np.zeros((4, 2))}
    before = [p.clone() for p in iddpg.critics.parameters()]
    stats = iddpg.update(batch)
    assert np.isfinite(stats["critic_loss"]) and any(not torch.equal(a, b) for a, b in
                                                     zip(before, iddpg.critics.parameters()))


def test_central_v_refuses_per_agent_rewards():
    # its rows carry no agent id: one V(s) cannot learn two agents' different own returns
    with pytest.raises(ValueError, match="central-V learns the team reward only"):
        CentralV(2, 2, 5, COMAConfig(team_reward=False))
