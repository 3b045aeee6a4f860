#!/usr/bin/env bash
# The project's test command (README: `npm test`): the software GPU, the browser (Debian's
# Chromium, for test/browser), the test suite, and the freshness check of the committed out/.
set -euo pipefail
cd "$(dirname "$0")/.."
npx prettier --check . # formatting (Prettier, .prettierrc.json; generated out/ and data are ignored)
bash scripts/setup-lavapipe.sh
bash scripts/setup-chromium.sh
npx vitest run "$@"
node bin/kernelc.js build --check
