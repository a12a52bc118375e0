"""The create_graph reference cycle, measured: why backprop warns only with gc disabled.

``tools/grad_cycle_memory.py`` runs three loops with Python's cycle collector on
and off (see its docstring).  These tests run it with fewer iterations and hold
the numbers the policy in ``dezero_kr.reverse_pass._warn_grad_cycle`` rests on:

* the tutorial's Newton loop (step 33: ``x.cleargrad()`` between the passes)
  and ``autograd.grad`` keep nothing, collector or not;
* a loop that leaves the graph in ``x.grad`` of a dropped ``x`` grows without
  bound only while the collector is off; with it on, memory stays a small
  fraction of that (the cycles are freed in bursts).
"""
import gc
import importlib.util
import warnings

import numpy as np
import pytest

from _subproc import ROOT
from dezero_kr import Variable, autograd

ITERS = 1500
KIB = 1024


def _tool():
    spec = importlib.util.spec_from_file_location('grad_cycle_memory',
                                                  ROOT / 'tools' / 'grad_cycle_memory.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# with gc off the tool's loops make backprop warn (once): expected here, not shown
@pytest.mark.filterwarnings(r'ignore:backward\(create_graph=True\) stored')
def test_a_dropped_leaf_with_a_graph_in_its_grad_leaks_only_without_gc():
    tool = _tool()
    held_off, _, _ = tool.measure(tool.fresh_x, ITERS, collector_on=False)
    held_on, peak_on, _ = tool.measure(tool.fresh_x, ITERS, collector_on=True)
    per_iteration = held_off / ITERS
    assert per_iteration > 2 * KIB, f'{per_iteration:.0f} bytes per iteration kept with gc off'
    assert peak_on < held_off / 4, (peak_on, held_off)   # the collector frees the cycles
    assert held_on < held_off / 4, (held_on, held_off)


@pytest.mark.filterwarnings(r'ignore:backward\(create_graph=True\) stored')
def test_the_tutorial_newton_loop_and_autograd_grad_keep_nothing():
    tool = _tool()
    for loop in (tool.newton, tool.autograd_grad):
        for on in (True, False):
            held, _, _ = tool.measure(loop, ITERS // 3, collector_on=on)
            assert held < 64 * KIB, f'{loop.__name__} with gc {"on" if on else "off"}: {held} bytes'


def test_the_idiom_docs_teach_makes_no_cycle_and_the_right_derivatives():
    # docs/tutorial/stage3.md, "기울기 속의 그래프와 순환 참조": autograd.grad stores nothing,
    # so even with the collector off there is no cycle and no warning.
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            x = Variable(np.array(2.0))
            y = x ** 4
            gx, = autograd.grad(y, x, create_graph=True)
            gx2, = autograd.grad(gx, x)
    finally:
        gc.enable()
    assert float(gx.data) == 32.0 and gx.creator is not None
    assert float(gx2.data) == 48.0 and x.grad is None
    text = (ROOT / 'docs' / 'tutorial' / 'stage3.md').read_text(encoding='utf-8')
    assert 'gx, = autograd.grad(y, x, create_graph=True)' in text
    assert 'gx2, = autograd.grad(gx, x)' in text
