"""Define-and-Run: trace a step once, replay it as straight-line code (the front door).

``dezero_kr.static_graph(fn)`` is the function users call; this package holds
the tracer behind it and exports:

======================  ================================================
``static_graph``        the decorator: ``static_graph(fn)`` or ``@static_graph``
``StaticGraph``         what it returns (``.code``, ``.plot()``, ``.traces``)
``StaticGraphError``    a step that cannot be replayed (``strict=True``)
``StaticGraphWarning``  a step that runs eagerly because a replay could not be trusted
======================  ================================================

The modules, one mechanism each, in their import order: a module imports only
the ones above it (never the other way round, never another's ``_private``
names), and this front door imports the last one.

=================  ==============================================================
``shared``         the errors, the ``MISSING`` marker, the ``StepWrapper`` base
``traced_arrays``  ``Traced``, the ndarray subclass that catches value reads
``random_state``   the global RNG's state and its cheap fingerprint
``recording``      ``Recorder``, the observer that writes down one eager call
``guards``         what the step reads outside its arguments (a bytecode scan of
                   its code), the value guards, the signature of a call
``naming``         identifiers and the namespace of the generated code, compiling it
``plan``           ``Plan``: the generated code of one signature, its guards, its run
``tracing``        ``Tracer``: one traced call and its plan; ``Undo`` for ``strict``
``static_step``    ``StaticGraph`` and ``static_graph``: cache, trace, replay,
                   warnings (its docstring is the contract: what is captured,
                   guarded and refused)
=================  ==============================================================

The tracer watches the engine as a ``dezero_kr.hooks.Observer``; operations on
raw arrays outside the graph (``Optimizer.update``, gradient clipping, the
all-reduce) declare themselves with ``dezero_kr.hooks.host_operation`` and are
recorded as one call each.  Nothing in the engine names this package.
"""
from dezero_kr.define_and_run.shared import StaticGraphError, StaticGraphWarning
from dezero_kr.define_and_run.static_step import StaticGraph, static_graph

__all__ = ['static_graph', 'StaticGraph', 'StaticGraphError', 'StaticGraphWarning']
