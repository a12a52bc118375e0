"""ONNX export: a model's recorded graph as an ``.onnx`` file that ONNX Runtime and Netron read.

    import dezero_kr.onnx
    dezero_kr.onnx.export(model, x, 'model.onnx')   # pip install "dezero_kr[onnx]"

How it works, top to bottom:

1. ``export`` runs ``model(*inputs)`` once under ``test_mode()`` with the graph
   recorded, and walks it from the outputs with the walk of ``plot_dot_graph``
   (``dezero_kr.graph``).  Sorted by ``generation`` the walked Functions are in
   topological order.
2. With ``dynamic_batch=True`` it runs the model twice more, on the example
   batch with its rows repeated to N + 1 and to 2N + 2 rows.  The three graphs
   must be the same Functions in the same order, with the same indices and
   constants (else the forward depends on something the export cannot see, and
   it says so).  Every dimension must be ``k * batch + c`` with the same k and
   c in all three runs: one that is not (``x.shape[0] // 2``) is refused, and
   one that differs is written batch-agnostic (``-1`` in a ``Reshape``, or
   computed from ``Shape(input)`` at run time).
3. Each Function becomes ONNX nodes through the converter registered for its
   class (``registry.CONVERTERS``; ``register`` adds one, ``mapping_table`` lists them).
   Parameters become initializers named by their paths (``l1/W``,
   ``h0/attn/c_attn/W``: the keys of ``save_weights``), other constants
   initializers named ``const``, ``const_1``, ...  Input and output names are
   kept as given; a weight or helper value whose name they take gets ``_1``.
4. The model is written atomically (``fileio.atomic_write``): an error
   anywhere leaves no file, and an old file at ``path`` untouched.

The ``onnx`` package is imported only inside ``export`` (``import dezero_kr``
never imports it); without it ``export`` raises ImportError naming the extra.

The package's modules, each importing only those before it: ``registry``
(opsets, ``ExportError``, ``register``, ``mapping_table``), ``tracing`` (the
checks of ``export``'s arguments, the recorded runs, the batch dimensions),
``builder`` (ONNX nodes from the walked Functions), ``converters`` (one per
Function class; importing it registers them), ``exporter`` (``export``) and
``drawing`` (``to_dot``).  This front door exports the names below.
"""
from dezero_kr.onnx import converters  # noqa: F401 (registers the package's converters)
from dezero_kr.onnx.drawing import to_dot
from dezero_kr.onnx.exporter import export
from dezero_kr.onnx.registry import (DEFAULT_OPSET, INSTALL_HINT, MAX_OPSET, MIN_OPSET,  # noqa: F401
                                     ExportError, mapping_table, register)

__all__ = ['export', 'register', 'mapping_table', 'to_dot', 'ExportError', 'MIN_OPSET', 'MAX_OPSET',
           'DEFAULT_OPSET', 'INSTALL_HINT']
