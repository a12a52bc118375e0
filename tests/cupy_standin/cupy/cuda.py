"""``cupy.cuda`` of the stand-in: one device, always there."""


class runtime:  # noqa: N801  (cupy.cuda.runtime is a module in CuPy)
    @staticmethod
    def getDeviceCount():  # noqa: N802  (CuPy's name)
        return 1


class Device:
    def __init__(self, device_id=0):
        self.id = device_id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return self

    def synchronize(self):
        pass


def get_device_id():
    return 0


class MemoryPointer:
    """What ``cupy.ndarray.data`` is: device memory, not an array."""

    def __init__(self, size):
        self.size = size
