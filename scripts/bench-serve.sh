#!/usr/bin/env bash
# Benchmarks `rfa serve` on loopback (docs/serving.md, "Measured"):
#   1. aggregate tokens/s and the time between tokens (p50/p95/p99, longest) at 1, 8 and 64 concurrent streams,
#      4x128 and 6x384 rfa_gate, and 4x128 as the shipped configs build it (short conv and output
#      gate: rfa-4x128-recipe), measured by `rfa bench serve` (a one-thread epoll client; every
#      prompt new to the server's cache), ROUNDS times alternating 1 and 64 streams;
#   2. time to first token at prompts of 64 / 512 / 4096 tokens, cold and as a cached follow-up;
#   3. resident memory per conversation held in the state cache, rfa_gate against softmax,
#      at prompts of about 128 / 512 / 1800 tokens.
# The models are trained for one step on a generated text with a character tokenizer (what is
# measured is the serving, not the text); the run directories go to WORK (default /tmp/rfa-bench-serve).
# Usage: OMP_WAIT_POLICY=passive scripts/bench-serve.sh [WORK]     (prints lines of JSON; minutes)
#   SERVER_CPUS / CLIENT_CPUS (e.g. 0 and 1): pin the server and the Node client to those cores
#   (taskset), so that the client's parsing of 64 event streams does not share the server's cores,
#   the nearest this machine gets to a client on another machine; SERVER_THREADS (default 2) is
#   the server's --threads (1 when it has one core). BENCH (default "throughput ttft memory"): which parts.
#   CLIENT=node measures the throughput with scripts/bench-serve.mjs instead (the client of the
#   tables before 2026-12-02: Node's event loop cost about 50 µs of the shared cores a token).
#   MODELS (default "rfa-4x128 rfa-6x384 rfa-4x128-recipe"): the throughput part's models.
#   ROUNDS (default 3); SERVE_ARGS: more `rfa serve` options for the throughput part (e.g.
#   "--stream-batch 1" to wake every stream's reader every token). TEMPERATURE (default 0, greedy):
#   the throughput part's requests sampled at that temperature instead, with the OpenAI defaults
#   top_k 0 and top_p 1 (what a client that sets no sampling field gets; these models' V is 300, so
#   put a larger-vocabulary run directory in WORK and name it in MODELS to weigh the sampler).
set -euo pipefail
cd "$(dirname "$0")/.."
rfa=${RFA:-build/rfa}
work=${1:-/tmp/rfa-bench-serve}
mjs=scripts/bench-serve.mjs
server_threads=${SERVER_THREADS:-2}
parts=${BENCH:-throughput ttft memory}
server_pin=() client_pin=()
[ -n "${SERVER_CPUS:-}" ] && server_pin=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && client_pin=(taskset -c "$CLIENT_CPUS")
client() { "${client_pin[@]}" node "$mjs" "$@"; }
wants() { [[ " $parts " == *" $1 "* ]]; }
mkdir -p "$work"
[ -f "$work/corpus.txt" ] || node -e 'let x = 7, s = ""; for (let i = 0; i < 400000; ++i) {
  x = (x * 1103515245 + 12345) % 2147483648; s += "abcdefghij klmnopqrstuvwxyz\n"[x % 28]; } console.log(s)' >"$work/corpus.txt"

# train_run <name> <attention> <layers> <width> <heads> <context>: one step, enough for weights of the
# shape. <attention>: the kind, then any more keys of the attention section ("rfa_gate, short_conv: 4").
train_run() {
  local name=$1
  [ -d "$work/$name/checkpoints" ] && return 0
  cat >"$work/$name.yaml" <<YAML
model: {n_layers: $3, d_model: $4, n_heads: $5, context_length: $6}
attention: {kind: $2}
tokenizer: {path: $work/char.model, kind: char, vocab_size: 300}
data: {corpus: $work/corpus.txt, tokens: $work/corpus.tokens, val_fraction: 0.01}
train: {run_dir: $work/$name, batch_size: 1, steps: 1, eval_every: 0, eval_batches: 1}
checkpoint: {every: 0}
YAML
  "$rfa" --threads 2 train --config "$work/$name.yaml" 2>"$work/$name.train.log"
}

# serve <run> <args...>: the server in the background ($pid, $base).
serve() {
  local run=$1 log="$work/serve.log"
  shift
  rm -f "$log"  # else the last server's port could be read before this one starts
  "${server_pin[@]}" "$rfa" --threads "$server_threads" serve "$run" --port 0 "$@" 2>"$log" &
  pid=$!
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" 2>/dev/null || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$log" >&2; exit 1; }
  base="http://127.0.0.1:$port"
}
stop() { kill -TERM "$pid"; wait "$pid"; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); server --threads $server_threads on cpus ${SERVER_CPUS:-any}, client on cpus ${CLIENT_CPUS:-any}"
train_run rfa-4x128 rfa_gate 4 128 4 256
train_run rfa-6x384 rfa_gate 6 384 6 256
train_run rfa-4x128-ctx2048 rfa_gate 4 128 4 2048
train_run softmax-4x128-ctx2048 softmax 4 128 4 2048
train_run rfa-4x128-recipe "rfa_gate, short_conv: 4, output_gate: true" 4 128 4 256

rounds=${ROUNDS:-3}
read -r -a serve_args <<<"${SERVE_ARGS:-}"
for model in ${MODELS:-rfa-4x128 rfa-6x384 rfa-4x128-recipe}; do
  wants throughput || break
  serve "$work/$model" --parallel 64 --queue 64 --max-tokens 100000 "${serve_args[@]}"
  if [ "${CLIENT:-rfa}" = node ]; then
    for streams in 1 8 64; do
      echo "{\"model\": \"$model\", \"bench\": \"throughput\", \"result\": $(client throughput "$base" "$streams" 256)}"
    done
  else
    list=8
    for _ in $(seq 1 "$rounds"); do list="$list,1,64"; done
    "${client_pin[@]}" "$rfa" bench serve --url "$base" --streams "$list" --tokens 256 --prompt-letters 16 \
      --temperature "${TEMPERATURE:-0}" |
      sed -n "s/^{/{\"model\": \"$model\", /p"
  fi
  stop
done

wants ttft && serve "$work/rfa-4x128" --max-prompt-tokens 20000
for n in 64 512 4096; do
  wants ttft || break
  echo "{\"model\": \"rfa-4x128\", \"bench\": \"ttft\", \"result\": $(client ttft "$base" "$n" 5)}"
done
wants ttft && stop

for model in rfa-4x128-ctx2048 softmax-4x128-ctx2048; do
  wants memory || break
  for tokens in 128 512 1800; do
    serve "$work/$model" --parallel 1 --cache-mib 4096
    client conversations "$base" 5 "$tokens" >/dev/null  # warm: slots, allocator
    before=$(rss_kib)
    cache_before=$(curl -s "$base/metrics" | awk '$1 == "rfa_cache_bytes" { print $2 }')
    client conversations "$base" 200 "$tokens" >/dev/null
    after=$(rss_kib)
    cache_after=$(curl -s "$base/metrics" | awk '$1 == "rfa_cache_bytes" { print $2 }')
    echo "{\"model\": \"$model\", \"bench\": \"memory\", \"result\": {\"prompt_tokens\": $tokens, \"conversations\": 200, \"rss_kib_per_conversation\": $(( (after - before) / 200 )), \"cache_bytes_per_conversation\": $(( (cache_after - cache_before) / 200 ))}}"
    stop
  done
done
