import sys
from pathlib import Path

import pytest

from vksycl import _kp as kp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# This folder is named like the package it tests; make sure `import spirv_gen` finds the
# package, not this folder as a namespace, however pytest was started.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if getattr(sys.modules.get("spirv_gen"), "__file__", "") is None:
    del sys.modules["spirv_gen"]
sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def mgr() -> kp.Manager:
    """One Kompute manager on the default device for the spirv_gen kernel tests."""
    return kp.Manager()
