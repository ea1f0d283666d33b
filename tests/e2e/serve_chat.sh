#!/usr/bin/env bash
# `rfa chat` typed into as a person would, in tmux (send-keys, capture-pane): a reply streams
# and Ctrl-C stops it; the next turn prefills only its own tokens after the live state;
# /save, /reset, /load (a name with a path refused), /help; Ctrl-C at the prompt; Ctrl-D exits 0.
# Usage: serve_chat.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/serve.bash"
command -v tmux >/dev/null || fail "tmux is missing: run scripts/install-deps.sh"

corpus_write 1500
serve_train rfa_gate
mkdir -p "$tmp/states"
sock="rfa-chat-test-$$"
tmux_() { tmux -L "$sock" "$@"; }
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
# Replies are endless (greedy, no EOS in this model, no -n limit to speak of): each one is stopped by Ctrl-C.
tmux_ new-session -d -s chat -x 160 -y 50 \
  "cd '$tmp' && OMP_WAIT_POLICY=passive '$rfa' --threads 1 chat '$tmp/run-rfa_gate' --greedy -n 100000000 \
   --state-dir '$tmp/states'; echo \"EXITED \$?\"; sleep 600"
screen() { tmux_ capture-pane -p -J -t chat -S -500; }  # -J: wrapped lines joined
# see <text> [count]: until the screen shows text (count times); fails after 20 s.
see() {
  for _ in $(seq 1 200); do
    [ "$(screen | grep -cF -- "$1")" -ge "${2:-1}" ] && return 0
    sleep 0.1
  done
  screen >&2
  fail "the chat never showed '$1' (${2:-1} times)"
}
type_line() { tmux_ send-keys -t chat -l "$1" && tmux_ send-keys -t chat Enter; }
# turn <text> <n>: says text, stops the (endless) reply with Ctrl-C; $stats is the n-th turn's line
# "(N new tokens prefilled after M from the state; K tokens in ...)", $new N and $kept M.
turn() {
  type_line "$1"
  sleep 0.2
  tmux_ send-keys -t chat C-c
  see "[stopped]" "$2"
  see "new tokens prefilled after" "$2"
  stats=$(screen | grep -F "new tokens prefilled after" | sed -n "$2p")
  new=$(echo "$stats" | sed -n 's/^(\([0-9]*\) new tokens prefilled after \([0-9]*\) from the state.*/\1/p')
  kept=$(echo "$stats" | sed -n 's/^(\([0-9]*\) new tokens prefilled after \([0-9]*\) from the state.*/\2/p')
}

see "rfa chat:"
turn "Line 3" 1
[ "$kept" = 0 ] || fail "the first turn began from a state: $stats"
# The first prompt is "User: Line 3\nAssistant: ", 24 characters; what the reply fed to the
# state follows it; the second turn adds "\nUser: Line 4\nAssistant: " (25) and nothing else.
turn "Line 4" 2
[ "$new" = 25 ] || { screen >&2; fail "the second turn prefilled $new tokens, not only its own 25"; }
[ "$kept" -gt 24 ] || fail "the second turn kept only $kept tokens of the state"

type_line "/save conv"
see "(saved $((kept + 25 + $(echo "$stats" | sed -n 's/.*; \([0-9]*\) tokens in.*/\1/p'))) tokens to"
[ -f "$tmp/states/conv.state" ] || fail "no conv.state"
type_line "/reset"
see "(conversation reset)"
type_line "/load conv"
see "(loaded 'conv':"
see "4 messages)"
type_line "/load ../x"
see "is not allowed"
type_line "/help"
see "/save NAME"
tmux_ send-keys -t chat C-c
see "(Ctrl-C stops a reply"
# After the load, the next turn again prefills only its own tokens.
turn "Line 5" 3
[ "$new" = 25 ] || fail "after /load the turn prefilled $new tokens, not only its own 25: $stats"
tmux_ send-keys -t chat C-d
see "EXITED 0"
