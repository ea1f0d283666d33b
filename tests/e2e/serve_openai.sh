#!/usr/bin/env bash
# `rfa serve` through the official OpenAI client library (npm `openai`, pinned in
# tests/e2e/serve_client/package-lock.json and installed with npm ci into the build tree):
# completions and chat, streaming and not, and errors as the client's error types.
# Usage: serve_openai.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/serve.bash"
command -v npm >/dev/null || fail "npm is missing: run scripts/install-deps.sh"

serve_client_install
corpus_write 1500
serve_train rfa_gate
serve_start "$tmp/serve.log" "$tmp/run-rfa_gate" --api-key test-key
node "$client/openai.mjs" "$base/v1" test-key >"$tmp/client.log" 2>&1 || { cat "$tmp/client.log" >&2; fail "the openai client"; }
expect_in "$tmp/client.log" "all checks passed"
serve_stop
