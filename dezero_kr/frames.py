"""Where the user's code is on the stack: the one rule that tools naming "your line" share.

``detect_anomaly`` names the lines that created an op, the Define-and-Run
tracer the line that read a traced value; both skip the frames of this
package (every module under ``dezero_kr/``, its sub-packages' included) and
of NumPy, whose files are internal to the user.  The folders end in
``os.sep``, so a user folder ``dezero_kr_examples/`` next to the package is
still the user's.
"""
import os
import sys
import traceback

import numpy as np

__all__ = ['is_internal', 'user_frames', 'user_line']

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_internal_files = {}  # co_filename -> bool (cached: a frame walk runs on every traced read)


def is_internal(filename):
    """Whether ``filename`` (a ``co_filename``) is dezero_kr's, NumPy's or Python's frozen code."""
    known = _internal_files.get(filename)
    if known is None:
        path = os.path.abspath(filename)
        known = _internal_files[filename] = (path.startswith(PACKAGE_DIR) or path.startswith(NUMPY_DIR)
                                             or filename.startswith('<frozen'))
    return known


def user_frames(limit, depth=1):
    """The ``limit`` innermost user frames (outermost first) as a ``traceback.StackSummary``.

    The walk starts ``depth`` frames above the caller (1: the caller's caller);
    source lines are read only when the summary is formatted.
    """
    frames = []
    frame = sys._getframe(depth + 1)
    while frame is not None and len(frames) < limit:
        if not is_internal(frame.f_code.co_filename):
            frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    frames.reverse()
    return traceback.StackSummary.extract(frames, lookup_lines=False)


def user_line(depth=1):
    """``file:line`` of the innermost user frame, the walk starting ``depth`` frames above the
    caller (as ``user_frames``); ``'<unknown>'`` when every frame is internal."""
    found = user_frames(1, depth + 1)
    return f'{found[0].filename}:{found[0].lineno}' if found else '<unknown>'
