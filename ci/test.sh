#!/usr/bin/env bash
# The whole test suite on the default Vulkan device (lavapipe where there is no GPU),
# after the same idempotent set-up the README's first command runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
.venv/bin/ruff check .
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ $status -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
fi
exit $status
