"""What every module of the package shares: its errors, the MISSING marker, the StepWrapper base.

``StaticGraphError`` and ``StaticGraphWarning`` are public (exported by the
front door); ``Unreplayable`` is raised inside the recorder and the planner
and caught by the tracer (the reason a step runs eagerly); ``MISSING`` marks
an attribute or entry that is not there; ``StepWrapper`` is the base of
``StaticGraph``, so the guards can see through one without importing it.
"""


class StaticGraphError(RuntimeError):
    """A step that cannot be replayed (``strict=True``), or a bad use of ``static_graph``."""


class StaticGraphWarning(UserWarning):
    """A step that runs eagerly because a replay could not be trusted (the message says why)."""


class Unreplayable(Exception):
    """Raised inside the recorder/planner: the reason a step cannot be replayed."""


MISSING = object()


class StepWrapper:
    """Base of an object that stands for a step function, its ``fn`` (``StaticGraph``): the
    guards' scan of the step's code walks into ``fn``, what calling the object runs."""
    __slots__ = ()
