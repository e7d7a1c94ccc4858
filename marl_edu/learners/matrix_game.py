"""A one-step cooperative matrix game for value decomposition: two agents, A actions each, one shared payoff.

The payoff table r ``(A, A)`` is the team's reward for the joint action (a_0, a_1); the game lasts one step, so the
true Q_tot is r itself and the exact answer is known: ``optimum`` enumerates it. Notebook 11 uses the penalty game
(``payoff_matrix``, the QTRAN and Weighted QMIX papers' example)

    r = [[  8, -12, -12],
         [-12,   0,   0],
         [-12,   0,   0]]      optimum 8 at (0, 0),

in which an agent that tries action 0 while its partner explores at random is punished most of the time: relative
overgeneralisation.

``train_matrix_game`` fits VDN (two utility vectors Q_0, Q_1 ``(A,)``, Q_tot = Q_0(a_0) + Q_1(a_1)) or QMIX (the same
utilities through a ``QMixer`` whose state is a constant, S = 1) to r by Adam, regressing Q_tot onto r over the joint
actions that independent exploration plays: each joint action weighted by its probability pi(a_0) pi(a_1), which is
what regressing on uniformly random joint actions converges to, without the sampling noise. ``vdn_least_squares``
gives VDN's answer in closed form, ``fits_exactly`` which payoffs a sum or a monotonic mix can represent at all,
``mixer_slopes`` the monotonicity check dQ_tot/dQ_i >= 0, and ``set_mixer_weights`` makes a ``QMixer`` compute
hand-chosen weights (for worked examples). Symbols as in the cheat sheet: the mixer's biases are v_1 and v_2 there
(``b1``, ``b2`` in ``QMixer``; b is the batch index).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from marl_edu.base.shapes import check_shape
from marl_edu.base.threads import torch_threads
from marl_edu.base.validate import LIMITS, finite, non_negative_int, positive_int, positive_number
from marl_edu.learners.value_decomposition import QMixer, vdn_mix

METHODS = ("vdn", "qmix")
MIXES = ("sum", "monotonic")  # the classes of Q_tot fits_exactly tests: VDN's, and the one QMIX is built for
MAX_STEPS = 100_000  # far above what a 3 x 3 game needs (a few hundred): a typo fails in one line


def payoff_matrix(penalty: float = -12.0, reward: float = 8.0) -> torch.Tensor:
    """The penalty game ``(3, 3)``: ``reward`` for the joint action (0, 0), ``penalty`` when exactly one agent plays
    action 0, and 0 when neither does. The default is the QTRAN / Weighted QMIX example, optimum 8 at (0, 0).
    ValueError unless ``penalty`` is a finite number <= 0 and ``reward`` one > 0."""
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not -1e6 <= penalty <= 0:
        raise ValueError(f"penalty must be a number in [-1e6, 0], got {penalty!r}")
    penalty = float(penalty) + 0.0  # -0.0 becomes 0.0
    reward = positive_number(reward, "reward")
    return torch.tensor([[reward, penalty, penalty],
                         [penalty, 0.0, 0.0],
                         [penalty, 0.0, 0.0]])  # (A, A) r[a_0, a_1]


def check_payoff(payoff) -> torch.Tensor:
    """A payoff table as a float tensor ``(A, A)``: square (both agents have the same A >= 2 actions), finite.
    ValueError otherwise, naming what came."""
    if not isinstance(payoff, torch.Tensor):
        try:
            payoff = torch.as_tensor(payoff, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError) as error:
            raise ValueError(f"payoff must be a table of numbers (A, A), got {type(payoff).__name__}") from error
    dims = check_shape(payoff, ("A", "A"), "payoff")
    if dims["A"] < 2:
        raise ValueError(f"payoff: each agent needs at least 2 actions, got shape {tuple(payoff.shape)}")
    payoff = payoff.float()
    finite(payoff, "payoff")
    return payoff


def optimum(payoff) -> tuple[tuple[int, int], float]:
    """The exact answer: the joint action (a_0, a_1) with the highest payoff, and that payoff (the first in row-major
    order on a tie). payoff ``(A, A)``."""
    payoff = check_payoff(payoff)
    A = payoff.shape[0]
    best = int(payoff.flatten().argmax())
    return (best // A, best % A), float(payoff.flatten()[best])


def action_probs(n_actions: int, p0: float) -> torch.Tensor:
    """An exploration distribution ``(A,)``: action 0 with probability ``p0``, the other A - 1 actions sharing the
    rest equally. ``p0 = 1/A`` is uniform. ValueError unless 0 < p0 < 1 (every action must be tried)."""
    A = positive_int(n_actions, "n_actions")
    if A < 2:
        raise ValueError(f"n_actions must be at least 2, got {A}")
    if isinstance(p0, bool) or not isinstance(p0, (int, float)) or not 0 < p0 < 1:
        raise ValueError(f"p0 must be a probability strictly between 0 and 1 (every action tried), got {p0!r}")
    rest = (1.0 - p0) / (A - 1)
    return torch.tensor([float(p0)] + [rest] * (A - 1))  # (A,)


def _check_probs(probs, A: int) -> torch.Tensor:
    """Each agent's exploration distribution ``(A,)``: None is uniform; else positive entries that sum to 1."""
    if probs is None:
        return torch.full((A,), 1.0 / A)
    probs = torch.as_tensor(probs, dtype=torch.float32)
    check_shape(probs, (A,), "probs")
    finite(probs, "probs")
    if bool((probs <= 0).any()) or abs(float(probs.sum()) - 1.0) > 1e-5:
        raise ValueError(f"probs must be positive (every action tried) and sum to 1, got {probs.tolist()}")
    return probs


def vdn_least_squares(payoff, probs=None) -> torch.Tensor:
    """VDN's answer in closed form: the Q_tot ``(A, A)`` closest to the payoff among sums Q_0(a_0) + Q_1(a_1), in
    squared error weighted by independent exploration pi(a_0) pi(a_1) (``probs`` ``(A,)``, both agents; None: uniform):

        Q_tot(a_0, a_1) = rbar_0(a_0) + rbar_1(a_1) - rbar,    rbar_0(a_0) = sum_a pi(a) r(a_0, a),
                                                               rbar_1(a_1) = sum_a pi(a) r(a, a_1),
                                                               rbar = sum_{a, a'} pi(a) pi(a') r(a, a'):

    the row means plus the column means minus the overall mean (under uniform exploration). Unique, though the
    utilities are not: Q_0 + c and Q_1 - c give the same Q_tot."""
    payoff = check_payoff(payoff)
    p = _check_probs(probs, payoff.shape[0])
    row_means = payoff @ p  # (A,) rbar_0(a_0): agent 0's action against a partner that explores
    column_means = p @ payoff  # (A,) rbar_1(a_1)
    overall = p @ payoff @ p  # the mean payoff of the exploring pair
    return row_means[:, None] + column_means[None, :] - overall  # (A, A)


def fits_exactly(payoff, mix: str, atol: float = 1e-6) -> bool:
    """Whether a Q_tot of the class ``mix`` can equal the payoff ``(A, A)`` exactly, for some utilities:

    - "sum" (VDN's): Q_0(a_0) + Q_1(a_1) does iff r has no interaction: r(a, a') - r(a, 0) - r(0, a') + r(0, 0) = 0 for
      every (a, a').
    - "monotonic": a function monotonic in each utility (what QMIX's mixer is built to be, at one state) does iff each
      agent's actions can be ranked the same way whatever the other does: of any two rows, one is >= the other in
      every column (then give the larger row the larger utility; equal rows equal ones), and the same for any two
      columns. An agent whose best action depends on what the other plays (the penalty game's agent 0: action 0 if
      agent 1 plays 0, action 1 if it plays 1) has no such ranking. QMIX's own mixer is a narrower class: each hidden
      unit applies the convex, increasing elu to a non-negative mix of the utilities, so d^2 Q_tot / dq_0 dq_1 = sum_e
      w_2e elu''(.) W_1,0e W_1,1e >= 0 (increasing differences): it fits exactly only those of these tables that never
      take a bonus away when both agents play their better actions (tests/test_value_decomposition.py fits it to "pay 1
      unless both play 1")."""
    payoff = check_payoff(payoff)
    if mix not in MIXES:
        renamed = {"vdn": "sum", "qmix": "monotonic"}.get(mix)  # the names these classes had before
        raise ValueError(f"mix must be one of {', '.join(MIXES)}, got {mix!r}"
                         + (f" (the class {mix!r} named is now {renamed!r})" if renamed else ""))
    if mix == "sum":
        interaction = payoff - payoff[:, :1] - payoff[:1, :] + payoff[0, 0]  # (A, A)
        return bool((interaction.abs() <= atol).all())

    def rankable(rows: torch.Tensor) -> bool:  # (A, A): every pair of rows ordered entrywise, one way or the other
        ge = (rows[:, None, :] >= rows[None, :, :] - atol).all(dim=-1)  # (A, A) row a >= row a' in every column
        return bool((ge | ge.T).all())

    return rankable(payoff) and rankable(payoff.T)


def joint_actions(n_actions: int) -> torch.Tensor:
    """Every joint action of two agents, row-major: int ``(A*A, 2)`` rows (a_0, a_1) = (0, 0), (0, 1), ..."""
    A = positive_int(n_actions, "n_actions")
    a_0, a_1 = torch.meshgrid(torch.arange(A), torch.arange(A), indexing="ij")  # (A, A) each
    return torch.stack([a_0.flatten(), a_1.flatten()], dim=1)  # (A*A, 2)


def _check_utilities(q_0, q_1) -> tuple[torch.Tensor, torch.Tensor]:
    dims = check_shape(q_0, ("A",), "q_0", dtype="float")
    check_shape(q_1, (dims["A"],), "q_1", dims, dtype="float")
    return q_0, q_1


def q_tot_table(q_0: torch.Tensor, q_1: torch.Tensor, mix: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Q_tot of every joint action: utilities q_0, q_1 ``(A,)`` and ``mix``, the chosen utilities ``(B, 2)`` -> Q_tot
    ``(B,)`` (``vdn_mix``, or ``lambda q: mixer(q, state)``) -> ``(A, A)``, entry [a_0, a_1]."""
    q_0, q_1 = _check_utilities(q_0, q_1)
    A = q_0.shape[0]
    joint = joint_actions(A)  # (A*A, 2)
    q_taken = torch.stack([q_0[joint[:, 0]], q_1[joint[:, 1]]], dim=1)  # (A*A, 2) [Q_0(a_0), Q_1(a_1)]
    q_tot = mix(q_taken)
    check_shape(q_tot, (A * A,), "mix(q_taken)")
    return q_tot.reshape(A, A)  # (A, A)


def greedy_joint_action(q_0: torch.Tensor, q_1: torch.Tensor) -> tuple[int, int]:
    """What decentralised agents play: each its own argmax, (argmax Q_0, argmax Q_1), utilities ``(A,)`` each."""
    q_0, q_1 = _check_utilities(q_0, q_1)
    return int(q_0.argmax()), int(q_1.argmax())


def mixer_slopes(mix: Callable[[torch.Tensor], torch.Tensor], q_taken: torch.Tensor) -> torch.Tensor:
    """The monotonicity check: dQ_tot/dQ_i at every row, ``(B, N)``, for ``mix``: q_taken ``(B, N)`` -> Q_tot ``(B,)``
    (each row's Q_tot from its own row only). A monotonic mixer gives no negative entry, wherever it is asked."""
    check_shape(q_taken, ("B", "N"), "q_taken", dtype="float")
    q = q_taken.detach().clone().requires_grad_(True)  # (B, N)
    with torch.enable_grad():
        q_tot = mix(q)
        check_shape(q_tot, (q.shape[0],), "mix(q_taken)")
        (slopes,) = torch.autograd.grad(q_tot.sum(), q)  # (B, N): row b's Q_tot depends on row b only
    return slopes


def set_mixer_weights(mixer: QMixer, w1, b1, w2, b2: float) -> QMixer:
    """Make ``mixer`` compute hand-chosen weights for every state: its hypernetworks' last layers get zero weights and
    these biases, so W_1 = |w1| ``(N, E)``, v_1 = b1 ``(E,)``, w_2 = |w2| ``(E,)`` and v_2 = b2 (the forward pass
    takes abs() of the weights itself). In place; returns the mixer. For worked examples, not for training."""
    if not isinstance(mixer, QMixer):
        raise ValueError(f"mixer must be a QMixer, got {type(mixer).__name__}")
    N, E = mixer.n_agents, mixer.embed
    values = {}
    for name, value, spec in (("w1", w1, (N, E)), ("b1", b1, (E,)), ("w2", w2, (E,)), ("b2", [b2], (1,))):
        value = torch.as_tensor(value, dtype=torch.float32)
        check_shape(value, spec, name)
        finite(value, name)
        values[name] = value
    last = {"w1": mixer.hyper_w1.net[-1], "b1": mixer.hyper_b1, "w2": mixer.hyper_w2.net[-1],
            "b2": mixer.hyper_b2.net[-1]}  # the layer whose output each one is
    with torch.no_grad():
        for name, layer in last.items():
            layer.weight.zero_()
            layer.bias.copy_(values[name].flatten())  # w1 flattened row by row: the (N, E) layout the mixer reads
    return mixer


@dataclass
class MatrixGameFit:
    """What ``train_matrix_game`` learned with ``method`` ("vdn" or "qmix"): ``utilities`` ``(2, A)`` (row i is
    Q_i), ``q_tot`` ``(A, A)``, the ``greedy`` joint action (each agent's own argmax) and its true ``payoff``, the
    weighted squared error of every step (``losses``), and QMIX's trained ``qmixer`` (None for VDN)."""

    method: str
    utilities: torch.Tensor
    q_tot: torch.Tensor
    greedy: tuple[int, int]
    payoff: float
    losses: list[float] = field(default_factory=list)
    qmixer: QMixer | None = None


def train_matrix_game(payoff, method: str = "vdn", probs=None, steps: int = 300, lr: float = 0.05, seed: int = 0,
                      embed: int = 8, hyper_hidden: int = 16, init=None) -> MatrixGameFit:
    """Fit VDN (``method="vdn"``) or QMIX (``"qmix"``: a ``QMixer`` with a constant state s = [1], S = 1, ``embed`` = E)
    to a one-step game by ``steps`` Adam steps on

        L = sum_{a_0, a_1} pi(a_0) pi(a_1) (Q_tot(a_0, a_1) - r(a_0, a_1))^2,

    the squared error of the joint actions two independently exploring agents play (``probs`` ``(A,)``, both agents;
    None: uniform), each weighted by its probability. The utilities start at small random values (seeded), or at
    ``init`` ``(2, A)``. The game lasts one step, so r is the TD target: there is nothing to bootstrap. Deterministic
    for a seed; the caller's torch random state is left as it was. payoff ``(A, A)``."""
    payoff = check_payoff(payoff)
    A = payoff.shape[0]
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    p = _check_probs(probs, A)
    steps = positive_int(steps, "steps", MAX_STEPS)
    lr = positive_number(lr, "lr", LIMITS["learning_rate"])
    seed = non_negative_int(seed, "seed")
    embed = positive_int(embed, "embed", LIMITS["hidden"])
    hyper_hidden = positive_int(hyper_hidden, "hyper_hidden", LIMITS["hidden"])
    with torch_threads(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the mixer's initial weights
        generator = torch.Generator().manual_seed(seed)
        if init is None:
            start = 0.1 * torch.randn(2, A, generator=generator)  # (2, A) small, no action preferred
        else:
            start = torch.as_tensor(init, dtype=torch.float32)
            check_shape(start, (2, A), "init")
            finite(start, "init")
        utilities = torch.nn.Parameter(start.clone())  # (2, A) row i: Q_i(.)
        qmixer = QMixer(2, 1, embed, hyper_hidden) if method == "qmix" else None
        state = torch.ones(A * A, 1)  # (A*A, S) the constant state every joint action is mixed in

        def mix(q_taken: torch.Tensor) -> torch.Tensor:  # (A*A, 2) -> (A*A,)
            return vdn_mix(q_taken) if qmixer is None else qmixer(q_taken, state)

        learned = [utilities] + (list(qmixer.parameters()) if qmixer is not None else [])
        optimizer = torch.optim.Adam(learned, lr=lr, fused=True)  # fused: about 2x faster here
        weights = (p[:, None] * p[None, :]).flatten()  # (A*A,) pi(a_0) pi(a_1)
        joint = joint_actions(A)  # (A*A, 2)
        target = payoff.flatten()  # (A*A,) r: the whole TD target of a one-step game
        losses = []
        for _ in range(steps):
            q_taken = torch.stack([utilities[0, joint[:, 0]], utilities[1, joint[:, 1]]], dim=1)  # (A*A, 2)
            loss = (weights * (mix(q_taken) - target) ** 2).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        with torch.no_grad():
            q_0, q_1 = utilities[0].detach().clone(), utilities[1].detach().clone()
            q_tot = q_tot_table(q_0, q_1, mix)  # (A, A)
    greedy = greedy_joint_action(q_0, q_1)
    return MatrixGameFit(method, torch.stack([q_0, q_1]), q_tot, greedy, float(payoff[greedy]), losses, qmixer)
