"""A learner's slip made from a correct answer: the tests of the capstone checks use it for slips no check has a
variant of."""

import inspect


def with_source_changed(function, old: str, new: str):
    """``function`` (an answer from marl_edu.course.solutions) rebuilt with one piece of its source replaced, in a copy of its
    module's namespace; ``old`` must occur in the source, so a renamed line fails the test instead of passing it."""
    source = inspect.getsource(function)
    assert old in source, f"{old!r} is not in {function.__name__}'s source"
    namespace = dict(function.__globals__)
    exec(source.replace(old, new), namespace)
    return namespace[function.__name__]
