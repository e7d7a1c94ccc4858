import math

import pytest
import torch

from marl_edu.learners.baselines import CentralQV
from marl_edu.learners.coma import COMA
from marl_edu.learners.value_decomposition import IQL, QMIX, VDN
from marl_edu.pieces.masked import masked_mean
from batches import episode_batch


def test_masked_mean_by_hand():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)  # (2, 3)
    mask = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])  # keeps 1, 3 and 5
    mean = masked_mean(x, mask)
    assert mean.shape == () and mean.item() == 3.0  # (1 + 3 + 5) / 3 = 9 / 3
    mean.backward()
    third = 1.0 / 3.0  # d mean / d x = m / sum m: 1/3 where kept, 0 elsewhere
    assert torch.allclose(x.grad, torch.tensor([[third, 0.0, third], [0.0, third, 0.0]]))
    assert masked_mean(x, mask, allow_empty=True).item() == 3.0  # a mask with a 1: the count's clamp changes nothing
    assert masked_mean(x, torch.ones(2, 3)).item() == 3.5  # (1 + 2 + 3 + 4 + 5 + 6) / 6 = 21 / 6


def test_coef_is_multiplied_into_the_sum_before_the_division():
    x = torch.tensor([0.25, 0.25, 0.5, 8.0])  # (4,)
    mask = torch.tensor([1.0, 1.0, 1.0, 0.0])  # sum m x = 0.25 + 0.25 + 0.5 = 1, sum m = 3
    got = masked_mean(x, mask, coef=0.3)
    assert got.item() == (torch.tensor(0.3) / 3).item()  # (0.3 * 1) / 3 in float32: 0.10000000149...
    assert got.item() != (0.3 * (torch.tensor(1.0) / 3)).item()  # 0.3 * (1 / 3): 0.10000000894..., another float
    assert math.isclose(got.item(), 0.1, rel_tol=1e-6)


def test_an_all_zero_mask_is_zero_when_allowed_and_an_error_when_not():
    x = torch.tensor([2.0, -7.0], requires_grad=True)  # (2,)
    empty = torch.zeros(2)
    mean = masked_mean(x, empty, allow_empty=True)  # (0 + 0) / clamp(0, min=1) = 0 / 1
    assert mean.item() == 0.0
    mean.backward()
    assert x.grad.tolist() == [0.0, 0.0]  # nothing kept, nothing learned
    with pytest.raises(ValueError, match=r"^squared TD error's mask is all zero: no entry to average over"):
        masked_mean(x, empty, name="squared TD error")


@pytest.mark.parametrize("x, mask, message", [
    (torch.ones(2, 3), torch.ones(2), r"^x's mask: expected shape \(2, 3\)"),  # no broadcasting
    (torch.ones(2, 3), torch.ones(2, 3, 1), r"^x's mask: expected shape \(2, 3\)"),
    (torch.ones(2, 3), torch.full((2, 3), 0.5), r"^x's mask must be 0 or 1 in every entry, got 0.5 at index \(0, 0\)"),
    (torch.ones(2), torch.tensor([1.0, math.nan]), r"^x's mask must be 0 or 1 in every entry, got nan at index \(1,\)"),
    (torch.ones(2), torch.tensor([1, 0]), r"^x's mask: expected float elements"),
    (torch.tensor([1, 2]), torch.ones(2), r"^x: expected float elements"),
    ([1.0, 2.0], torch.ones(2), r"^x: expected a torch tensor, got list"),
    (torch.ones(2), None, r"^x's mask: expected a torch tensor, got NoneType"),
])
def test_bad_inputs(x, mask, message):
    with pytest.raises(ValueError, match=message):
        masked_mean(x, mask)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"^allow_empty must be True or False, got 1"):
        masked_mean(torch.ones(2), torch.ones(2), allow_empty=1)
    with pytest.raises(ValueError, match=r"^coef must be a finite number, got nan"):
        masked_mean(torch.ones(2), torch.ones(2), coef=math.nan)


def test_nan_in_x_is_left_to_gradient_step():
    # NaN or infinity in x makes the mean NaN, even under a 0 of the mask (inf * 0 = nan): the loss that
    # nets.gradient_step refuses with the update's number and the learning rate
    assert math.isnan(masked_mean(torch.tensor([math.nan, 1.0]), torch.tensor([1.0, 1.0])).item())
    assert math.isnan(masked_mean(torch.tensor([math.inf, 1.0]), torch.tensor([0.0, 1.0])).item())


@pytest.mark.parametrize("learner_class", [COMA, CentralQV, IQL, VDN, QMIX])
def test_an_update_never_averages_over_an_all_zero_step_mask(learner_class):
    # the losses over a whole batch's real steps (COMA's and central-QV's critics, the TD loss of IQL, VDN and QMIX)
    # take allow_empty=False: the batch check refuses a batch without a real step before any loss is formed
    batch = episode_batch() | {"step_mask": torch.zeros(2, 3), "agent_mask": torch.zeros(2, 3, 2)}
    learner = learner_class(2, 2, 5)
    with pytest.raises(ValueError, match=r"^batch\['step_mask'\]: expected at least one real step \(a 1\), got all "
                                         r"zeros$"):
        learner.update(batch)
    assert learner.updates == 0
