import math

import pytest

from marl_edu.base.schedules import linear


def test_linear_by_hand():
    # MADDPG's epsilon: 0.5 -> 0.02 over 1,800 of 3,000 episodes (epsilon_fraction 0.6)
    assert linear(0.5, 0.02, 0, 1800) == 0.5
    assert linear(0.5, 0.02, 900, 1800) == pytest.approx(0.26)  # 0.5 + (0.02 - 0.5) * 0.5 = 0.5 - 0.24
    assert linear(0.5, 0.02, 1800, 1800) == pytest.approx(0.02)
    assert linear(0.5, 0.02, 2999, 1800) == pytest.approx(0.02)  # stays at the end value
    # COMA's entropy coefficient: 0.2 -> 0 over 12,000 episodes; a quarter of the way: 0.2 - 0.2 * 0.25 = 0.15
    assert linear(0.2, 0.0, 3000, 12000) == pytest.approx(0.15)
    # an increasing schedule works the same way: 0.1 + (0.5 - 0.1) * 0.75 = 0.4
    assert linear(0.1, 0.5, 3, 4) == pytest.approx(0.4)


def test_zero_duration_means_no_decay_phase():
    assert linear(0.5, 0.02, 0, 0) == 0.02
    assert linear(0.5, 0.02, 10, 0.0) == 0.02


@pytest.mark.parametrize("done, duration, name", [(-1, 10, "done"), (math.nan, 10, "done"), (1, -5, "duration"),
                                                   (1, math.inf, "duration"), (True, 10, "done")])
def test_bad_progress_is_named(done, duration, name):
    with pytest.raises(ValueError, match=name):
        linear(0.5, 0.02, done, duration)
