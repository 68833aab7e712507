#!/usr/bin/env bash
# What a one-file change in the Telegram channel costs to rebuild: `touch`,
# then `cargo build --release`, in this tree and in an older revision,
# interleaved round by round (this machine drifts under load).
#
#   bash benches/touch_rebuild.sh [OLD_REV] [ROUNDS]
#
# The old revision is checked out beside this tree (../hearth-touch-old);
# both build into this tree's target folder: path crates at different
# paths keep separate artifacts, the registry crates (llama.cpp's build
# among them) are shared, so only the first build of the old tree is long.
set -euo pipefail
old_rev=${1:-7be1e50}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
old="$here/../hearth-touch-old"
[ -d "$old" ] || git -C "$here" worktree add -q "$old" "$old_rev"
export CARGO_TARGET_DIR="$here/target"
telegram_file() {
  if [ -d "$1/crates/hearth-telegram" ]; then echo "$1/crates/hearth-telegram/src/split.rs"
  else echo "$1/src/channels/telegram/split.rs"; fi
}
for tree in "$old" "$here"; do (cd "$tree" && cargo build --release >/dev/null 2>&1); done
for round in $(seq "$rounds"); do
  for tree in "$old" "$here"; do
    touch "$(telegram_file "$tree")"
    start=$(date +%s.%N)
    (cd "$tree" && cargo build --release >/dev/null 2>&1)
    echo "round $round $(basename "$tree"): $(echo "$(date +%s.%N) - $start" | bc) s"
  done
done
