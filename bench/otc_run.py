"""What the GPU benchmarks share: running one bundled otc training executable."""
import json
import os
import re
import subprocess
from pathlib import Path


def flag_args(path):
    """train_flags without --steps (the caller sets it)."""
    words = Path(path).read_text().split()
    return [w for i, w in enumerate(words) if w != "--steps" and (i == 0 or words[i - 1] != "--steps")]


def run_train(bundle, d, exe, steps, log, stderr_file):
    """Runs `d/exe` for `steps` steps with `d`'s data and train_flags.

    Keeps its stderr in `stderr_file`, stops the benchmark naming it when it
    fails, and returns (the log's rows, stderr, the memory line's numbers:
    bytes allocated and device growth).
    """
    cmd = [str(Path(d) / exe), "--data", str(Path(d) / "data"), *flag_args(Path(d) / "train_flags"),
           "--steps", str(steps), "--log", str(log)]
    env = dict(os.environ, LD_LIBRARY_PATH=f"{Path(bundle) / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    Path(stderr_file).write_text(r.stderr)
    if r.returncode != 0:
        raise SystemExit(f"otc {Path(d).name} {exe} failed:\n{r.stderr}")
    rows = [json.loads(line) for line in open(log)]
    mem = re.search(r"memory: (\d+) bytes allocated(?:; device memory in use grew by (-?\d+))?",
                    r.stderr)
    return rows, r.stderr, {"allocated": int(mem.group(1)), "device_growth": int(mem.group(2) or 0)}
