#!/usr/bin/env bash
# The whole test suite on the default Vulkan device (lavapipe where there is no GPU), under
# the Khronos validation layer, after the same idempotent set-up the README's first
# command runs; then, when no pytest arguments narrow it, the examples again in checked
# mode (VKSYCL_CHECK=bounds) and the wheel as a user installs it (ci/test_wheel.sh: built,
# or taken from the cache, and tested outside the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
.venv/bin/ruff check .
set +e
# under the Khronos validation layer with synchronization validation: a validation
# warning or error fails the test that caused it (tests/validation_hooks.py)
VKSYCL_VALIDATE=${VKSYCL_VALIDATE:-1} .venv/bin/python -m pytest "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
fi
if [ $status -eq 0 ] && [ $# -eq 0 ]; then
  # the examples again in checked mode: every access in bounds, no report
  VKSYCL_CHECK=bounds VKSYCL_VALIDATE=${VKSYCL_VALIDATE:-1} \
    .venv/bin/python -m pytest -q tests/test_examples.py
  status=$?
fi
if [ $# -eq 0 ]; then
  bash ci/test_wheel.sh || status=$((status ? status : 1))
fi
exit $status
