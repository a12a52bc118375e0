"""``cupy.random`` of the stand-in: NumPy's legacy generator behind device arrays.

``cupy.random.seed(s)`` followed by the same calls gives the same numbers as
``numpy.random.seed(s)`` on the CPU, so a training run with dropout can be
compared number for number (real CuPy draws other numbers)."""
import numpy as _np

_state = _np.random.RandomState()


def seed(seed=None):
    _state.seed(seed)


def _device(name):
    def draw(*args, **kwargs):
        from cupy import _unwrap, ndarray
        dtype = kwargs.pop('dtype', None)
        out = getattr(_state, name)(*[_unwrap(a) for a in args],
                                   **{k: _unwrap(v) for k, v in kwargs.items()})
        out = _np.asarray(out)
        if dtype is not None:
            out = out.astype(dtype)
        return ndarray(out)
    draw.__name__ = name
    return draw


for _name in ('rand', 'randn', 'random_sample', 'random', 'uniform', 'normal', 'randint',
              'choice', 'permutation', 'standard_normal', 'binomial'):
    globals()[_name] = _device(_name if _name != 'random' else 'random_sample')


def shuffle(a):
    from cupy import ndarray
    if type(a) is not ndarray:
        raise TypeError('cupy.random.shuffle needs a device array')
    _state.shuffle(a._a)
