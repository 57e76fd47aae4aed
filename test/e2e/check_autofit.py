#!/usr/bin/python3
"""Checks one `otc compile --memory-budget` run: the configuration it chose
(from its "otc: chose ..." line) has a memory plan (the "total" of the
plan it printed for the executable) within the budget, and the two agree.
Prints "micro-batch N, accumulation K, recompute POLICY" or what is wrong.

usage: check_autofit.py BUDGET_BYTES LOG
"""
import re
import sys


def main():
    budget, text = int(sys.argv[1]), open(sys.argv[2]).read()
    chose = re.search(r"^otc: chose micro-batch (\d+), accumulation (\d+)[^,]*, recompute (.*): "
                      r"planned peak (\d+) bytes", text, re.M)
    totals = re.findall(r"^  total +(\d+)$", text, re.M)
    if not chose or not totals:
        sys.exit("no choice or no memory plan in the log")
    n, k, policy, planned = chose.groups()
    total = int(totals[-1])
    if total != int(planned):
        sys.exit(f"the executable's plan ({total}) is not the chosen plan ({planned})")
    if total > budget:
        sys.exit(f"planned {total} bytes, over the budget of {budget}")
    print(f"fits: micro-batch {n}, accumulation {k}, recompute {policy}")


if __name__ == "__main__":
    main()
