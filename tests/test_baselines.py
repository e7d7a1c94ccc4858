"""The baselines change only the critic: what it sees, and the advantage (a TD error) it gives the actor."""

import pytest
import torch

from marl_edu.learners.baselines import IACV, IDDPG, CentralQV, CentralV
from marl_edu.learners.coma import COMA, COMAConfig
from marl_edu.learners.maddpg import MADDPG, MADDPGConfig

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


# -- central-QV: COMA's Q less a learned V(s) --------------------------------------------------------------------------

def _constant_q_and_v(learner: CentralQV, q_row: list[float], v: float) -> CentralQV:
    """Q(s, (a_{-i}, k)) = q_row[k] and V(s) = v for every input: zero weights, the last layers' biases set."""
    with torch.no_grad():
        for net in (learner.critic, learner.value_critic):
            for p in net.parameters():
                p.zero_()
        learner.critic.net[-1].bias.copy_(torch.tensor(q_row))
        learner.value_critic.net[-1].bias.fill_(v)
    return learner


def test_central_qv_advantage_by_hand():
    learner = _constant_q_and_v(CentralQV(2, 2, 5), [1.0, 2.0, 3.0, 4.0, 5.0], 2.5)
    actions = torch.tensor([[[1, 4], [0, 2], [3, 3]]])  # (B=1, T+1=3, N=2); index 2 is the end state
    batch = {"obs": torch.zeros(1, 3, 2, 2), "actions": actions}
    rows = learner.critic_rows(batch["obs"], actions)
    # Adv_{i,t} = Q(s_t, a_t) - V(s_t) = q_row[a_{i,t}] - 2.5:
    #   t=0: actions (1, 4) -> (2 - 2.5, 5 - 2.5) = (-0.5, 2.5);  t=1: actions (0, 2) -> (1 - 2.5, 3 - 2.5) = (-1.5, 0.5)
    advantage = learner.advantage(rows, batch, pi=None)  # (B, T, N)
    assert torch.allclose(advantage, torch.tensor([[[-0.5, 2.5], [-1.5, 0.5]]]))
    # COMA's counterfactual baseline on the same Q under a uniform policy is the row mean 3.0 instead of V = 2.5
    coma_advantage = COMA.advantage(learner, rows, batch, torch.full((1, 2, 2, 5), 0.2))
    assert torch.allclose(coma_advantage, advantage - 0.5)


def test_central_qv_starts_as_coma_and_adds_only_v():
    coma, qv = COMA(2, 2, 5, seed=3), CentralQV(2, 2, 5, seed=3)
    for a, b in ((coma.actor, qv.actor), (coma.critic, qv.critic)):
        assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert qv.value_critic.in_dim == 4 and qv.value_critic.out_dim == 1  # V(s), S = N*O
    assert all(not p.requires_grad for p in qv.target_value_critic.parameters())
    with pytest.raises(ValueError, match="central-QV learns the team reward only"):
        CentralQV(2, 2, 5, COMAConfig(team_reward=False))


def test_central_qv_update_trains_v_towards_its_targets_and_copies_it_on_q_s_schedule():
    from marl_edu.envs.make import make_vec_env
    from marl_edu.data.rollout import collect_episodes

    learner = CentralQV(2, 2, 5, COMAConfig(n_envs=4, hidden=16, target_update_every=2), seed=0)
    batch, _, _ = collect_episodes(learner, make_vec_env("Switch2-v0", 4, seed=0), epsilon=0.0)
    before = [p.clone() for p in learner.value_critic.parameters()]
    stats = learner.update(batch)
    assert set(stats) == {"critic_loss", "actor_loss", "entropy", "value_loss"} and stats["value_loss"] >= 0.0
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.value_critic.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(learner.target_value_critic.parameters(),
                                                     learner.value_critic.parameters()))  # 1 update: no copy yet
    learner.update(batch)  # update 2: the copy, with Q's
    assert all(torch.equal(a, b) for a, b in zip(learner.target_value_critic.parameters(),
                                                 learner.value_critic.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(learner.target_critic.parameters(), learner.critic.parameters()))
