import pytest
import torch

from marl_edu.coma import build_critic_input, coma_advantage, counterfactual_baseline

# 2 agents, 3 actions, S = 2, O = 1
STATE = torch.tensor([[0.1, 0.2]])                          # (B=1, S=2)
OBS = torch.tensor([[[0.3], [0.4]]])                        # (1, N=2, O=1)
ACTIONS = torch.tensor([[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])  # (1, 2, A=3): agent 0 took 1, agent 1 took 2


def test_critic_input_rows_by_hand():
    x = build_critic_input(STATE, OBS, ACTIONS)
    assert x.shape == (1, 2, 2 + 1 + 2 * 3 + 2)  # S + O + N*A + N = 11
    # row 0: state, o_0, [agent 0's block zeroed], agent 1's action, id 0
    assert x[0, 0].tolist() == pytest.approx([0.1, 0.2, 0.3, 0, 0, 0, 0, 0, 1, 1, 0])
    # row 1: state, o_1, agent 0's action, [agent 1's block zeroed], id 1
    assert x[0, 1].tolist() == pytest.approx([0.1, 0.2, 0.4, 0, 1, 0, 0, 0, 0, 0, 1])


def test_row_a_does_not_change_with_agent_a_action():
    changed = ACTIONS.clone()
    changed[0, 0] = torch.tensor([1.0, 0.0, 0.0])  # agent 0 now took action 0
    before, after = build_critic_input(STATE, OBS, ACTIONS), build_critic_input(STATE, OBS, changed)
    assert torch.equal(before[:, 0], after[:, 0])  # agent 0's own row: unchanged
    assert not torch.equal(before[:, 1], after[:, 1])  # agent 1's row sees agent 0's new action


def test_baseline_and_advantage_by_hand():
    q = torch.tensor([[1.0, 2.0, 4.0], [0.0, 3.0, 0.0]])  # (N=2, A=3): Q(s, u^-a, k) per agent a
    pi = torch.tensor([[0.5, 0.25, 0.25], [0.2, 0.6, 0.2]])  # (2, 3)
    # agent 0: b = 0.5 * 1 + 0.25 * 2 + 0.25 * 4 = 2.0;  agent 1: b = 0.6 * 3 = 1.8
    assert counterfactual_baseline(q, pi).tolist() == pytest.approx([2.0, 1.8])
    # agent 0 took 2: A = 4 - 2 = 2.0;  agent 1 took 0: A = 0 - 1.8 = -1.8
    assert coma_advantage(q, pi, torch.tensor([2, 0])).tolist() == pytest.approx([2.0, -1.8])


def test_bad_inputs():
    q, pi = torch.zeros(2, 3), torch.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="actions must be in \\[0, 2\\], got 0..3"):
        coma_advantage(q, pi, torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="actions must be an int tensor of shape \\(2,\\)"):
        coma_advantage(q, pi, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="pass softmax\\(logits\\), not the logits"):
        counterfactual_baseline(q, torch.tensor([[2.0, -1.0, 0.0], [0.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="pi must have q's shape"):
        counterfactual_baseline(q, pi[:, :2])
    with pytest.raises(ValueError, match="actions_onehot"):
        build_critic_input(STATE, OBS, ACTIONS[:, :1])
    with pytest.raises(ValueError, match="obs"):
        build_critic_input(STATE, OBS.repeat(2, 1, 1), ACTIONS)  # B = 2 against the state's B = 1
    with pytest.raises(ValueError, match="state"):
        build_critic_input(STATE.long(), OBS, ACTIONS)
