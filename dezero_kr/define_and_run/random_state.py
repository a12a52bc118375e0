"""The global NumPy RNG's state, and a cheap fingerprint of it (read once per recorded operation)."""
import ctypes

import numpy as np


def rng_state():
    """The global NumPy RNG's full state (``np.random.get_state()``)."""
    return np.random.get_state()


def same_rng(a, b):
    """Two ``rng_state()`` results are the same state (key words, position, whether a Gaussian is cached)."""
    return a[2] == b[2] and a[3] == b[3] and np.array_equal(a[1], b[1])


_MT_STATE_BYTES = 624 * 4 + 4  # MT19937's key words and position: the whole state, in C


def rng_fingerprint():
    """The bytes of the global RNG's state, read in place (``get_state`` copies it into a tuple of
    Python objects: ~50x slower, and tracing looks at it once per operation)."""
    bitgen = np.random.mtrand._rand._bit_generator
    return ctypes.string_at(bitgen.ctypes.state_address, _MT_STATE_BYTES)
