"""`vksycl.ext.vksycl.autodiff`: reverse-mode automatic differentiation of kernels.
`with Tape() as tape:` records launches; `tape.backward(seeds={loss: 1.0})` runs their
adjoints; `tape.gradient(x)` is the gradient of USM pointer `x`; `torch_function` makes a
computation launching kernels a differentiable torch function."""

from ...kernels.autodiff import Tape
from ...kernels.torch_function import torch_function

__all__ = ["Tape", "torch_function"]
