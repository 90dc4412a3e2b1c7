#!/usr/bin/env bash
# tests/rooms/check_includes.sh ROOT: every src/<room>/*.{c,h} under ROOT
# includes ("x/...") only from its own room or from a room in its
# HP_DEPS_<room> list, read from ROOT/CMakeLists.txt so the check and the
# build cannot drift. Also fails on a src/ folder that is not in HP_ROOMS.
# Prints FILE:LINE: room R includes X/... (R may use: ...) per violation.
set -u
root=${1:?usage: check_includes.sh SOURCE_ROOT}
cml=$root/CMakeLists.txt

# Departures that need a design change to remove, as "FILE INCLUDED-ROOM",
# each with a comment saying why. None today.
exempt=()

# The words of a one-line `set(NAME ...)` in CMakeLists.txt, quotes dropped.
cmake_list() {
    local line
    line=$(grep -E "^[[:space:]]*set\($1([[:space:]]|\))" "$cml") || return 1
    line=${line#*"$1"}
    line=${line%%)*}
    echo "${line//\"/}"
}

rooms=$(cmake_list HP_ROOMS) || { echo "$cml: no set(HP_ROOMS ...) line"; exit 1; }
declare -A allowed uses
for r in $rooms; do
    deps=$(cmake_list "HP_DEPS_$r") || { echo "$cml: room $r has no set(HP_DEPS_$r ...) line"; exit 1; }
    uses[$r]=$(echo $deps)
    allowed[$r]=" $r ${uses[$r]} "
done

bad=0
for dir in "$root"/src/*/; do
    r=$(basename "$dir")
    if [[ -z ${allowed[$r]+x} ]]; then
        echo "src/$r: folder is not a room in HP_ROOMS ($cml)"
        bad=1
        continue
    fi
    for f in "$dir"*.c "$dir"*.h; do
        [[ -e $f ]] || continue
        rel=src/$r/$(basename "$f")
        while IFS=: read -r line text; do
            x=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"/]+)\/.*/\1/' <<<"$text")
            [[ ${allowed[$r]} == *" $x "* ]] && continue
            skip=0
            for e in "${exempt[@]+"${exempt[@]}"}"; do [[ $e == "$rel $x" ]] && skip=1; done
            ((skip)) && continue
            echo "$rel:$line: room $r includes $x/... ($r may use: ${uses[$r]:-nothing})"
            bad=1
        done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' "$f")
    done
done
if ((bad)); then echo "rooms/includes: FAIL"; exit 1; fi
echo "rooms/includes: ok ($(echo $rooms | wc -w) rooms)"
