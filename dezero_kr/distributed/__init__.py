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

The package's modules, each importing only those before it: ``buckets`` (the
gradient layout and its packing), ``communicator`` (``init``,
``find_mpiexec``, ``Communicator``), ``sharding`` (the datasets) and
``data_parallel`` (``DataParallel``, ``evaluate``).  This front door exports
the names below.
"""
from dezero_kr.distributed.buckets import INPLACE_MIN_BYTES  # noqa: F401 (documented: the in-place size)
from dezero_kr.distributed.communicator import INSTALL_HINT, Communicator, find_mpiexec, init  # noqa: F401
from dezero_kr.distributed.data_parallel import DataParallel, evaluate
from dezero_kr.distributed.sharding import ArrayShardDataset, ShardDataset, scatter_dataset

__all__ = ['init', 'find_mpiexec', 'Communicator', 'DataParallel', 'scatter_dataset', 'ShardDataset',
           'ArrayShardDataset', 'evaluate']
