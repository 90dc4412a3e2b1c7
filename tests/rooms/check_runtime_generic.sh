#!/usr/bin/env bash
# The runtime reads the compile's table of who holds what and the
# collectives' descriptors; it keeps no branch on a parallel mechanism: with
# C comments and string and character literals stripped, no code in
# src/runtime/*.{c,h} names FSDP, HSDP or ZeRO levels (case-insensitive:
# `fsdp`, `hsdp`, `zero_level`, `zero_stage`, `zero1`..`zero3`, `hp_zero`).
# Words like `zeros` or `memset ... zero` do not count. Fails naming file,
# line and the word.
# Usage: check_runtime_generic.sh [REPO_ROOT]
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
shopt -s nullglob
files=("$root"/src/runtime/*.c "$root"/src/runtime/*.h)
[ "${#files[@]}" -gt 0 ] || { echo "no files under $root/src/runtime"; exit 1; }
python3 - "$root" "${files[@]}" <<'PY'
import re, sys
root, files = sys.argv[1], sys.argv[2:]
# comments become blanks (their newlines kept), literals become empty ones
lexeme = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
def blank(m):
    t = m.group(0)
    if t.startswith('/'):
        return ' ' + '\n' * t.count('\n')
    return t[0] * 2
word = re.compile(r'fsdp|hsdp|zero_?(?:level|stage)|zero_?[123](?![0-9])|hp_zero', re.I)
bad = 0
for f in files:
    code = lexeme.sub(blank, open(f, encoding='utf-8', errors='replace').read())
    for i, line in enumerate(code.split('\n'), 1):
        for m in word.finditer(line):
            print(f"{f[len(root) + 1:]}:{i}: names '{m.group(0)}' in code (read the table, parallel/holdings, "
                  "or a collective's descriptor instead)")
            bad = 1
if not bad:
    print("no FSDP/HSDP/ZeRO names in the code of src/runtime")
sys.exit(bad)
PY
