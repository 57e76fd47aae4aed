#!/usr/bin/python3
"""Stops or kills rank 1 of a data-parallel run mid-training and reports how
the run ended: its exit code, how long the other ranks took to stop after
the signal, its output, and whether the model it would save exists.

usage: data_parallel_fault.py stop|kill LOG SAVED LIMIT AFTER -- MPIRUN ARGS...

LOG is the run's --log (rank 0 writes it; the signal comes once it holds
AFTER steps), SAVED its --save, LIMIT the seconds within which the run
must have ended after the signal. Rank 1 is found among the launcher's
descendants by OMPI_COMM_WORLD_RANK (mpirun) or OTC_RANK (run_ranks.py) in
its environment.
"""
import os
import signal
import subprocess
import sys
import time


def descendants(root):
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(pid))
    found, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for var in f.read().split(b"\0"):
                if var.startswith((b"OMPI_COMM_WORLD_RANK=", b"OTC_RANK=")):
                    return int(var.split(b"=", 1)[1])
    except OSError:
        pass
    return None


def main():
    mode, log, saved, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    after = int(sys.argv[5])
    command = sys.argv[sys.argv.index("--") + 1:]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    victim = None
    while time.time() < deadline and run.poll() is None:
        lines = open(log).read().count("\n") if os.path.exists(log) else 0
        ranks = {rank_of(p): p for p in descendants(run.pid)}
        if lines >= after and 1 in ranks:
            victim = ranks[1]
            break
        time.sleep(0.05)
    if victim is None:
        run.kill()
        print(f"FAIL: the run never reached step {after} with a rank 1")
        print(run.communicate()[0].decode(errors="replace"))
        return 1
    os.kill(victim, signal.SIGSTOP if mode == "stop" else signal.SIGKILL)
    signalled = time.time()
    try:
        out, _ = run.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        run.kill()
        os.kill(victim, signal.SIGKILL)
        print(f"FAIL: the run still going {limit:g} s after rank 1 was signalled")
        return 1
    took = time.time() - signalled
    if os.path.exists(f"/proc/{victim}"):  # the launcher should have ended it
        os.kill(victim, signal.SIGKILL)
    print(out.decode(errors="replace"))
    print(f"exit code {'non-zero' if run.returncode else 0}; "
          f"{'within' if took <= limit else 'after'} {limit:g} s; "
          f"{'saved a model' if os.path.exists(saved) else 'nothing saved'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
