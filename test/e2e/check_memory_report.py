"""Checks the memory report at the end of `otc compile --emit program`
against the program's own buffer table (read from stdin): parameters,
gradient buffers and data inputs are the sums of those buffers' sizes,
optimizer state is SLOTS times the gradient buffers, low-precision copies
are the optimizer-written ones (low_param buffers, each parameter once)
plus their share of the planned arena, which activations take the rest of,
constants are the constant buffers, and the categories sum to the total.

usage: otc compile ... --emit program | check_memory_report.py SLOTS
       check_memory_report.py ratio LOW.txt F32.txt MAX
           the activations of LOW's report over F32's must be at most MAX
"""
import re
import sys

SIZES = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i1": 1}


def activations(text):
    return int(re.search(r"^  activations and temporaries\s+(\d+)$", text, re.M).group(1))


def ratio(low, f32, most):
    r = activations(open(low).read()) / activations(open(f32).read())
    print(f"activations ratio {r:.3f} (at most {most})")
    sys.exit(0 if r <= most else 1)


def main():
    if sys.argv[1] == "ratio":
        return ratio(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    slots = int(sys.argv[1])
    text = sys.stdin.read()
    arena = int(re.search(r"arena (\d+) bytes", text).group(1))
    sums, low = {}, {}
    for kind, dims, place, binding in re.findall(r"^  b\d+ (\w+)\[([\d,]*)\] (\w+) ?(\d*)",
                                                 text, re.M):
        n = SIZES[kind]
        for d in filter(None, dims.split(",")):
            n *= int(d)
        if place == "low_param":  # views of one copy share its binding
            low[binding] = n
        else:
            sums[place] = sums.get(place, 0) + n
    report = dict((k.strip(), int(v)) for k, v in
                  re.findall(r"^  ([a-z][a-z0-9 ().-]+?)\s+(\d+)$", text.split("memory plan (bytes):")[1], re.M))
    want = {
        "parameters (float32)": sums.get("param", 0),
        "gradient buffers (float32)": sums.get("grad", 0),
        "optimizer state (float32)": slots * sums.get("grad", 0),
        "data inputs (one micro-batch)": sums.get("input", 0),
        "constants": sums.get("constant", 0),
    }
    ok = True
    for k, v in want.items():
        if report[k] != v:
            print(f"MISMATCH {k}: report {report[k]}, buffers {v}")
            ok = False
    split = report["low-precision weight copies"] + report["activations and temporaries"]
    if split != arena + sum(low.values()):
        print(f"MISMATCH: copies + activations = {split}, arena {arena} + "
              f"optimizer-written copies {sum(low.values())}")
        ok = False
    if sum(v for k, v in report.items() if k != "total") != report["total"]:
        print("MISMATCH: the categories do not sum to the total")
        ok = False
    print("memory report matches the buffers" if ok else "memory report WRONG")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
