"""Which OpenBLAS kernel runs, and which second kernel the number tests run under (tests only).

float32 results depend on the BLAS kernel's order of summation (docs/examples.md,
"커널에 따라 달라지는 숫자"), so the tests marked ``blas_numbers`` run twice in
CI: in the suite under the machine's kernel, and again in a subprocess under a
second kernel this CPU can run (tests/test_blas_kernels.py).  Where the
environment already sets ``OPENBLAS_CORETYPE`` (some machines need it: older
OpenBLAS builds compute wrong results or crash on their default kernel), it is
never overridden and there is no second kernel.
"""
import os
import platform
from pathlib import Path

# Preferred second kernels, best first, with the CPU feature each needs
# (/proc/cpuinfo "flags" on x86-64, "Features" on arm64; None: every CPU of the family).
X86_CHOICES = (('SkylakeX', 'avx512f'), ('Haswell', 'avx2'), ('Sandybridge', 'avx'),
               ('Nehalem', None))
ARM64_CHOICES = (('NEOVERSEN1', 'asimd'), ('ARMV8', None))


def current_kernel():
    """The architecture the loaded BLAS reports (threadpoolctl), e.g. 'SkylakeX'.

    A BLAS that names no architecture (MKL, Accelerate) gives its internal API
    name ('mkl'), no BLAS at all 'unknown': never a column of the page's table.
    """
    import numpy  # noqa: F401  (loads the BLAS library that threadpoolctl reads)
    import threadpoolctl
    for info in threadpoolctl.threadpool_info():
        if info.get('user_api') == 'blas':
            return info.get('architecture') or info.get('internal_api') or 'unknown'
    return 'unknown'


def cpu_features(cpuinfo=Path('/proc/cpuinfo')):
    """The first "flags" (x86-64) or "Features" (arm64) line of /proc/cpuinfo, as a set.

    Empty where there is no /proc/cpuinfo (then only the kernels that need no
    feature are chosen).
    """
    if not cpuinfo.exists():
        return set()
    for line in cpuinfo.read_text(encoding='utf-8', errors='replace').splitlines():
        key, _, value = line.partition(':')
        if key.strip() in ('flags', 'Features'):
            return set(value.split())
    return set()


def second_kernel(machine, features, current, preset):
    """The kernel to run the number tests under besides ``current``, or None.

    ``machine``: ``platform.machine()``; ``features``: the CPU's feature flags;
    ``current``: the architecture that runs now; ``preset``: the environment's
    ``OPENBLAS_CORETYPE`` ('' when unset).  A preset kernel is never overridden
    (None).  Otherwise the first choice of ``X86_CHOICES``/``ARM64_CHOICES``
    whose feature the CPU has and that is not ``current``.

    Raises:
        ValueError: a machine that is neither x86-64 nor arm64 (the tests name
            no kernels for it).
    """
    if preset:
        return None
    arch = machine.lower()
    if arch in ('x86_64', 'amd64'):
        choices = X86_CHOICES
    elif arch in ('aarch64', 'arm64'):
        choices = ARM64_CHOICES
    else:
        raise ValueError(f'second_kernel: no OpenBLAS kernels known for machine {machine!r}')
    for kernel, feature in choices:
        if (feature is None or feature in features) and kernel.lower() != current.lower():
            return kernel
    raise ValueError(f'second_kernel: every kernel for {machine!r} is {current!r}')


def this_machines_second_kernel():
    return second_kernel(platform.machine(), cpu_features(), current_kernel(),
                         os.environ.get('OPENBLAS_CORETYPE', '').strip())


# --- docs/examples.md's table of results per kernel ---------------------------------------
EXAMPLES_PAGE = Path(__file__).resolve().parents[1] / 'docs' / 'examples.md'
KERNEL_SECTION = '## 커널에 따라 달라지는 숫자'


def kernel_table():
    """{run label: {kernel: value as printed}}: docs/examples.md's table of results per kernel."""
    text = EXAMPLES_PAGE.read_text(encoding='utf-8')
    section = text.split(KERNEL_SECTION, 1)[1].split('\n## ', 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip('|').split(' | ')]
            for line in section.splitlines() if line.startswith('| ')]
    header, body = rows[0][1:], rows[1:]
    return {row[0].strip('`'): dict(zip(header, row[1:])) for row in body}


def spread(label):
    """What the page quotes for run ``label``: its one value, or 'low–high' over the kernels."""
    values = sorted(set(kernel_table()[label].values()), key=float)
    return values[0] if len(values) == 1 else f'{values[0]}–{values[-1]}'


def assert_measured(label, printed):
    """``printed`` is the table's cell for the kernel that runs, or in the row's range elsewhere.

    Under a kernel the table has a column for, the value must be that cell, digit
    for digit; under another one (never measured: arm64, another OpenBLAS's own
    kernels) it must lie within the values measured.
    """
    row, kernel = kernel_table()[label], current_kernel()
    if kernel in row:
        assert printed == row[kernel], f'{label} under {kernel}: printed {printed}, table {row}'
        return
    values = [float(v) for v in row.values()]
    assert min(values) <= float(printed) <= max(values), (
        f'{label} under {kernel} (no column in docs/examples.md): printed {printed}, measured '
        f'{row}; measure it with python tools/blas_kernels.py and add the column')
