#@ file step 23
"""mydezero: 『밑바닥부터 시작하는 딥러닝 3』을 따라 직접 만드는 DeZero.

`import mydezero` 하면 이 파일이 실행된다. 자주 쓰는 이름을 여기 모아 두면
`from mydezero import Variable` 한 줄로 쓸 수 있다. 단계마다 무엇이
더해졌는지는 `python steps/mydezero_at.py --changes`로 볼 수 있다.

아래 import는 이 파일에서 쓰려는 것이 아니라 밖에 보이려고 모은 것이다(린터가 "쓰지 않는
import"라고 알려도 지우지 않는다).
"""
#@ step 23-29
from mydezero.core_simple import Variable
from mydezero.core_simple import Function
from mydezero.core_simple import using_config
from mydezero.core_simple import no_grad
from mydezero.core_simple import as_array
from mydezero.core_simple import as_variable
from mydezero.core_simple import Config
#@ end
#@ step 30
from mydezero.core import Variable
from mydezero.core import Function
from mydezero.core import using_config
from mydezero.core import no_grad
from mydezero.core import as_array
from mydezero.core import as_variable
from mydezero.core import Config
#@ end
#@ step 44
from mydezero.core import Parameter
from mydezero.layers import Layer
#@ end
#@ step 45
from mydezero.models import Model
#@ end
#@ step 49
from mydezero.datasets import Dataset
#@ end
#@ step 50
from mydezero.dataloaders import DataLoader
#@ end
#@ step 54
from mydezero.core import test_mode
#@ end
#@ step 60
from mydezero.dataloaders import SeqDataLoader
#@ end
#@ step 30

import mydezero.functions
import mydezero.utils
#@ end
#@ step 46
import mydezero.optimizers
#@ end
#@ step 49
import mydezero.datasets
import mydezero.transforms
#@ end
#@ step 50
import mydezero.dataloaders
#@ end
#@ step 52
import mydezero.cuda
#@ end
#@ step 56
import mydezero.functions_conv
#@ end
