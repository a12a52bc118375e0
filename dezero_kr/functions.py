"""DeZero's ``functions`` module (``import dezero_kr.functions as F``).

This file only gathers names; each operation lives in the module of its concern:

=====================  ===========================================================
``operators``          arithmetic (add sub mul div neg pow rpow), sum_to, broadcast_to,
                       log
``operators_shape``    matmul, reshape, transpose, get_item, sum, max, min
``functions_math``     sin cos tan tanh exp sqrt abs clip maximum minimum where,
                       expand_dims flatten concat stack, average/mean, linear
``functions_nn``       sigmoid relu leaky_relu gelu softmax log_softmax, losses
                       (mean_squared_error softmax_cross_entropy sigmoid_cross_entropy
                       binary_cross_entropy cross_entropy), accuracy dropout
                       batch_norm layer_norm rms_norm embed_id, attention helpers
``functions_conv``     conv2d deconv2d pooling average_pooling im2col col2im
                       (+ the ``_simple`` teaching versions)
=====================  ===========================================================
"""
from dezero_kr.core import Function, Variable, as_array, as_variable  # noqa: F401 (DeZero's F has them)
from dezero_kr.operators import (  # noqa: F401
    Add, AddConstant, BroadcastTo, Div, DivConstant, Mul, MulConstant, Neg, Pow, PowVariable,
    RDivConstant, RPow, RSubConstant, Sub, SubConstant, SumTo, add, broadcast_to, div, mul, neg,
    pow, rdiv, rpow, rsub, sub, sum_to)
from dezero_kr.operators_shape import (  # noqa: F401
    GetItem, GetItemGrad, MatMul, Max, Min, Reshape, Sum, Transpose, get_item, matmul, max, min,
    reshape, sum, transpose)
from dezero_kr.functions_math import (  # noqa: F401
    Abs, Clip, Concat, Cos, Exp, Linear, Log, Maximum, Minimum, Sin, Sqrt, Tan, Tanh, Where,
    abs, average, clip, concat, cos, exp, expand_dims, flatten, linear, linear_simple, log, maximum,
    mean, minimum, sin, sqrt, stack, tan, tanh, where)
from dezero_kr.functions_nn import (  # noqa: F401
    BatchNorm, Dropout, GELU, LayerNorm, LeakyReLU, LogSoftmax, MaskedFill, MeanSquaredError,
    MultiHeadAttention, RMSNorm, ReLU, ScaledDotProductAttention, Sigmoid, SigmoidCrossEntropy,
    Softmax, SoftmaxCrossEntropy,
    accuracy, batch_norm, batch_nrom, binary_cross_entropy, causal_mask, cross_entropy, dropout,
    embed_id, gelu, layer_norm, leaky_relu, log_softmax, masked_fill, mean_squared_error,
    mean_squared_error_simple, multi_head_attention, relu, rms_norm, scaled_dot_product_attention, sigmoid,
    sigmoid_cross_entropy, sigmoid_simple, softmax, softmax_cross_entropy,
    softmax_cross_entropy_simple, softmax_simple)
from dezero_kr.functions_conv import (  # noqa: F401
    AveragePooling, Col2im, Conv2DGradW, Deconv2d, Im2col, Pooling, Pooling2DGrad,
    Pooling2DWithIndexes, average_pooling, col2im, col2im_array, conv2d, conv2d_simple, deconv2d,
    im2col, im2col_array, pooling, pooling_simple)
