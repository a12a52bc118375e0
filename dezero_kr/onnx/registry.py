"""The opsets, ``ExportError`` and the converter registry (``register``, ``mapping_table``)."""
import numpy as np


MIN_OPSET = 17      # LayerNormalization is new in opset 17
MAX_OPSET = 23      # the newest opset the tests run against ONNX Runtime 1.32
DEFAULT_OPSET = 17  # the widest reach: runtimes from 2022 on read it
INSTALL_HINT = 'pip install "dezero_kr[onnx]"'
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class ExportError(ValueError):
    """The model cannot be written as ONNX; the message says where in the graph and what to do."""


def require_onnx():
    """The ``onnx`` package (an optional extra), or ImportError naming the extra to install."""
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401  (a submodule: imported so ``onnx.numpy_helper`` works)
    except ImportError as e:
        raise ImportError(f'dezero_kr.onnx.export needs the onnx package, which is not installed: '
                          f'{INSTALL_HINT} (or pip install onnx); onnxruntime runs the file') from e
    return onnx


# =============================================================================
# The converter registry
# =============================================================================
CONVERTERS = {}  # Function class -> (ONNX ops as text, converter)


def register(function_class, onnx_ops):
    """Decorator: ``converter(b, f, ins, outs)`` writes Function class ``function_class`` as ONNX.

    ``onnx_ops`` is the text of the mapping table (``'Gemm'``, ``'MatMul + Add'``).
    The converter gets the builder ``b`` (``b.one(op, inputs, output, **attrs)`` for a node of one
    output, ``b.node(op, inputs, outputs, **attrs)``,
    ``b.const(array)``, ``b.out_dims(i)``, ...), the recorded Function ``f``, the
    ONNX names of its inputs ``ins`` and the names its outputs must get ``outs``.
    Registering a class again replaces its converter.
    """
    def decorate(converter):
        CONVERTERS[function_class] = (onnx_ops, converter)
        return converter
    return decorate


def mapping_table():
    """The Function -> ONNX mapping as Markdown table rows (``| `Add` | Add |``), sorted by
    class name: the table of docs/onnx.md is this text (a test checks it)."""
    rows = ['| dezero_kr Function | ONNX |', '|---|---|']
    for cls in sorted(CONVERTERS, key=lambda c: c.__name__.lower()):
        rows.append(f'| `{cls.__name__}` | {CONVERTERS[cls][0]} |')
    return '\n'.join(rows) + '\n'
