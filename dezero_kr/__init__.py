"""dezero_kr: a readable define-by-run autodiff library on NumPy (DeZero-compatible).

``import dezero_kr`` gives the same names as ``import dezero``.  Heavy optional
packages (matplotlib, Pillow, graphviz, CuPy) are never imported here.
"""
import importlib as _importlib

__version__ = '0.1.0'

is_simple_core = False  # DeZero's switch; steps 28/29 read it.  There is one core.

from dezero_kr.core import (  # noqa: E402,F401
    Config, Constant, Function, Parameter, Variable, as_array, as_variable, no_grad, setup_variable,
    test_mode, using_config)
from dezero_kr import core, core_simple, cuda, functions, utils  # noqa: E402,F401
from dezero_kr import datasets, dataloaders, transforms  # noqa: E402,F401
from dezero_kr import autograd, grad_clip  # noqa: E402,F401
from dezero_kr import functions_conv, layers, models, optimizers  # noqa: E402,F401
from dezero_kr.layers import Layer  # noqa: E402,F401
from dezero_kr.models import Model  # noqa: E402,F401
from dezero_kr.datasets import Dataset  # noqa: E402,F401
from dezero_kr.dataloaders import DataLoader, SeqDataLoader  # noqa: E402,F401

setup_variable()

# The tools beyond DeZero load on first use (PEP 562), so ``import dezero_kr`` does not pay for
# them (the tracer alone took 26 of 200 ms) and the engine never imports a tool.
_TOOLS = {'static_graph': ('dezero_kr.define_and_run', 'static_graph'),
          'onnx': ('dezero_kr.onnx', None)}


def __getattr__(name):
    if name not in _TOOLS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    module_name, attr = _TOOLS[name]
    module = _importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_TOOLS))


# ``from dezero_kr import *`` gives what it gave before the tools became lazy: the names above
# and the two tools (a star import loads them).
__all__ = sorted([n for n in globals() if not n.startswith('_')] + list(_TOOLS))
