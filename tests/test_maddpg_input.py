import pytest
import torch

from marl_edu.maddpg import flatten_for_critic


def test_flatten_for_critic_by_hand():
    # one transition (B=1), N=2 agents, O=2, A=2:
    # o_1 = [1, 2], o_2 = [3, 4], a_1 = [1, 0], a_2 = [0, 1]  ->  x = [1, 2, 3, 4, 1, 0, 0, 1]
    obs = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])  # (1, 2, 2)
    actions = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # (1, 2, 2)
    assert flatten_for_critic(obs, actions).tolist() == [[1, 2, 3, 4, 1, 0, 0, 1]]


def test_rows_stay_whole_transitions():
    obs = torch.arange(3 * 2 * 2, dtype=torch.float32).reshape(3, 2, 2)  # row b holds 4b .. 4b+3
    x = flatten_for_critic(obs, torch.zeros(3, 2, 5))
    assert x.shape == (3, 2 * (2 + 5))  # (B, N*(O+A)) = (3, 14)
    assert x[1, :4].tolist() == [4, 5, 6, 7]  # transition 1's observations only


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"actions: expected shape \(B=3, N=2, A\)"):
        flatten_for_critic(torch.zeros(3, 2, 2), torch.zeros(3, 3, 5))
    with pytest.raises(ValueError, match=r"call .float\(\) on them"):
        flatten_for_critic(torch.zeros(3, 2, 2), torch.zeros(3, 2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="obs: expected float elements"):
        flatten_for_critic(torch.zeros(3, 2, 2, dtype=torch.long), torch.zeros(3, 2, 5))
    with pytest.raises(ValueError, match=r"obs: expected shape \(B, N, O\)"):
        flatten_for_critic(torch.zeros(6, 2), torch.zeros(3, 2, 5))
