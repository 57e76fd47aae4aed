#!/usr/bin/python3
"""Runs a command and writes its peak resident memory in KiB (the largest of
the process and the children it waited for, from wait4) to OUT.

  peak_rss.py OUT COMMAND [ARG...]      exits with the command's status
"""
import os
import subprocess
import sys

proc = subprocess.Popen(sys.argv[2:], stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))
