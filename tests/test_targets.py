import numpy as np
import pytest
import torch
from torch import nn

from marl_edu.pieces.targets import (critic_rewards, hard_update, make_target, soft_update, td_lambda_targets,
                                     td_target, update_target)


def test_td_target_by_hand():
    # gamma = 0.9
    # b=0: r=-0.1, d=0, Q'=2.0 -> -0.1 + 0.9 * 1 * 2.0 = 1.70
    # b=1: r= 5.0, d=1, Q'=3.0 ->  5.0 + 0.9 * 0 * 3.0 = 5.00   (terminal: no bootstrap)
    # b=2: r=-0.1, d=0, Q'=-1.0 -> -0.1 + 0.9 * (-1.0) = -1.00
    y = td_target(torch.tensor([-0.1, 5.0, -0.1]), torch.tensor([0.0, 1.0, 0.0]), torch.tensor([2.0, 3.0, -1.0]), 0.9)
    assert y.tolist() == pytest.approx([1.70, 5.00, -1.00])


def test_td_target_has_no_gradient_into_q_next():
    q_next = torch.tensor([1.0, 2.0], requires_grad=True)
    y = td_target(torch.zeros(2), torch.zeros(2), q_next, 0.5)
    assert not y.requires_grad


def test_td_target_accepts_bool_dones_and_gamma_edges():
    y = td_target(torch.tensor([1.0]), torch.tensor([True]), torch.tensor([9.0]), 1.0)
    assert y.tolist() == [1.0]
    assert td_target(torch.tensor([1.0]), torch.tensor([0.0]), torch.tensor([9.0]), 0.0).tolist() == [1.0]


def test_td_target_refuses_broadcasting_and_bad_gamma():
    with pytest.raises(ValueError, match=r"q_next: expected shape \(B=4,\) \(1 dims\), got \(4, 1\)"):
        td_target(torch.zeros(4), torch.zeros(4), torch.zeros(4, 1), 0.9)
    with pytest.raises(ValueError, match=r"dones: expected shape \(B=4,\)"):
        td_target(torch.zeros(4), torch.zeros(3), torch.zeros(4), 0.9)
    with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\], got 1.5"):
        td_target(torch.zeros(4), torch.zeros(4), torch.zeros(4), 1.5)
    with pytest.raises(ValueError, match="rewards must be a torch.Tensor"):
        td_target([0.0], torch.zeros(1), torch.zeros(1), 0.9)


def _linear(weight: float) -> nn.Linear:
    net = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(weight)
    return net


def test_make_target_is_a_frozen_deep_copy():
    net = _linear(2.0)
    target = make_target(net)
    assert target is not net and target.weight is not net.weight
    assert not target.weight.requires_grad and net.weight.requires_grad
    with torch.no_grad():
        net.weight.fill_(7.0)
    assert target.weight.item() == 2.0  # the copy did not move with the source


def test_soft_update_by_hand():
    # tau = 0.1: 0.1 * source 10.0 + 0.9 * target 0.0 = 1.0; again: 0.1 * 10 + 0.9 * 1.0 = 1.9
    source, target = _linear(10.0), make_target(_linear(0.0))
    soft_update(target, source, 0.1)
    assert target.weight.item() == pytest.approx(1.0)
    soft_update(target, source, 0.1)
    assert target.weight.item() == pytest.approx(1.9)


def test_hard_update_copies_values_not_tensors():
    source, target = _linear(3.0), make_target(_linear(0.0))
    hard_update(target, source)
    assert target.weight.item() == 3.0 and target.weight is not source.weight


def test_updates_refuse_a_target_that_is_not_a_copy_and_bad_tau():
    net = _linear(1.0)
    with pytest.raises(ValueError, match="the target is not a copy"):
        soft_update(net, net, 0.1)
    with pytest.raises(ValueError, match=r"tau must be a number in \[0, 1\], got -0.1"):
        soft_update(make_target(net), net, -0.1)
    with pytest.raises(ValueError, match="different parameters"):
        hard_update(nn.Linear(1, 1), net)
    with pytest.raises(ValueError, match="must be a torch.nn.Module"):
        make_target("critic")


def test_critic_rewards_own_or_team_by_hand():
    rewards = np.array([[-2.0, 1.5, 1.5], [0.0, -1.0, 0.25]], dtype=np.float32)  # (K=2, N=3)
    np.testing.assert_array_equal(critic_rewards(rewards, team_reward=False), rewards)  # each its own r_i
    # team: row 0 sums to -2 + 1.5 + 1.5 = 1.0, row 1 to 0 - 1 + 0.25 = -0.75, in every agent's column
    np.testing.assert_array_equal(critic_rewards(rewards, team_reward=True), [[1.0] * 3, [-0.75] * 3])


def test_critic_rewards_on_a_batch_of_episodes_in_torch():
    # (B=1, T=2, N=2): step 0 rewards (-0.1, 5.0) sum to 4.9, step 1 (0.0, -0.1) to -0.1
    rewards = torch.tensor([[[-0.1, 5.0], [0.0, -0.1]]])
    team = critic_rewards(rewards, team_reward=True)
    assert team.shape == (1, 2, 2)
    torch.testing.assert_close(team, torch.tensor([[[4.9, 4.9], [-0.1, -0.1]]]))
    assert critic_rewards(rewards, team_reward=False) is rewards


def test_critic_rewards_bad_inputs():
    rewards = np.zeros((2, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"rewards: expected \(\.\.\., N\) with a leading axis.*\(3,\)"):
        critic_rewards(rewards[0], team_reward=True)  # (N,) is one agent row, not (K, N)
    with pytest.raises(ValueError, match="rewards.*float"):
        critic_rewards(np.zeros((2, 3), dtype=np.int64), team_reward=True)
    with pytest.raises(ValueError, match="team_reward must be True or False, got 1"):
        critic_rewards(rewards, team_reward=1)


# one 4-step episode that ends in a real terminal state at t = 3
REWARDS = torch.tensor([1.0, 0.0, 2.0, 3.0])        # r_0 .. r_3
DONES = torch.tensor([0.0, 0.0, 0.0, 1.0])          # d_3 = 1: terminal
NEXT_V = torch.tensor([0.5, 1.0, 2.0, 9.0])         # V_1 .. V_4 (V_4 is never used: d_3 = 1)


def test_td_lambda_by_hand():
    # gamma = 0.5, lam = 0.5,  G_t = r_t + g (1 - d_t) ((1 - lam) V_{t+1} + lam G_{t+1})
    # G_3 = 3
    # G_2 = 2 + 0.5 * (0.5 * 2.0 + 0.5 * 3)      = 2 + 1.25     = 3.25
    # G_1 = 0 + 0.5 * (0.5 * 1.0 + 0.5 * 3.25)   = 0.5 * 2.125  = 1.0625
    # G_0 = 1 + 0.5 * (0.5 * 0.5 + 0.5 * 1.0625) = 1 + 0.390625 = 1.390625
    g = td_lambda_targets(REWARDS, DONES, NEXT_V, gamma=0.5, lam=0.5)
    assert g.tolist() == pytest.approx([1.390625, 1.0625, 3.25, 3.0])


def test_lambda_zero_is_td0_and_one_is_monte_carlo():
    # lam = 0: G_t = r_t + g (1 - d_t) V_{t+1} = [1 + 0.25, 0 + 0.5, 2 + 1.0, 3] = [1.25, 0.5, 3.0, 3.0]
    assert td_lambda_targets(REWARDS, DONES, NEXT_V, 0.5, 0.0).tolist() == pytest.approx([1.25, 0.5, 3.0, 3.0])
    # lam = 1: the discounted return: G_3 = 3, G_2 = 2 + 1.5 = 3.5, G_1 = 1.75, G_0 = 1 + 0.875 = 1.875
    assert td_lambda_targets(REWARDS, DONES, NEXT_V, 0.5, 1.0).tolist() == pytest.approx([1.875, 1.75, 3.5, 3.0])


def test_time_limit_end_bootstraps_from_the_last_value():
    # the same episode cut by the time limit after t = 3: d_3 = 0, so G_3 = 3 + 0.5 * V_4 = 3 + 4.5 = 7.5
    # lam = 1: G_2 = 2 + 0.5 * 7.5 = 5.75 (not the 3.5 a terminal end gives)
    g = td_lambda_targets(REWARDS, torch.zeros(4), NEXT_V, 0.5, 1.0)
    assert g[3].item() == pytest.approx(7.5) and g[2].item() == pytest.approx(5.75)


def test_padding_after_a_terminal_step_does_not_leak_and_leading_axes_are_kept():
    # (B=2, N=1, T=6): row 0 is the episode padded with garbage, row 1 is all zeros
    rewards = torch.zeros(2, 1, 6)
    rewards[0, 0, :4] = REWARDS
    rewards[0, 0, 4:] = 100.0                        # padding
    dones = torch.zeros(2, 1, 6)
    dones[0, 0, 3:] = 1.0
    next_v = torch.full((2, 1, 6), 50.0)
    next_v[0, 0, :4] = NEXT_V
    g = td_lambda_targets(rewards, dones, next_v, 0.5, 0.5)
    assert g.shape == (2, 1, 6)
    assert g[0, 0, :4].tolist() == pytest.approx([1.390625, 1.0625, 3.25, 3.0])
    assert g[1, 0, -1].item() == pytest.approx(0.5 * 50.0)  # row 1's last step bootstraps: 0 + 0.5 * 50


def test_bad_inputs():
    with pytest.raises(ValueError, match="lam must be a number in \\[0, 1\\], got 1.5"):
        td_lambda_targets(REWARDS, DONES, NEXT_V, 0.5, 1.5)
    with pytest.raises(ValueError, match="gamma must be a number in \\[0, 1\\]"):
        td_lambda_targets(REWARDS, DONES, NEXT_V, -0.1, 0.5)
    with pytest.raises(ValueError, match="next_values"):
        td_lambda_targets(REWARDS, DONES, NEXT_V[:3], 0.5, 0.5)
    with pytest.raises(ValueError, match="dones"):
        td_lambda_targets(REWARDS, DONES[None], NEXT_V, 0.5, 0.5)


def _pair(source_value: float, target_value: float):
    source = torch.nn.Linear(1, 1)
    target = make_target(source)
    with torch.no_grad():
        for p in source.parameters():
            p.fill_(source_value)
        for p in target.parameters():
            p.fill_(target_value)
    return source, target


def test_update_target_copies_every_c_updates():
    source, target = _pair(2.0, 0.0)
    changed = [update_target(target, source, n, every=3) for n in (1, 2)]  # 1 % 3 and 2 % 3 are not 0
    assert changed == [False, False] and target.weight.item() == 0.0
    assert update_target(target, source, 3, every=3) and target.weight.item() == 2.0  # 3 % 3 = 0: psi' <- psi
    with torch.no_grad():
        source.weight.fill_(5.0)
    assert not update_target(target, source, 4, every=3) and target.weight.item() == 2.0  # until update 6
    assert update_target(target, source, 6, every=3) and target.weight.item() == 5.0


def test_update_target_soft_at_every_update():
    source, target = _pair(2.0, 0.0)
    assert update_target(target, source, 1, tau=0.25)
    assert target.weight.item() == 0.5  # 0.25 * 2 + 0.75 * 0
    assert update_target(target, source, 2, tau=0.25)
    assert target.weight.item() == 0.875  # 0.25 * 2 + 0.75 * 0.5 = 0.5 + 0.375


@pytest.mark.parametrize("kwargs, message", [
    (dict(updates=1), r"^update_target: give exactly one of every .* got every=None, tau=None"),
    (dict(updates=1, every=2, tau=0.1), r"^update_target: give exactly one of every"),
    (dict(updates=0, every=2), r"^updates must be the number of updates so far, an int >= 1 .* got 0"),
    (dict(updates=1.0, every=2), r"^updates must be .* got 1.0"),
    (dict(updates=1, every=0), r"^every must be an int >= 1 \(updates between hard copies\), got 0"),
    (dict(updates=1, every=True), r"^every must be an int >= 1"),
    (dict(updates=1, tau=1.5), r"^tau must be a number in \[0, 1\], got 1.5"),
])
def test_update_target_bad_arguments(kwargs, message):
    source, target = _pair(2.0, 0.0)
    with pytest.raises(ValueError, match=message):
        update_target(target, source, **kwargs)
    assert target.weight.item() == 0.0  # refused before any change
