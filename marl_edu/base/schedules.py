"""Linear schedules: an exploration rate, an entropy coefficient or a noise level that moves from a start value to an
end value over the first part of training, then stays at the end value.

    value(done) = start + (end - start) * done / duration    while done < duration,
                = end                                           from then on.

MADDPG's epsilon, COMA's epsilon and entropy coefficient and continuous MADDPG's exploration noise all follow it;
``done`` and ``duration`` are counted in episodes, or in fractions of training (the noise).
"""

from __future__ import annotations

from marl_edu.base.validate import finite_number, non_negative_number


def linear(start: float, end: float, done: float, duration: float) -> float:
    """The value after ``done`` of ``duration`` (any unit, both >= 0): ``start`` at 0, ``end`` from ``duration`` on,
    a straight line between. A ``duration`` of 0 means no decay phase: ``end`` from the start."""
    start, end = finite_number(start, "start"), finite_number(end, "end")
    done = non_negative_number(done, "done")
    duration = non_negative_number(duration, "duration")
    if done >= duration:  # the decay is over (or there was none)
        return end
    return start + (end - start) * (done / duration)
