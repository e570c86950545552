"""MkDocs hooks (mkdocs.yml `hooks:`): the API reference is read from the interpreted
modules. The modules mypyc compiles (`ci/build_mypyc.py`) carry no docstrings, so the
reference would lose those of `sycl.queue`, `sycl.handler` and the launch functions."""

import os

os.environ["VKSYCL_MYPYC"] = "0"  # before mkdocstrings first imports vksycl
