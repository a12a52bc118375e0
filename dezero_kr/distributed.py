"""Data-parallel training over MPI, the ChainerMN way (``import dezero_kr.distributed as dist``).

One process ("rank") per core, GPU or host runs the *same* training script on
its own part of the data; after every backward pass the gradients are averaged
over all ranks, so every rank applies the same update and the models stay equal::

    comm = dist.init()                # rank, size (alone: size 1)
    model = MLP((100, 10))
    opt = dist.DataParallel(optimizers.Adam().setup(model), comm)
    train = dist.scatter_dataset(Digits(train=True), comm, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=32)
    for epoch in range(epochs):
        train.set_epoch(epoch)        # a new partition every epoch
        for x, t in loader:           # the unchanged DeZero loop
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            opt.update()              # all-reduce, hooks, update
    comm.save_weights(model, 'digits.npz')  # written by rank 0 only

Run it with ``mpiexec -n 2 python train.py`` (or plainly ``python train.py``).

Why averaging gradients is right: with a loss that is a mean over the batch,
rank r computes ``g_r = (1/B) sum_{i in batch_r} dl_i/dw``; the average
``(1/R) sum_r g_r = (1/(R B)) sum_{all i} dl_i/dw`` is exactly the gradient of
one process on the concatenated batch of ``R B`` samples, provided every rank's
batch has the same size ``B`` (``scatter_dataset`` gives equal shards).  The
update after it is then that of single-process training with an R times larger
batch.

What ``DataParallel.update()`` does, in this order:

1. **Broadcast** (only when needed): parameters are copied from rank 0 when
   ``DataParallel`` is created (or ``setup`` is called) and whenever a
   parameter got its data since (a layer without ``in_size`` creates its
   weight on the first forward pass, with each rank's own random numbers).  In
   the latter case the gradients of that step were computed from different
   weights on different ranks, so the step is **skipped** after the broadcast
   (no update, ``optimizer.t`` unchanged, ``skipped_steps`` counts it; a
   warning on rank 0), as ChainerMN's multi-node optimizer does.  The ranks
   decide it together, in the check below, so one rank with a new parameter
   (a Parameter replaced on that rank alone) makes every rank broadcast.  Give layers their input
   size, or run the model once before creating ``DataParallel``, to lose no step.
2. **Reduce**: every gradient is scaled by ``1/size`` and summed over the
   ranks by ``MPI_Allreduce``, in the parameter's dtype (float32 stays
   float32).  A gradient of at least ``INPLACE_MIN_BYTES`` is reduced *in
   place*, in its own array, one message each: no copy.  That is safe because
   a gradient backward stores into a parameter is an array of its own, shared
   with nothing (see ``core.backprop``).  The smaller ones are copied into one
   contiguous buffer per dtype, summed by a single message, and each
   parameter's ``grad`` becomes a view of its part of the result; the buffer
   is reused next step unless one of those views is still referenced.  A big
   gradient that is not its own C-contiguous writable array of the
   parameter's dtype (a view, a transpose, a float64 gradient of a float32
   parameter, an array two parameters share) is reduced in a new array, so
   what it came from is never written.  The plan (which parameter goes where)
   depends on the parameters only, so every rank sends the same messages.
   **A reference to a big gradient kept before ``update()`` sees the mean
   after it** (it is the same array); copy it first to keep this rank's own.
3. **Hooks** of the wrapped optimizer (weight decay, clipping, schedules) run on
   the *reduced* gradients: a global-norm clip sees the norm of the average.
4. **Update** by the wrapped optimizer, identical on every rank.

A parameter whose ``grad`` is None on some ranks (it took no part in their
loss) counts as a zero gradient on those ranks: the sum is divided by the
number of *all* ranks, as for the single-process gradient of the concatenated
batch.  If its ``grad`` is None on *every* rank it stays None everywhere, so
the optimizer skips it as in a single process (its clip norm, weight decay and
Adam moments are untouched).  One flag per parameter (big ones included)
travels in the buffer of the small gradients, reduced first, so this costs no
extra message, and a big gradient that is None on every rank sends none.

What every rank must agree on is checked once per change, not at every step:
``DataParallel`` keys its plan on each parameter's id, array type, shape and
dtype (compared locally at every step); the ranks compare names, shapes and
dtypes (one ``allgather_json``) at the first reduce and after a rank's key
changed, and raise ValueError on every rank naming what differs ("rank 1 has
l1/W (64, 16) float32, rank 0 (64, 16) float64").  A rank whose parameters
changed tells the others in the message they expect anyway (the agreed plan's
first, its last flag cleared), so no step costs an extra collective.
``mean`` and ``allgather_array`` check their shapes and dtypes the same way.

Failure handling: importing this module under a launcher of more than one
rank installs an excepthook that prints the traceback with the rank and ends
the job (before ``init()``: ``MPI_Abort`` if MPI runs, else the rank kills
itself with SIGKILL; from ``init()`` on: ``MPI_Abort``), so one rank's
exception ends the whole job instead of leaving the others waiting forever in
``MPI_Init`` or a collective; ``with comm.abort_on_error():`` does the same for a
block (for code run where ``sys.excepthook`` is not used, e.g. a notebook).
``os._exit(0)`` cannot be seen by any rank: MPICH's ``mpiexec`` then kills the
others and ends with status 0 (see docs/distributed.md).
Python never hands ``SystemExit`` to the excepthook, and an ``atexit``
function cannot see the exit status, so ``init()`` also makes ``sys.exit``
raise a ``SystemExit`` subclass that notes its status when Python's top level
ends the process with it (not when a ``try`` catches it); an ``atexit``
function then aborts the job with that status if it is not 0.  A
``raise SystemExit(3)`` written directly is not seen: use ``sys.exit``.

Without mpi4py the module still imports and ``init()`` returns a working
size-1 communicator, unless the process was started by ``mpiexec`` (then an
ImportError tells how to install the extra).  CuPy arrays: gradients on the
GPU are packed (or scaled in place) on the GPU; by default each message is
copied to the host for MPI, with ``DataParallel(..., cuda_aware=True)`` it is
handed to MPI directly (needs a CUDA-aware MPI build; untested here, no GPU in
CI).
"""
import atexit
import contextlib
import json
import os
import shutil
import signal
import sys
import time
import traceback
import warnings

import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Variable, no_grad, test_mode
from dezero_kr.hooks import host_operation
from dezero_kr.datasets import Dataset
from dezero_kr.progress import progress as _progress

__all__ = ['init', 'find_mpiexec', 'Communicator', 'DataParallel', 'scatter_dataset', 'ShardDataset',
           'ArrayShardDataset', 'evaluate']

INSTALL_HINT = 'pip install -e ".[mpi]"  (mpi4py and the mpich wheel)'

# Environment variables in which MPI launchers (MPICH's hydra, Open MPI, PMIx) give each process
# the number of ranks.
_LAUNCHER_SIZE_VARS = ('PMI_SIZE', 'OMPI_COMM_WORLD_SIZE', 'MPI_LOCALNRANKS', 'PMIX_SIZE')
_LAUNCHER_RANK_VARS = ('PMI_RANK', 'OMPI_COMM_WORLD_RANK', 'PMIX_RANK')

# Gradients of at least this many bytes are all-reduced in place, one MPI_Allreduce each, with no
# packing copy; smaller ones are packed into one buffer per dtype. Measured (2 ranks, MPICH shared
# memory, one big gradient + small ones, bench/README.md "mpi"): in place vs packed took 1.04-1.07x
# the time at 256 KB (an extra message costs more than the copy it saves), 0.97x at 512 KB,
# 0.86-0.89x at 1 MB, 0.78-0.81x at 8 MB.
INPLACE_MIN_BYTES = 512 * 1024


def _launcher_size():
    """The number of ranks an MPI launcher says it started, or None when not under a launcher."""
    for name in _LAUNCHER_SIZE_VARS:
        value = os.environ.get(name)
        if value and value.strip().isdigit():
            return int(value)
    return None


def find_mpiexec():
    """The ``mpiexec`` to start jobs with: the one installed beside this Python (the ``mpich``
    wheel's, which matches mpi4py) when present, else the first on ``PATH``.

    Raises FileNotFoundError naming ``pip install -e ".[mpi]"`` when there is none.
    """
    beside = os.path.join(os.path.dirname(sys.executable), 'mpiexec')
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which('mpiexec')
    if found is None:
        raise FileNotFoundError(f'find_mpiexec: no mpiexec beside {sys.executable} or on PATH; '
                                f'install the MPI extra: {INSTALL_HINT}')
    return found


_MPI = None  # the mpi4py.MPI module once imported


def _mpi():
    """The ``mpi4py.MPI`` module (imported on first use: it is an optional extra)."""
    global _MPI
    if _MPI is None:
        # Kept after the first call: an import statement per all-reduce cost 1.5 us (measured).
        from mpi4py import MPI  # optional extra (pip install -e ".[mpi]"): imported here, not at the top
        _MPI = MPI
    return _MPI


# =============================================================================
# init and the communicator
# =============================================================================
def init(mpi_comm=None, abort_on_error=True):
    """Start (or join) the MPI job and return a ``Communicator``.

    Args:
        mpi_comm: an ``mpi4py`` communicator to use (default ``MPI.COMM_WORLD``).
        abort_on_error: when there is more than one rank, keep the
            ``sys.excepthook`` the import installed, now calling ``MPI_Abort``
            after printing the exception with the rank (see
            ``Communicator.abort``), and make a rank that ends with
            ``sys.exit(status)``, status not 0, abort the job with that status
            (``_install_exit_hooks``).  False: take the import's hook back.

    Under ``mpiexec -n R`` every process gets ``rank`` 0..R-1 and ``size`` R.
    Run alone (no ``mpiexec``) it returns ``rank`` 0, ``size`` 1, also without
    mpi4py.  Raises ImportError, naming ``pip install -e ".[mpi]"``, when the
    process was started by an MPI launcher but mpi4py cannot be imported (going
    on alone would silently train R unrelated models).
    """
    if mpi_comm is None:
        try:
            mpi_comm = _mpi().COMM_WORLD
        except ImportError as e:
            n = _launcher_size()
            if n is not None and n > 1:
                raise ImportError(
                    f'dezero_kr.distributed.init: this process was started by an MPI launcher as '
                    f'one of {n} ranks, but mpi4py cannot be imported ({e}). Install the MPI '
                    f'extra: {INSTALL_HINT}') from e
            return Communicator(None)
    comm = Communicator(mpi_comm)
    if not abort_on_error:
        _remove_pre_init_hook()
    elif comm.size > 1:
        _install_excepthook(comm)
        _install_exit_hooks(comm)
    return comm


class Communicator:
    """The ranks of one job: ``rank``, ``size``, collectives on arrays and rank-0 helpers.

    ``mpi_comm`` is the ``mpi4py`` communicator, or None for a process running
    alone without mpi4py (then every collective returns its input).
    """

    def __init__(self, mpi_comm):
        self.mpi_comm = mpi_comm
        self.rank = 0 if mpi_comm is None else mpi_comm.Get_rank()
        self.size = 1 if mpi_comm is None else mpi_comm.Get_size()
        self._mean_layout = self._gather_layout = None  # agreed by every rank (see _exchange)

    def __repr__(self):
        backend = 'mpi4py' if self.mpi_comm is not None else 'no MPI'
        return f'<Communicator rank {self.rank} of {self.size} ({backend})>'

    @property
    def is_root(self):
        """True on rank 0, the rank that logs, draws progress bars and writes files."""
        return self.rank == 0

    # --- collectives ----------------------------------------------------------------
    def barrier(self):
        """Wait until every rank has arrived here."""
        if self.size > 1:
            self.mpi_comm.Barrier()

    def allreduce_sum(self, buf, cuda_aware=False):
        """Sum the contiguous array ``buf`` over all ranks, in place; returns the summed array.

        A CuPy array is copied to the host and back unless ``cuda_aware`` (then
        MPI reads device memory itself; needs a CUDA-aware MPI build).
        """
        if self.size == 1:
            return buf
        MPI = _mpi()
        if isinstance(buf, np.ndarray) or cuda_aware:
            self.mpi_comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            return buf
        host = cuda.as_numpy(buf)
        self.mpi_comm.Allreduce(MPI.IN_PLACE, host, op=MPI.SUM)
        buf[...] = cuda.as_cupy(host)
        return buf

    def bcast_array(self, buf, root=0):
        """Overwrite the contiguous array ``buf`` on every rank with rank ``root``'s values."""
        if self.size > 1:
            if isinstance(buf, np.ndarray):
                self.mpi_comm.Bcast(buf, root=root)
            else:
                host = cuda.as_numpy(buf)
                self.mpi_comm.Bcast(host, root=root)
                buf[...] = cuda.as_cupy(host)
        return buf

    def allgather_json(self, obj):
        """Every rank's ``obj`` in rank order (a list of ``size``): it travels as JSON text
        (so lists come back for tuples), never pickled.  A collective: every rank calls it."""
        data = np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)
        if self.size == 1:
            return [json.loads(data.tobytes())]
        sizes = np.empty(self.size, dtype=np.int64)
        self.mpi_comm.Allgather(np.array([data.size], dtype=np.int64), sizes)
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        self.mpi_comm.Allgatherv(data, [out, sizes])
        ends = np.cumsum(sizes)
        return [json.loads(out[end - n:end].tobytes()) for n, end in zip(sizes.tolist(), ends.tolist())]

    def allgather_array(self, values):
        """Stack the equal-shaped NumPy arrays ``values`` of every rank: shape ``(size,) + values.shape``.

        Raises ValueError on every rank, naming the ranks and their shapes and
        dtypes, when they differ (see ``_exchange``: checked once per change).
        """
        values = np.ascontiguousarray(values)
        if self.size == 1:
            return values[None].copy()
        raw = values.reshape(-1).view(np.uint8)

        def send(layout, ok):
            block = np.zeros(layout[0] * layout[2] + 1, dtype=np.uint8)
            if ok:
                block[:-1] = raw
                block[-1] = 1
            blocks = np.empty((self.size, block.size), dtype=np.uint8)
            self.mpi_comm.Allgather(block, blocks)
            return blocks if blocks[:, -1].all() else None

        layout = [values.size, str(values.dtype), values.dtype.itemsize, list(values.shape)]
        blocks = self._exchange('Communicator.allgather_array', '_gather_layout', layout, send)
        return blocks[:, :-1].copy().view(values.dtype).reshape((self.size,) + values.shape)

    def mean(self, value, weight=1.0):
        """The weighted mean ``sum_r w_r v_r / sum_r w_r`` of a number or array over all ranks.

        Returns a float for a scalar ``value``, a float64 array for an array
        (the same on every rank).  ``weight`` is usually the rank's sample count.
        Raises ValueError when the weights sum to zero, and on every rank when
        the ranks' values differ in shape (naming the ranks and shapes).
        """
        v = np.asarray(cuda.as_numpy(value), dtype=np.float64)

        def send(layout, ok):
            buf = np.zeros(layout[0] + 2)
            if ok:
                buf[:-2] = v.ravel()
                buf[:-2] *= weight
                buf[-2] = weight
                buf[-1] = 1
            self.allreduce_sum(buf)
            return buf if buf[-1] == self.size else None

        buf = self._exchange('Communicator.mean', '_mean_layout', [v.size, 'shape', 0, list(v.shape)],
                             send)
        if buf[-2] == 0:
            raise ValueError(f'Communicator.mean: the weights of the {self.size} rank(s) sum to 0')
        out = buf[:-2] / buf[-2]
        return float(out[0]) if v.ndim == 0 else out.reshape(v.shape)

    def _exchange(self, what, attr, layout, send):
        """One collective whose message size depends on ``layout``, checked to agree between ranks.

        ``send(layout, ok)`` runs the collective with a message sized by
        ``layout`` (``[count, dtype, itemsize, shape]``) and a flag ``ok``; it
        returns the result, or None when some rank's flag was not set.  The
        last layout all ranks agreed on is kept in ``attr``: while this rank's
        is the same, a call costs the one collective.  A rank whose layout
        changed sends a message of the agreed size with the flag cleared, so
        the others learn of it without a message of a size they do not
        expect; then every rank exchanges its layout (``allgather_json``), and
        raises ValueError naming the ranks that differ, or agrees on the new one.
        """
        for _ in range(2):  # after one agreement every rank sends its flag: a second try succeeds
            agreed = getattr(self, attr)
            if agreed != layout:
                if agreed is not None:
                    send(agreed, False)
                self._agree(what, attr, layout)
            result = send(layout, True)
            if result is not None:
                return result
            self._agree(what, attr, layout)  # another rank's changed: raises unless it matches
        raise _no_agreement(what)

    def _agree(self, what, attr, layout):
        everyone = self.allgather_json(layout)
        differ = [r for r in range(self.size) if everyone[r] != everyone[0]]
        if differ:
            setattr(self, attr, None)  # every rank raises: the next call agrees afresh
            raise ValueError(f'{what}: the ranks differ: ' + '; '.join(
                f'rank {r} has {_describe_layout(everyone[r])}, rank 0 {_describe_layout(everyone[0])}'
                for r in differ[:3]))
        setattr(self, attr, everyone[0])

    def bcast_params(self, target, root=0):
        """Copy rank ``root``'s parameter values to every rank (in place).

        ``target`` is a Layer/Model or an iterable of Parameters.  Parameters
        without data yet (lazy layers before their first forward pass) are left
        alone.  First checks that every rank has the same parameter layout
        (names, shapes, dtypes) and raises ValueError naming the ranks that differ.
        """
        named = _named_params(target)
        _check_same_layout(self, named, 'bcast_params')
        if self.size == 1:
            return
        for bucket in _buckets([p for _, p in named if p.data is not None]):
            buf = bucket.xp.empty(bucket.total, dtype=bucket.dtype)
            if self.rank == root:
                for p, start, stop in bucket.entries:
                    buf[start:stop] = p.data.reshape(-1)
            self.bcast_array(buf, root=root)
            if self.rank != root:
                for p, start, stop in bucket.entries:
                    p.data[...] = buf[start:stop].reshape(p.data.shape)

    # --- rank-0 helpers ---------------------------------------------------------------
    def print(self, *args, **kwargs):
        """``print`` on rank 0 only (flushed, so lines from a job appear at once)."""
        if self.is_root:
            kwargs.setdefault('flush', True)
            print(*args, **kwargs)

    def progress(self, iterable=None, **kwargs):
        """``dezero_kr.progress.progress`` on rank 0; the other ranks draw nothing."""
        kwargs['disable'] = kwargs.get('disable', False) or not self.is_root
        return _progress(iterable, **kwargs)

    def root_only(self, fn, *args, **kwargs):
        """Call ``fn(*args, **kwargs)`` on rank 0 only, then wait for every rank (so a file
        it writes is complete before any rank goes on).  Returns fn's result on rank 0, None
        elsewhere."""
        result = fn(*args, **kwargs) if self.is_root else None
        self.barrier()
        return result

    def save_weights(self, model, path):
        """``model.save_weights(path)`` written by rank 0 (all ranks hold the same values).
        The file loads into a single-process model with ``load_weights``."""
        self.root_only(model.save_weights, path)

    # --- failure -------------------------------------------------------------------
    def abort(self, message, errorcode=1):
        """Print ``message`` (prefixed with this rank) to standard error and end every rank of the job.

        Alone (size 1) it raises SystemExit(errorcode) instead.
        """
        sys.stderr.write(f'dezero_kr.distributed: rank {self.rank} of {self.size}: {message}\n')
        sys.stderr.flush()
        if self.size > 1:
            # MPI_Abort tears the job down at once; mpiexec may not yet have forwarded
            # what this rank just wrote (seen: 1 run in ~10 lost the message).
            time.sleep(0.5)
            self.mpi_comm.Abort(errorcode)
        raise SystemExit(errorcode)

    @contextlib.contextmanager
    def abort_on_error(self):
        """``with comm.abort_on_error():`` -- an exception leaving the block aborts the whole job
        (traceback, rank and error on standard error).  ``SystemExit(0)`` passes through."""
        try:
            yield self
        except SystemExit as e:
            if e.code in (None, 0) or self.size == 1:
                raise
            self.abort(f'exited with status {e.code}; aborting the job (MPI_Abort)')
        except BaseException as e:
            if self.size == 1:
                raise
            _abort_for_exception(self, type(e), e, e.__traceback__)


def _no_agreement(what):
    return RuntimeError(f'{what}: the ranks agreed on their layout, yet a rank still reports a '
                        f'change (a Communicator whose allreduce_sum does not sum over the ranks?)')


def _describe_layout(layout):
    shape = tuple(layout[3])
    return f'shape {shape}' if layout[1] == 'shape' else f'{shape} {layout[1]}'


def _abort_for_exception(comm, exc_type, exc, tb):
    traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
    comm.abort(f'raised {exc_type.__name__}: {exc}; aborting all {comm.size} ranks (MPI_Abort)')


class _AbortHook:
    """The ``sys.excepthook`` of a rank of a job of more than one rank: an uncaught exception
    (not ``SystemExit``) ends every rank of the job instead of leaving the others waiting.

    Installed when ``dezero_kr.distributed`` is imported under a launcher of more than one
    rank (``comm`` None: ``_end_before_init``), given its communicator by ``init()``
    (``_abort_for_exception``: ``MPI_Abort``).
    """

    def __init__(self, previous):
        self.previous = previous
        self.comm = None

    def __call__(self, exc_type, exc, tb):
        if issubclass(exc_type, SystemExit):  # not an error: let Python handle it
            self.previous(exc_type, exc, tb)
        elif self.comm is None:
            _end_before_init(exc_type, exc, tb)
        else:
            _abort_for_exception(self.comm, exc_type, exc, tb)


_hook = None  # the _AbortHook installed in this process, if any


def _install_excepthook(comm=None):
    global _hook
    if _hook is None:
        _hook = _AbortHook(sys.excepthook)
        sys.excepthook = _hook
    if comm is not None and _hook.comm is None:
        _hook.comm = comm


def _remove_pre_init_hook():
    """``init(abort_on_error=False)``: take back the hook the import installed."""
    global _hook
    if _hook is not None and _hook.comm is None and sys.excepthook is _hook:
        sys.excepthook = _hook.previous
        _hook = None


def _launcher_rank():
    """This process's rank as an MPI launcher gives it, or None when not under a launcher."""
    for name in _LAUNCHER_RANK_VARS:
        value = os.environ.get(name)
        if value and value.strip().isdigit():
            return int(value)
    return None


def _end_before_init(exc_type, exc, tb):
    """An uncaught exception before ``init()``: print it with the rank, then end the job.

    A rank that merely exits before ``MPI_Init`` leaves MPICH's ``mpiexec`` waiting for it
    for ever, with the other ranks inside ``MPI_Init`` (measured: the job never ended).  So
    the rank aborts with ``MPI_Abort`` when MPI is running already (the script imported
    mpi4py itself), and else kills itself with SIGKILL, which every launcher takes for a
    failed rank: the job ends at once, ``mpiexec`` with status 9.
    """
    traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
    size = _launcher_size()
    sys.stderr.write(f'dezero_kr.distributed: rank {_launcher_rank()} of {size}: raised '
                     f'{exc_type.__name__}: {exc} before dist.init(); ending all {size} ranks\n')
    sys.stderr.flush()
    time.sleep(0.5)  # let mpiexec forward the message first (see Communicator.abort)
    MPI = sys.modules.get('mpi4py.MPI')
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.COMM_WORLD.Abort(1)
    os.kill(os.getpid(), getattr(signal, 'SIGKILL', signal.SIGTERM))


_exit_status = []  # the status sys.exit ended this process with (noted by _RankExit)


class _RankExit(SystemExit):
    """The ``SystemExit`` that ``sys.exit`` raises once ``init()`` has run.

    Freed with no Python frame running, it is Python's top level ending the
    process with this status: the status is noted for ``_abort_on_failed_exit``.
    Freed while Python code runs, a ``try`` caught it (or a thread ended with
    it): the process goes on and nothing is noted.
    """

    def __del__(self):
        try:
            sys._getframe(1)
        except ValueError:  # no caller frame: the interpreter's top level handled it
            _exit_status.append(self.code)


def _install_exit_hooks(comm):
    """Make ``sys.exit(status)`` with a non-zero status, uncaught, abort every rank of the job.

    A rank that exits normally calls ``MPI_Finalize`` (mpi4py does, at exit),
    which hydra takes for a clean end, so without this the other ranks wait
    in their next collective forever.  Registered after mpi4py's own exit
    function, ``_abort_on_failed_exit`` runs before it.
    """
    if sys.exit is _exit:
        return
    atexit.register(_abort_on_failed_exit, comm)
    sys.exit = _exit


def _exit(status=None):
    """``sys.exit`` while a ``dezero_kr.distributed`` job runs: raises ``_RankExit(status)``."""
    raise _RankExit(status)


def _abort_on_failed_exit(comm):
    """At exit: ``MPI_Abort`` with the status ``sys.exit`` ended this rank with, unless it is 0/None.

    A status that is not an int (``sys.exit('message')``) exits with 1, as Python does.
    """
    if not _exit_status or _exit_status[-1] in (None, 0):
        return
    status = _exit_status[-1]
    code = status if isinstance(status, int) and not isinstance(status, bool) else 1
    comm.abort(f'exited with status {status!r} outside comm.abort_on_error(); aborting the job '
               f'(MPI_Abort({code}))', errorcode=code)


# =============================================================================
# Parameter layout and packing
# =============================================================================
def _named_params(target):
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


def _check_same_layout(comm, named, what, flag=False):
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
    one that is 1 unless this rank's parameters changed: ``_announce_change``)
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


def _buckets(params, inplace_min_bytes=None):
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


def _layout_key(params):
    """What the plan depends on, cheap to build and compare at every step: per parameter its
    id, array type, shape and dtype (about 0.2 us a parameter)."""
    return tuple([(id(p), None, None, None) if (a := p.data) is None
                  else (id(p), type(a), a.shape, a.dtype) for p in params])


def _announce_change(comm, bucket, cuda_aware):
    """Send the message the other ranks expect first (``bucket``'s, of the plan they agreed
    on) with its last flag 0: they then check the parameters with this rank instead of
    reducing (``DataParallel._reduce_bucket`` returns False)."""
    buf = bucket.writable_buffer()
    buf.fill(0)
    comm.allreduce_sum(buf, cuda_aware=cuda_aware)


def _shape_error(shape, grad_shape):
    return ValueError(f'DataParallel.allreduce_grads: a parameter of shape {shape} has a '
                      f'gradient of shape {grad_shape}')


def _reducible_in_place(a, dtype, taken):
    """True when the gradient array ``a`` may be overwritten by its own all-reduce: an array of
    its own (not a view), writable, C-contiguous, of the parameter's ``dtype``, and not
    already the gradient of another parameter in this reduce (``taken``: their ids)."""
    return (a.base is None and a.flags.c_contiguous and getattr(a.flags, 'writeable', True)
            and a.dtype == dtype and id(a) not in taken)


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
        object.__setattr__(self, '_plan', None)  # (_layout_key, buckets) the ranks agreed on
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
        and whenever a rank's parameters changed since, see ``_layout_key``).
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
                raise _shape_error(p.data.shape, g.data.shape)
        key = _layout_key(params)
        plan = self._plan
        if plan is not None and plan[0] != key:
            # This rank's parameters changed since the ranks agreed on the plan: tell the
            # others in the message they expect (the agreed plan's first), then check anew.
            _announce_change(self.comm, plan[1][0], self.cuda_aware)
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
            raise _no_agreement('DataParallel.allreduce_grads')
        self.last_reduce_seconds = time.perf_counter() - start
        return True

    def _agree_plan(self, params, key, broadcast_new):
        """Check with every rank that the parameters agree (a collective), then make the plan.

        With ``broadcast_new``, when any rank has a parameter with data that was not
        broadcast yet, every rank broadcasts instead and None is returned (no plan)."""
        target = self.optimizer.target
        names = {id(p): n for n, p in _named_params(target)} if target is not None else {}
        named = [(names.get(id(p), p.name or f'#{i}'), p) for i, p in enumerate(params)]
        new = broadcast_new and any(p.data is not None and id(p) not in self._synced
                                    for p in params)
        if _check_same_layout(self.comm, named, 'DataParallel.allreduce_grads', new):
            self._broadcast()
            self._plan = None
            return None
        missing = [name for name, p in named if p.data is None]
        if missing:
            raise RuntimeError(f'DataParallel.allreduce_grads: parameters {missing} have no '
                               f'data yet; run a forward pass first')
        buckets = _buckets(params, INPLACE_MIN_BYTES)
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
        rank's parameters changed (``_announce_change``)."""
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
        overwritten (``_reducible_in_place``), else a new array of the parameter's dtype."""
        sources, in_place, taken = [], [], set()
        for g in bigs:
            a = None if g is None else g.data
            if a is None:
                pass
            elif _reducible_in_place(a, bucket.dtype, taken):
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
# Datasets
# =============================================================================
def scatter_dataset(dataset, comm, shuffle=False, seed=0, drop_remainder=True):
    """This rank's equal share of ``dataset`` (a ``ShardDataset``).

    The dataset (the same on every rank) is ordered -- a random permutation
    when ``shuffle``, drawn from ``seed`` and the epoch (``set_epoch``), the
    identity otherwise -- and cut into ``size`` consecutive shards of
    ``len(dataset) // size`` samples; rank r takes shard r.  **Remainder**: the
    last ``len(dataset) % size`` samples of that order are left out of the
    epoch (with ``shuffle`` they are different samples every epoch), so every
    rank runs the same number of steps -- needed for training, where a rank
    with one more batch would wait forever in its extra all-reduce.  For
    evaluation pass ``drop_remainder=False``: ranks ``0 .. n % size - 1`` then
    get one sample more and every sample is used once (``evaluate`` weights by
    count).  Rank 0's ``seed`` is used on every rank (None: rank 0 draws one),
    so the shards are disjoint.

    An array-backed dezero_kr ``Dataset`` gives an ``ArrayShardDataset``
    (the shard's arrays, so ``DataLoader`` indexes them in one go); anything
    else with ``len`` and ``[i]`` gives a ``ShardDataset`` view.
    Raises ValueError when the dataset has fewer samples than ranks or its
    length differs between ranks.
    """
    cls = ArrayShardDataset if _array_backed(dataset) else ShardDataset
    return cls(dataset, comm, shuffle, seed, drop_remainder)


def _array_backed(dataset):
    return (isinstance(dataset, Dataset) and type(dataset).__getitem__ is Dataset.__getitem__
            and type(dataset).__len__ is Dataset.__len__ and isinstance(dataset.data, np.ndarray))


class _Shard:
    """The shard bookkeeping shared by both shard classes (a mixin)."""

    def _init_shard(self, dataset, comm, shuffle, seed, drop_remainder):
        if not isinstance(comm, Communicator):
            raise TypeError(f'scatter_dataset: comm must be what dist.init() returns, got '
                            f'{type(comm).__name__}')
        n = len(dataset)
        if n < comm.size:
            raise ValueError(f'scatter_dataset: the dataset has {n} samples, fewer than the '
                             f'{comm.size} ranks')
        if shuffle and seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint32)[0])
        seed = 0 if seed is None else seed
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f'scatter_dataset: seed must be a non-negative int or None, got {seed!r}')
        mine = np.array([n, seed], dtype=np.uint64)
        everyone = comm.allgather_array(mine)
        if not np.all(everyone[:, 0] == n):
            raise ValueError(f'scatter_dataset: the dataset length differs between ranks: '
                             f'{everyone[:, 0].tolist()} (rank order)')
        self.dataset = dataset
        self.comm = comm
        self.shuffle = shuffle
        self.seed = int(everyone[0, 1])  # rank 0's seed on every rank
        q, extra = divmod(n, comm.size)
        if drop_remainder:
            self._start, self.shard_size = comm.rank * q, q
        else:
            self._start = comm.rank * q + min(comm.rank, extra)
            self.shard_size = q + (comm.rank < extra)
        self.epoch = None
        self.set_epoch(0)

    def set_epoch(self, epoch):
        """Use the partition of ``epoch`` (a new random one per epoch when shuffling; the same
        on every rank).  Call it at the start of every epoch; epoch 0 is set at creation."""
        if self.epoch == epoch:
            return
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng([self.seed, int(epoch)]).permutation(n)
        else:
            order = np.arange(n)
        self.indices = order[self._start:self._start + self.shard_size]
        self.epoch = epoch
        self._indices_changed()

    def _indices_changed(self):
        pass

    def __len__(self):
        return self.shard_size


class ShardDataset(_Shard):
    """A view of one rank's shard of any dataset (``len`` and ``[i]``); see ``scatter_dataset``.

    ``indices``: the dataset indices of the shard in the current epoch.
    ``shard[i]`` is ``dataset[indices[i]]``; a slice or an index array gives
    the batch ``(xs, ts)`` stacked along a new first axis.
    """

    def __init__(self, dataset, comm, shuffle=False, seed=0, drop_remainder=True):
        self._init_shard(dataset, comm, shuffle, seed, drop_remainder)

    def __getitem__(self, index):
        if np.isscalar(index) or (isinstance(index, np.ndarray) and index.ndim == 0):
            if not -self.shard_size <= index < self.shard_size:
                raise IndexError(f'ShardDataset: index {index} is out of range for a shard of '
                                 f'{self.shard_size} samples')
            return self.dataset[int(self.indices[index])]
        batch = [self.dataset[int(i)] for i in self.indices[index]]
        return np.array([b[0] for b in batch]), np.array([b[1] for b in batch])


class ArrayShardDataset(_Shard, Dataset):
    """One rank's shard of an array-backed ``Dataset``: a ``Dataset`` whose ``data`` and
    ``label`` are the shard's rows (copied at each ``set_epoch``); transforms are the
    dataset's.  See ``scatter_dataset``."""

    def __init__(self, dataset, comm, shuffle=False, seed=0, drop_remainder=True):
        # Dataset.__init__ would call prepare(); the arrays come from the dataset instead.
        self.train = getattr(dataset, 'train', True)
        self.transform = dataset.transform
        self.target_transform = dataset.target_transform
        self._init_shard(dataset, comm, shuffle, seed, drop_remainder)

    def _indices_changed(self):
        self.data = self.dataset.data[self.indices]
        label = self.dataset.label
        self.label = None if label is None else label[self.indices]


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
if (_launcher_size() or 1) > 1:
    _install_excepthook()
