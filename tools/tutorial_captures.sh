#!/usr/bin/env bash
# Capture the screens docs/tutorial.md shows: gtop in tmux at 80x24 over the shipped
# recordings, each paused at a fixed place, printed as plain text (capture-pane).
#   bash tools/tutorial_captures.sh > /tmp/captures.txt
set -euo pipefail
cd "$(dirname "$0")/.."
# capture TITLE SETTLE_S KEYS -- GTOP_ARGS...: start gtop paused at --at, send KEYS
# (space-separated tmux key names, each followed by a short wait), print the screen
capture() {
  local title=$1 settle=$2 keys=$3; shift 4
  local sock=gtop-tutorial-$$-$title  # a server of its own per screen
  tmux -L "$sock" new-session -d -s t -x 80 -y 24 "python3 -m gtop $*; sleep 30"
  for _ in $(seq 100); do  # pause as soon as the first frame is up: where --at put it
    tmux -L "$sock" capture-pane -p -t t | grep -q '▶ \(replay\|demo\)' && break
    sleep 0.1
  done
  tmux -L "$sock" send-keys -t t space
  sleep "$settle"
  sleep 1
  for k in $keys; do tmux -L "$sock" send-keys -t t "$k"; sleep 1.5; done
  echo "=== $title (gtop $*; keys: space $keys)"
  tmux -L "$sock" capture-pane -p -t t
  tmux -L "$sock" kill-server
}
capture overview 4 "" -- demo --at 14
capture process-io 4 "Enter" -- replay recordings/constructed-io.gtop --at 10.5
capture gputime-io 4 "Enter ] ] ] ] ]" -- replay recordings/constructed-io.gtop --at 10.5
capture kernels-io 4 "Enter ] ]" -- replay recordings/constructed-io.gtop --at 10.5
