import math

import pytest
import torch
from torch import nn

from marl_edu.pieces.nets import MLP, Actor, Critic, RecurrentActor, check_policy_output, gradient_step


def test_shapes():
    torch.manual_seed(0)
    assert MLP(3, 4, hidden=(8,))(torch.zeros(5, 3)).shape == (5, 4)
    assert Actor(2, 5)(torch.zeros(7, 2)).shape == (7, 5)
    assert Critic(14)(torch.zeros(7, 14)).shape == (7,)  # squeezed: (B,), never (B, 1)


def test_mlp_by_hand():
    # one hidden unit: relu(1*x + 0) then 2*h + 1: x = -3 -> 1, x = 2 -> 5
    net = MLP(1, 1, hidden=(1,))
    with torch.no_grad():
        net.net[0].weight.fill_(1.0), net.net[0].bias.fill_(0.0)
        net.net[2].weight.fill_(2.0), net.net[2].bias.fill_(1.0)
    assert net(torch.tensor([[-3.0], [2.0]])).squeeze(1).tolist() == [1.0, 5.0]


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"x: expected shape \(B, 2\)"):
        Actor(2, 5)(torch.zeros(7, 3))
    with pytest.raises(ValueError, match="expected float elements"):
        Critic(3)(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="hidden size must be a positive int"):
        MLP(3, 4, hidden=(0,))


def test_recurrent_actor_carries_memory_and_the_feed_forward_one_does_not():
    torch.manual_seed(0)
    x = torch.ones(3, 4)  # (B=3, D=4) the same input twice in a row
    gru = RecurrentActor(4, 5, hidden=8, recurrent=True)
    h0 = gru.initial_hidden(3)
    logits1, h1 = gru(x, h0)
    logits2, _ = gru(x, h1)
    assert logits1.shape == (3, 5) and h1.shape == (3, 8)
    assert not torch.allclose(logits1, logits2)  # same input, different history: different action logits
    ff = RecurrentActor(4, 5, hidden=8, recurrent=False)
    out1, g1 = ff(x, ff.initial_hidden(3))
    out2, _ = ff(x, g1)
    assert torch.allclose(out1, out2)  # a feed-forward policy sees the input only
    with pytest.raises(ValueError, match="h"):
        gru(x, torch.zeros(3, 7))


def test_gradient_step_by_hand():
    # one weight w = 3, loss = w^2 = 9: gradient 2w = 6, clipped to norm 0.5, so plain SGD (lr 1) moves w to 2.5
    net = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(3.0)
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    loss = (net.weight ** 2).sum()
    assert gradient_step(optimizer, net, loss, grad_clip=0.5) == 9.0
    assert net.weight.item() == pytest.approx(2.5)
    # a second step starts from zeroed gradients: w = 2.5, gradient 5, clipped to 0.5 again -> 2.0 (not 1.5)
    gradient_step(optimizer, net, (net.weight ** 2).sum(), grad_clip=0.5)
    assert net.weight.item() == pytest.approx(2.0)


def _one_weight(value: float = 3.0) -> nn.Linear:
    net = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(value)
    return net


@pytest.mark.parametrize("bad, shown", [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")])
def test_gradient_step_refuses_a_non_finite_loss_before_backpropagating(bad, shown):
    net = _one_weight()
    optimizer = torch.optim.SGD(net.parameters(), lr=1e30)
    loss = net.weight.sum() * bad  # 3 * bad
    with pytest.raises(ValueError, match=rf"^critic loss is {shown} at update 12: a learning rate or entropy "
                                         rf"coefficient too large\? \(lr=1e\+30\); no step was taken$"):
        gradient_step(optimizer, net, loss, grad_clip=0.5, name="critic loss", update=12)
    assert net.weight.item() == 3.0 and net.weight.grad is None  # backward never ran
    with pytest.raises(ValueError, match=rf"^loss is {shown}: "):  # the defaults name no update
        gradient_step(optimizer, net, net.weight.sum() * bad, grad_clip=0.5)


def test_gradient_step_refuses_a_non_finite_gradient_and_an_overflowing_step():
    net = _one_weight()
    # loss = sqrt(0 * w) = 0 is finite, but its gradient is d sqrt(u)/du at u = 0 (infinite) times 0: NaN
    with pytest.raises(ValueError, match=r"^actor loss's gradient norm is nan at update 3: a learning rate or entropy "
                                         r"coefficient too large\? \(lr=1\); no step was taken$"):
        gradient_step(torch.optim.SGD(net.parameters(), lr=1.0), net, torch.sqrt(net.weight * 0).sum(), 0.5,
                      "actor loss", 3)
    assert net.weight.item() == 3.0
    # Adam's first step is lr / (1 - 0.9) = 1e301 per unit of gradient: more than a float32 can hold
    with pytest.raises(ValueError, match=r"^critic loss: the optimiser's step failed \(value cannot be converted to "
                                         r"type float without overflow\) at update 1: a learning rate or entropy "
                                         r"coefficient too large\? \(lr=1e\+300\)"):
        gradient_step(torch.optim.Adam(net.parameters(), lr=1e300), net, (net.weight ** 2).sum(), 0.5,
                      "critic loss", 1)
    assert net.weight.item() == 3.0


def test_check_policy_output_says_whether_the_observations_or_the_weights_are_to_blame():
    net = _one_weight(2.0)
    obs = torch.tensor([[1.0], [4.0]])  # (B=2, 1)
    check_policy_output(net(obs), obs, net, "the logits")  # [[2], [8]]: finite, nothing to say
    bad_obs = torch.tensor([[1.0], [math.nan]])
    with pytest.raises(ValueError, match=r"^the observations the policy got \(B, N, O\) must be finite, got 1 NaN "
                                         r"and 0 infinite of 2 entries, the first at index \(1, 0\)$"):
        check_policy_output(net(bad_obs), bad_obs, net, "the logits")
    big = torch.tensor([[3e38]])  # 2 * 3e38 overflows float32's largest, 3.4e38
    with pytest.raises(ValueError, match=r"^the logits are not finite although the observations are: every weight is "
                                         r"finite, so an activation overflowed \(trained with too large a learning "
                                         r"rate, or loaded from a run that diverged\?\)$"):
        check_policy_output(net(big), big, net, "the logits")
    with torch.no_grad():
        net.weight.fill_(math.inf)
    with pytest.raises(ValueError, match=r"^the logits are not finite although the observations are: the weights "
                                         r"\['weight'\] hold NaN or infinity \(trained with"):
        check_policy_output(net(obs), obs, net, "the logits")


@pytest.mark.parametrize("recurrent", [True, False])
def test_unroll_gives_the_step_by_step_values_and_nearly_the_same_gradients(recurrent):
    torch.manual_seed(0)
    actor = RecurrentActor(5, 4, hidden=8, recurrent=recurrent)
    x, h0 = torch.randn(7, 3, 5), torch.randn(3, 8)  # (T, B, D), (B, H)
    h, stepped = h0, []
    for t in range(7):
        logits, h = actor(x[t], h)
        stepped.append(logits)
    stepped = torch.stack(stepped)  # (T, B, A)
    unrolled = actor.unroll(x, h0)
    assert unrolled.shape == (7, 3, 4) and torch.allclose(unrolled, stepped, atol=1e-6)  # the same up to rounding
    grads = [torch.autograd.grad((out * torch.arange(4.0)).sum(), list(actor.parameters()))
             for out in (stepped, unrolled)]
    for g_step, g_unrolled in zip(*grads):
        assert torch.allclose(g_step, g_unrolled, rtol=1e-5, atol=1e-6)  # summed in another order


def test_unroll_checks_its_inputs():
    actor = RecurrentActor(5, 4, hidden=8)
    with pytest.raises(ValueError, match="x"):
        actor.unroll(torch.zeros(3, 5), torch.zeros(3, 8))  # one step, not (T, B, D)
    with pytest.raises(ValueError, match="h"):
        actor.unroll(torch.zeros(7, 3, 5), torch.zeros(2, 8))


def test_networks_refuse_numpy_inputs_and_say_how_to_convert():
    import numpy as np

    x = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"^x: expected a torch tensor of shape \(B, 3\), got ndarray; "
                                         r"torch.as_tensor\(x\) converts a numpy array$"):
        MLP(3, 2)(x)
    actor = RecurrentActor(3, 2, hidden=4)
    with pytest.raises(ValueError, match=r"^x: expected a torch tensor of shape \(B, 3\), got ndarray"):
        actor(x, actor.initial_hidden(4))
    with pytest.raises(ValueError, match=r"^x: expected a torch tensor of shape \(T, B, 3\), got list"):
        actor.unroll([[0.0, 0.0, 0.0]], actor.initial_hidden(1))
