"""DeZero's ``functions`` module (``import dezero_kr.functions as F``).

This file only gathers names; each operation lives in the module of its concern:

=====================  ===========================================================
``core``               arithmetic (add sub mul div neg pow rpow), matmul, reshape,
                       transpose, get_item, sum, sum_to, broadcast_to, max, min
``functions_math``     sin cos tan tanh exp log sqrt abs clip maximum minimum where,
                       expand_dims flatten concat stack, average/mean, linear
=====================  ===========================================================
"""
from dezero_kr.core import (  # noqa: F401
    Add, AddConstant, BroadcastTo, Div, DivConstant, GetItem, GetItemGrad, MatMul, Max, Min, Mul,
    MulConstant, Neg, Pow, PowVariable, RDivConstant, RPow, RSubConstant, Reshape, Sub, SubConstant,
    Sum, SumTo, Transpose,
    add, broadcast_to, div, get_item, matmul, max, min, mul, neg, pow, rdiv, reshape, rpow, rsub,
    sub, sum, sum_to, transpose)
from dezero_kr.functions_math import (  # noqa: F401
    Abs, Clip, Concat, Cos, Exp, Linear, Log, Maximum, Minimum, Sin, Sqrt, Tan, Tanh, Where,
    abs, average, clip, concat, cos, exp, expand_dims, flatten, linear, linear_simple, log, maximum,
    mean, minimum, sin, sqrt, stack, tan, tanh, where)
