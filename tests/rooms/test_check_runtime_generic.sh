# The runtime-generic check fails on code in src/runtime that names FSDP,
# HSDP or a ZeRO level, and passes such words in comments and string
# literals, and words like `zeros`.
set -u
check="$1/tests/rooms/check_runtime_generic.sh"
t=$(mktemp -d /tmp/hp-rt-generic-XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/src/runtime"
cat > "$t/src/runtime/ok.c" <<'C'
/* FSDP's units are rows of the table (parallel/holdings); HSDP, ZeRO-2 too
 * zero_level */
static const char *layout = "fsdp shards"; // hsdp in a line comment
static char q = '"'; static const char *s2 = "\"fsdp\"";
static void zeros(float *p) { memset(p, 0, 4); } /* set to zero */
C
bash "$check" "$t" >/dev/null || { echo "FAIL: a clean tree was rejected: $(bash "$check" "$t")"; exit 1; }
printf 'int f(const hp_compiled *c) {\n    return c->fsdp.level;\n}\n' > "$t/src/runtime/bad.c"
out=$(bash "$check" "$t") && { echo "FAIL: code naming fsdp was accepted"; exit 1; }
echo "$out" | grep -q "src/runtime/bad.c:2: names 'fsdp'" || { echo "FAIL: message: $out"; exit 1; }
printf '/* a comment */ int g(void) { return HP_ZERO_LEVEL; }\n' > "$t/src/runtime/bad.c"
bash "$check" "$t" >/dev/null && { echo "FAIL: HP_ZERO_LEVEL was accepted"; exit 1; }
printf 'int h(int zero2) { return zero2; }\n' > "$t/src/runtime/bad.c"
bash "$check" "$t" >/dev/null && { echo "FAIL: zero2 was accepted"; exit 1; }
printf '#include "x.h"\nstatic int Hsdp_replicas;\n' > "$t/src/runtime/bad.h"
rm "$t/src/runtime/bad.c"
out=$(bash "$check" "$t") && { echo "FAIL: Hsdp in a header was accepted"; exit 1; }
echo "$out" | grep -q "src/runtime/bad.h:2: names 'Hsdp'" || { echo "FAIL: message: $out"; exit 1; }
echo "all checks passed"
