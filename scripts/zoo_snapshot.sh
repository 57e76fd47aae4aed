#!/usr/bin/env bash
# Trains every zoo model on the CPU and keeps the trained weights, so that two
# builds can be compared bitwise (a refactor's "behaviour unchanged" check):
#   scripts/zoo_snapshot.sh OUT_DIR [extra otc compile flags...]
#   cmp -s OLD/gpt.bin NEW/gpt.bin
# Each OUT_DIR/NAME.bin holds the initializers' raw bytes in name order.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for dir in test/zoo/fixtures/*/; do
  name=$(basename "$dir")
  echo "zoo_snapshot: $name" >&2
  # shellcheck disable=SC2046
  if ! build/bin/otc compile "$dir/model.onnx" -o "$tmp/train" --target cpu \
       $(cat "$dir/compile_flags") "$@" >/dev/null 2>"$out/$name.err"; then
    echo "zoo_snapshot: $name does not compile with these flags: $(tail -1 "$out/$name.err")" >&2
    continue
  fi
  rm -f "$out/$name.err"
  # shellcheck disable=SC2046
  "$tmp/train" --data "$dir/data" $(cat "$dir/train_flags") --threads 2 --save "$tmp/t.onnx" >/dev/null
  /usr/bin/python3 - "$tmp/t.onnx" "$out/$name.bin" <<'PY'
import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
with open(sys.argv[2], "wb") as f:
    for t in sorted(m.graph.initializer, key=lambda t: t.name):
        f.write(t.name.encode() + b"\0" + numpy_helper.to_array(t).tobytes())
PY
done
