import pytest
import torch

from marl_edu.targets import td_lambda_targets

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
