#@ file step 23
"""mydezero: 『밑바닥부터 시작하는 딥러닝 3』을 따라 직접 만드는 DeZero.

`import mydezero` 하면 이 파일이 실행된다. 자주 쓰는 이름을 여기 모아 두면
`from mydezero import Variable` 한 줄로 쓸 수 있다. 단계마다 무엇이
더해졌는지는 `python steps/mydezero_at.py --changes`로 볼 수 있다.
"""
#@ step 23-29
from mydezero.core_simple import Variable  # noqa: E402,F401
from mydezero.core_simple import Function  # noqa: E402,F401
from mydezero.core_simple import using_config  # noqa: E402,F401
from mydezero.core_simple import no_grad  # noqa: E402,F401
from mydezero.core_simple import as_array  # noqa: E402,F401
from mydezero.core_simple import as_variable  # noqa: E402,F401
from mydezero.core_simple import Config  # noqa: E402,F401
#@ end
#@ step 30
from mydezero.core import Variable  # noqa: E402,F401
from mydezero.core import Function  # noqa: E402,F401
from mydezero.core import using_config  # noqa: E402,F401
from mydezero.core import no_grad  # noqa: E402,F401
from mydezero.core import as_array  # noqa: E402,F401
from mydezero.core import as_variable  # noqa: E402,F401
from mydezero.core import Config  # noqa: E402,F401
#@ end
#@ step 44
from mydezero.core import Parameter  # noqa: E402,F401
from mydezero.layers import Layer  # noqa: E402,F401
#@ end
#@ step 45
from mydezero.models import Model  # noqa: E402,F401
#@ end
#@ step 49
from mydezero.datasets import Dataset  # noqa: E402,F401
#@ end
#@ step 50
from mydezero.dataloaders import DataLoader  # noqa: E402,F401
#@ end
#@ step 54
from mydezero.core import test_mode  # noqa: E402,F401
#@ end
#@ step 60
from mydezero.dataloaders import SeqDataLoader  # noqa: E402,F401
#@ end
#@ step 30

import mydezero.functions  # noqa: E402,F401
import mydezero.utils  # noqa: E402,F401
#@ end
#@ step 46
import mydezero.optimizers  # noqa: E402,F401
#@ end
#@ step 49
import mydezero.datasets  # noqa: E402,F401
import mydezero.transforms  # noqa: E402,F401
#@ end
#@ step 50
import mydezero.dataloaders  # noqa: E402,F401
#@ end
#@ step 52
import mydezero.cuda  # noqa: E402,F401
#@ end
#@ step 57
import mydezero.functions_conv  # noqa: E402,F401
#@ end
