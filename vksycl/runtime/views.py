"""Whether numpy arrays still view a buffer's mapped memory. Counted by references, so
this module stays interpreted: compiled code (`mypyc_modules`) holds other numbers of
references while it calls."""

from __future__ import annotations

import sys

import numpy as np


def viewed(host: np.ndarray) -> bool:
    """Whether numpy arrays besides `host`, a buffer's own view of its mapped memory,
    hold that memory: every view's base is the mapped array (numpy collapses chains of
    views). Two references are ours: `host`'s, and the one its `base` hands this call."""
    return sys.getrefcount(host.base) > 2
