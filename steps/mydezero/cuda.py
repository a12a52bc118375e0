#@ file step 52
"""NumPy와 CuPy를 바꿔 쓰는 스위치 (52단계).

CuPy는 NumPy와 같은 API를 GPU에서 제공한다. 배열을 만드는 곳에서 `xp =
get_array_module(x)`로 모듈을 골라 `xp.zeros(...)`처럼 쓰면 CPU와 GPU에서 같은
코드가 돈다. CuPy가 없거나 GPU가 보이지 않으면 gpu_enable은 False이고 모든 것이
NumPy로 돈다.
"""
import numpy as np

gpu_enable = True
try:
    import cupy as cp
    cupy = cp
    gpu_enable = cp.cuda.runtime.getDeviceCount() > 0
except Exception:  # ImportError, 또는 CuPy는 있지만 GPU/드라이버가 없을 때
    gpu_enable = False


def get_array_module(x):
    """x(Variable 또는 배열)가 cupy 배열이면 cupy, 아니면 numpy."""
    from mydezero.core import Variable
    if isinstance(x, Variable):
        x = x.data

    if not gpu_enable:
        return np
    xp = cp.get_array_module(x)
    return xp


def as_numpy(x):
    """스칼라, numpy, cupy 배열을 numpy 배열로."""
    from mydezero.core import Variable
    if isinstance(x, Variable):
        x = x.data

    if np.isscalar(x):
        return np.array(x)
    elif isinstance(x, np.ndarray):
        return x
    return cp.asnumpy(x)


def as_cupy(x):
    """numpy 배열을 GPU의 cupy 배열로. GPU를 쓸 수 없으면 알려 준다."""
    from mydezero.core import Variable
    if isinstance(x, Variable):
        x = x.data

    if not gpu_enable:
        raise Exception('CuPy cannot be loaded. Install CuPy!')
    return cp.asarray(x)


def scatter_add(a, slices, value):
    """cupy 배열 a의 slices 자리에 value를 더한다 (np.add.at의 CuPy판, cupyx에
    있다)."""
    import cupyx
    cupyx.scatter_add(a, slices, value)
