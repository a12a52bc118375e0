"""``cupy.lib`` of the stand-in."""
from . import stride_tricks  # noqa: F401
