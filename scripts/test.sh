#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test.
#   scripts/test.sh             release build (build/), the whole suite
#   scripts/test.sh --sanitize  the same suite on the ASan + UBSan + LSan build
#                               (build-san/, clang), executables built under the
#                               sanitizers too
#   scripts/test.sh --full      both, then a short fuzz smoke of every target
#                               (what CI runs)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "")
    bash scripts/build.sh
    ctest --test-dir build --output-on-failure -j 2
    ;;
  --sanitize)
    bash scripts/build.sh --sanitize
    # LeakSanitizer is on by default with ASan; UBSan findings abort.
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      ctest --test-dir build-san --output-on-failure -j 2
    ;;
  --full)
    bash "$0"
    bash "$0" --sanitize
    bash scripts/fuzz.sh smoke "${OTC_FUZZ_SMOKE_SECONDS:-20}"
    ;;
  *)
    echo "usage: scripts/test.sh [--sanitize|--full]" >&2
    exit 2
    ;;
esac
