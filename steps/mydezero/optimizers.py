#@ file step 46
"""옵티마이저: 기울기로 매개변수를 고친다 (46단계: Optimizer, SGD, MomentumSGD;
54단계: AdaGrad, RMSprop, Adam과 WeightDecay 훅; 58단계: FreezeParam 훅).

    optimizer = SGD(lr=0.1).setup(model)
    ...
    loss.backward()
    optimizer.update()        # model의 매개변수를 모두 한 걸음씩

상태(속도 v, 누적 h ...)는 매개변수마다 따로 둔다: id(param)을 열쇠로 하는
dict.
"""
#@ step 54
import math
#@ end

import numpy as np

#@ step 58
from mydezero.core import Parameter
#@ end
#@ step 52
from mydezero import cuda
#@ end


class Optimizer:
    def __init__(self):
        self.target = None
        self.hooks = []

    def setup(self, target):
        self.target = target
        return self

    def update(self):
        # 기울기가 있는 것만
        params = [p for p in self.target.params() if p.grad is not None]

        for f in self.hooks:  # 전처리 (가중치 감소, 매개변수 고정)
            f(params)

        for param in params:
            if param.grad is not None:  # 훅이 지웠으면 건너뛴다 (FreezeParam)
                self.update_one(param)

    def update_one(self, param):
        raise NotImplementedError()

    def add_hook(self, f):
        self.hooks.append(f)


#@ step 46-51
def zeros_like(param):
    """상태를 담을, param.data와 같은 모양의 0 배열."""
    return np.zeros_like(param.data)
#@ end
#@ step 52
def zeros_like(param):
    """상태를 담을, param.data와 같은 모양, 같은 장치(numpy/cupy)의 0 배열."""
    xp = cuda.get_array_module(param.data)
    return xp.zeros_like(param.data)
#@ end


# =============================================================================
# 갱신 규칙
# =============================================================================
class SGD(Optimizer):
    """W <- W - lr * dL/dW."""

    def __init__(self, lr=0.01):
        super().__init__()
        self.lr = lr

    def update_one(self, param):
        param.data -= self.lr * param.grad.data


class MomentumSGD(Optimizer):
    """v <- momentum * v - lr * dL/dW;  W <- W + v."""

    def __init__(self, lr=0.01, momentum=0.9):
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self.vs = {}

    def update_one(self, param):
        v_key = id(param)
        if v_key not in self.vs:
            self.vs[v_key] = zeros_like(param)

        v = self.vs[v_key]
        v *= self.momentum
        v -= self.lr * param.grad.data
        param.data += v
#@ step 54


class AdaGrad(Optimizer):
    """h <- h + g * g; W <- W - lr * g / (sqrt(h) + eps). 많이 움직인
    매개변수는 천천히."""

    def __init__(self, lr=0.001, eps=1e-8):
        super().__init__()
        self.lr = lr
        self.eps = eps
        self.hs = {}

    def update_one(self, param):
        h_key = id(param)
        if h_key not in self.hs:
            self.hs[h_key] = zeros_like(param)

        lr = self.lr
        eps = self.eps
        grad = param.grad.data
        h = self.hs[h_key]

        h += grad * grad
        param.data -= lr * grad / (np.sqrt(h) + eps)


class RMSprop(Optimizer):
    """v <- alpha * v + (1 - alpha) * g * g; W <- W - lr * g / (sqrt(v) + eps).
    AdaGrad의 누적을 지수 이동 평균으로 바꿔 오래된 기울기를 잊는다 (DeZero에는
    없다)."""

    def __init__(self, lr=0.01, alpha=0.99, eps=1e-8):
        super().__init__()
        self.lr = lr
        self.alpha = alpha
        self.eps = eps
        self.vs = {}

    def update_one(self, param):
        key = id(param)
        if key not in self.vs:
            self.vs[key] = zeros_like(param)

        grad = param.grad.data
        v = self.vs[key]
        v *= self.alpha
        v += (1 - self.alpha) * grad * grad
        param.data -= self.lr * grad / (np.sqrt(v) + self.eps)


class Adam(Optimizer):
    """m, v: 기울기와 그 제곱의 이동 평균. W <- W - lr_t * m / (sqrt(v) + eps),
    lr_t = alpha * sqrt(1 - beta2^t) / (1 - beta1^t) (처음 몇 걸음의 치우침을
    바로잡는다)."""

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__()
        self.t = 0
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.ms = {}
        self.vs = {}

    def update(self, *args, **kwargs):
        self.t += 1
        super().update(*args, **kwargs)

    @property
    def lr(self):
        fix1 = 1. - math.pow(self.beta1, self.t)
        fix2 = 1. - math.pow(self.beta2, self.t)
        return self.alpha * math.sqrt(fix2) / fix1

    def update_one(self, param):
        key = id(param)
        if key not in self.ms:
            self.ms[key] = zeros_like(param)
            self.vs[key] = zeros_like(param)

        m, v = self.ms[key], self.vs[key]
        beta1, beta2, eps = self.beta1, self.beta2, self.eps
        grad = param.grad.data

        m += (1 - beta1) * (grad - m)
        v += (1 - beta2) * (grad * grad - v)
        param.data -= self.lr * (m / (np.sqrt(v) + eps))


# =============================================================================
# 훅: update 전에 기울기를 손본다 (optimizer.add_hook)
# =============================================================================
class WeightDecay:
    def __init__(self, rate):
        self.rate = rate

    def __call__(self, params):
        for param in params:
            param.grad.data += self.rate * param.data
#@ end
#@ step 58


class FreezeParam:
    """고정할 층(또는 매개변수)의 기울기를 지워 갱신되지 않게 한다."""

    def __init__(self, *layers):
        self.freeze_params = []
        for l in layers:
            if isinstance(l, Parameter):
                self.freeze_params.append(l)
            else:
                for p in l.params():
                    self.freeze_params.append(p)

    def __call__(self, params):
        for p in self.freeze_params:
            p.grad = None
#@ end
