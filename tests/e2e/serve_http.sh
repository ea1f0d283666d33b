#!/usr/bin/env bash
# `rfa serve` with curl: the endpoints, greedy and seeded replies equal to `rfa generate`,
# streams (SSE ending in [DONE], usage, never compressed), a chat follow-up served from the
# cached state, saved and loaded states, every malformed input answered in the OpenAI
# error shape while the server keeps serving, silent clients timed out, the API key, a
# softmax model's KV cache bounded by its context, and SIGTERM exiting 0.
# Usage: serve_http.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/serve.bash"

corpus_write 1500
serve_train rfa_gate
serve_train softmax
run="$tmp/run-rfa_gate"
mkdir -p "$tmp/states"
serve_start "$tmp/serve.log" "$run" --parallel 4 --max-body-bytes 4096 --timeout 2 --state-dir "$tmp/states"

curl -sf "$base/health" | grep -qF '"ok"' || fail "/health"
curl -sf "$base/v1/models" >"$tmp/models.json"
[ "$(json_get "$tmp/models.json" 'j.data[0].id')" = "run-rfa_gate" ] || fail "/v1/models: $(cat "$tmp/models.json")"

# Greedy and seeded replies are rfa generate's text after the prompt.
"$rfa" generate "$run" -p "Line 7" -n 40 --greedy 2>/dev/null | head -c -1 | tail -c +7 >"$tmp/gen_greedy.txt"
post /v1/completions '{"prompt": "Line 7", "max_tokens": 40, "temperature": 0}'
expect_status 200 "greedy completion"
json_get "$tmp/resp" 'j.choices[0].text' | head -c -1 >"$tmp/srv_greedy.txt"
cmp -s "$tmp/gen_greedy.txt" "$tmp/srv_greedy.txt" ||
  fail "greedy completion '$(cat "$tmp/srv_greedy.txt")' differs from rfa generate's '$(cat "$tmp/gen_greedy.txt")'"
[ "$(json_get "$tmp/resp" 'j.choices[0].finish_reason')" = length ] || fail "finish_reason: $(cat "$tmp/resp")"
[ "$(json_get "$tmp/resp" '[j.usage.prompt_tokens, j.usage.completion_tokens, j.usage.total_tokens]')" = "[6,40,46]" ] ||
  fail "usage: $(cat "$tmp/resp")"
"$rfa" generate "$run" -p "Line 7" -n 40 --seed 5 2>/dev/null | head -c -1 | tail -c +7 >"$tmp/gen_seed.txt"
post /v1/completions '{"prompt": "Line 7", "max_tokens": 40, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 5}'
json_get "$tmp/resp" 'j.choices[0].text' | head -c -1 >"$tmp/srv_seed.txt"
cmp -s "$tmp/gen_seed.txt" "$tmp/srv_seed.txt" || fail "seeded completion differs from rfa generate --seed 5"
cmp -s "$tmp/gen_seed.txt" "$tmp/gen_greedy.txt" && fail "the seeded sample equals the greedy one: the test shows nothing"

# The same as a stream: chunks of one id, [DONE] last, usage when asked, never compressed.
curl -sN -D "$tmp/stream.headers" -H 'Accept-Encoding: gzip, br' "$base/v1/completions" \
  -d '{"prompt": "Line 7", "max_tokens": 40, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 5,
       "stream": true, "stream_options": {"include_usage": true}}' >"$tmp/stream.txt"
grep -qi '^content-type: text/event-stream' "$tmp/stream.headers" || fail "stream content type: $(cat "$tmp/stream.headers")"
grep -qi '^content-encoding' "$tmp/stream.headers" && fail "the event stream was compressed"
[ "$(grep -c '^data: ' "$tmp/stream.txt")" -gt 10 ] || fail "too few events: $(cat "$tmp/stream.txt")"
[ "$(grep '^data: ' "$tmp/stream.txt" | tail -1)" = "data: [DONE]" ] || fail "the stream does not end with [DONE]"
grep '^data: {' "$tmp/stream.txt" | sed 's/^data: //' >"$tmp/chunks.jsonl"
node -e 'const fs = require("fs"); const chunks = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const text = chunks.filter(c => c.choices.length).map(c => c.choices[0].text).join("");
  if (new Set(chunks.map(c => c.id)).size !== 1) throw new Error("chunks of several ids");
  const last = chunks[chunks.length - 1];
  if (last.choices.length !== 0 || last.usage.completion_tokens !== 40) throw new Error("no usage chunk last");
  if (chunks[chunks.length - 2].choices[0].finish_reason !== "length") throw new Error("no finish_reason");
  if (text !== fs.readFileSync(process.argv[2], "utf8")) throw new Error("streamed text differs: " + text);' \
  "$tmp/chunks.jsonl" "$tmp/srv_seed.txt" || fail "stream checks"

# n choices, stop strings, tokenize/detokenize.
post /v1/completions '{"prompt": "Line", "max_tokens": 30, "n": 3, "seed": 9}'
[ "$(json_get "$tmp/resp" 'j.choices.length')" = 3 ] || fail "n = 3: $(cat "$tmp/resp")"
post /v1/completions '{"prompt": "Line 7", "max_tokens": 40, "temperature": 0, "stop": [" "]}'
[ "$(json_get "$tmp/resp" 'j.choices[0].finish_reason')" = stop ] || fail "stop: $(cat "$tmp/resp")"
json_get "$tmp/resp" 'j.choices[0].text' | grep -q ' ' && fail "the stop string is in the text: $(cat "$tmp/resp")"
post /tokenize '{"content": "Line 7: ok"}'
expect_status 200 tokenize
tokens=$(json_get "$tmp/resp" 'j.tokens')
post /detokenize "{\"tokens\": $tokens}"
[ "$(json_get "$tmp/resp" 'j.content')" = "Line 7: ok" ] || fail "detokenize: $(cat "$tmp/resp")"

# A chat follow-up prefills only what is new: the reply and the next message come from the cache.
post /v1/chat/completions '{"messages": [{"role": "user", "content": "Line 3"}], "max_tokens": 12, "temperature": 0}'
expect_status 200 chat
reply=$(json_get "$tmp/resp" 'j.choices[0].message.content')
first_prompt=$(json_get "$tmp/resp" 'j.usage.prompt_tokens')
first_reply=$(json_get "$tmp/resp" 'j.usage.completion_tokens')
follow=$(node -e 'console.log(JSON.stringify({messages: [{role: "user", content: "Line 3"},
  {role: "assistant", content: process.argv[1]}, {role: "user", content: "Line 4"}], max_tokens: 12, temperature: 0}))' "$reply")
post /v1/chat/completions "$follow"
cached=$(json_get "$tmp/resp" 'j.usage.prompt_tokens_details.cached_tokens')
# The first prompt and every reply token (the reply ended at its length: all fed) are reused.
[ "$cached" = $((first_prompt + first_reply)) ] ||
  fail "the follow-up reused $cached tokens, not the first prompt's $first_prompt and the reply's $first_reply"

# A state saved under a name (here the follow-up's prompt) loads into a fresh server below.
with_name() { node -e 'const j = JSON.parse(process.argv[1]); j.name = process.argv[2]; console.log(JSON.stringify(j))' "$@"; }
post /v1/states/save "$(with_name "$follow" conv)"
expect_status 200 "state save"
saved=$(json_get "$tmp/resp" 'j.tokens')
[ -f "$tmp/states/conv.state" ] || fail "no $tmp/states/conv.state after saving"
post /v1/states/save "$(with_name '{"prompt": "Line"}' ../escape)"
expect_status 400 "a state name with a path"
[ "$(json_get "$tmp/resp" 'j.error.param')" = name ] || fail "state name error: $(cat "$tmp/resp")"
ls "$tmp" | grep -q escape && fail "a file was written outside the state directory"

# Every malformed request gets the OpenAI error shape and the server goes on.
check_error() {  # check_error <status> <text in message> <curl data args...>
  local want=$1 says=$2
  shift 2
  status=$(curl -s -o "$tmp/resp" -w '%{http_code}' "$@")
  [ "$status" = "$want" ] || { cat "$tmp/resp" >&2; fail "$*: HTTP $status, expected $want"; }
  node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    if (typeof j.error.message !== "string" || !j.error.message.includes(process.argv[2]) || !j.error.type)
      throw new Error("error body: " + JSON.stringify(j));' "$tmp/resp" "$says" || fail "error shape for $*"
}
check_error 400 "not valid JSON" "$base/v1/completions" -d '{"prompt": '
check_error 400 "not valid JSON" "$base/v1/completions" --data-binary $'{"prompt": "\xff\xfe"}'
check_error 400 "'max_tokens' must be an integer" "$base/v1/completions" -d '{"prompt": "x", "max_tokens": "many"}'
check_error 400 "from 1 to 4096" "$base/v1/completions" -d '{"prompt": "x", "max_tokens": 100000}'
check_error 400 "'messages'" "$base/v1/chat/completions" -d '{"messages": "hello"}'
check_error 400 "n is 9" "$base/v1/completions" -d '{"prompt": "x", "n": 9}'
check_error 400 "the prompt is empty" "$base/v1/completions" -d '{"prompt": ""}'
check_error 413 "--max-body-bytes" "$base/v1/completions" -d "{\"prompt\": \"$(head -c 6000 /dev/zero | tr '\0' a)\"}"
check_error 404 "no endpoint POST /v2/x" "$base/v2/x" -d '{}'
check_error 404 "no endpoint GET /v1/completions" "$base/v1/completions"
check_error 404 "does not exist" "$base/v1/states/load" -d '{"name": "nothing-here"}'

# A client that sends half a request and goes silent is closed after --timeout (2 s),
# one that promises a body and stops sending gets a 400; neither stops the others.
exec 7<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"prompt":' >&7
curl -sf "$base/health" >/dev/null || fail "/health while a client is silent"
timeout 10 cat <&7 >"$tmp/silent.txt" || fail "a silent client's connection was not closed within 10 s"
exec 7<&-
grep -q "HTTP/1.1 400" "$tmp/silent.txt" || fail "a body that stopped arriving: $(cat "$tmp/silent.txt")"
exec 7<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /health HTTP/1.1\r\nHo' >&7
timeout 10 cat <&7 >/dev/null || fail "a client silent inside its headers was not closed within 10 s"
exec 7<&-
post /v1/completions '{"prompt": "Line 7", "max_tokens": 5, "temperature": 0}'
expect_status 200 "a request after the malformed ones"
[ "$(metric rfa_requests_active)" = 0 ] || fail "requests still active: $(curl -s "$base/metrics")"
# The scheduler's time: steps and rows counted, and the busy time holds the steps' time.
steps=$(metric rfa_decode_steps_total) rows=$(metric rfa_decode_rows_total)
busy=$(metric rfa_scheduler_busy_seconds_total) decode=$(metric rfa_decode_seconds_total)
[ "${steps:-0}" -gt 0 ] && [ "${rows:-0}" -ge "$steps" ] || fail "decode steps $steps, rows $rows: $(curl -s "$base/metrics")"
awk -v b="$busy" -v d="$decode" -v p="$(metric rfa_prefill_seconds_total)" 'BEGIN { exit !(d > 0 && p > 0 && b >= d + p) }' ||
  fail "scheduler busy $busy s, decode $decode s: $(curl -s "$base/metrics")"
serve_stop
expect_in "$tmp/serve.log" "stopped"

# A fresh server continues the saved conversation from its state.
serve_start "$tmp/serve2.log" "$run" --state-dir "$tmp/states"
post /v1/states/load '{"name": "nothing"}'
expect_status 404 "loading a state never saved"
post /v1/states/load '{"name": "conv"}'
expect_status 200 "state load"
[ "$(json_get "$tmp/resp" 'j.tokens')" = "$saved" ] || fail "loaded $(cat "$tmp/resp"), saved $saved tokens"
post /v1/chat/completions "$follow"
[ "$(json_get "$tmp/resp" 'j.usage.prompt_tokens_details.cached_tokens')" = "$saved" ] ||
  fail "after loading, the follow-up reused $(json_get "$tmp/resp" 'j.usage.prompt_tokens_details.cached_tokens') of $saved"
serve_stop

# The API key: required for all but /health, and for any address other than loopback.
serve_start "$tmp/key.log" "$run" --api-key sekrit
check_error 401 "Authorization: Bearer" "$base/v1/models"
check_error 401 "API key is wrong" -H "Authorization: Bearer wrong" "$base/v1/models"
curl -sf -H "Authorization: Bearer sekrit" "$base/v1/models" >/dev/null || fail "the right key was refused"
curl -sf "$base/health" >/dev/null || fail "/health needs no key"
serve_stop
if "$rfa" serve "$run" --host 0.0.0.0 --port 0 2>"$tmp/open.log"; then fail "served 0.0.0.0 without a key"; fi
expect_in "$tmp/open.log" "--api-key"
# A state cache bound that memory cannot hold (1 TiB) is refused at start, naming the flag.
if [ "$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)" -lt $((1 << 30)) ]; then
  if "$rfa" serve "$run" --port 0 --cache-mib 1048576 2>"$tmp/cache.log"; then fail "served with a 1 TiB state cache"; fi
  expect_in "$tmp/cache.log" "not enough memory: the state cache needs about 1.00 TiB"
  expect_in "$tmp/cache.log" "shrink --cache-mib (1048576)"
fi

# Softmax: the KV cache is bounded by the training context (32): a longer prompt is refused,
# a reply stops with length when the context is full.
serve_start "$tmp/softmax.log" "$tmp/run-softmax"
post /v1/completions "{\"prompt\": \"$(head -c 40 "$tmp/corpus.txt" | tr '\n' ' ')\", \"max_tokens\": 5}"
expect_status 400 "a prompt past the softmax context"
grep -q "at most 32 positions" "$tmp/resp" || fail "softmax refusal: $(cat "$tmp/resp")"
post /v1/completions '{"prompt": "Line 7", "max_tokens": 100, "temperature": 0}'
expect_status 200 "softmax completion"
[ "$(json_get "$tmp/resp" '[j.choices[0].finish_reason, j.usage.completion_tokens]')" = '["length",27]' ] ||
  fail "softmax at its context: $(cat "$tmp/resp")"
serve_stop
