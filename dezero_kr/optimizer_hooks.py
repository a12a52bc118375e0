"""The hooks an optimizer runs before each update (``optimizer.add_hook(h)``): each is called
with the list of parameters that have a gradient and changes their gradients (or the
optimizer's learning rate) in place.  DeZero's ``WeightDecay`` and ``ClipGrad``, and
``FreezeParam`` and the ``WarmupCosine`` schedule; ``dezero_kr.optimizers`` re-exports them
(DeZero's module for them), and ``grad_clip`` has the PyTorch-style clipping hooks.
"""
import math

from dezero_kr.core import Parameter, Variable
from dezero_kr.grad_clip import clip_grad_norm


def _replace_grads(pairs):
    """Give each parameter its new gradient array.

    The gradient Variable keeps its identity unless several parameters share
    it; those each get their own Variable, so no array is changed twice.
    """
    shared = {}
    for param, _ in pairs:
        shared[id(param.grad)] = shared.get(id(param.grad), 0) + 1
    for param, new in pairs:
        if shared[id(param.grad)] > 1:
            param.grad = Variable(new)
        else:
            param.grad.data = new


class WeightDecay:
    """L2 penalty through the gradient: ``grad <- grad + rate * param`` (coupled; see ``AdamW``)."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, params):
        """Replace each gradient of ``params`` by ``grad + rate * param`` (same dtype as the arrays)."""
        # New arrays, computed before any is stored: the old gradient arrays may
        # be shared between parameters or read-only broadcast views.
        _replace_grads([(p, p.grad.data + self.rate * p.data) for p in params])


class ClipGrad:
    """DeZero's hook: scale all gradients so their global L2 norm is at most ``max_norm``."""

    def __init__(self, max_norm):
        self.max_norm = max_norm

    def __call__(self, params):
        """Scale the gradients of ``params`` in place (see ``grad_clip.clip_grad_norm``, eps=1e-6).

        It runs on the per-parameter gradients before a fused update gathers them, so the
        norm is summed in the same order (parameter by parameter) with ``foreach`` on or off.
        """
        clip_grad_norm(params, self.max_norm, eps=1e-6)


class FreezeParam:
    """Keep the given Layers' / Parameters' values fixed: their gradients are dropped before the update."""

    def __init__(self, *layers):
        self.freeze_params = []
        for layer in layers:
            if isinstance(layer, Parameter):
                self.freeze_params.append(layer)
            else:
                self.freeze_params.extend(layer.params())

    def __call__(self, params):
        """Set the frozen parameters' ``grad`` to None, so ``update`` skips them."""
        for p in self.freeze_params:
            p.grad = None


class WarmupCosine:
    """Learning-rate schedule hook: linear warm-up, then cosine decay to ``min_lr``.

    At update ``t`` (1-based): ``base_lr * t / warmup_steps`` for ``t <= warmup_steps``,
    then ``min_lr + (base_lr - min_lr) (1 + cos(pi p)) / 2`` with
    ``p = (t - warmup_steps) / (total_steps - warmup_steps)``, and ``min_lr``
    after ``total_steps``.  Sets the optimizer's ``lr`` (``alpha`` for Adam/AdamW).
    ``ValueError`` unless ``0 <= warmup_steps <= total_steps``.
    """

    def __init__(self, base_lr, warmup_steps, total_steps, min_lr=0.0):
        if not 0 <= warmup_steps <= total_steps:
            raise ValueError(f'WarmupCosine: need 0 <= warmup_steps <= total_steps, got '
                             f'warmup_steps={warmup_steps}, total_steps={total_steps}')
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_lr = min_lr
        self.optimizer = None

    def attach(self, optimizer):
        """Remember the optimizer to schedule (``add_hook`` calls this).

        Raises ``ValueError`` when it has no learning rate (``lr_name`` None: ``AdaDelta``).
        """
        if optimizer.lr_name is None:
            raise ValueError(f'WarmupCosine: {type(optimizer).__name__} has no learning rate to schedule')
        self.optimizer = optimizer

    def lr_at(self, t):
        """The learning rate (a float) for update ``t`` (1-based), by the formula above."""
        if self.warmup_steps and t <= self.warmup_steps:
            return self.base_lr * t / self.warmup_steps
        if t >= self.total_steps:
            return self.min_lr
        p = (t - self.warmup_steps) / (self.total_steps - self.warmup_steps)
        return self.min_lr + 0.5 * (self.base_lr - self.min_lr) * (1 + math.cos(math.pi * p))

    def __call__(self, params):
        """Set the optimizer's learning rate to ``lr_at(optimizer.t)``.

        Raises ``RuntimeError`` when the hook was not registered with ``add_hook``.
        """
        if self.optimizer is None:
            raise RuntimeError('WarmupCosine: register it with optimizer.add_hook(schedule)')
        setattr(self.optimizer, self.optimizer.lr_name, self.lr_at(self.optimizer.t))
