# --help of every command with a flag table: each flag's description starts
# in one column (a flag too long for the column has a line of its own, its
# description on the next line, at the same column).
. "$(dirname "$0")/lib.sh"
# desc_columns FILE: the column (1-based) of every flag's description.
desc_columns() {
  awk '
    /^flags / { on = 1; next }
    !on { next }
    pending { match($0, /^ +/); if (RLENGTH > 2 && substr($0, RLENGTH + 1) != "") print RLENGTH + 1; else print "none:" NR; pending = 0; next }
    /^  --/ { if (match($0, /^  --[^ ]+( [^ ]+)?  +/)) print RLENGTH + 1; else pending = 1 }
    END { if (pending) print "none:end" }' "$1"
}
for cmd in train plan sample export bench "bench parallel"; do
  # shellcheck disable=SC2086
  "$HP" $cmd --help >help.txt 2>&1 || { fail "hyperpar $cmd --help failed: $(cat help.txt)"; continue; }
  nflags=$(grep -c '^  --' help.txt)
  [ "$nflags" -ge 3 ] || fail "hyperpar $cmd --help lists $nflags flags"
  desc_columns help.txt >cols.txt
  [ "$(wc -l <cols.txt)" -eq "$nflags" ] || fail "hyperpar $cmd --help: $(wc -l <cols.txt) descriptions for $nflags flags"
  grep -q none cols.txt && fail "hyperpar $cmd --help: a flag without a description (line $(grep none cols.txt | head -1))"
  [ "$(sort -u cols.txt | wc -l)" -eq 1 ] ||
    fail "hyperpar $cmd --help: descriptions start in columns $(sort -un cols.txt | tr '\n' ' ')"
done
finish
