"""Define-and-Run: trace a step once, replay it as straight-line code (the front door).

``dezero_kr.static_graph(fn)`` is the function users call; this package holds
the tracer behind it (``tracer``: recording, planning, code generation and
replay, one module for now) and exports:

======================  ================================================
``static_graph``        the decorator: ``static_graph(fn)`` or ``@static_graph``
``StaticGraph``         what it returns (``.code``, ``.plot()``, ``.traces``)
``StaticGraphError``    a step that cannot be replayed (``strict=True``)
``StaticGraphWarning``  a step that runs eagerly because a replay could not be trusted
======================  ================================================

The tracer watches the engine as a ``dezero_kr.hooks.Observer``; operations on
raw arrays outside the graph (``Optimizer.update``, gradient clipping, the
all-reduce) declare themselves with ``dezero_kr.hooks.host_operation`` and are
recorded as one call each.  Nothing in the engine names this package.
"""
from dezero_kr.define_and_run.tracer import StaticGraph, StaticGraphError, StaticGraphWarning, static_graph

__all__ = ['static_graph', 'StaticGraph', 'StaticGraphError', 'StaticGraphWarning']
