#!/usr/bin/python3
"""Starts a data-parallel group as a launcher other than mpirun would: N
processes of COMMAND, each with OTC_RANK, OTC_WORLD_SIZE and
OTC_RENDEZVOUS=RENDEZVOUS in its environment. When a rank fails, the
others are killed a second later, as launchers do. Prints rank 0's output
(and any failed rank's), then each rank's exit status; exits non-zero when
any rank did.

usage: run_ranks.py N RENDEZVOUS -- COMMAND...
"""
import os
import subprocess
import sys
import threading
import time


def main():
    n, rendezvous = int(sys.argv[1]), sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    ranks = []
    for r in range(n):
        env = dict(os.environ, OTC_RANK=str(r), OTC_WORLD_SIZE=str(n), OTC_RENDEZVOUS=rendezvous)
        ranks.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT))
    # As launchers do, a rank that fails ends the others (a stopped rank
    # would otherwise wait forever); their output is read meanwhile.
    outputs = [b""] * n
    readers = [threading.Thread(target=lambda r=r: outputs.__setitem__(r, ranks[r].stdout.read()))
               for r in range(n)]
    for t in readers:
        t.start()
    while any(p.poll() is None for p in ranks):
        if any(p.poll() for p in ranks):
            time.sleep(1)
            for p in ranks:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.05)
    for t in readers:
        t.join()
    outputs = [o.decode(errors="replace") for o in outputs]
    for r, out in enumerate(outputs):
        if r == 0 or ranks[r].returncode:
            print(out, end="")
    for r, p in enumerate(ranks):
        print(f"rank {r}: exit {p.returncode}")
    return 1 if any(p.returncode for p in ranks) else 0


if __name__ == "__main__":
    sys.exit(main())
