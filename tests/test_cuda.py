"""cuda: the NumPy/CuPy switch works (and explains itself) without CuPy."""
import numpy as np
import pytest

from dezero_kr import Variable, cuda


def test_get_array_module_and_as_numpy_on_cpu():
    x = np.ones(3)
    assert cuda.get_array_module(x) is np
    assert cuda.get_array_module(Variable(x)) is np
    assert cuda.as_numpy(Variable(x)) is x
    assert cuda.as_numpy(2.0).shape == ()


@pytest.mark.skipif(cuda.gpu_enable, reason='checks the no-GPU error path')
def test_without_a_gpu_everything_says_how_to_get_one():
    assert cuda.gpu_enable is False
    with pytest.raises(RuntimeError, match='CuPy'):
        cuda.as_cupy(np.ones(2))
    with pytest.raises(RuntimeError, match='CuPy'):
        Variable(np.ones(2)).to_gpu()
    with pytest.raises(RuntimeError, match='DataLoader'):
        cuda.require_gpu('DataLoader(gpu=True)')


def test_to_cpu_is_a_no_op_on_numpy_data():
    v = Variable(np.ones(2))
    data = v.data
    v.to_cpu()
    assert v.data is data
