"""``DataParallel`` (the gradient all-reduce around an optimizer) and ``evaluate``."""
import time
import warnings


from dezero_kr import cuda
from dezero_kr.core import Variable, no_grad, test_mode
from dezero_kr.hooks import host_operation
from dezero_kr.distributed.buckets import (INPLACE_MIN_BYTES, announce_change, check_same_layout, layout_key,
                                           make_buckets, named_params, reducible_in_place, shape_error)
from dezero_kr.distributed.communicator import Communicator, install_excepthook, launcher_size, no_agreement

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
        object.__setattr__(self, '_plan', None)  # (layout_key, buckets) the ranks agreed on
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
        """All-reduce the gradients, or broadcast new parameters (and skip the step); then the
        optimizer's hooks and update (the same on every rank).

        Whether parameters are new (a lazy layer's first data, a Parameter replaced) is
        decided together by every rank, in the check of ``_reduce`` that runs when some
        rank's parameters changed: one rank with a new parameter makes all broadcast."""
        params = self._params('update')
        if self._reduce(params, broadcast_new=True):
            self.optimizer.update()
            return
        self.skipped_steps += 1
        if self.comm.is_root:
            warnings.warn('DataParallel.update: parameters were initialised by the first '
                          'forward pass (or replaced) with different values on each rank; they '
                          'were broadcast from rank 0 and this step was skipped (as ChainerMN '
                          'does). Pass in_size to the layers or run the model once before '
                          'DataParallel(...) to keep the step.', RuntimeWarning, stacklevel=2)

    def allreduce_grads(self, params=None):
        """Replace every gradient by its mean over the ranks (see the module docstring).

        ``grad = (1/size) sum_r grad_r`` in the parameter's dtype, with a missing
        gradient counting as zeros; a gradient missing on every rank stays None.
        A gradient of at least ``INPLACE_MIN_BYTES`` is overwritten with the mean
        in its own array (a reference kept to it sees the mean); smaller ones
        become views of a shared buffer (a kept reference keeps the local values).
        Raises ValueError for a gradient whose shape is not its parameter's,
        before any gradient is changed, and on every rank when the ranks'
        parameters (names, shapes, dtypes) differ (checked at the first reduce
        and whenever a rank's parameters changed since, see ``layout_key``).
        """
        if self.comm.size > 1:
            self._reduce(self._params('allreduce_grads') if params is None else params, False)

    def _reduce(self, params, broadcast_new):
        """``allreduce_grads`` of ``params``; True, or False when (``broadcast_new``) some rank
        had new parameters and every rank broadcast them instead (``_agree_plan``)."""
        if self.comm.size == 1:
            return True
        start = time.perf_counter()
        for p in params:  # every shape first: an error must leave every gradient as it was
            g = p.grad
            if g is not None and p.data is not None and g.data.shape != p.data.shape:
                raise shape_error(p.data.shape, g.data.shape)
        key = layout_key(params)
        plan = self._plan
        if plan is not None and plan[0] != key:
            # This rank's parameters changed since the ranks agreed on the plan: tell the
            # others in the message they expect (the agreed plan's first), then check anew.
            announce_change(self.comm, plan[1][0], self.cuda_aware)
            plan = None
        for _ in range(2):  # after one agreement every rank reduces: a second try succeeds
            if plan is None:
                plan = self._agree_plan(params, key, broadcast_new)
                if plan is None:
                    return False
            if all(self._reduce_bucket(bucket) for bucket in plan[1]):
                break
            plan = None  # another rank's parameters changed: check anew (raises if they differ)
        else:
            raise no_agreement('DataParallel.allreduce_grads')
        self.last_reduce_seconds = time.perf_counter() - start
        return True

    def _agree_plan(self, params, key, broadcast_new):
        """Check with every rank that the parameters agree (a collective), then make the plan.

        With ``broadcast_new``, when any rank has a parameter with data that was not
        broadcast yet, every rank broadcasts instead and None is returned (no plan)."""
        target = self.optimizer.target
        names = {id(p): n for n, p in named_params(target)} if target is not None else {}
        named = [(names.get(id(p), p.name or f'#{i}'), p) for i, p in enumerate(params)]
        new = broadcast_new and any(p.data is not None and id(p) not in self._synced
                                    for p in params)
        if check_same_layout(self.comm, named, 'DataParallel.allreduce_grads', new):
            self._broadcast()
            self._plan = None
            return None
        missing = [name for name, p in named if p.data is None]
        if missing:
            raise RuntimeError(f'DataParallel.allreduce_grads: parameters {missing} have no '
                               f'data yet; run a forward pass first')
        buckets = make_buckets(params, INPLACE_MIN_BYTES)
        for bucket in buckets:
            # A 0-d array of the bucket's dtype, not a Python float: the same products, and
            # NumPy skips converting the scalar at every multiply (0.50 -> 0.28 us each).
            bucket.scale = bucket.xp.asarray(1.0 / self.comm.size, dtype=bucket.dtype)
        self._plan = (key, buckets)
        return self._plan

    def _reduce_bucket(self, bucket):
        """One ``MPI_Allreduce`` of the packed gradients and all flags, then one per big
        gradient that some rank has (the flags tell every rank which those are).

        Returns False, having changed no gradient, when the last flag says that another
        rank's parameters changed (``announce_change``)."""
        buf = bucket.writable_buffer()
        grads = self._pack(bucket)
        self.comm.allreduce_sum(buf, cuda_aware=self.cuda_aware)
        counts = bucket.flags.tolist()
        if counts[-1] != self.comm.size:
            return False
        bigs = [p.grad for p in bucket.big]
        sources = self._scale_big(bucket, bigs) if bigs else ()
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
        return True

    def _pack(self, bucket):
        """Copy the small gradients, scaled by 1/size, into the bucket's buffer (zeros and
        flag 0 for a missing one, big ones included); returns them (Variables or None)."""
        grads = [p.grad for p in bucket.params]
        flags, scale, multiply = bucket.flags, bucket.scale, bucket.xp.multiply
        flags.fill(1)  # 1: this rank has a gradient for the parameter; the last: "unchanged"
        for i, p in enumerate(bucket.big, len(grads)):
            if p.grad is None or p.grad.data is None:
                flags[i] = 0
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
        """Scale the big gradients by 1/size (after the buffer's reduce: not at all when another
        rank's parameters changed); returns the array each is to be reduced in (None
        where this rank has none, flag 0).  That is the gradient array itself when it may be
        overwritten (``reducible_in_place``), else a new array of the parameter's dtype."""
        sources, in_place, taken = [], [], set()
        for g in bigs:
            a = None if g is None else g.data
            if a is None:
                pass
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


# Installed at import, not only by init(): a rank that raises between this import and init()
# would otherwise leave the job waiting for ever (issue 34).
if (launcher_size() or 1) > 1:
    install_excepthook()
