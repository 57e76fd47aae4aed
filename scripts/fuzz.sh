#!/usr/bin/env bash
# Runs a libFuzzer campaign on the sanitizer build (ASan + UBSan + LSan).
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]
#   scripts/fuzz.sh smoke [SECONDS]     every target briefly (CI), 20 s each
# TARGET is import (ONNX bytes -> training-step IR), npy (.npy bytes -> the
# loader) or train-options (argv -> the executable's option parser). The
# corpus grows in build-san/fuzz/corpus/TARGET, seeded from the test models
# (checked in, and those the last release test run generated)
# and data; crashes land in build-san/fuzz/artifacts/TARGET.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
targets=(import npy train-options)

if [ "${1:-}" = "smoke" ]; then
  for t in "${targets[@]}"; do
    bash "$0" "$t" "${2:-20}"
  done
  echo "fuzz-smoke: ${#targets[@]} passed, 0 failed"
  exit 0
fi
target=${1:?usage: scripts/fuzz.sh TARGET SECONDS}
seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
shift 2
case " ${targets[*]} " in *" $target "*) ;; *) echo "fuzz: unknown target '$target' (${targets[*]})" >&2; exit 2 ;; esac

[ -x build-san/bin/fuzz-$target ] || bash scripts/build.sh --sanitize
corpus=build-san/fuzz/corpus/$target
artifacts=build-san/fuzz/artifacts/$target
mkdir -p "$corpus" "$artifacts"

# Seeds from the repository, added each run (libFuzzer skips duplicates).
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
case $target in
  import)
    # Two option bytes (loss, micro-batch) before each model.
    i=0
    while IFS= read -r m; do
      for opt in '\x00\x01' '\x01\x02' '\x02\x00'; do
        { printf "$opt"; cat "$m"; } > "$seeds/$i"; i=$((i + 1))
      done
    done < <(find test examples build/test -type f -name '*.onnx' -size -200k 2>/dev/null) # build/test: generated
    ;;
  npy)
    find test examples -name '*.npy' -exec cp -t "$seeds" {} + 2>/dev/null || true
    /usr/bin/python3 test/e2e/make_bad_npy.py "$seeds/bad"
    i=0; for f in "$seeds"/bad/*/x.npy; do mv "$f" "$seeds/bad$i.npy"; i=$((i + 1)); done
    rm -rf "$seeds/bad"
    ;;
  train-options)
    printf -- '--data\0d\0--steps\0003\0--lr\0000.1' > "$seeds/a"
    printf -- '--data\0d\0--epochs\0002\0--accum-steps\0004\0--beta2\0000.99\0--eps\0001e-8' > "$seeds/b"
    printf -- '--data\0d\0--steps\0001\0--weight-decay\0000.01\0--momentum\0000.9\0--save\0m.onnx' > "$seeds/c"
    printf -- '--help' > "$seeds/d"
    printf -- '--data\0d\0--no-decay\0bias$\0--no-decay\0(ln|norm)[0-9]{1,3}' > "$seeds/e"
    # Found by this fuzzer: std::regex overflowed on a large {n,m}, and
    # regcomp's copies of nested repetitions grow exponentially.
    printf -- '--data\0d\0--no-decay\0%s{33333333333333,3333333333}{3333,33}' 3333 > "$seeds/f"
    printf -- '--no-decay\09%s]{-' '++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++' > "$seeds/g"
    # and one that took seconds in regcomp's epsilon closure (a timeout).
    printf -- '--no-decay\0%s' '6*++++++++++ay' > "$seeds/h"
    ;;
esac

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
dict=()
[ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
echo "fuzz: $target for ${seconds}s (corpus $corpus)"
# RSS grows with ASan's quarantine and size-class caches over long runs (no leak:
# libFuzzer runs LeakSanitizer after any input that frees less than it allocates).
build-san/bin/fuzz-$target -max_total_time="$seconds" -timeout=20 -rss_limit_mb=6144 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" "$@" "$corpus" "$seeds" \
  2> "build-san/fuzz/$target.log" || {
  tail -40 "build-san/fuzz/$target.log" >&2
  echo "fuzz: $target found a crash; see $artifacts and build-san/fuzz/$target.log" >&2
  exit 1
}
grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "build-san/fuzz/$target.log" | tr '\n' ' '
echo "corpus: $(ls "$corpus" | wc -l) files"
