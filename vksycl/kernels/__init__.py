"""Kernel front ends: the glue between a Python kernel and the layers below it.

They turn a kernel and a launch shape into a runtime command (compile or load, marshal
arguments), and hold what the extensions add on the host side: kernel bundles, free
function and source kernels, kernel properties, device_global queries, virtual function
checks and `if_device` outside kernels. They import the compiler and the runtime; neither
imports them.
"""
