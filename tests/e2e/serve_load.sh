#!/usr/bin/env bash
# `rfa serve` under load on loopback: 64 concurrent streams, none lost or mixed and each equal
# to the same request served alone; a killed client's request cancelled within a second
# (streaming or not); a full queue answered 503 with Retry-After; the state cache within its
# bound; resident memory flat over a few thousand requests; SIGTERM draining (a running
# stream finishes, one past --drain-seconds ends with an error) and exiting 0.
# Usage: serve_load.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/serve.bash"
command -v node >/dev/null || fail "node is missing: run scripts/install-deps.sh"
load="$src/tests/e2e/serve_client/load.mjs"

corpus_write 1500
serve_train rfa_gate
run="$tmp/run-rfa_gate"
serve_start "$tmp/serve.log" "$run" --parallel 64 --queue 64 --cache-mib 1 --max-tokens 100000000

node "$load" concurrent "$base" 64 >"$tmp/concurrent.json" || { tail -20 "$tmp/serve.log" >&2; fail "64 concurrent streams"; }

# wait_idle <what>: rfa_requests_active reaches 0 within 1 s.
wait_idle() {
  local t0 active
  t0=$(date +%s%N)
  while :; do
    active=$(metric rfa_requests_active)
    [ "$active" = 0 ] && break
    [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 1000 ] || fail "$1: still $active active 1 s after the client died"
    sleep 0.02
  done
}
for stream in true false; do
  curl -sN "$base/v1/completions" -d "{\"prompt\": \"Line\", \"max_tokens\": 100000000, \"temperature\": 0, \"stream\": $stream}" \
    >"$tmp/killed.txt" &
  client=$!
  sleep 0.5
  [ "$(metric rfa_requests_active)" = 1 ] || fail "the endless request (stream $stream) is not running: $(head -c 300 "$tmp/killed.txt")"
  kill -9 "$client"
  { wait "$client" || true; } 2>/dev/null
  wait_idle "a killed client (stream $stream)"
done
[ "$(metric rfa_requests_cancelled_total)" = 2 ] || fail "cancelled: $(metric rfa_requests_cancelled_total)"

# A few thousand requests: every one answered, the cache within its bound, memory flat.
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
node "$load" many "$base" 500 8 >/dev/null || fail "the first 500 requests"
before=$(rss)
node "$load" many "$base" 3000 8 >/dev/null || fail "3000 more requests"
after=$(rss)
bytes=$(metric rfa_cache_bytes)
limit=$(metric rfa_cache_limit_bytes)
[ "$bytes" -le "$limit" ] || fail "the state cache holds $bytes bytes, over its bound of $limit"
[ "$(metric rfa_cache_evictions_total)" -gt 0 ] || fail "3500 distinct prompts evicted nothing from a 1 MiB cache"
echo "resident memory after 500 requests ${before} KiB, after 3500 ${after} KiB" >&2
# Not under AddressSanitizer (scripts/test.sh --sanitize): its allocator keeps freed memory (about
# 190 MB more over these requests, with the code of 057457b as with today's).
if ldd "$rfa" | grep -q libasan; then
  echo "resident memory not checked: an AddressSanitizer build" >&2
else
  [ $((after - before)) -lt 8192 ] || fail "resident memory grew from $before KiB to $after KiB over 3000 requests"
fi
serve_stop

# A full queue: 2 running, 1 waiting, the next one refused with 503 and Retry-After.
serve_start "$tmp/queue.log" "$run" --parallel 2 --queue 1 --max-tokens 100000000
clients=()
for i in 1 2 3; do
  curl -sN "$base/v1/completions" -d '{"prompt": "Line", "max_tokens": 100000000, "temperature": 0, "stream": true}' >/dev/null &
  clients+=($!)
done
# The engine admits a waiting request at its next tick: wait for both numbers, not the first.
state=""
for _ in $(seq 1 100); do
  state="$(metric rfa_requests_active)/$(metric rfa_requests_queued)"
  [ "$state" = "2/1" ] && break
  sleep 0.05
done
[ "$state" = "2/1" ] || fail "not 2 running and 1 queued after 5 s (active/queued: $state)"
status=$(curl -s -D "$tmp/busy.headers" -o "$tmp/resp" -w '%{http_code}' "$base/v1/completions" -d '{"prompt": "x"}')
[ "$status" = 503 ] || fail "a request past the queue: HTTP $status"
grep -qi '^retry-after:' "$tmp/busy.headers" || fail "503 without Retry-After"
expect_in "$tmp/resp" "--queue 1"
kill -9 "${clients[@]}"
{ wait "${clients[@]}" || true; } 2>/dev/null
wait_idle "three killed streams"

# SIGTERM with an endless stream and --drain-seconds 1: it ends with an error event, then [DONE].
serve_stop
serve_start "$tmp/drain.log" "$run" --drain-seconds 1 --max-tokens 100000000
curl -sN "$base/v1/completions" -d '{"prompt": "Line", "max_tokens": 100000000, "temperature": 0, "stream": true}' >"$tmp/cut.txt" &
client=$!
sleep 0.3
serve_stop
wait "$client" || true
grep -q '"error".*shutting down' "$tmp/cut.txt" || fail "the cut stream says nothing of the shutdown: $(tail -c 300 "$tmp/cut.txt")"
[ "$(tail -n 2 "$tmp/cut.txt" | head -n 1)" = "data: [DONE]" ] || fail "the cut stream does not end with [DONE]"
expect_in "$tmp/drain.log" "ended with an error"

# SIGTERM while a stream runs that can finish: it finishes whole.
serve_start "$tmp/drain2.log" "$run" --drain-seconds 60
curl -sN "$base/v1/completions" \
  -d '{"prompt": "Line", "max_tokens": 3000, "temperature": 0, "stream": true, "stream_options": {"include_usage": true}}' >"$tmp/whole.txt" &
client=$!
sleep 0.1
serve_stop
wait "$client" || fail "the draining stream's client failed"
grep -q '"completion_tokens":3000' "$tmp/whole.txt" || fail "the drained stream did not finish: $(tail -c 300 "$tmp/whole.txt")"
