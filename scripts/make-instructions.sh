#!/usr/bin/env bash
# Builds a small instruction set offline from Debian's bible-kjv (docs/fine-tuning.md):
#   scripts/make-instructions.sh [OUT] [COUNT]   (default data/kjv-instruct.jsonl, 4000 per task)
#   scripts/make-instructions.sh --preference [OUT] [COUNT]   (default data/kjv-preference.jsonl, 2000 pairs)
# Alpaca JSON Lines ({"instruction", "input", "output"}), two tasks over the KJV's verses:
#   book:     "Which book of the Bible is this verse from?" + the verse -> the book's name
#             ("Genesis", "1 Samuel", "Song of Solomon", ...: 66 answers, checkable by exact match);
#   continue: "Continue this verse." + the verse's first half (at least 3 words) -> the rest.
# COUNT verses per task, picked and shuffled by a fixed multiplicative hash of the verse's
# number (no random generator: the same file on every machine), verses of at most 40 words so
# an example fits a 256-token context with Alpaca's prompt. The two tasks are interleaved
# and shuffled together, so the last lines (the validation split of `rfa data prepare`,
# which takes the last documents) mix both tasks and all books. Deterministic; idempotent.
# --preference: DPO pairs ({"prompt", "chosen", "rejected"}) for the book question: the prompt
# is Alpaca's (data.template alpaca) rendered with the verse, chosen the right book, rejected
# another one (book (i + 1 + v mod 65) mod 66 for book i, verse v); the verses are the next
# COUNT of the book task's order, none of which the instruction set holds.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kind=instruct
if [ "${1:-}" = --preference ]; then kind=preference; shift; fi
if [ $kind = preference ]; then
  out=${1:-$repo/data/kjv-preference.jsonl}
  count=${2:-2000}
else
  out=${1:-$repo/data/kjv-instruct.jsonl}
  count=${2:-4000}
fi
log() { echo "[make-instructions] $*" >&2; }
command -v bible >/dev/null || { log "bible (Debian's bible-kjv) is missing: run scripts/install-deps.sh"; exit 1; }
mkdir -p "$(dirname "$out")"
tmp=$(mktemp "$(dirname "$out")/.instruct.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# `bible -f` prints "<abbreviation><chapter>:<verse> <text>", one verse per line (wrapped
# lines joined back, as scripts/get-data.sh does).
bible -f "Gen1:1-Rev22:21" </dev/null | LC_ALL=C awk -v count="$count" -v kind="$kind" '
  BEGIN {
    split("Ge Exo Lev Num Deu Josh Jdgs Ruth 1Sm 2Sm 1Ki 2Ki 1Chr 2Chr Ezra Neh Est Job Psa Prv Eccl SSol Isa Jer " \
          "Lam Eze Dan Hos Joel Amos Obad Jonah Mic Nahum Hab Zep Hag Zec Mal Mat Mark Luke John Acts Rom 1Cor 2Cor " \
          "Gal Eph Phi Col 1Th 2Th 1Tim 2Tim Titus Phmn Heb Jas 1Pet 2Pet 1Jn 2Jn 3Jn Jude Rev", abbr, " ")
    split("Genesis|Exodus|Leviticus|Numbers|Deuteronomy|Joshua|Judges|Ruth|1 Samuel|2 Samuel|1 Kings|2 Kings|" \
          "1 Chronicles|2 Chronicles|Ezra|Nehemiah|Esther|Job|Psalms|Proverbs|Ecclesiastes|Song of Solomon|Isaiah|" \
          "Jeremiah|Lamentations|Ezekiel|Daniel|Hosea|Joel|Amos|Obadiah|Jonah|Micah|Nahum|Habakkuk|Zephaniah|" \
          "Haggai|Zechariah|Malachi|Matthew|Mark|Luke|John|Acts|Romans|1 Corinthians|2 Corinthians|Galatians|" \
          "Ephesians|Philippians|Colossians|1 Thessalonians|2 Thessalonians|1 Timothy|2 Timothy|Titus|Philemon|" \
          "Hebrews|James|1 Peter|2 Peter|1 John|2 John|3 John|Jude|Revelation", names, "|")
    for (i = 1; i <= 66; ++i) { book[abbr[i]] = names[i]; index_of[names[i]] = i - 1 }
  }
  function flush() {
    if (cur == "") return
    gsub(/  +/, " ", cur); sub(/ +$/, "", cur)
    ++n; text[n] = cur; from[n] = book[b]
    if (from[n] == "") { print "unknown book abbreviation " b > "/dev/stderr"; exit 3 }
    cur = ""
  }
  function json(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
  /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ / {
    flush()
    match($0, /^[1-3]?[A-Za-z]+/); b = substr($0, 1, RLENGTH)
    match($0, /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ /); cur = substr($0, RLENGTH + 1)
    next
  }
  /^[ \t]*$/ { next }
  { sub(/^[ \t]+/, "", $0); cur = cur " " $0 }
  END {
    flush()
    if (n != 31102) { print "found " n " verses, expected 31102" > "/dev/stderr"; exit 4 }
    # Verse v (1-based) has hash key (v * 2654435761) mod 2^32: exact in doubles (< 2^53).
    if (kind == "preference") {
      prompt = "Below is an instruction that describes a task, paired with an input that provides further context. " \
               "Write a response that appropriately completes the request.\\n\\n### Instruction:\\nWhich book of " \
               "the Bible is this verse from?\\n\\n### Input:\\n"
      eligible = 0; picked = 0
      for (k = 0; k < n && picked < count; ++k) {
        v = k * 7919 % n + 1  # the order of the book task (task 0 below): skip the verses it takes
        words = split(text[v], w, " ")
        if (words > 40 || words < 6) continue
        if (++eligible <= 4000) continue
        ++picked
        other = names[(index_of[from[v]] + 1 + v % 65) % 66 + 1]
        key = (v * 2654435761) % 4294967296
        line = "{\"prompt\": \"" prompt substr(json(text[v]), 2, length(json(text[v])) - 2) "\\n\\n### Response:\", " \
               "\"chosen\": " json(from[v]) ", \"rejected\": " json(other) "}"
        printf "%010.0f\t%s\n", key, line
      }
      exit
    }
    # Verse v (1-based) has hash key (v * 2654435761) mod 2^32: exact in doubles (< 2^53).
    for (task = 0; task < 2; ++task) {
      picked = 0
      for (k = 0; k < n && picked < count; ++k) {
        v = (k * 7919 + task * 15551) % n + 1  # 7919 is prime to n = 2 x 15551: every verse once per task
        words = split(text[v], w, " ")
        if (words > 40 || words < 6) continue
        ++picked
        key = ((v * 2654435761 + task * 40503) % 4294967296)
        if (task == 0) {
          line = "{\"instruction\": \"Which book of the Bible is this verse from?\", \"input\": " json(text[v]) \
                 ", \"output\": " json(from[v]) "}"
        } else {
          half = int(words / 2); if (half < 3) half = 3
          head = w[1]; for (j = 2; j <= half; ++j) head = head " " w[j]
          tail = w[half + 1]; for (j = half + 2; j <= words; ++j) tail = tail " " w[j]
          line = "{\"instruction\": \"Continue this verse.\", \"input\": " json(head) ", \"output\": " json(tail) "}"
        }
        printf "%010.0f\t%s\n", key, line
      }
    }
  }' | LC_ALL=C sort -k1,1n -s | cut -f2- >"$tmp"
lines=$(wc -l <"$tmp")
want=$((2 * count))
[ $kind = preference ] && want=$count
[ "$lines" = "$want" ] || { log "wrote $lines lines, expected $want"; exit 1; }
chmod 644 "$tmp"
mv "$tmp" "$out"
log "wrote $out: $lines $([ $kind = preference ] && echo pairs || echo "examples ($count per task)"), $(wc -c <"$out") bytes"
