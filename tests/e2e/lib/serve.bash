# Sourced by tests/e2e/serve_*.sh after common.bash: a tiny run to serve, `rfa serve` on a
# free loopback port in the background, and curl/node helpers. Traffic goes to 127.0.0.1 only.

# serve_train <kind>: the run $tmp/run-<kind>, trained here in seconds.
serve_train() {
  config_write "$tmp/$1.yaml" "$1" "run_dir: $tmp/run-$1, batch_size: 4, steps: 30, log_every: 10, eval_every: 0, eval_batches: 2"
  train_ok "$tmp/$1.train.log" --config "$tmp/$1.yaml"
}

# serve_start <log> <rfa serve args...>: the server in the background ($pid), its $port and $base once it listens.
serve_start() {
  local log=$1
  shift
  rm -f "$log"  # else an earlier server's port could be read before this one starts
  "$rfa" --threads 1 serve "$@" --port 0 2>"$log" &
  pid=$!
  port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" 2>/dev/null || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "rfa serve $* exited before listening"; }
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$log" >&2; fail "rfa serve $* did not listen within 30 s"; }
  base="http://127.0.0.1:$port"
}

# serve_stop: SIGTERM, and the server's exit status must be 0.
serve_stop() {
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  pid=
  [ "$rc" -eq 0 ] || fail "rfa serve exited $rc after SIGTERM"
}

# post <path> <json> [curl args...]: the response body to $tmp/resp, the HTTP status in $status.
post() {
  local path=$1 body=$2
  shift 2
  status=$(curl -s -o "$tmp/resp" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" "$@" \
    "$base$path") || true
}

# json_get <file> <JavaScript expression over j>: the value (strings bare, the rest as JSON).
json_get() {
  node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const v = eval(process.argv[2]);
           console.log(typeof v === "string" ? v : JSON.stringify(v))' "$1" "$2"
}

# expect_status <code> <what>: the last post's status, with its body on failure.
expect_status() {
  [ "$status" = "$1" ] || { cat "$tmp/resp" >&2; fail "$2: HTTP $status, expected $1"; }
}

# metric <name>: its value in /metrics now.
metric() { curl -s "$base/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

# serve_client_install: the pinned npm packages of tests/e2e/serve_client in the build tree
# ($client), from the npm registry the first time (npm ci; nothing global).
serve_client_install() {
  client="$(dirname "$rfa")/serve_client"
  mkdir -p "$client"
  cp "$src/tests/e2e/serve_client/"*.json "$src/tests/e2e/serve_client/"*.mjs "$client/"
  if ! cmp -s "$client/package-lock.json" "$client/node_modules/.rfa-installed-lock"; then
    (cd "$client" && npm ci --no-audit --no-fund --loglevel=error >"$tmp/npm.log" 2>&1) ||
      { cat "$tmp/npm.log" >&2; fail "npm ci in $client (the openai client; needs the npm registry once)"; }
    cp "$client/package-lock.json" "$client/node_modules/.rfa-installed-lock"
  fi
}
