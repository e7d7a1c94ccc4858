import math

import pytest
import torch

from marl_edu.learners.value_decomposition import IQL
from marl_edu.pieces.policies import (categorical_entropy, categorical_log_prob, gaussian_entropy, gaussian_log_prob,
                                      sample_categorical)


def test_categorical_log_prob_and_entropy_by_hand():
    probs = torch.tensor([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0]], requires_grad=True)  # (2, A=3)
    actions = torch.tensor([1, 1])  # (2,)
    log_prob = categorical_log_prob(probs, actions)
    # log(0.25 + 1e-10) = -1.386294; log(0 + 1e-10) = -23.025851 (finite: the 1e-10)
    assert torch.allclose(log_prob, torch.tensor([math.log(0.25), math.log(1e-10)]))
    entropy = categorical_entropy(probs)
    # -(0.5 ln 0.5 + 2 * 0.25 ln 0.25) = 0.346574 + 0.693147 = 1.039721; a one-hot row: -(1 ln 1) = 0
    assert torch.allclose(entropy, torch.tensor([1.039721, 0.0]), atol=1e-6)
    log_prob[0].backward()
    assert torch.allclose(probs.grad[0], torch.tensor([0.0, 4.0, 0.0]))  # d log p / d p_1 = 1 / 0.25 = 4
    uniform = torch.full((2, 3, 4), 0.25)  # any leading axes: (B, T, N, A) as the learners have
    assert torch.allclose(categorical_entropy(uniform), torch.full((2, 3), math.log(4)))  # ln 4 = 1.386294, the most


def test_gaussian_log_prob_and_entropy_by_hand():
    mean = torch.tensor([[0.0, 1.0]], requires_grad=True)  # (1, A=2)
    log_std = torch.tensor([0.0, math.log(2.0)])  # sigma = (1, 2)
    actions = torch.tensor([[1.0, 3.0]])  # z = ((1 - 0) / 1, (3 - 1) / 2) = (1, 1)
    log_prob = gaussian_log_prob(mean, log_std, actions)
    # per entry -z^2 / 2 - log sigma - log(2 pi) / 2: (-0.5 - 0 - 0.918939) + (-0.5 - 0.693147 - 0.918939) = -3.531025
    assert log_prob.shape == (1,) and math.isclose(log_prob.item(), -3.531025, abs_tol=1e-6)
    log_prob.sum().backward()
    assert torch.allclose(mean.grad, torch.tensor([[1.0, 0.5]]))  # (a - m) / sigma^2 = (1 / 1, 2 / 4)
    # sum of log sigma + (1 + log(2 pi)) / 2: (0 + 1.418939) + (0.693147 + 1.418939) = 3.531025
    assert math.isclose(gaussian_entropy(log_std).item(), 3.531025, abs_tol=1e-6)


def test_the_gaussian_learners_keep_their_methods():
    from marl_edu.learners.inference import GaussianPolicy
    from marl_edu.learners.ppo_continuous import GaussianActor

    actor, policy = GaussianActor(3, 2, 8, -0.5), GaussianPolicy(3, 2, (8,), log_std=-0.5)
    x, actions = torch.rand(4, 3), torch.rand(4, 2)  # (B, O + N), (B, A)
    assert torch.equal(actor.log_prob(x, actions), gaussian_log_prob(actor.mean_of(x), actor.log_std, actions))
    assert torch.equal(policy.log_prob(x, actions), gaussian_log_prob(policy(x), policy.log_std, actions))
    assert actor.entropy().item() == policy.entropy().item() == gaussian_entropy(torch.full((2,), -0.5)).item()


def test_sample_categorical_draws_with_the_generator_given():
    probs = torch.tensor([[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])  # (B=1, N=2, A=3): certain actions 1 and 2
    assert sample_categorical(probs, torch.Generator().manual_seed(0)).tolist() == [[1, 2]]
    fair = torch.full((4, 2, 3), 1 / 3)
    first = sample_categorical(fair, torch.Generator().manual_seed(3))
    assert first.shape == (4, 2) and torch.equal(first, sample_categorical(fair, torch.Generator().manual_seed(3)))


@pytest.mark.parametrize("call, message", [
    (lambda: categorical_log_prob(torch.tensor([[2.0, -1.0]]), torch.tensor([0])),
     r"^probs must be probabilities, non-negative \(softmax\(logits\), not the logits\), got -1"),
    (lambda: categorical_log_prob(torch.full((2, 3), 1 / 3), torch.tensor([0, 3])),
     r"^actions must be in \[0, 2\]"),
    (lambda: categorical_log_prob(torch.full((2, 3), 1 / 3), torch.tensor([0.0, 1.0])), r"^actions: expected int"),
    (lambda: categorical_log_prob(torch.full((2, 3), 1 / 3), torch.tensor([0, 1, 2])),
     r"^actions: expected shape \(2,\), got \(3,\)"),
    (lambda: categorical_entropy(torch.tensor(0.5)), r"^probs: expected a float tensor of probabilities \(\.\.\., A\)"),
    (lambda: categorical_entropy([0.5, 0.5]), r"^probs: expected a float tensor of probabilities .* got list"),
    (lambda: categorical_entropy(torch.tensor([1, 0])), r"^probs: expected float elements"),
    (lambda: gaussian_log_prob(torch.zeros(4, 2), torch.zeros(3), torch.zeros(4, 2)), r"^mean: expected shape"),
    (lambda: gaussian_log_prob(torch.zeros(4, 2), torch.zeros(2), torch.zeros(4, 3)), r"^actions: expected shape"),
    (lambda: gaussian_log_prob(torch.zeros(4, 2), torch.zeros(2, 1), torch.zeros(4, 2)), r"^log_std: expected shape"),
    (lambda: gaussian_entropy(torch.zeros(2, 2)), r"^log_std: expected shape \(A,\)"),
    (lambda: sample_categorical(torch.full((2, 3), 1 / 3), torch.Generator()), r"^probs: expected shape \(B, N, A\)"),
    (lambda: sample_categorical(torch.full((1, 2, 3), 1 / 3), 0), r"^generator must be a torch.Generator"),
    (lambda: sample_categorical(torch.tensor([[[0.5, math.nan]]]), torch.Generator()),
     r"^probs must be probabilities \(B, N, A\): finite, non-negative, each row with a positive sum; torch.multinomial "
     r"says: "),
    (lambda: sample_categorical(torch.zeros(1, 1, 2), torch.Generator()), r"^probs must be probabilities"),
])
def test_bad_inputs(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_nan_probabilities_or_means_give_nan_for_gradient_step_to_refuse():
    # NaN is not refused here: the loss becomes NaN and nets.gradient_step names the update and the learning rate
    assert math.isnan(categorical_log_prob(torch.tensor([[math.nan, 0.5]]), torch.tensor([0]))[0].item())
    assert math.isnan(categorical_entropy(torch.tensor([[math.nan, 0.5]]))[0].item())
    assert math.isnan(gaussian_log_prob(torch.tensor([[math.nan]]), torch.zeros(1), torch.zeros(1, 1))[0].item())


def test_iql_refuses_nan_probabilities_as_comas_sampling_does():
    agent = IQL(2, 2, 5)
    with pytest.raises(ValueError, match=r"^probs must be probabilities \(B, N, A\): finite, non-negative, each row "
                                         r"with a positive sum; torch.multinomial says: "):
        agent.sample(torch.tensor([[[0.5, math.nan, 0.5, 0.0, 0.0], [0.2] * 5]]))
