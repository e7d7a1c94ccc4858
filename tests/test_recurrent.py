import numpy as np
import pytest
import torch

from marl_edu.pieces.nets import RecurrentActor, shared_agent_input
from marl_edu.pieces.recurrent import episode_policy, previous_actions, replay_episodes


def test_previous_actions_by_hand():
    actions = torch.tensor([[[1, 2], [3, 0], [4, 4]]])  # (B=1, T=3, N=2)
    # step 0 has no last action (-1), step t the actions of step t - 1; the last step's (4, 4) is never seen
    assert previous_actions(actions).tolist() == [[[-1, -1], [1, 2], [3, 0]]]


def test_replay_of_a_feed_forward_network_by_hand():
    net = RecurrentActor(1 + 2, 1, hidden=1, recurrent=False)  # input [o, one_hot(i)] (O = 1, N = 2), one output
    with torch.no_grad():
        net.encode.weight.copy_(torch.tensor([[1.0, 0.0, 0.0]])), net.encode.bias.zero_()  # z = relu(o)
        net.memory.weight.fill_(1.0), net.memory.bias.zero_()  # relu(z)
        net.head.weight.fill_(2.0), net.head.bias.fill_(1.0)  # 2 relu(relu(o)) + 1
    obs = torch.tensor([[[[-1.0], [0.5]], [[3.0], [0.0]]]])  # (B=1, T=2, N=2, O=1)
    out = replay_episodes(net, obs, torch.zeros(1, 2, 2, dtype=torch.long), 5, last_action=False)
    # 2 relu(-1) + 1 = 1, 2 * 0.5 + 1 = 2, 2 * 3 + 1 = 7, 2 * 0 + 1 = 1
    assert out.shape == (1, 2, 2, 1) and out[..., 0].tolist() == [[[1.0, 2.0], [7.0, 1.0]]]


def test_replay_equals_the_step_by_step_loop_and_each_episode_starts_afresh():
    torch.manual_seed(0)
    B, T, N, O, A = 3, 4, 2, 3, 5
    net = RecurrentActor(O + A + N, A, hidden=8)
    obs, actions = torch.rand(B, T, N, O), torch.randint(0, A, (B, T, N))
    out = replay_episodes(net, obs, actions, A, last_action=True)  # (B, T, N, A)
    h, last, steps = torch.zeros(B * N, 8), previous_actions(actions), []
    for t in range(T):  # one step at a time, as acting runs
        logits, h = net(shared_agent_input(obs[:, t], last[:, t], A), h)  # (B*N, A)
        steps.append(logits.reshape(B, N, A))
    assert torch.allclose(out, torch.stack(steps, dim=1), atol=1e-6)
    changed = obs.clone()
    changed[1, 2] += 1.0  # episode 1, step 2
    again = replay_episodes(net, changed, actions, A, last_action=True)
    assert torch.equal(again[0], out[0]) and torch.equal(again[2], out[2])  # the other episodes: untouched
    assert torch.allclose(again[1, :2], out[1, :2]) and not torch.allclose(again[1, 2:], out[1, 2:])  # only later steps
    last_step = actions.clone()
    last_step[:, T - 1] = (last_step[:, T - 1] + 1) % A  # the last step's action is never an input
    assert torch.equal(replay_episodes(net, obs, last_step, A, last_action=True), out)


@pytest.mark.parametrize("call, message", [
    (lambda net: replay_episodes(torch.nn.Linear(2, 2), torch.rand(1, 2, 2, 3), torch.zeros(1, 2, 2, dtype=torch.long),
                                 5, True), r"^net must be a RecurrentActor"),
    (lambda net: replay_episodes(net, torch.rand(2, 2, 3), torch.zeros(1, 2, 2, dtype=torch.long), 5, True),
     r"^obs: expected shape \(B, T, N, O\)"),
    (lambda net: replay_episodes(net, torch.rand(1, 2, 2, 3), torch.zeros(1, 3, 2, dtype=torch.long), 5, True),
     r"^actions: expected shape \(1, 2, 2\)"),
    (lambda net: replay_episodes(net, torch.rand(1, 2, 2, 3), torch.zeros(1, 2, 2), 5, True),
     r"^actions: expected int elements"),
    (lambda net: replay_episodes(net, torch.rand(1, 2, 2, 3), torch.zeros(1, 2, 2, dtype=torch.long), 5, 1),
     r"^last_action must be True or False"),
    (lambda net: replay_episodes(net, torch.rand(1, 2, 2, 4), torch.zeros(1, 2, 2, dtype=torch.long), 5, True),
     r"^x: expected shape"),  # the network's own check: O + A + N = 11 columns, not 12
    (lambda net: previous_actions(torch.zeros(2, 3, dtype=torch.long)), r"^actions: expected shape \(B, T, N\)"),
    (lambda net: episode_policy(lambda o, l, h: None, torch.zeros(3, 8), 2, None), r"^h: expected shape \(2, H\)"),
])
def test_bad_inputs(call, message):
    net = RecurrentActor(3 + 5 + 2, 5, hidden=8)
    with pytest.raises(ValueError, match=message):
        call(net)


def test_episode_policy_carries_its_hidden_state_and_last_actions():
    seen = []

    def step(obs, last, h):  # probs one-hot on (last action + 1) mod 3; h counts the steps
        seen.append((obs.shape, last.tolist(), h[0, 0].item()))
        return torch.nn.functional.one_hot((last + 1) % 3, 3).float(), h + 1.0  # (1, N, A), (N, H)

    policy = episode_policy(step, torch.zeros(2, 4), 2, lambda probs: probs.argmax(dim=-1))
    actions = [policy(np.zeros((2, 6), dtype=np.float32)).tolist() for _ in range(3)]
    assert actions == [[0, 0], [1, 1], [2, 2]]  # (-1 + 1) % 3 = 0, then (0 + 1) % 3 = 1, (1 + 1) % 3 = 2
    assert seen == [((1, 2, 6), [[-1, -1]], 0.0), ((1, 2, 6), [[0, 0]], 1.0), ((1, 2, 6), [[1, 1]], 2.0)]


def test_nan_in_one_episode_stays_in_that_episode_from_that_step_on():
    # the replay does not refuse NaN (check_episode_batch refuses it in a batch before any update): it stays where
    # it entered, which is how a diverged replay can be traced
    torch.manual_seed(1)
    net = RecurrentActor(2 + 5 + 2, 5, hidden=8)
    obs, actions = torch.rand(2, 3, 2, 2), torch.randint(0, 5, (2, 3, 2))  # (B, T, N, O), (B, T, N)
    obs[1, 1, 0, 0] = float("nan")  # episode 1, step 1, agent 0
    out = replay_episodes(net, obs, actions, 5, last_action=True)  # (B, T, N, A)
    assert torch.isfinite(out[0]).all() and torch.isfinite(out[1, 0]).all()  # the other episode; the step before
    assert torch.isnan(out[1, 1, 0]).all() and torch.isfinite(out[1, 1, 1]).all()  # agent 1 has its own hidden state
    assert torch.isnan(out[1, 2, 0]).all()  # and the NaN is carried on in agent 0's
