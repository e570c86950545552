#!/usr/bin/env bash
# The whole test suite on the default Vulkan device (lavapipe where there is no GPU),
# after the same idempotent set-up the README's first command runs; then the examples in
# checked mode (VKSYCL_CHECK=bounds).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
.venv/bin/ruff check .
set +e
.venv/bin/python -m pytest "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
fi
if [ $status -eq 0 ] && [ $# -eq 0 ]; then
  # the examples again in checked mode: every access in bounds, no report
  VKSYCL_CHECK=bounds .venv/bin/python -m pytest -q tests/test_examples.py
  status=$?
fi
exit $status
