#!/usr/bin/env bash
# scripts/get-data.sh in a scratch copy of the repo layout: fetches both corpora,
# checks their size/format, idempotence, --force and the usage error.
# Usage: bash get_data.sh <path-to-rfa> <source-dir> (the rfa binary is not needed).
set -euo pipefail
src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/scripts" "$work/shared/data"
cp "$src/scripts/get-data.sh" "$work/repo/scripts/"
script=$work/repo/scripts/get-data.sh

check() {
  if ! eval "$1"; then
    echo "FAILED: $1" >&2
    exit 1
  fi
}

# The Shakespeare source: the shared data dir of the real checkout.
shared=""
for c in "$src/../shared/data/tinyshakespeare.txt" \
         "$(dirname "$(git -C "$src" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || echo /nonexistent/x)")/../shared/data/tinyshakespeare.txt"; do
  [ -f "$c" ] && shared=$c && break
done
if [ -n "$shared" ]; then
  cp "$shared" "$work/shared/data/"
  bash "$script" shakespeare
  check '[ "$(md5sum < "$work/repo/data/tinyshakespeare.txt" | cut -d" " -f1)" = 6fb458f1232090904fb40fe944165e91 ]'
  # A damaged copy is replaced; a bad source is refused.
  echo junk >> "$work/repo/data/tinyshakespeare.txt"
  bash "$script" shakespeare
  check '[ "$(wc -c < "$work/repo/data/tinyshakespeare.txt")" -eq 1115394 ]'
  echo junk >> "$work/shared/data/tinyshakespeare.txt"
  check '! bash "$script" shakespeare --force 2>/dev/null'
  check '[ "$(wc -c < "$work/repo/data/tinyshakespeare.txt")" -eq 1115394 ]'  # the good file survives
else
  echo "skipping shakespeare: no shared tinyshakespeare.txt next to $src"
fi

if command -v bible >/dev/null; then
  bash "$script" kjv
  out=$work/repo/data/kjv.txt
  check '[ "$(wc -c < "$out")" -gt 4000000 ] && [ "$(wc -c < "$out")" -lt 4500000 ]'
  check '[ "$(head -1 "$out")" = "In the beginning God created the heaven and the earth." ]'
  check '[ "$(tail -1 "$out")" = "The grace of our Lord Jesus Christ be with you all. Amen." ]'
  check '! grep -qE "^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ " "$out"'  # no verse references left
  check '[ "$(grep -cv "^$" "$out")" -eq 31102 ]'            # one line per verse
  before=$(stat -c %Y "$out")
  sleep 1
  bash "$script" kjv                                          # kept as is
  check '[ "$(stat -c %Y "$out")" = "$before" ]'
  bash "$script" kjv --force
  check '[ "$(stat -c %Y "$out")" != "$before" ]'
else
  echo "skipping kjv: bible (Debian bible-kjv) is not installed"
fi

check '! bash "$script" nonsense 2>/dev/null'
check '[ -z "$(find "$work/repo/data" -name ".*")" ]'  # no temporaries left
echo "get-data e2e ok"
