#!/usr/bin/env python3
"""CPU-seconds by command in a process-accounting file, split at a moment.

Usage: benches/cpu_by_command.py PACCT START_EPOCH SPLIT_SECONDS [TOP]

Reads PACCT with `dump-acct` (Debian's `acct`; `benches/fresh_clone.sh`
records one when `accton` is installed and it runs as root) and prints, for
the processes started before START_EPOCH + SPLIT_SECONDS and for those
started after, the user + system seconds of each command name. The kernel
writes a process's record when it ends, under the name of its last thread
(a test daemon may appear as `tokio-rt-worker`), and counts its threads'
time with it.
"""
import collections
import datetime
import subprocess
import sys


def records(pacct):
    out = subprocess.run(["dump-acct", pacct], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = [f.strip() for f in line.split("|")]
        # command, version, user, system, elapsed (ticks of 1/100 s), …, start
        began = datetime.datetime.strptime(fields[-1], "%a %b %d %H:%M:%S %Y")
        began = began.replace(tzinfo=datetime.timezone.utc).timestamp()
        yield fields[0], (float(fields[2]) + float(fields[3])) / 100, began


def main():
    pacct, start, split = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    seconds = [collections.Counter(), collections.Counter()]
    count = [collections.Counter(), collections.Counter()]
    for command, cpu, began in records(pacct):
        if began < start:
            continue
        part = 0 if began - start < split else 1
        seconds[part][command] += cpu
        count[part][command] += 1
    for part, name in ((0, f"started in the first {split:.0f} s"), (1, "started after")):
        print(f"{name}: {sum(seconds[part].values()):.0f} CPU-s in {sum(count[part].values())} processes")
        for command, cpu in seconds[part].most_common(top):
            print(f"  {cpu:8.1f}  {count[part][command]:6d}  {command}")


if __name__ == "__main__":
    main()
