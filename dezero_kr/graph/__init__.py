"""Drawing the computation graph: DeZero's ``get_dot_graph`` / ``plot_dot_graph`` and ``plot_backward``.

The public home of the graph pictures.  The DOT text, the walk and the
renderer live in ``dezero_kr.graph.dot`` (see its docstring for what differs from
DeZero and which program draws); the backward-pass viewer ``plot_backward``
lives in ``dezero_kr.graph.backprop_view``.  Both of those import ``dot``, and this
module imports both, so ``from dezero_kr.graph import plot_backward`` works
with no import cycle and no import on first use.
"""
from dezero_kr.graph.backprop_view import plot_backward  # noqa: F401 (documented in backprop_view)
from dezero_kr.graph.dot import (RENDERER_ENV, GraphRenderError, RenderedGraph, RendererNotFoundError,
                           find_graphviz_pure, find_renderer, get_dot_graph, plot_dot_graph,
                           render_dot)

# plot_backward is importable from here but documented (and listed in __all__) in backprop_view.
__all__ = ['get_dot_graph', 'plot_dot_graph', 'render_dot', 'find_renderer', 'find_graphviz_pure',
           'RenderedGraph', 'GraphRenderError', 'RendererNotFoundError', 'RENDERER_ENV']
