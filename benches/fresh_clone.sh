#!/usr/bin/env bash
# A fresh clone's `.ci/run` (make test), timed: clones this checkout's HEAD
# into a new folder beside ../shared, runs it there and prints the seconds.
# Usage: bash benches/fresh_clone.sh [WORK_DIR] (default: a temporary folder;
# the clone's target folder, about 10 GB, is left there to look at).
# Each line of the run's log starts with the seconds since the start (when a
# crate began compiling, when each test ended), and vmstat writes the
# machine's idle share every 10 s beside it (WORK_DIR/vmstat.log, column
# "id"). Pip, npm and apt caches of this machine are used as they are.
# As root with `accton` installed (Debian's acct), the kernel's process
# accounting records the run in WORK_DIR/pacct (the machine's accounting is
# switched to that file and off after), and the CPU-seconds by command are
# printed for the build and for the tests (benches/cpu_by_command.py).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$here/../shared" 2>/dev/null && pwd) || { echo "no ../shared beside the checkout" >&2; exit 1; }
work=${1:-$(mktemp -d)}
mkdir -p "$work"
rm -rf "$work/main"
git clone -q "$here" "$work/main" || exit 1
ln -sfn "$shared" "$work/shared"
cd "$work/main" || exit 1
echo "fresh clone of $(git log --oneline -1) in $work/main; log: $work/run.log"
vmstat -n 10 > "$work/vmstat.log" 2>&1 &
vmstat=$!
accounting=""
if [ "$(id -u)" = 0 ] && command -v accton >/dev/null 2>&1 && command -v dump-acct >/dev/null 2>&1; then
  : > "$work/pacct" && accton "$work/pacct" >/dev/null && accounting=1
fi
start=$(date +%s)
.ci/run 2>&1 | perl -MTime::HiRes=time -ne 'BEGIN { $| = 1; $start = time } printf "%7.1f %s", time - $start, $_' > "$work/run.log"
rc=${PIPESTATUS[0]}
kill "$vmstat" 2>/dev/null
[ -n "$accounting" ] && accton off >/dev/null
echo ".ci/run: $(( $(date +%s) - start )) s, exit status $rc"
grep -E "Finished|test result: .* [1-9][0-9]* passed" "$work/run.log"
if [ -n "$accounting" ]; then
  tests_began=$(sed -n 's/^ *\([0-9.]*\) running the integration tests.*/\1/p' "$work/run.log" | head -n 1)
  python3 "$here/benches/cpu_by_command.py" "$work/pacct" "$start" "${tests_began:-0}"
fi
exit "$rc"
