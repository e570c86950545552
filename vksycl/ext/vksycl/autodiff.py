"""`vksycl.ext.vksycl.autodiff`: reverse-mode automatic differentiation of kernels.
`with Tape() as tape:` records launches; `tape.backward(seeds={loss: 1.0})` runs their
adjoints; `tape.gradient(x)` is the gradient of USM pointer `x`."""

from ...kernels.autodiff import Tape

__all__ = ["Tape"]
