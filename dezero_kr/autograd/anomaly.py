"""Anomaly mode: ``detect_anomaly()`` finds the first op that makes NaN/inf, and
the first array changed in place between an op's forward and its backward.

While the block runs, an ``_AnomalyDetector`` observes every Function call
(``core.observing``).  For each op it records where the user's code created it
and a fingerprint of the arrays its backward will read (the array object and a
CRC-32 of its bytes); at backward it compares the fingerprints and, with
``check_nan``, checks every forward output and backward gradient for NaN/inf.
Outside the block nothing is recorded and nothing is checked.
"""
import contextlib
import sys
import weakref
import zlib

import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Config, Function, Variable, observing
from dezero_kr.errors import describe, hook_name
from dezero_kr.frames import user_frames
from dezero_kr.hooks import Observer


class AnomalyError(RuntimeError):
    """Raised inside ``detect_anomaly()``: an op's forward or backward made NaN/inf, a
    hook returned a NaN/inf gradient, an array an op's backward reads was changed
    after its forward, or one Function instance was called twice on a recorded graph.

    The message names the Function (or hook), the shapes involved and the user's
    lines that created the op.  A subclass of RuntimeError.
    """


def _finite(a):
    if a.dtype.kind not in 'fc':
        return True
    return bool(cuda.get_array_module(a).isfinite(a).all())


def _bad_values(a):
    xp = cuda.get_array_module(a)
    kinds = [name for name, test in (('nan', xp.isnan), ('inf', xp.isinf)) if bool(test(a).any())]
    return ' and '.join(kinds)


def _shapes(vs):
    return '[' + ', '.join(str(v.data.shape) for v in vs) + ']'


# Where each op was created, recorded only under detect_anomaly().  Keyed weakly
# by the op's first output Variable (a Function has no weakref slot, and a slot
# on every Function would cost every graph 16 bytes per node), so an entry goes
# away with its graph.
_creation_sites = weakref.WeakKeyDictionary()


def _where(f, first_output=None):
    if first_output is None:
        outputs = getattr(f, 'outputs', None)
        first_output = outputs[0]() if outputs else None
    summary = _creation_sites.get(first_output) if first_output is not None else None
    if summary is None:
        return (f'{type(f).__name__} was created outside detect_anomaly(), so where is not '
                f'recorded.')
    return f'{type(f).__name__} was created at (most recent call last):\n' + ''.join(summary.format())


def _enclosing_rule():
    """The Function whose ``backward``/``jvp`` is running, with that method's name, or (None, None).

    The ops a backward rule runs are Functions too; a NaN they make is the
    rule's NaN, so the report names the rule's Function, not the helper op.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ('backward', 'jvp'):
            owner = frame.f_locals.get('self')
            if isinstance(owner, Function):
                return owner, frame.f_code.co_name
        frame = frame.f_back
    return None, None


# What each recorded op saved for its backward, under detect_anomaly(): for every
# input and output Variable its array object and a CRC-32 of its bytes (or only
# the shape, for ops whose backward reads no values).  Keyed weakly by the op's
# first output, like _creation_sites.  The arrays are held, not the Variables,
# so an entry never keeps its own key alive.
_saved_fingerprints = weakref.WeakKeyDictionary()


def _fingerprint(a):
    if a is None:
        return None, None
    if a.dtype.kind not in 'biufc':
        return a, None  # object/str arrays: identity only
    return a, zlib.crc32(np.ascontiguousarray(cuda.as_numpy(a)))


def _changed(var_data, print_):
    """How ``var_data`` differs from its fingerprint ``print_``, or None if it does not."""
    saved, crc = print_
    if var_data is not saved:
        return 'its .data was replaced by another array'
    if crc is not None and _fingerprint(saved)[1] != crc:
        return 'its values were changed in place'
    return None


class _AnomalyDetector(Observer):
    __slots__ = ('check_nan', 'recorded')
    reports_grad_cycles = True  # backprop warns about a graph left in a leaf's .grad (core)

    def __init__(self, check_nan):
        self.check_nan = check_nan
        # id(Function) -> weak ref to its first output, to catch a second call of
        # one instance (Functions have no weakref slot, so the output stands in).
        self.recorded = {}

    def on_forward(self, f, inputs, outputs):
        first = outputs[0]
        _creation_sites[first] = user_frames(3)
        if Config.enable_backprop:  # recorded: a backward may run later
            self._check_reuse(f, first)
            values = f.backward_reads_values
            _saved_fingerprints[first] = (
                tuple(_fingerprint(x.data) if values else x.data.shape for x in inputs),
                tuple(_fingerprint(y.data) for y in outputs) if values else None)
        if not self.check_nan:
            return
        for i, y in enumerate(outputs):
            if not _finite(y.data):
                raise AnomalyError(_forward_report(f, inputs, outputs, i))

    def _check_reuse(self, f, first):
        key = id(f)
        ref = self.recorded.get(key)
        earlier = ref() if ref is not None else None
        if earlier is not None and earlier is not first and earlier.creator is f:
            raise AnomalyError(f'detect_anomaly: this {type(f).__name__} instance was called a '
                               f'second time while the graph was recorded; the second call '
                               f'overwrote the inputs and outputs the first call\'s backward '
                               f'needs. Create a new instance per call ({type(f).__name__}()(x)).'
                               f'\n' + _where(f, earlier))
        recorded = self.recorded

        def forget(r, key=key):
            if recorded.get(key) is r:
                del recorded[key]

        recorded[key] = weakref.ref(first, forget)

    def on_backward(self, f, gys, gxs):
        self._check_saved(f)
        if not self.check_nan:
            return
        for i, gx in enumerate(gxs):
            if gx is not None:
                data = gx.data if isinstance(gx, Variable) else gx
                if not _finite(data):
                    raise AnomalyError(_backward_report(f, gys, i, data))

    def on_hook(self, var, hook, grad):
        if self.check_nan and not _finite(grad.data):
            raise AnomalyError(f'detect_anomaly: the hook {hook_name(hook)} on '
                               f'{describe(var)} returned a gradient with '
                               f'{_bad_values(grad.data)}.')

    def _check_saved(self, f):
        first = f.outputs[0]()
        saved = _saved_fingerprints.get(first) if first is not None else None
        if saved is None:  # created outside detect_anomaly(): nothing to compare
            return
        ins, outs = saved
        for i, (x, print_) in enumerate(zip(f.inputs, ins)):
            if outs is None:  # backward reads only shapes
                how = None if x.data is not None and x.data.shape == print_ else \
                    'its shape was changed'
            else:
                how = _changed(x.data, print_)
            if how is not None:
                raise AnomalyError(_inplace_report(f, f'input #{i}', x, how))
        for i, (ref, print_) in enumerate(zip(f.outputs, outs or ())):
            y = ref()
            how = None if y is None else _changed(y.data, print_)
            if how is not None:
                raise AnomalyError(_inplace_report(f, f'output #{i}', y, how))


def _inplace_report(f, which, var, how):
    name = type(f).__name__
    return (f'detect_anomaly: {which} of {name} ({describe(var)}) was modified after the '
            f'forward pass that saved it ({how}), so {name}.backward would compute the gradient '
            f'at the new values: a wrong gradient. This is PyTorch\'s "a variable needed for '
            f'gradient computation has been modified by an inplace operation". Backward reads the '
            f'Variables\' .data when it runs, so change (or replace) an array only after '
            f'backward(), or run the forward pass again after changing it.\n'
            + _where(f))


def _forward_report(f, inputs, outputs, i):
    y = outputs[i]
    bad = _bad_values(y.data)
    owner, rule = _enclosing_rule()
    if owner is not None:
        head = (f'detect_anomaly: {type(owner).__name__}.{rule} produced {bad} (in its '
                f'{type(f).__name__} step, output shape {y.shape}); {type(owner).__name__} had '
                f'input shapes {_shapes(owner.inputs)}.')
        return head + '\n' + _where(owner)
    head = (f'detect_anomaly: {type(f).__name__}.forward produced {bad} in output #{i} '
            f'(shape {y.shape}) from input shapes {_shapes(inputs)}.')
    if not all(_finite(x.data) for x in inputs):
        head += ' Its inputs already held NaN/inf: they came from outside the recorded ops.'
    return head + '\n' + _where(f, outputs[0])


def _backward_report(f, gys, i, data):
    head = (f'detect_anomaly: {type(f).__name__}.backward produced {_bad_values(data)} in the '
            f'gradient of input #{i} (input shapes {_shapes(f.inputs)}).')
    if not all(_finite(g.data) for g in gys):
        head += ' The gradient arriving at its output was already non-finite.'
    return head + '\n' + _where(f)


@contextlib.contextmanager
def detect_anomaly(check_nan=True):
    """Context manager: inside the block, stop at the first op that goes wrong.

    Records where each op is created and what its backward will read; raises
    ``AnomalyError`` (a RuntimeError) at

    - with ``check_nan``: the first op whose forward output or backward gradient
      holds NaN or inf (complex and float arrays are checked; integer ones
      cannot hold either), and a hook that returns such a gradient;
    - an input or output array of an op that was changed in place, or replaced,
      between its forward and its backward (the gradient would be computed at
      the new values);
    - a second call of one Function instance while the graph is recorded.

    The error names the Function, its input shapes and the user's lines that
    created it (frames inside dezero_kr skipped).  A NaN made inside a backward
    rule is reported as that rule's.  Applies to the current thread only.  Slow
    (every op is fingerprinted and checked): for debugging only.  Outside the
    block nothing is recorded.
    """
    with observing(_AnomalyDetector(check_nan)):
        yield
