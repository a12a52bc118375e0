#@ file step 30
"""mydezero의 함수 모음 (import mydezero.functions as F). 30단계부터 하나씩
늘어난다.

모든 함수의 backward는 Variable 연산으로 적는다: 그래서 고차 미분이 된다.
"""
import numpy as np

#@ step 52
from mydezero import cuda
#@ end
from mydezero import utils
from mydezero.core import Function, Variable, as_array, as_variable
# F.add처럼 쓰도록 core의 연산도 이 모듈의 이름으로 내보낸다
from mydezero.core import add, sub, rsub, mul, div, neg, pow
#@ step 54
from mydezero.core import Config
#@ end


# =============================================================================
# 원소별 함수: sin / cos / exp / log
# =============================================================================
class Sin(Function):
    def forward(self, x):
        # cupy 배열이면 NumPy가 cupy에 넘겨준다 (__array_ufunc__)
        y = np.sin(x)
        return y

    def backward(self, gy):
        x, = self.inputs
        gx = gy * cos(x)
        return gx


def sin(x):
    return Sin()(x)


class Cos(Function):
    def forward(self, x):
        y = np.cos(x)
        return y

    def backward(self, gy):
        x, = self.inputs
        gx = gy * -sin(x)
        return gx


def cos(x):
    return Cos()(x)


class Exp(Function):
    def forward(self, x):
        y = np.exp(x)
        return y

    def backward(self, gy):
        y = self.outputs[0]()  # 약한 참조: exp(x)의 미분은 exp(x) 자신
        gx = gy * y
        return gx


def exp(x):
    return Exp()(x)


class Log(Function):
    def forward(self, x):
        y = np.log(x)
        return y

    def backward(self, gy):
        x, = self.inputs
        gx = gy / x
        return gx


def log(x):
    return Log()(x)
#@ step 35


class Tanh(Function):
    def forward(self, x):
        y = np.tanh(x)
        return y

    def backward(self, gy):
        y = self.outputs[0]()
        gx = gy * (1 - y * y)
        return gx


def tanh(x):
    return Tanh()(x)
#@ end
#@ step 38


# =============================================================================
# 텐서의 모양: reshape / transpose
# =============================================================================
class Reshape(Function):
    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        self.x_shape = x.shape
        y = x.reshape(self.shape)
        return y

    def backward(self, gy):
        return reshape(gy, self.x_shape)


def reshape(x, shape):
    if x.shape == shape:
        return as_variable(x)
    return Reshape(shape)(x)


class Transpose(Function):
    def __init__(self, axes=None):
        self.axes = axes

    def forward(self, x):
        y = x.transpose(self.axes)
        return y

    def backward(self, gy):
        if self.axes is None:
            return transpose(gy)

        axes_len = len(self.axes)
        # 역순열
        inv_axes = tuple(np.argsort([ax % axes_len for ax in self.axes]))
        return transpose(gy, inv_axes)


def transpose(x, axes=None):
    return Transpose(axes)(x)


def flatten(x):
    """배치 축(0번)만 남기고 나머지를 한 줄로 편다: (N, ...) -> (N, 나머지의
    곱)."""
    return reshape(x, (x.shape[0], -1))
#@ end
#@ step 39


# =============================================================================
# 합과 브로드캐스트
# =============================================================================
class Sum(Function):
    def __init__(self, axis, keepdims):
        self.axis = axis
        self.keepdims = keepdims

    def forward(self, x):
        self.x_shape = x.shape
        y = x.sum(axis=self.axis, keepdims=self.keepdims)
        return y

    def backward(self, gy):
        gy = utils.reshape_sum_backward(gy, self.x_shape, self.axis,
                                        self.keepdims)
        gx = broadcast_to(gy, self.x_shape)
        return gx


def sum(x, axis=None, keepdims=False):
    return Sum(axis, keepdims)(x)


def average(x, axis=None, keepdims=False):
    """sum(x, axis) / (더한 원소 수)."""
    x = as_variable(x)
    y = sum(x, axis, keepdims)
    return y * (y.data.size / x.data.size)


mean = average
#@ end
#@ step 39-39


def broadcast_to(x, shape):
    """39단계의 임시판: 역전파 없이 복사만 한다 (40단계에서 BroadcastTo로
    바뀐다)."""
    x = as_variable(x)
    return Variable(np.broadcast_to(x.data, shape))
#@ end
#@ step 40


class SumTo(Function):
    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        self.x_shape = x.shape
        y = utils.sum_to(x, self.shape)
        return y

    def backward(self, gy):
        gx = broadcast_to(gy, self.x_shape)
        return gx


def sum_to(x, shape):
    if x.shape == shape:
        return as_variable(x)
    return SumTo(shape)(x)


class BroadcastTo(Function):
    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        self.x_shape = x.shape
#@ end
#@ step 40-51
        xp = np  # 배열 모듈 (52단계에서 cupy도 고르게 된다)
#@ end
#@ step 52
        xp = cuda.get_array_module(x)  # numpy 또는 cupy
#@ end
#@ step 40
        y = xp.broadcast_to(x, self.shape)
        return y

    def backward(self, gy):
        gx = sum_to(gy, self.x_shape)
        return gx


def broadcast_to(x, shape):
    if x.shape == shape:
        return as_variable(x)
    return BroadcastTo(shape)(x)
#@ end
#@ step 41


# =============================================================================
# 행렬 곱
# =============================================================================
class MatMul(Function):
    def forward(self, x, W):
        y = x.dot(W)
        return y

    def backward(self, gy):
        x, W = self.inputs
        gx = matmul(gy, W.T)
        gW = matmul(x.T, gy)
        return gx, gW


def matmul(x, W):
    return MatMul()(x, W)
#@ end
#@ step 42


# =============================================================================
# 손실 함수
# =============================================================================
def mean_squared_error_simple(x0, x1):
    """이미 있는 연산으로 적은 평균 제곱 오차 (42단계).

    뺄셈, 거듭제곱, sum, 나눗셈이 모두 그래프에 남는다."""
    x0, x1 = as_variable(x0), as_variable(x1)
    diff = x0 - x1
    y = sum(diff ** 2) / len(diff)
    return y


class MeanSquaredError(Function):
    """sum((x0 - x1)^2) / N (N = 배치 크기 = len(x0))."""

    def forward(self, x0, x1):
        diff = x0 - x1
        y = (diff ** 2).sum() / len(diff)
        return y

    def backward(self, gy):
        x0, x1 = self.inputs
        diff = x0 - x1
        gx0 = gy * diff * (2. / len(diff))
        gx1 = -gx0
        return gx0, gx1


def mean_squared_error(x0, x1):
    return MeanSquaredError()(x0, x1)
#@ end
#@ step 43


# =============================================================================
# 신경망 함수: linear / sigmoid
# =============================================================================
class Linear(Function):
    """y = x W + b. b가 None이면 더하지 않는다."""

    def forward(self, x, W, b):
        y = x.dot(W)
        if b is not None:
            y += b
        return y

    def backward(self, gy):
        x, W, b = self.inputs
        gb = None if b.data is None else sum_to(gy, b.shape)
        gx = matmul(gy, W.T)
        gW = matmul(x.T, gy)
        return gx, gW, gb


def linear(x, W, b=None):
    return Linear()(x, W, b)


class Sigmoid(Function):
    def forward(self, x):
        # 1 / (1 + exp(-x))와 같고 넘치지 않는다
        y = np.tanh(x * 0.5) * 0.5 + 0.5
        return y

    def backward(self, gy):
        y = self.outputs[0]()
        gx = gy * y * (1 - y)
        return gx


def sigmoid(x):
    return Sigmoid()(x)
#@ end
#@ step 47


# =============================================================================
# 꺼내기, 소프트맥스, 교차 엔트로피
# =============================================================================
class GetItem(Function):
    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        y = x[self.slices]
        return y

    def backward(self, gy):
        x, = self.inputs
        f = GetItemGrad(self.slices, x.shape)
        return f(gy)


class GetItemGrad(Function):
    """GetItem의 backward: 꺼낸 자리에 gy를 더해 넣은 (입력 모양의) 배열."""

    def __init__(self, slices, in_shape):
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy):
#@ end
#@ step 47-51
        xp = np  # 배열 모듈 (52단계에서 cupy도 고르게 된다)
#@ end
#@ step 52
        xp = cuda.get_array_module(gy)
#@ end
#@ step 47
        gx = xp.zeros(self.in_shape, dtype=gy.dtype)
#@ end
#@ step 47-51
        add_at = np.add.at
#@ end
#@ step 52
        add_at = np.add.at if xp is np else cuda.scatter_add
#@ end
#@ step 47
        # 같은 자리를 두 번 꺼냈으면 두 번 더한다
        add_at(gx, self.slices, gy)
        return gx

    def backward(self, ggx):
        return get_item(ggx, self.slices)


def get_item(x, slices):
    f = GetItem(slices)
    return f(x)


def softmax_simple(x, axis=1):
    x = as_variable(x)
    y = exp(x)
    sum_y = sum(y, axis=axis, keepdims=True)
    return y / sum_y


def softmax_cross_entropy_simple(x, t):
    x, t = as_variable(x), as_variable(t)
    N = x.shape[0]
    p = softmax_simple(x)  # 큰 점수에서는 넘친다 (48단계의 Softmax)
    p = clip(p, 1e-15, 1.0)  # log(0)을 피한다
    log_p = log(p)
    tlog_p = log_p[np.arange(N), t.data]
    y = -1 * sum(tlog_p) / N
    return y


class Clip(Function):
    def __init__(self, x_min, x_max):
        self.x_min = x_min
        self.x_max = x_max

    def forward(self, x):
        y = np.clip(x, self.x_min, self.x_max)
        return y

    def backward(self, gy):
        x, = self.inputs
        mask = (x.data >= self.x_min) * (x.data <= self.x_max)
        gx = gy * mask
        return gx


def clip(x, x_min, x_max):
    return Clip(x_min, x_max)(x)
#@ end
#@ step 48


# =============================================================================
# 넘치지 않는 소프트맥스와 교차 엔트로피 (학습에 쓰는 것)
# =============================================================================
class Softmax(Function):
    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        y = x - x.max(axis=self.axis, keepdims=True)  # 큰 값에서 넘치지 않게
        y = np.exp(y)
        y /= y.sum(axis=self.axis, keepdims=True)
        return y

    def backward(self, gy):
        y = self.outputs[0]()
        gx = y * gy
        sumdx = gx.sum(axis=self.axis, keepdims=True)
        gx -= y * sumdx
        return gx


def softmax(x, axis=1):
    return Softmax(axis)(x)


class SoftmaxCrossEntropy(Function):
    """x (N, C) 점수와 정답 번호 t (N,)의 교차 엔트로피, N으로 나눈 평균."""

    def forward(self, x, t):
        N = x.shape[0]
        log_z = utils.logsumexp(x, axis=1)
        log_p = x - log_z
#@ end
#@ step 48-51
        xp = np  # 배열 모듈 (52단계에서 cupy도 고르게 된다)
#@ end
#@ step 52
        xp = cuda.get_array_module(x)
#@ end
#@ step 48
        log_p = log_p[xp.arange(N), t.ravel()]
        y = -log_p.sum() / np.float32(N)
        return y

    def backward(self, gy):
        x, t = self.inputs
        N, CLS_NUM = x.shape

        gy *= 1 / N
        y = softmax(x)
#@ end
#@ step 48-51
        xp = np  # 배열 모듈 (52단계에서 cupy도 고르게 된다)
#@ end
#@ step 52
        xp = cuda.get_array_module(t.data)
#@ end
#@ step 48
        t_onehot = xp.eye(CLS_NUM, dtype=t.dtype)[t.data]
        y = (y - t_onehot) * gy
        return y


def softmax_cross_entropy(x, t):
    return SoftmaxCrossEntropy()(x, t)


class LogSoftmax(Function):
    """log softmax(x) = x - logsumexp(x) (넘치지 않는다)."""

    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        log_z = utils.logsumexp(x, self.axis)
        y = x - log_z
        return y

    def backward(self, gy):
        y = self.outputs[0]()
        gx = gy - exp(y) * gy.sum(axis=self.axis, keepdims=True)
        return gx


def log_softmax(x, axis=1):
    return LogSoftmax(axis)(x)
#@ end
#@ step 50


# =============================================================================
# 정확도 (미분하지 않는다)
# =============================================================================
def accuracy(y, t):
    y, t = as_variable(y), as_variable(t)

    pred = y.data.argmax(axis=1).reshape(t.shape)
    result = (pred == t.data)
    acc = result.mean()
#@ end
#@ step 50-51
    xp = np  # 배열 모듈 (52단계에서 cupy도 고르게 된다)
#@ end
#@ step 52
    xp = cuda.get_array_module(acc)
#@ end
#@ step 50
    return Variable(xp.asarray(acc))
#@ end
#@ step 51


class ReLU(Function):
    def forward(self, x):
        y = np.maximum(x, 0.0)
        return y

    def backward(self, gy):
        x, = self.inputs
        mask = x.data > 0
        gx = gy * mask
        return gx


def relu(x):
    return ReLU()(x)
#@ end
#@ step 54


# =============================================================================
# 드롭아웃: 학습할 때만 (Config.train)
# =============================================================================
def dropout(x, dropout_ratio=0.5):
    """역 드롭아웃: 학습 때 살아남은 값을 1 / (1 - ratio)배 해 둔다. 테스트
    때는 그대로."""
    x = as_variable(x)

    if Config.train:
        xp = cuda.get_array_module(x)
        mask = xp.random.rand(*x.shape) > dropout_ratio
        scale = xp.array(1.0 - dropout_ratio).astype(x.dtype)
        y = x * mask / scale
        return y
    else:
        return x
#@ end
#@ step 55


# =============================================================================
# 최댓값, 최솟값 (55단계): 최대 풀링은 창마다의 최댓값이다.
# 58단계의 pooling_simple이 x.max로 쓴다
# =============================================================================
class Max(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis = axis
        self.keepdims = keepdims

    def forward(self, x):
        y = x.max(axis=self.axis, keepdims=self.keepdims)
        return y

    def backward(self, gy):
        x = self.inputs[0]
        y = self.outputs[0]()  # 약한 참조

        shape = utils.max_backward_shape(x, self.axis)
        gy = reshape(gy, shape)
        y = reshape(y, shape)
        cond = (x.data == y.data)  # 최댓값인 자리 (여럿이면 모두)
        gy = broadcast_to(gy, cond.shape)
        return gy * cond


class Min(Max):
    def forward(self, x):
        y = x.min(axis=self.axis, keepdims=self.keepdims)
        return y


def max(x, axis=None, keepdims=False):
    return Max(axis, keepdims)(x)


def min(x, axis=None, keepdims=False):
    return Min(axis, keepdims)(x)
#@ end
#@ step 56


# =============================================================================
# im2col, col2im, 평균 풀링: functions_conv.py의 것을
# F.im2col처럼 쓰게 내보낸다
# =============================================================================
from mydezero.functions_conv import im2col
from mydezero.functions_conv import col2im
from mydezero.functions_conv import average_pooling
#@ end
#@ step 57


# =============================================================================
# 합성곱과 최대 풀링 (functions_conv.py에 있다:
# F.conv2d처럼 쓰도록 여기서 내보낸다)
# =============================================================================
from mydezero.functions_conv import conv2d
from mydezero.functions_conv import deconv2d
from mydezero.functions_conv import conv2d_simple
#@ end
#@ step 58
from mydezero.functions_conv import pooling
from mydezero.functions_conv import pooling_simple
#@ end
