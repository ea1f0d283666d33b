#!/usr/bin/env bash
# `rfa bench serve` against a running `rfa serve`: its JSON lines count what the server says
# it generated (/metrics), every stream completes, no prompt comes from the cache; a wrong
# --url, a server that is not there and a missing API key are clear errors.
# Usage: bench_serve.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/serve.bash"

corpus_write 1500
serve_train rfa_gate
run="$tmp/run-rfa_gate"
serve_start "$tmp/serve.log" "$run" --parallel 8 --queue 8 --api-key sekrit

before=$(curl -s -H 'Authorization: Bearer sekrit' "$base/metrics" | awk '$1 == "rfa_completion_tokens_total" { print $2 }')
"$rfa" bench serve --url "$base" --api-key sekrit --streams 1,4 --tokens 12 --prompt-letters 6 >"$tmp/bench.out" \
  2>"$tmp/bench.log" || { cat "$tmp/bench.log" >&2; fail "rfa bench serve"; }
grep '^{' "$tmp/bench.out" >"$tmp/bench.jsonl"
[ "$(wc -l <"$tmp/bench.jsonl")" = 2 ] || { cat "$tmp/bench.out" >&2; fail "expected 2 JSON lines"; }
after=$(curl -s -H 'Authorization: Bearer sekrit' "$base/metrics" | awk '$1 == "rfa_completion_tokens_total" { print $2 }')
node -e 'const fs = require("fs");
  const rows = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const served = Number(process.argv[3]) - Number(process.argv[2]);
  let generated = 0;
  rows.forEach((r, i) => {
    const streams = [1, 4][i];
    if (r.streams !== streams || r.failed !== 0) throw new Error("row " + i + ": " + JSON.stringify(r));
    if (r.generated < streams || r.generated > 12 * streams) throw new Error("generated " + r.generated);
    if (r.cached_tokens !== 0 || r.prompt_tokens < 6 * streams) throw new Error("prompts: " + JSON.stringify(r));
    if (!(r.tokens_per_s > 0 && r.seconds > 0 && r.client_cpu_s >= 0)) throw new Error("rates: " + JSON.stringify(r));
    // The gaps between the chunks of a stream: quantiles in order, none past the run.
    if (!(0 <= r.gap_ms_p50 && r.gap_ms_p50 <= r.gap_ms_p95 && r.gap_ms_p95 <= r.gap_ms_p99 &&
          r.gap_ms_p99 <= r.gap_ms_max && r.gap_ms_max <= 1000 * r.seconds)) throw new Error("gaps: " + JSON.stringify(r));
    generated += r.generated;
  });
  // The server counted the same tokens, and the warm-up request (at most 4) besides.
  if (served < generated || served > generated + 4) throw new Error("server " + served + " vs client " + generated);' \
  "$tmp/bench.jsonl" "$before" "$after" || { cat "$tmp/bench.out" >&2; fail "bench serve rows"; }
echo "bench_serve: 1 and 4 streams measured, $((after - before)) tokens as the server counts them"

# Sampled requests (--temperature): they complete, the row says the temperature, and two runs of
# the same prompts and seeds generate the same number of tokens (a stream may stop at EOS early).
for i in 1 2; do
  "$rfa" bench serve --url "$base" --api-key sekrit --streams 4 --tokens 12 --prompt-letters 6 --temperature 1 \
    --prompt-seed 500 >"$tmp/sampled$i.out" 2>"$tmp/sampled.log" || { cat "$tmp/sampled.log" >&2; fail "bench serve --temperature"; }
done
node -e 'const fs = require("fs");
  const row = (f) => JSON.parse(fs.readFileSync(f, "utf8").trim().split("\n").filter((l) => l.startsWith("{"))[0]);
  const a = row(process.argv[1]), b = row(process.argv[2]);
  if (a.temperature !== 1 || a.failed !== 0 || a.generated < 4 || a.generated > 48) throw new Error(JSON.stringify(a));
  if (a.generated !== b.generated) throw new Error("seeded runs differ: " + a.generated + " vs " + b.generated);' \
  "$tmp/sampled1.out" "$tmp/sampled2.out" || { cat "$tmp/sampled1.out" "$tmp/sampled2.out" >&2; fail "sampled rows"; }
expect_error_early() { if "$rfa" bench serve "$@" >"$tmp/err.out" 2>"$tmp/err.log"; then fail "rfa bench serve $* succeeded"; fi; }
expect_error_early --url "$base" --temperature 3
grep -q "temperature" "$tmp/err.log" || { cat "$tmp/err.log" >&2; fail "--temperature 3 not named"; }
echo "bench_serve: sampled streams repeat with their seeds"

# Errors: each names the fix and exits non-zero.
expect_error() {  # expect_error <text> <args...>
  local text=$1
  shift
  if "$rfa" bench serve "$@" >"$tmp/err.out" 2>"$tmp/err.log"; then fail "rfa bench serve $* succeeded"; fi
  expect_in "$tmp/err.log" "$text"
}
expect_error "give the server's address as http://HOST:PORT" --url "ftp://127.0.0.1:$port"
expect_error "HTTP 401" --url "$base" --streams 1 --tokens 2
serve_stop
expect_error "is \`rfa serve\` running there" --url "$base" --streams 1 --tokens 2
echo "bench_serve: ok"
