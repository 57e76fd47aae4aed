"""Checks the memory report at the end of `otc compile --emit program`
against the program's own buffer table (read from stdin): parameters,
gradient buffers and data inputs are the sums of those buffers' sizes
(the inputs twice where CUDA double-buffers them),
optimizer state is SLOTS times the gradient buffers, low-precision copies
are the optimizer-written ones (low_param buffers, each parameter once)
plus their share of the planned arena, which activations take the rest of,
constants are the constant buffers, and the categories sum to the total.

usage: otc compile ... --emit program | check_memory_report.py SLOTS
       otc compile ... --emit program | check_memory_report.py peak
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


def peak(text):
    """Recomputes, from the buffer table and the steps that name each
    buffer, the arena bytes live at each step; the largest must be the
    report's "live at the peak", at the step it names, and the peak table's
    categories must sum to its total."""
    bufs = {}
    for m in re.finditer(r"^  b(\d+) (\w+)\[([\d,]*)\] arena @\d+", text, re.M):
        n = SIZES[m.group(2)]
        for d in filter(None, m.group(3).split(",")):
            n *= int(d)
        bufs[int(m.group(1))] = n
    steps = re.split(r"^  s\d+ ", text.split("\nsteps:\n")[1].split("memory plan")[0], flags=re.M)[1:]
    first, last = {}, {}
    for i, s in enumerate(steps):
        for b in map(int, re.findall(r"\bb(\d+)\b", s)):
            if b in bufs:
                first.setdefault(b, i)
                last[b] = i
    live = [sum(n for b, n in bufs.items() if b in first and first[b] <= i <= last[b])
            for i in range(len(steps))]
    at = max(range(len(live)), key=lambda i: (live[i], -i))
    table = text.split("memory at the peak")[1]
    step = int(re.search(r"step (\d+) of", table).group(1))
    said = int(re.search(r"(\d+) live at the peak", table).group(1))
    rows = [int(v) for k, v in re.findall(r"^  ([a-z][a-zA-Z0-9 ().-]+?)\s+(\d+)$", table, re.M)]
    ok = said == live[at] and step == at and sum(rows[:-1]) == rows[-1]
    print(f"peak: recomputed {live[at]} bytes at step {at}, report {said} at step {step}; "
          f"categories sum {sum(rows[:-1])}, total {rows[-1]}")
    print("peak table matches the buffers" if ok else "peak table WRONG")
    sys.exit(0 if ok else 1)


def main():
    if sys.argv[1] == "ratio":
        return ratio(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    if sys.argv[1] == "peak":
        return peak(sys.stdin.read())
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
                  re.findall(r"^  ([a-z][a-zA-Z0-9 ().-]+?)\s+(\d+)$",
                             text.split("memory plan (bytes):")[1].split("memory at the peak")[0], re.M))
    want = {
        "parameters (float32)": sums.get("param", 0),
        "gradient buffers (float32)": sums.get("grad", 0),
        "optimizer state (float32)": slots * sums.get("grad", 0),
        # CUDA double-buffers the inputs (one set copied while the other computes).
        "data inputs (one micro-batch)": sums.get("input", 0),
        "data inputs (two micro-batches)": 2 * sums.get("input", 0),
        "constants": sums.get("constant", 0),
    }
    ok = True
    if sum(k.startswith("data inputs") for k in report) != 1:
        print("MISMATCH: the report should have one data inputs row")
        ok = False
    for k, v in want.items():
        if k.startswith("data inputs") and k not in report:
            continue
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
