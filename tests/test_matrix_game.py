"""The one-step penalty game of notebook 11 (marl_edu.learners.matrix_game): its payoffs, exact optimum and VDN's answer worked
by hand, the trainer reaching them, and QMIX's answer measured."""

import math

import pytest
import torch

from marl_edu.learners.matrix_game import (action_probs, check_payoff, fits_exactly, greedy_joint_action, joint_actions,
                                  mixer_slopes, optimum, payoff_matrix, q_tot_table, set_mixer_weights,
                                  train_matrix_game, vdn_least_squares)
from marl_edu.learners.value_decomposition import QMixer, vdn_mix

# The payoff R[a_0, a_1], agent 0's action the row, agent 1's the column:
#        a_1 = 0    1    2
#   a_0 = 0    8  -12  -12
#         1  -12    0    0
#         2  -12    0    0
PAYOFF = [[8.0, -12.0, -12.0], [-12.0, 0.0, 0.0], [-12.0, 0.0, 0.0]]

# VDN under uniform exploration, by hand. Q_tot = Q_0(a_0) + Q_1(a_1) fitted by least squares over the 9 joint actions,
# each with weight 1/9, is the row mean plus the column mean minus the overall mean:
#   row means      (8 - 12 - 12) / 3 = -16/3,   (-12 + 0 + 0) / 3 = -4,   -4     (the columns: the same, R is symmetric)
#   overall mean   (8 - 4 * 12) / 9 = -40/9
#   Q_tot(0, 0) = -16/3 - 16/3 + 40/9 = (-48 - 48 + 40) / 9 = -56/9 = -6.222
#   Q_tot(0, 1) = -16/3 - 4    + 40/9 = (-48 - 36 + 40) / 9 = -44/9 = -4.889    (and (0, 2), (1, 0), (2, 0))
#   Q_tot(1, 1) = -4    - 4    + 40/9 = (-36 - 36 + 40) / 9 = -32/9 = -3.556    (and (1, 2), (2, 1), (2, 2))
# The largest entries are the four joint actions without action 0: VDN's agents play one of them, payoff 0, not 8.
VDN_BY_HAND = [[-56 / 9, -44 / 9, -44 / 9], [-44 / 9, -32 / 9, -32 / 9], [-44 / 9, -32 / 9, -32 / 9]]
TOLERANCE = 1e-3  # 300 Adam steps on the exact expected loss reach the least-squares values to about 1e-5 (measured)


def test_the_payoff_and_its_optimum_by_hand():
    assert payoff_matrix().tolist() == PAYOFF
    assert optimum(PAYOFF) == ((0, 0), 8.0)
    # a milder penalty keeps the layout: 5 for (0, 0), -3 where exactly one agent plays action 0, 0 elsewhere
    assert payoff_matrix(-3.0, 5.0).tolist() == [[5.0, -3.0, -3.0], [-3.0, 0.0, 0.0], [-3.0, 0.0, 0.0]]
    assert str(payoff_matrix(0.0)[0, 1].item()) == "0.0"  # no -0.0 in a printed table
    # on a tie the first joint action in row-major order: (0, 1) before (1, 0)
    assert optimum([[0.0, 2.0], [2.0, 1.0]]) == ((0, 1), 2.0)


def test_vdn_least_squares_by_hand():
    torch.testing.assert_close(vdn_least_squares(PAYOFF), torch.tensor(VDN_BY_HAND))
    # exploration that plays action 0 half the time, p = (0.5, 0.25, 0.25), by hand:
    #   agent 0's action 0 is worth 0.5 * 8 + 0.5 * (-12) = -2 on average, its actions 1 and 2 0.5 * (-12) + 0 = -6;
    #   overall 0.5 * (-2) + 0.5 * (-6) = -4
    #   Q_tot(0, 0) = -2 - 2 + 4 = 0,  Q_tot(0, 1) = -2 - 6 + 4 = -4,  Q_tot(1, 1) = -6 - 6 + 4 = -8: now (0, 0) is
    #   the largest, and VDN's agents play the optimum
    half = vdn_least_squares(PAYOFF, action_probs(3, 0.5))
    torch.testing.assert_close(half, torch.tensor([[0.0, -4.0, -4.0], [-4.0, -8.0, -8.0], [-4.0, -8.0, -8.0]]))


@pytest.mark.parametrize("seed", range(5))
def test_vdn_training_reaches_the_hand_values_and_misses_the_optimum(seed):
    fit = train_matrix_game(PAYOFF, "vdn", seed=seed)
    torch.testing.assert_close(fit.q_tot, torch.tensor(VDN_BY_HAND), atol=TOLERANCE, rtol=0.0)
    # Q_tot is unique, the utilities only up to a constant: Q_0 + c, Q_1 - c give the same sums. Their differences are
    # fixed: Q_i(0) - Q_i(1) = -16/3 - (-4) = -4/3, Q_i(1) - Q_i(2) = 0
    for q in fit.utilities:
        assert q[0] - q[1] == pytest.approx(-4 / 3, abs=TOLERANCE) and q[1] - q[2] == pytest.approx(0.0, abs=TOLERANCE)
    assert fit.greedy[0] in (1, 2) and fit.greedy[1] in (1, 2) and fit.payoff == 0.0
    # the fit's weighted squared error is the least-squares residual: sum of (1/9) (R - Q_tot)^2 =
    # ((8 + 56/9)^2 + 4 (-12 + 44/9)^2 + 4 (0 + 32/9)^2) / 9 = (128^2 + 4 * 64^2 + 4 * 32^2) / 729 = 36864 / 729
    assert fit.losses[-1] == pytest.approx(36864 / 729, abs=1e-3)


def test_vdn_plays_the_optimum_when_action_0_is_tried_often_enough():
    # by hand: agent 0's action 0 beats its others iff 8 p - 12 (1 - p) > -12 p, i.e. p > 12/32 = 0.375
    assert train_matrix_game(PAYOFF, "vdn", probs=action_probs(3, 0.5)).greedy == (0, 0)
    assert train_matrix_game(PAYOFF, "vdn", probs=action_probs(3, 0.3)).greedy != (0, 0)
    # or when the penalty is milder: under uniform exploration, 8/3 + 2c/3 > c/3 iff c > -8
    assert train_matrix_game(payoff_matrix(-6.0), "vdn").greedy == (0, 0)
    assert train_matrix_game(payoff_matrix(-10.0), "vdn").greedy != (0, 0)


@pytest.mark.parametrize("seed", range(5))
def test_qmix_misses_the_optimum_too(seed):
    # No monotonic mixer represents this payoff exactly: if Q_1(0) >= Q_1(1), monotonicity gives
    # Q_tot(1, 0) >= Q_tot(1, 1), but R(1, 0) = -12 < R(1, 1) = 0; if Q_1(0) < Q_1(1), it gives
    # Q_tot(0, 0) <= Q_tot(0, 1), but R(0, 0) = 8 > R(0, 1) = -12 (and the same with the agents swapped).
    # That alone does not decide the greedy joint action: the best monotonic fit (a 2-D isotonic regression over every
    # ranking of the utilities, solved while writing this test) is 8 at (0, 0) and -6 everywhere else, weighted error
    # 4 * 6^2 / 9 + 4 * 6^2 / 9 = 32, and its agents would play (0, 0). What QMIX learns from small random utilities
    # is the other local minimum: under uniform exploration action 0 is every agent's worst on average (its row mean
    # -16/3 against -4), so gradient descent ranks Q_i(0) last, and then monotonicity ties Q_tot(0, .) below
    # Q_tot(1, .): the five joint actions with an action 0 pool at their mean (8 - 4 * 12) / 5 = -8, the other four
    # keep 0, weighted error (16^2 + 4 * 4^2) / 9 = 320/9 = 35.56. Seeds 0 to 29 all landed there (none on (0, 0)).
    fit = train_matrix_game(PAYOFF, "qmix", seed=seed)
    assert fit.greedy != (0, 0) and fit.payoff == 0.0
    pooled = torch.tensor([[-8.0, -8.0, -8.0], [-8.0, 0.0, 0.0], [-8.0, 0.0, 0.0]])
    torch.testing.assert_close(fit.q_tot, pooled, atol=0.05, rtol=0.0)
    assert fit.losses[-1] == pytest.approx(320 / 9, abs=0.01)  # above the best monotonic fit's 32
    assert fit.qmixer is not None and train_matrix_game(PAYOFF, "vdn").qmixer is None


def test_qmix_can_reach_the_better_monotonic_fit_from_a_start_that_ranks_action_0_first():
    # the (0, 0) basin exists: started at Q_i = (1, 0, 0), seed 4 ends at 8 for (0, 0) and -6 elsewhere (error 32)
    fit = train_matrix_game(PAYOFF, "qmix", seed=4, init=[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    assert fit.greedy == (0, 0) and fit.payoff == 8.0
    assert fit.losses[-1] == pytest.approx(32.0, abs=0.05)


def test_training_is_deterministic_and_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    first = train_matrix_game(PAYOFF, "qmix", seed=7, steps=20)
    assert torch.equal(torch.rand(3), expected_next)  # the trainer forked the global RNG
    again = train_matrix_game(PAYOFF, "qmix", seed=7, steps=20)
    assert first.losses == again.losses and torch.equal(first.q_tot, again.q_tot)
    assert len(first.losses) == 20


def test_which_payoffs_each_method_can_fit_exactly():
    cases = {
        # the penalty game: R(0, 0) - R(0, 1) - R(1, 0) + R(1, 1) = 8 + 12 + 12 + 0 != 0, and agent 0's row 0 beats
        # row 1 in column 0 (8 > -12) but loses in column 1 (-12 < 0): neither
        "penalty game": (PAYOFF, False, False),
        # additive: 1 - 2 - 3 + 4 = 0; row 1 >= row 0 and column 1 >= column 0 everywhere: both
        "additive": ([[1.0, 2.0], [3.0, 4.0]], True, True),
        # "both play 0": 1 - 0 - 0 + 0 != 0; row 0 (1, 0) >= row 1 (0, 0), column 0 >= column 1: QMIX only
        "both play 0": ([[1.0, 0.0], [0.0, 0.0]], False, True),
        # "play the same action": row 0 (1, 0) against row 1 (0, 1), neither >= the other: neither
        "coordinate": ([[1.0, 0.0], [0.0, 1.0]], False, False),
        # the best monotonic fit of the penalty game (test_qmix_misses_the_optimum_too): row 0 >= rows 1 and 2
        "best monotonic fit": ([[8.0, -6.0, -6.0], [-6.0, -6.0, -6.0], [-6.0, -6.0, -6.0]], False, True),
    }
    for name, (payoff, vdn, qmix) in cases.items():
        assert (fits_exactly(payoff, "sum"), fits_exactly(payoff, "monotonic")) == (vdn, qmix), name
    # what VDN fits exactly, its least squares reproduce
    torch.testing.assert_close(vdn_least_squares([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    renamed = {"vdn": " \\(the class 'vdn' named is now 'sum'\\)",
               "qmix": " \\(the class 'qmix' named is now 'monotonic'\\)", "iql": "$"}
    for old_name, now in renamed.items():
        with pytest.raises(ValueError, match=f"mix must be one of sum, monotonic, got '{old_name}'{now}"):
            fits_exactly(PAYOFF, old_name)


def test_tables_and_greedy_actions_by_hand():
    q_0, q_1 = torch.tensor([1.0, 3.0]), torch.tensor([0.5, -1.0])
    # VDN: Q_tot[a_0, a_1] = q_0[a_0] + q_1[a_1] = [[1.5, 0.0], [3.5, 2.0]]; argmax (1, 0) = (argmax q_0, argmax q_1)
    table = q_tot_table(q_0, q_1, vdn_mix)
    assert table.tolist() == [[1.5, 0.0], [3.5, 2.0]]
    assert greedy_joint_action(q_0, q_1) == (1, 0) == divmod(int(table.argmax()), 2)
    assert joint_actions(2).tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]


def test_a_mixer_with_hand_set_weights_by_hand():
    # q = (Q_0, Q_1) = (1.0, -0.5); W_1 = |[[0.5, 1.0], [-2.0, 0.0]]| = [[0.5, 1.0], [2.0, 0.0]], v_1 = (0, -1)
    #   W_1^T q + v_1 = (0.5 * 1 + 2 * (-0.5) + 0, 1 * 1 + 0 * (-0.5) - 1) = (-0.5, 0.0)
    #   elu: (e^-0.5 - 1, 0) = (-0.39347, 0);  w_2 = (1, 0.5), v_2 = 0.2:  Q_tot = -0.39347 + 0 + 0.2 = -0.19347
    mixer = set_mixer_weights(QMixer(2, 3, embed=2, hyper_hidden=4), [[0.5, 1.0], [-2.0, 0.0]], [0.0, -1.0],
                              [1.0, 0.5], 0.2)
    states = torch.randn(4, 3)  # any state: the hypernetworks now output constants
    q_tot = mixer(torch.tensor([[1.0, -0.5]]).expand(4, 2), states)
    torch.testing.assert_close(q_tot, torch.full((4,), math.exp(-0.5) - 1 + 0.2))


def test_the_monotonicity_check():
    torch.manual_seed(0)
    mixer = QMixer(3, 5, embed=4, hyper_hidden=8)
    q, s = 3 * torch.randn(200, 3), torch.randn(200, 5)
    slopes = mixer_slopes(lambda x: mixer(x, s), q)
    assert slopes.shape == (200, 3) and bool((slopes >= 0).all())  # abs() on the weights: monotonic everywhere
    assert mixer_slopes(vdn_mix, q).tolist() == [[1.0, 1.0, 1.0]] * 200  # a sum: every slope 1
    # elu(Q_0 - Q_1), a mixer with a negative weight on agent 1: slope -1 * elu'(.) < 0 for agent 1 everywhere
    slopes = mixer_slopes(lambda x: torch.nn.functional.elu(x[:, 0] - x[:, 1]), q[:, :2])
    assert bool((slopes[:, 1] < 0).all()) and bool((slopes[:, 0] > 0).all())


def test_bad_inputs_are_clear_value_errors():
    with pytest.raises(ValueError, match=r"payoff: expected shape \(A, A\)"):
        check_payoff([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(ValueError, match="at least 2 actions"):
        check_payoff([[1.0]])
    with pytest.raises(ValueError, match="payoff"):
        check_payoff([[1.0, float("nan")], [0.0, 0.0]])
    with pytest.raises(ValueError, match="payoff must be a table of numbers"):
        check_payoff([["a", "b"], ["c", "d"]])
    with pytest.raises(ValueError, match=r"penalty must be a number in \[-1e6, 0\], got 3"):
        payoff_matrix(3)
    with pytest.raises(ValueError, match="reward must be a positive number"):
        payoff_matrix(-12.0, 0.0)
    with pytest.raises(ValueError, match="method must be one of vdn, qmix, got 'iql'"):
        train_matrix_game(PAYOFF, "iql")
    with pytest.raises(ValueError, match="probs must be positive"):
        train_matrix_game(PAYOFF, probs=[0.0, 0.5, 0.5])
    with pytest.raises(ValueError, match="probs must be positive .* and sum to 1"):
        train_matrix_game(PAYOFF, probs=[0.2, 0.2, 0.2])
    with pytest.raises(ValueError, match=r"probs: expected shape \(3,\)"):
        train_matrix_game(PAYOFF, probs=[0.5, 0.5])
    with pytest.raises(ValueError, match="steps must be a positive int"):
        train_matrix_game(PAYOFF, steps=0)
    with pytest.raises(ValueError, match="lr must be a positive number"):
        train_matrix_game(PAYOFF, lr=-0.1)
    with pytest.raises(ValueError, match=r"init: expected shape \(2, 3\)"):
        train_matrix_game(PAYOFF, init=[1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="p0 must be a probability strictly between 0 and 1"):
        action_probs(3, 1.0)
    with pytest.raises(ValueError, match="n_actions must be at least 2"):
        action_probs(1, 0.5)
    with pytest.raises(ValueError, match="mixer must be a QMixer, got Linear"):
        set_mixer_weights(torch.nn.Linear(2, 2), [[1.0]], [0.0], [1.0], 0.0)
    with pytest.raises(ValueError, match=r"w1: expected shape \(2, 2\)"):
        set_mixer_weights(QMixer(2, 1, embed=2), [[1.0, 1.0]], [0.0, 0.0], [1.0, 1.0], 0.0)
    with pytest.raises(ValueError, match=r"q_taken: expected shape \(B, N\)"):
        mixer_slopes(vdn_mix, torch.zeros(3))
    with pytest.raises(ValueError, match=r"q_1: expected shape \(3,\)"):
        q_tot_table(torch.zeros(3), torch.zeros(2), vdn_mix)
