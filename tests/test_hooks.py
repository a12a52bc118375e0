"""Variable hooks, per-Variable retain_grad and detach (PyTorch-style, on DeZero's engine)."""
import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Constant, Variable, hooks
from dezero_kr.autograd import grad


def _v(*values):
    return Variable(np.array(values, dtype=np.float64))


# =============================================================================
# register_hook
# =============================================================================
def test_hook_fires_once_with_the_complete_gradient():
    # h feeds three uses (h*h and + h): the hook must see dL/dh = 2h + 1 once, not partial sums.
    x = _v(1.0, 2.0)
    h = x * 3
    seen = []
    h.register_hook(lambda g: seen.append(g.data.copy()))
    y = F.sum(h * h + h)
    y.backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], 2 * h.data + 1)
    np.testing.assert_array_equal(x.grad.data, 3 * (2 * h.data + 1))


def test_hook_fires_once_per_backward_pass():
    x = _v(1.0)
    h = x * 2
    calls = []
    h.register_hook(lambda g: calls.append(1))
    y = h * h
    for _ in range(3):
        y.backward()
    assert len(calls) == 3


def test_hook_replacement_flows_on_to_the_inputs():
    x = _v(1.0, -2.0)
    h = F.exp(x)
    h.register_hook(lambda g: g * 10)
    F.sum(h).backward()
    np.testing.assert_allclose(x.grad.data, 10 * np.exp(x.data))


def test_hooks_run_in_order_each_seeing_the_previous_replacement():
    x = _v(2.0)
    h = x * 1
    seen = []
    h.register_hook(lambda g: g + 1)
    h.register_hook(lambda g: seen.append(float(g.data[0])) or g * 3)
    h.backward()  # seed 1 -> 2 -> 6
    assert seen == [2.0]
    assert x.grad.data[0] == 6.0


def test_hook_handle_removes_the_hook():
    x = _v(1.0)
    h = x * 2
    calls = []
    handle = h.register_hook(lambda g: calls.append(1) or g * 100)
    keep = h.register_hook(lambda g: calls.append(2))
    handle.remove()
    handle.remove()  # a second remove is harmless
    (h * 1).backward()
    assert calls == [2]
    assert x.grad.data[0] == 2.0
    keep.remove()
    x.cleargrad()
    (h * 1).backward()
    assert calls == [2]


def test_hook_returning_a_wrong_shape_raises_a_clear_error():
    x = _v(1.0, 2.0, 3.0)
    h = x * 2
    h.name = 'hidden'
    h.register_hook(lambda g: np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"hook on 'hidden'.*\(2, 2\).*\(3,\)"):
        F.sum(h).backward()


def test_leaf_hook_sees_the_complete_gradient_and_can_replace_it():
    x = _v(3.0)
    seen = []
    x.register_hook(lambda g: seen.append(float(g.data[0])) or g * 0.5)
    y = x * x + x  # two paths into the leaf: 2x + 1 = 7
    y.backward()
    assert seen == [7.0]
    assert x.grad.data[0] == 3.5


def test_leaf_hooks_of_unrequested_inputs_do_not_fire_in_grad():
    a, b = _v(1.0), _v(2.0)
    fired = []
    b.register_hook(lambda g: fired.append('b'))
    a.register_hook(lambda g: fired.append('a') or g * 2)
    ga, = grad(a * b, [a])
    assert fired == ['a']
    assert ga.data[0] == 4.0  # the hook's replacement is what grad returns


def test_hooks_on_constants_never_fire():
    c = Constant(np.array([1.0]))
    fired = []
    c.register_hook(lambda g: fired.append(1))
    x = _v(2.0)
    (x * c).backward()
    assert fired == [] and c.grad is None


# =============================================================================
# retain_grad
# =============================================================================
def test_retain_grad_keeps_one_intermediate_gradient():
    x = _v(2.0)
    h = x * 3
    k = h * 2
    h.retain_grad()
    assert h.retains_grad and not k.retains_grad
    y = k * k
    y.backward()
    assert h.grad.data[0] == 2 * k.data[0] * 2  # dy/dh = 2k * 2 = 48
    assert k.grad is None
    assert y.grad is None


def test_retained_gradients_accumulate_across_passes_like_pytorch():
    x = _v(2.0)
    h = x * 3
    h.retain_grad()
    y = h * h
    y.backward()
    y.backward()
    assert h.grad.data[0] == 2 * (2 * h.data[0])
    assert x.grad.data[0] == 2 * (2 * h.data[0] * 3)
    h.cleargrad()
    y.backward()
    assert h.grad.data[0] == 2 * h.data[0]


def test_retain_grad_and_the_global_flag_do_not_store_twice():
    x = _v(2.0)
    h = x * 3
    h.retain_grad()
    y = h * h
    y.backward(retain_grad=True)
    assert h.grad.data[0] == 12.0


def test_retain_grad_on_a_leaf_changes_nothing():
    x = _v(2.0)
    x.retain_grad()
    (x * 3).backward()
    assert x.grad.data[0] == 3.0


def test_repeated_backward_with_retain_grad_uses_the_seed_once_per_pass():
    # The root's retained gradient is the seed; it must not grow and be re-used as a
    # bigger seed on the next pass (which made leaf gradients grow 1, 2, 4, ...).
    x = _v(2.0)
    y = x * 3
    for _ in range(3):
        y.backward(retain_grad=True)
    assert y.grad.data[0] == 1.0
    assert x.grad.data[0] == 9.0


def test_a_preset_seed_is_used_and_kept_on_a_retained_root():
    x = _v(1.0, 2.0)
    y = x * 2
    y.grad = Variable(np.array([1.0, 10.0]))
    y.backward(retain_grad=True)
    np.testing.assert_array_equal(x.grad.data, [2.0, 20.0])
    np.testing.assert_array_equal(y.grad.data, [1.0, 10.0])


# =============================================================================
# detach
# =============================================================================
def test_detach_shares_data_and_stops_the_gradient():
    x = _v(3.0)
    d = (x * 2).detach()
    assert isinstance(d, Constant) and not d.requires_grad
    assert d.creator is None
    y = x * d  # d is a constant 6: dy/dx = 6, not 4x = 12
    y.backward()
    assert x.grad.data[0] == 6.0
    assert d.grad is None
    x.data[0] = 5.0
    assert x.detach().data is x.data


def test_removing_the_last_hook_turns_the_hook_machinery_off():
    from dezero_kr import core
    x = _v(1.0)
    h = x * 2
    first = h.register_hook(lambda g: g * 2)
    first.remove()
    assert h not in hooks.variable_hooks
    calls = []
    h.register_hook(lambda g: calls.append(1))
    first.remove()  # a stale handle must not remove the newer hook
    (h * 1).backward()
    assert calls == [1]
    del h
    import gc
    gc.collect()
    (_v(1.0) * 2).backward()
    assert not hooks.variable_hooks  # no Variable has a hook: backprop skips the table again
