"""The modes of the current thread: ``Config`` and the context managers that switch it.

``Config.enable_backprop`` (record the graph; False inside ``no_grad``) and
``Config.train`` (dropout and batch norm train; False inside ``test_mode``)
are per thread.  The engine reads them once per operation, so the count of
threads with recording off (``backprop_off``) lets ``Function.__call__``
skip the thread-local read while no thread has turned it off.  ``state_lock``
guards the state that threads share (a leaf's ``.grad``, BatchNorm's running
statistics).  This module imports nothing of the engine's.
"""
import contextlib
import threading

from dezero_kr.errors import unknown_switch

__all__ = ['Config', 'using_config', 'no_grad', 'test_mode', 'state_lock', 'set_enable_backprop']


# =============================================================================
# Config
# =============================================================================
class _Modes(threading.local):
    """The switches of the current thread (``Config`` is the one instance).

    ``enable_backprop``: record the graph (False inside ``no_grad``).
    ``train``: training behaviour of dropout / batch norm (False inside ``test_mode``).

    Each thread has its own values and a new thread starts from the defaults
    (both True), as PyTorch's grad mode: ``no_grad`` in one thread never stops
    another thread from recording.  DeZero code keeps working unchanged:
    ``Config.enable_backprop`` reads, and ``Config.enable_backprop = False``
    (the book's step 18) sets, the current thread's switch.  Any other name
    raises ``ConfigError`` (a typo would otherwise leave the real switch on).
    An instance of a ``threading.local`` subclass rather than a class with
    properties: backward rules read ``Config.enable_backprop`` once per
    operation, and a property would cost several times a thread-local read.
    """
    switches = ('enable_backprop', 'train')

    def __init__(self):  # runs once in every thread that touches Config
        self.enable_backprop = True
        self.train = True

    def __setattr__(self, name, value):
        if name not in _Modes.switches:
            raise unknown_switch('Config', name, _Modes.switches)
        if name == 'enable_backprop':
            set_enable_backprop(self, value)
        else:
            threading.local.__setattr__(self, name, value)

    def __repr__(self):
        return (f'Config(enable_backprop={self.enable_backprop}, train={self.train}) '
                f'(this thread)')


# Speed trick: Function.__call__ tests this global count (threads with enable_backprop off)
# before the thread-local switch: saves ~50 ns per op, 5 % of core_ops forward (measured).
# It reaches the thread-local switch only when the count is non-zero: a thread that turned
# its switch off has counted itself before, so a zero proves the current thread records.
# A thread is counted by the token its Config holds while the switch is off, so a thread
# that ends with the switch off is uncounted when its thread-locals are freed.
backprop_off = 0
backprop_off_lock = threading.RLock()  # RLock: a token may be freed while it is held
_set_local = threading.local.__setattr__


def _count_off(delta):
    global backprop_off
    with backprop_off_lock:  # += on a global is not atomic across threads
        backprop_off += delta


class _OffToken:
    """Held by a thread's Config while its enable_backprop is off (see backprop_off)."""
    __slots__ = ()

    def __init__(self):
        _count_off(1)

    def __del__(self):
        try:
            _count_off(-1)
        except Exception:  # interpreter shutdown: the module globals may be gone
            pass


def set_enable_backprop(modes, value):
    """Set ``modes.enable_backprop`` (``Config``'s switch) to ``value`` and keep the count of
    threads with the switch off (``backprop_off``) right; what ``Config.enable_backprop = v``
    does, callable where the ``setattr`` is too slow (once per backprop pass)."""
    token = modes.__dict__.get('_off_token')
    if not value:
        if token is None:
            _set_local(modes, '_off_token', _OffToken())  # counted before the switch is off
        _set_local(modes, 'enable_backprop', value)
    else:
        _set_local(modes, 'enable_backprop', value)
        if token is not None:
            del token
            _set_local(modes, '_off_token', None)  # the token's __del__ uncounts this thread


Config = _Modes()


@contextlib.contextmanager
def using_config(name, value):
    """Set ``Config.<name>`` to ``value`` inside the block; restore it after, even on error.

    Acts on the current thread only (see ``Config``).  ``name`` must be one of
    ``'enable_backprop'``, ``'train'``; anything else raises ``ConfigError``
    (an AttributeError, as DeZero, and a ValueError) listing them.
    """
    if name not in _Modes.switches:
        raise unknown_switch('using_config', name, _Modes.switches)
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    """Context manager: build no graph in this thread (nothing is recorded for backprop)."""
    return using_config('enable_backprop', False)


def test_mode():
    """Context manager: inference behaviour for dropout and batch norm in this thread."""
    return using_config('train', False)


# Threads: state shared between threads is read, updated and written back under this one
# lock, as PyTorch's AccumulateGrad: a leaf's .grad (here) and BatchNorm's running statistics.
# Cost: one uncontended acquire per leaf per backward pass (well under 1 us), nothing per op.
# An RLock: under create_graph the sum is itself an operation, whose observers run inside.
state_lock = threading.RLock()
