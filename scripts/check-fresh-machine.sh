#!/usr/bin/env bash
# Proves the README's quick start on a fresh Debian 12 machine: builds a minimal bookworm root with
# `mmdebstrap --variant=minbase`, copies the COMMITTED tree into it (`git archive HEAD`: commit first;
# uncommitted changes are not tested), and runs inside it with chroot, timing each step:
#   scripts/install-deps.sh   (the first thing both README commands do; timed on its own)
#   scripts/test.sh           (install, build, the whole ctest suite)
#   scripts/quickstart.sh     (train the quick config, evaluate, sample)
# A copy of shared/ (beside the checkout, as in CI) goes beside the tree, so the e2e checks that use
# shared/data/tinyshakespeare.txt run as they do in CI.
#
# Needs root, mmdebstrap and the Debian archive; takes 7 minutes or more on 2 cores (most of it the build).
# Not part of CI (too slow): run it before closing an issue that touches dependencies or the build, and
# quote its times.
#
# Usage: scripts/check-fresh-machine.sh [--keep] [--rebuild] [--mirror URI] [WORK_DIR]
#   WORK_DIR      where the root is built (default /var/tmp/rfa-fresh-machine)
#   --keep        keep WORK_DIR afterwards: the base root tarball (a later run reuses it instead of
#                 running mmdebstrap; every run still starts from a fresh copy of it) and this run's root
#                 with its build and runs (look around with `chroot WORK_DIR/root`)
#   --rebuild     run mmdebstrap even if WORK_DIR holds a base tarball from an earlier --keep run
#   --mirror URI  the Debian mirror to use (default: this machine's bookworm entries in /etc/apt/sources.list*)
# OMP_WAIT_POLICY and GOMP_SPINCOUNT pass into the root if set; nothing else of the environment does,
# except the network's trust: certificate authorities this machine added by hand
# (/usr/local/share/ca-certificates/*.crt, e.g. an egress proxy's) are copied into the root and given to
# npm and Node (npm_config_cafile, NODE_EXTRA_CA_CERTS) with the public ones, as the Debian mirror is
# this machine's. A fresh machine on the open internet needs none of it.
# Exit status: 0 if every step passed, 1 if a step failed, 2 for a usage or setup error.
set -euo pipefail

usage() {
  sed -n '/^# Usage:/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit "${1:-2}"
}
log() { echo "[fresh] $*" >&2; }
die() {
  echo "[fresh] error: $*" >&2
  exit 2
}

keep=0
rebuild=0
mirror=""
work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --rebuild) rebuild=1 ;;
    --mirror)
      [ $# -ge 2 ] || die "--mirror needs a URI, e.g. --mirror http://deb.example.org/debian"
      mirror=$2
      shift
      ;;
    -h | --help) usage 0 ;;
    -*) echo "[fresh] error: unknown option '$1'" >&2; usage ;;
    *)
      [ -z "$work" ] || die "one WORK_DIR only, got '$work' and '$1'"
      work=$1
      ;;
  esac
  shift
done
work=${work:-/var/tmp/rfa-fresh-machine}

[ "$(id -u)" -eq 0 ] || die "needs root (it runs mmdebstrap, mount and chroot); run it with sudo"
for tool in mmdebstrap chroot git tar mount umount flock; do
  command -v "$tool" >/dev/null || die "'$tool' is missing; install it: apt-get install $([ "$tool" = mmdebstrap ] && echo mmdebstrap || echo "the package providing $tool")"
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
git -C "$repo" rev-parse --verify -q HEAD >/dev/null || die "$repo is not a git checkout with a commit; the check copies the committed tree (git archive HEAD)"
head=$(git -C "$repo" rev-parse --short HEAD)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  log "warning: $repo has uncommitted changes; they are NOT tested (the root gets git archive HEAD = $head). Commit first."
fi

# shared/ beside the checkout; from a git worktree elsewhere, beside the main checkout (as scripts/get-data.sh finds it).
shared=""
common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir)
for c in "$repo/../shared" "$(dirname "$common")/../shared"; do
  if [ -d "$c" ]; then
    shared=$(cd "$c" && pwd)
    break
  fi
done

# The bookworm entries (main only) of this machine's apt sources, as one-line "deb URI SUITE main" entries.
# Both formats: one-line *.list files and deb822 *.sources files; other suites (third-party repositories) are left out.
host_debian_sources() {
  local files=()
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list; do [ -f "$f" ] && files+=("$f"); done
  [ ${#files[@]} -eq 0 ] || awk '
    { sub(/#.*/, "") }
    $1 == "deb" {
      i = 2
      if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }  # skip [options]
      if ($(i + 1) ~ /^bookworm(-updates|-security)?$/) print "deb " $i " " $(i + 1) " main"
    }' "${files[@]}"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush(   n, m, u, s, i, j, uri, suite) {
        if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
          n = split(uris, u, " "); m = split(suites, s, " ")
          for (i = 1; i <= n; i++) for (j = 1; j <= m; j++)
            if (s[j] ~ /^bookworm(-updates|-security)?$/) print "deb " u[i] " " s[j] " main"
        }
        types = uris = suites = enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^[A-Za-z-]+:/ {
        key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
        if (key == "types") types = val
        else if (key == "uris") uris = val
        else if (key == "suites") suites = val
        else if (key == "enabled") enabled = val
      }
      END { flush() }' "$f"
  done
}

fmt_time() {
  local s=$1
  if [ "$s" -ge 60 ]; then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}

mkdir -p "$work"
work=$(cd "$work" && pwd)
root=$work/root
base=$work/bookworm-minbase.tar
exec 9>"$work/.lock"
flock -n 9 || die "another check-fresh-machine run holds $work/.lock; wait for it or give another WORK_DIR"

# Mount points under $root, deepest first (from /proc/self/mountinfo, field 5).
mounts_under_root() {
  awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# Kills the processes running inside the root (ours: nothing else uses it), then unmounts what we mounted.
release_root() {
  local p pids=()
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && pids+=("${p#/proc/}")
  done
  if [ ${#pids[@]} -gt 0 ]; then
    log "stopping the processes still running in the root: ${pids[*]}"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    sleep 2
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 1
  fi
  local m
  for m in $(mounts_under_root); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
}

# Removes a root directory only when nothing is mounted under it; --one-file-system guards the host anyway.
remove_root() {
  [ -e "$root" ] || return 0
  if [ -n "$(mounts_under_root)" ]; then
    log "not removing $root: still mounted: $(mounts_under_root | tr '\n' ' ')"
    return 1
  fi
  rm -rf --one-file-system "$root"
}

base_created=0
child=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  set +e
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    log "stopping $child and its process group"
    kill -TERM -- "-$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  release_root
  if [ $keep -eq 1 ]; then
    log "kept $work (root: $root, base tarball: $base)"
  else
    remove_root
    [ $base_created -eq 1 ] && rm -f "$base"
    rm -f "$work/.lock"
    rmdir "$work" 2>/dev/null
  fi
  exit $status
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# Runs a command in its own process group in the background and waits, so that INT/TERM reach the trap at
# once; the trap stops that group (child: its pid and group id).
run_waiting() {
  setsid "$@" </dev/null &
  child=$!
  local status=0
  wait "$child" || status=$?
  child=""
  return $status
}

# --- 1. the base root -------------------------------------------------------------------------------------
t0=$SECONDS
if [ -f "$base" ] && [ $rebuild -eq 0 ]; then
  log "reusing the base root $base (from an earlier --keep run; --rebuild makes a new one)"
  root_how="reused $(basename "$base")"
else
  sources=()
  if [ -n "$mirror" ]; then
    sources=("deb $mirror bookworm main" "deb $mirror bookworm-updates main")
  else
    mapfile -t sources < <(host_debian_sources | awk '!seen[$0]++')
    [ ${#sources[@]} -gt 0 ] || die "no Debian bookworm entry in /etc/apt/sources.list or /etc/apt/sources.list.d/; give the mirror with --mirror URI"
  fi
  aptopts=()
  proxy=$(apt-config dump --format '%v%n' Acquire::http::Proxy 2>/dev/null || true)
  [ -n "$proxy" ] && aptopts+=(--aptopt="Acquire::http::Proxy \"$proxy\";")
  log "building a minimal Debian 12 root with mmdebstrap from: ${sources[*]}"
  rm -f "$base.part"
  run_waiting mmdebstrap --variant=minbase --format=tar "${aptopts[@]}" bookworm "$base.part" "${sources[@]}" ||
    { rm -f "$base.part"; echo "[fresh] error: mmdebstrap failed (see above); is the mirror reachable?" >&2; exit 2; }
  mv "$base.part" "$base"
  base_created=1
  root_how="mmdebstrap --variant=minbase bookworm"
fi
release_root
remove_root || die "remove or unmount $root by hand, then run again"
mkdir -p "$root"
tar -xpf "$base" -C "$root" --numeric-owner
t_root=$((SECONDS - t0))

# --- 2. the committed tree, shared/ beside it, DNS, /proc /sys /dev ------------------------------------------
mkdir -p "$root/src/rfa"
git -C "$repo" archive --format=tar HEAD | tar -x -C "$root/src/rfa"
if [ -n "$shared" ]; then
  cp -a "$shared" "$root/src/shared"
  log "copied $shared to /src/shared in the root (beside the tree, as in CI)"
else
  log "no shared/ beside $repo: the e2e checks that need shared/data skip, as in a clone without it"
fi
host_cas=(/usr/local/share/ca-certificates/*.crt)
if [ -e "${host_cas[0]}" ]; then
  cat /etc/ssl/certs/ca-certificates.crt "${host_cas[@]}" >"$root/etc/rfa-fresh-host-ca.crt" 2>/dev/null ||
    cat "${host_cas[@]}" >"$root/etc/rfa-fresh-host-ca.crt"
  log "this machine's added CAs (${host_cas[*]}) go to npm and Node in the root (/etc/rfa-fresh-host-ca.crt)"
fi
rm -f "$root/etc/resolv.conf"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"

# --- 3. the README's commands ---------------------------------------------------------------------------------
env_in=(HOME=/root LANG=C.UTF-8 "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "TERM=${TERM:-dumb}")
[ -n "${OMP_WAIT_POLICY:-}" ] && env_in+=("OMP_WAIT_POLICY=$OMP_WAIT_POLICY")
[ -n "${GOMP_SPINCOUNT:-}" ] && env_in+=("GOMP_SPINCOUNT=$GOMP_SPINCOUNT")
[ -f "$root/etc/rfa-fresh-host-ca.crt" ] &&
  env_in+=("npm_config_cafile=/etc/rfa-fresh-host-ca.crt" "NODE_EXTRA_CA_CERTS=/etc/rfa-fresh-host-ca.crt")

names=("root build ($root_how)")
times=("$(fmt_time "$t_root")")
results=(ok)
failed=""
for step in scripts/install-deps.sh scripts/test.sh scripts/quickstart.sh; do
  log "running $step in the root (tree $head)"
  t0=$SECONDS
  if run_waiting chroot "$root" /usr/bin/env -i "${env_in[@]}" /bin/bash -c "cd /src/rfa && $step"; then
    result=ok
  else
    result="FAILED (exit $?)"
    failed=$step
  fi
  names+=("$step")
  times+=("$(fmt_time $((SECONDS - t0)))")
  results+=("$result")
  [ -z "$failed" ] || break
done

echo
echo "[fresh] Debian 12 minbase root, tree $head:"
for i in "${!names[@]}"; do
  printf '[fresh]   %-60s %12s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
done
if [ -n "$failed" ]; then
  echo "[fresh] verdict: FAIL at $failed (its output is above; --keep keeps the root to look inside)"
  exit 1
fi
echo "[fresh] verdict: PASS, the README's commands work on a fresh Debian 12 machine"
