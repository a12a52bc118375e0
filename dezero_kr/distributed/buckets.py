"""How the parameters' gradients travel: the layout every rank checks, and the buckets
(small gradients packed per dtype, big ones reduced in place) that ``DataParallel``
and ``Communicator.allreduce_grads`` all-reduce."""
import sys


from dezero_kr import cuda
from dezero_kr.core import Variable


# Gradients of at least this many bytes are all-reduced in place, one MPI_Allreduce each, with no
# packing copy; smaller ones are packed into one buffer per dtype. Measured (2 ranks, MPICH shared
# memory, one big gradient + small ones, bench/README.md "mpi"): in place vs packed took 1.04-1.07x
# the time at 256 KB (an extra message costs more than the copy it saves), 0.97x at 512 KB,
# 0.86-0.89x at 1 MB, 0.78-0.81x at 8 MB.
INPLACE_MIN_BYTES = 512 * 1024


# =============================================================================
# Parameter layout and packing
# =============================================================================
def named_params(target):
    """``[(name, Parameter)]`` of a Layer (``named_params``) or an iterable of Parameters."""
    if hasattr(target, 'named_params'):
        return list(target.named_params())
    if hasattr(target, 'params'):
        return [(str(i), p) for i, p in enumerate(target.params())]
    try:
        params = list(target)
    except TypeError:
        raise TypeError(f'expected a Layer/Model or an iterable of Parameters, got '
                        f'{type(target).__name__}') from None
    for p in params:
        if not isinstance(p, Variable):
            raise TypeError(f'expected Parameters, got an element of type {type(p).__name__}')
    return [(str(i), p) for i, p in enumerate(params)]


def _signature(named):
    """What must agree between the ranks: ``[name, shape, dtype, array module]`` per parameter
    (shape and dtype None before a lazy layer made its data)."""
    sig = []
    for name, p in named:
        a = p.data
        if a is None:
            sig.append([name, None, None, None])
        else:
            sig.append([name, list(a.shape), a.dtype.name, cuda.get_array_module(a).__name__])
    return sig


def _describe_param(entry):
    _, shape, dtype, xp = entry
    if shape is None:
        return 'not initialised'
    return f'{tuple(shape)} {dtype}' + ('' if xp == 'numpy' else f' ({xp})')


def _differences(sig, root_sig, rank, limit=3):
    """How rank ``rank``'s signature differs from rank 0's, as phrases (at most ``limit``)."""
    mine, root = {e[0]: e for e in sig}, {e[0]: e for e in root_sig}
    out = []
    for name in list(mine) + [n for n in root if n not in mine]:
        if name not in root:
            out.append(f'rank {rank} has {name} {_describe_param(mine[name])}, rank 0 has no {name}')
        elif name not in mine:
            out.append(f'rank {rank} has no {name}, rank 0 has {name} {_describe_param(root[name])}')
        elif mine[name] != root[name]:
            out.append(f'rank {rank} has {name} {_describe_param(mine[name])}, rank 0 '
                       f'{_describe_param(root[name])}')
    if not out:
        out.append(f'rank {rank} has the parameters in another order')
    return out[:limit]


def check_same_layout(comm, named, what, flag=False):
    """Raise ValueError on every rank when the ranks' parameters (names, shapes, dtypes) differ.

    One ``allgather_json`` of the signatures (a collective: every rank must call it), with
    this rank's ``flag``; returns True when some rank's flag is set.  The message names
    each differing rank and parameter with both ranks' shapes and dtypes.
    """
    everyone = comm.allgather_json([_signature(named), bool(flag)])
    sigs = [sig for sig, _ in everyone]
    phrases = []
    for rank in range(1, len(sigs)):
        if sigs[rank] != sigs[0]:
            phrases += _differences(sigs[rank], sigs[0], rank)
    if phrases:
        raise ValueError(f'{what}: the parameters differ between ranks: {"; ".join(phrases)} '
                         f'(the same model code on every rank?)')
    return any(f for _, f in everyone)


class _Bucket:
    """Parameters of one array module and dtype: the small ones packed into one flat buffer,
    the big ones (``big``, see ``INPLACE_MIN_BYTES``) reduced in their own gradient arrays.

    ``entries``: ``(param, start, stop)`` slices of the buffer for the packed
    parameters; ``total``: the buffer length without flags.  ``buffer`` (``total``
    gradients, then one flag per parameter: the packed ones, then the big ones, then
    one that is 1 unless this rank's parameters changed: ``announce_change``)
    and its views ``head`` (the gradients), ``flags`` and ``views`` (one per
    packed parameter, in its shape) are kept between steps.
    """
    __slots__ = ('xp', 'dtype', 'entries', 'params', 'big', 'total', 'scale',
                 'buffer', 'head', 'flags', 'views', '_baseline')

    def __init__(self, xp, dtype):
        self.xp, self.dtype, self.total = xp, dtype, 0
        self.entries, self.params, self.big = [], [], []
        self.scale = None  # set by DataParallel: 1/size as a 0-d array of the dtype
        self.buffer = self.head = self.flags = self.views = self._baseline = None

    def add(self, p):
        self.entries.append((p, self.total, self.total + p.data.size))
        self.params.append(p)
        self.total += p.data.size

    def writable_buffer(self):
        """The buffer, reused unless an array handed out by the last reduce is still held.

        The reduced gradients are views of the buffer.  After ``cleargrads()``
        nothing outside this bucket refers to them or to the buffer, and the
        buffer is reused (no allocation; warm in cache).  If anything still
        does -- a gradient the caller kept, a slice of one -- writing into the
        buffer would change that array behind its holder's back, so a new one
        is allocated.  (Reference counts: CPython.)
        """
        if self.buffer is None or _refcounts(self.buffer, self.views) != self._baseline:
            buf = self.xp.empty(self.total + len(self.entries) + len(self.big) + 1, dtype=self.dtype)
            self.head, self.flags = buf[:self.total], buf[self.total:]
            self.views = tuple(buf[start:stop].reshape(p.data.shape)
                               for p, start, stop in self.entries)
            self.buffer = buf
            del buf
            self._baseline = _refcounts(self.buffer, self.views)
        return self.buffer


def _refcounts(buffer, views):
    # Counted the same way at allocation and at each check, so the temporaries
    # of this function cancel out.
    return [sys.getrefcount(buffer)] + [sys.getrefcount(v) for v in views]


def make_buckets(params, inplace_min_bytes=None):
    """Group initialised parameters by (array module, dtype), in ``params`` order.

    With ``inplace_min_bytes``, parameters of at least that many bytes go to
    their bucket's ``big`` list instead of its buffer.
    """
    buckets = {}
    for p in params:
        xp = cuda.get_array_module(p.data)
        key = (xp.__name__, p.data.dtype)
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = _Bucket(xp, p.data.dtype)
        if inplace_min_bytes is not None and p.data.nbytes >= inplace_min_bytes:
            bucket.big.append(p)
        else:
            bucket.add(p)
    return list(buckets.values())


def layout_key(params):
    """What the plan depends on, cheap to build and compare at every step: per parameter its
    id, array type, shape and dtype (about 0.2 us a parameter)."""
    return tuple([(id(p), None, None, None) if (a := p.data) is None
                  else (id(p), type(a), a.shape, a.dtype) for p in params])


def announce_change(comm, bucket, cuda_aware):
    """Send the message the other ranks expect first (``bucket``'s, of the plan they agreed
    on) with its last flag 0: they then check the parameters with this rank instead of
    reducing (``DataParallel._reduce_bucket`` returns False)."""
    buf = bucket.writable_buffer()
    buf.fill(0)
    comm.allreduce_sum(buf, cuda_aware=cuda_aware)


def shape_error(shape, grad_shape):
    """The ValueError for a parameter whose gradient has another shape than the parameter."""
    return ValueError(f'DataParallel.allreduce_grads: a parameter of shape {shape} has a '
                      f'gradient of shape {grad_shape}')


def reducible_in_place(a, dtype, taken):
    """True when the gradient array ``a`` may be overwritten by its own all-reduce: an array of
    its own (not a view), writable, C-contiguous, of the parameter's ``dtype``, and not
    already the gradient of another parameter in this reduce (``taken``: their ids)."""
    return (a.base is None and a.flags.c_contiguous and getattr(a.flags, 'writeable', True)
            and a.dtype == dtype and id(a) not in taken)
