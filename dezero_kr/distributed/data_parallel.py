"""``DataParallel`` (gradient all-reduce in buckets) and ``evaluate`` (see ``dezero_kr.distributed``)."""
import time
import warnings


from dezero_kr import cuda
from dezero_kr.core import Variable, no_grad, test_mode
from dezero_kr.hooks import host_operation
from dezero_kr.distributed.buckets import INPLACE_MIN_BYTES, buckets, reducible_in_place, shape_error
from dezero_kr.distributed.communicator import Communicator

# =============================================================================
# DataParallel
# =============================================================================
class DataParallel:
    """Wrap an optimizer so that ``update()`` averages gradients over the ranks first.

    ``DataParallel(optimizer, comm)``: ``optimizer`` is a set-up dezero_kr
    optimizer (or call ``setup(model)`` on the wrapper).  Every other attribute
    (``t``, ``lr``, ``add_hook``, ``state_dict``, ``save`` ...) is the wrapped
    optimizer's, read and written through.  See the module docstring for the
    order broadcast -> reduce -> hooks -> update and the ``grad is None`` rule.

    Attributes:
        comm: the ``Communicator``.
        cuda_aware: hand CuPy buffers to MPI directly (default: copy via the host).
        skipped_steps: updates skipped because parameters had just been
            initialised and were broadcast (see the module docstring).
        last_reduce_seconds: wall time of the last ``allreduce_grads`` (scale
            and pack, the ``MPI_Allreduce`` calls, unpack), for measuring.
    """
    _OWN = frozenset(('optimizer', 'comm', 'cuda_aware', 'skipped_steps', 'last_reduce_seconds',
                      '_synced', '_plan'))

    def __init__(self, optimizer, comm, cuda_aware=False):
        if not (callable(getattr(optimizer, 'update', None)) and hasattr(optimizer, 'target')):
            raise TypeError(f'DataParallel: optimizer must be a dezero_kr optimizer, got '
                            f'{type(optimizer).__name__}')
        if isinstance(optimizer, DataParallel):
            raise TypeError('DataParallel: the optimizer is already wrapped in DataParallel')
        if not isinstance(comm, Communicator):
            raise TypeError(f'DataParallel: comm must be what dist.init() returns, got '
                            f'{type(comm).__name__}')
        object.__setattr__(self, 'optimizer', optimizer)
        object.__setattr__(self, 'comm', comm)
        object.__setattr__(self, 'cuda_aware', cuda_aware)
        object.__setattr__(self, 'skipped_steps', 0)
        object.__setattr__(self, 'last_reduce_seconds', 0.0)
        object.__setattr__(self, '_synced', frozenset())  # params broadcast with data
        object.__setattr__(self, '_plan', None)  # (key, buckets) of the last reduce
        if optimizer.target is not None:
            self._broadcast()

    def __getattr__(self, name):  # only called for names not found on the wrapper
        return getattr(self.optimizer, name)

    def __setattr__(self, name, value):
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.optimizer, name, value)  # e.g. opt.lr = 0.1 reaches the optimizer

    def __repr__(self):
        return f'DataParallel({type(self.optimizer).__name__}, {self.comm!r})'

    def setup(self, target):
        """``optimizer.setup(target)`` and broadcast its parameters from rank 0; returns self."""
        self.optimizer.setup(target)
        self._broadcast()
        return self

    def _params(self, what):
        target = self.optimizer.target
        if target is None:
            raise RuntimeError(f'DataParallel.{what}: call setup(model) first')
        return list(target.params())

    def _broadcast(self):
        self.comm.bcast_params(self.optimizer.target)
        self._synced = frozenset(id(p) for p in self._params('setup') if p.data is not None)

    @host_operation  # static_graph re-runs the whole update (see dezero_kr.hooks)
    def update(self):
        """Broadcast new parameters (and skip) or all-reduce the gradients; then the
        optimizer's hooks and update (the same on every rank)."""
        params = self._params('update')
        if self.comm.size > 1 and any(p.data is not None and id(p) not in self._synced
                                      for p in params):
            self._broadcast()
            self.skipped_steps += 1
            if self.comm.is_root:
                warnings.warn('DataParallel.update: parameters were initialised by the first '
                              'forward pass with different values on each rank; they were '
                              'broadcast from rank 0 and this step was skipped (as ChainerMN '
                              'does). Pass in_size to the layers or run the model once before '
                              'DataParallel(...) to keep the step.', RuntimeWarning, stacklevel=2)
            return
        self.allreduce_grads(params)
        self.optimizer.update()

    def allreduce_grads(self, params=None):
        """Replace every gradient by its mean over the ranks (see the module docstring).

        ``grad = (1/size) sum_r grad_r`` in the parameter's dtype, with a missing
        gradient counting as zeros; a gradient missing on every rank stays None.
        A gradient of at least ``INPLACE_MIN_BYTES`` is overwritten with the mean
        in its own array (a reference kept to it sees the mean); smaller ones
        become views of a shared buffer (a kept reference keeps the local values).
        Raises ValueError for a gradient whose shape is not its parameter's,
        before any gradient is changed.
        """
        if self.comm.size == 1:
            return
        start = time.perf_counter()
        if params is None:
            params = self._params('allreduce_grads')
        buckets = self.buckets(params)
        for p in params:  # every shape first: an error must leave every gradient as it was
            g = p.grad
            if g is not None and g.data.shape != p.data.shape:
                raise shape_error(p.data.shape, g.data.shape)
        for bucket in buckets:
            self._reduce_bucket(bucket)
        self.last_reduce_seconds = time.perf_counter() - start

    def buckets(self, params):
        key = tuple(map(id, params))
        plan = self._plan
        if plan is None or plan[0] != key:
            missing = [p.name for p in params if p.data is None]
            if missing:
                raise RuntimeError(f'DataParallel.allreduce_grads: parameters {missing} have no '
                                   f'data yet; run a forward pass first')
            plan = (key, buckets(params, INPLACE_MIN_BYTES))
            for bucket in plan[1]:
                # A 0-d array of the bucket's dtype, not a Python float: the same products, and
                # NumPy skips converting the scalar at every multiply (0.50 -> 0.28 us each).
                bucket.scale = bucket.xp.asarray(1.0 / self.comm.size, dtype=bucket.dtype)
            self._plan = plan
        return plan[1]

    def _reduce_bucket(self, bucket):
        """One ``MPI_Allreduce`` of the packed gradients and all flags, then one per big
        gradient that some rank has (the flags tell every rank which those are)."""
        buf = bucket.writable_buffer()
        grads = self._pack(bucket)
        bigs = [p.grad for p in bucket.big]
        sources = self._scale_big(bucket, bigs) if bigs else ()
        self.comm.allreduce_sum(buf, cuda_aware=self.cuda_aware)
        counts = bucket.flags.tolist()
        for p, g, view, count in zip(bucket.params, grads, bucket.views, counts):
            if count == 0:
                continue  # no rank had a gradient: it stays None, as in a single process
            if g is None:
                p.grad = Variable(view)
            else:
                g.data = view
        for p, g, a, count in zip(bucket.big, bigs, sources, counts[len(grads):]):
            if count == 0:
                continue  # None on every rank (every rank knows it): no message
            if a is None:  # this rank has none: it adds zeros
                a = bucket.xp.zeros(p.data.shape, dtype=bucket.dtype)
            self.comm.allreduce_sum(a, cuda_aware=self.cuda_aware)
            if g is None:
                p.grad = Variable(a)
            elif g.data is not a:
                g.data = a

    def _pack(self, bucket):
        """Copy the small gradients, scaled by 1/size, into the bucket's buffer (zeros and
        flag 0 for a missing one); returns them (Variables or None)."""
        grads = [p.grad for p in bucket.params]
        flags, scale, multiply = bucket.flags, bucket.scale, bucket.xp.multiply
        flags.fill(1)  # 1: this rank has a gradient for the parameter
        for i, (g, view) in enumerate(zip(grads, bucket.views)):
            if g is None:
                view.fill(0)
                flags[i] = 0
                continue
            a = g.data
            # Copy and scale by 1/size in one pass over the memory (a copy then an
            # in-place scale took two: measured 1.8x -> see bench/README.md "mpi").
            multiply(a, scale, out=view)
        return grads

    def _scale_big(self, bucket, bigs):
        """Scale the big gradients by 1/size; returns the array each is to be reduced in (None
        where this rank has none, flag 0).  That is the gradient array itself when it may be
        overwritten (``reducible_in_place``), else a new array of the parameter's dtype."""
        sources, in_place, taken = [], [], set()
        flags = bucket.flags[len(bucket.params):]
        for i, g in enumerate(bigs):
            a = None if g is None else g.data
            if a is None:
                flags[i] = 0
            elif reducible_in_place(a, bucket.dtype, taken):
                in_place.append(a)
                taken.add(id(a))
            else:
                a = bucket.xp.multiply(a, bucket.scale, out=bucket.xp.empty(a.shape, bucket.dtype))
            sources.append(a)
        # Scaled last: an array shared by two parameters is copied (scaled) for the second
        # from its unscaled values before the first scales it in place.
        for a in in_place:
            bucket.xp.multiply(a, bucket.scale, out=a)
        return sources


# =============================================================================
# Evaluation
# =============================================================================
def evaluate(comm, fn, loader):
    """The mean of a per-batch metric over every sample of every rank.

    ``fn(x, t)`` returns the batch's mean metric (a Variable, array or number,
    e.g. ``F.accuracy(model(x), t)``); it runs under ``no_grad()`` and
    ``test_mode()``.  Each batch counts with its size, so the result is the
    metric of the union of all ranks' data; it is the same float on every rank.
    """
    total, count = 0.0, 0
    with no_grad(), test_mode():
        for x, t in loader:
            value = fn(x, t)
            total += float(cuda.as_numpy(value)) * len(x)
            count += len(x)
    return comm.mean(total / count if count else 0.0, weight=count)
