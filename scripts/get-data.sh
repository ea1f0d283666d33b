#!/usr/bin/env bash
# Puts a training corpus into data/ (next to this script's repo):
#   scripts/get-data.sh kjv          -> data/kjv.txt, the King James Bible as plain prose
#   scripts/get-data.sh shakespeare  -> data/tinyshakespeare.txt, char-rnn's 1,115,394-byte file
# Idempotent: an existing good file is kept unless --force. Output is written to a
# temporary name and renamed, so an interrupted run never leaves a partial corpus.
set -euo pipefail

usage() {
  echo "usage: $0 kjv|shakespeare [--force]" >&2
  exit 2
}

fail() {
  echo "[get-data] error: $*" >&2
  exit 1
}

log() { echo "[get-data] $*" >&2; }

[ $# -ge 1 ] && [ $# -le 2 ] || usage
corpus=$1
force=0
if [ $# -eq 2 ]; then
  [ "$2" = "--force" ] || usage
  force=1
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data_dir=$repo/data
mkdir -p "$data_dir"

tmp=""
cleanup() {
  if [ -n "$tmp" ]; then rm -f "$tmp"; fi
}
trap cleanup EXIT

# Runs apt-get install as root or through sudo.
apt_install() {
  local sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || fail "need root or sudo to install $*; install it yourself: apt-get install $*"
    sudo_cmd=(sudo)
  fi
  log "installing $* with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq || fail "apt-get update failed; install $* yourself"
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$@" || fail "apt-get install $* failed"
}

# The KJV from Debian's bible-kjv. `bible -f` prints one verse per line as
# "<Book><chapter>:<verse> <text>" (e.g. "Ge1:1 In the beginning..."), all
# 31,102 verses, pure ASCII. We drop the references and keep the structure as
# blank lines: one verse per line, one blank line between chapters, two
# between books. Wrapped continuation lines (if a bible version wraps) are
# joined back to their verse; runs of spaces become one space.
get_kjv() {
  local out=$data_dir/kjv.txt
  if [ -s "$out" ] && [ $force -eq 0 ]; then
    log "$out already exists ($(wc -c <"$out") bytes); use --force to rebuild it"
    return
  fi
  command -v bible >/dev/null || apt_install bible-kjv
  command -v bible >/dev/null || fail "the bible program is still missing after installing bible-kjv"
  tmp=$(mktemp "$data_dir/.kjv.txt.XXXXXX")
  bible -f "Gen1:1-Rev22:21" </dev/null | LC_ALL=C awk '
    function flush() {
      if (cur == "") return
      gsub(/  +/, " ", cur); sub(/ +$/, "", cur)
      print cur
      verses++
      cur = ""
    }
    /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ / {
      flush()
      match($0, /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ /)
      ref = substr($0, 1, RLENGTH - 1)
      book = ref; sub(/[0-9]+:[0-9]+$/, "", book)
      chapter = ref; sub(/:[0-9]+$/, "", chapter)
      if (verses > 0 && book != prev_book) printf "\n\n"
      else if (verses > 0 && chapter != prev_chapter) printf "\n"
      prev_book = book; prev_chapter = chapter
      cur = substr($0, RLENGTH + 1)
      next
    }
    /^[ \t]*$/ { next }
    {
      if (cur == "") { print "unexpected line before the first verse: " $0 > "/dev/stderr"; exit 3 }
      sub(/^[ \t]+/, "", $0); cur = cur " " $0
    }
    END { flush(); if (verses != 31102) { print "found " verses " verses, expected 31102" > "/dev/stderr"; exit 4 } }
  ' >"$tmp" || fail "could not convert the output of \`bible -f\` (see the message above); is bible-kjv intact?"
  chmod 644 "$tmp"
  mv "$tmp" "$out"
  tmp=""
  log "wrote $out ($(wc -c <"$out") bytes, $(wc -l <"$out") lines)"
}

# The shared data directory: ../shared/data next to the repo; from a git
# worktree elsewhere, next to the main checkout (the parent of the common .git).
shared_data_file() {
  local name=$1 common
  local candidates=("$repo/../shared/data/$name")
  if common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null); then
    candidates+=("$(dirname "$common")/../shared/data/$name")
  fi
  for c in "${candidates[@]}"; do
    if [ -f "$c" ]; then
      (cd "$(dirname "$c")" && echo "$(pwd)/$name")
      return
    fi
  done
  echo "$repo/../shared/data/$name"  # missing: named in messages
}

# Tiny Shakespeare, verified by md5: from the shared data directory if present,
# else the canonical char-rnn download.
get_shakespeare() {
  local out=$data_dir/tinyshakespeare.txt
  local md5=6fb458f1232090904fb40fe944165e91
  local url=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
  local shared
  shared=$(shared_data_file tinyshakespeare.txt)
  if [ -f "$out" ] && [ $force -eq 0 ]; then
    if [ "$(md5sum <"$out" | cut -d' ' -f1)" = "$md5" ]; then
      log "$out already exists and its md5 matches; use --force to fetch it again"
      return
    fi
    log "$out exists but its md5 differs from $md5; replacing it"
  fi
  tmp=$(mktemp "$data_dir/.tinyshakespeare.txt.XXXXXX")
  if [ -f "$shared" ]; then
    log "copying $shared"
    cp "$shared" "$tmp"
  elif command -v curl >/dev/null; then
    log "downloading $url"
    curl -fsSL --retry 2 -o "$tmp" "$url" || fail "download of $url failed; put the file at $shared or $out yourself"
  elif command -v wget >/dev/null; then
    log "downloading $url"
    wget -q -O "$tmp" "$url" || fail "download of $url failed; put the file at $shared or $out yourself"
  else
    fail "$shared is missing and neither curl nor wget is installed to download $url"
  fi
  local got
  got=$(md5sum <"$tmp" | cut -d' ' -f1)
  [ "$got" = "$md5" ] || fail "tinyshakespeare md5 is $got, expected $md5 (source: $([ -f "$shared" ] && echo "$shared" || echo "$url"))"
  chmod 644 "$tmp"
  mv "$tmp" "$out"
  tmp=""
  log "wrote $out ($(wc -c <"$out") bytes, md5 ok)"
}

case "$corpus" in
  kjv) get_kjv ;;
  shakespeare) get_shakespeare ;;
  *) usage ;;
esac
