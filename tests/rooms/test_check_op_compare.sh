# The operator-comparison check fails on a file outside src/ops that compares
# another file's operator pointer, and passes src/ops and an operator's
# comparison inside its own file.
set -u
check="$1/tests/rooms/check_op_compare.sh"
t=$(mktemp -d /tmp/hp-op-cmp-XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/src/ops" "$t/src/parallel" "$t/src/runtime"
printf 'int is_cast(const hp_opdef *op) { return op == &hp_op_cast; }\n' > "$t/src/ops/cast.c"
printf 'const hp_opdef hp_op_mine = {0};\nint f(const hp_node *n) { return n->op != &hp_op_mine; }\n' > "$t/src/parallel/own.c"
bash "$check" "$t" >/dev/null || { echo "FAIL: a clean tree was rejected"; exit 1; }
printf 'int f(const hp_node *n) {\n    return n->op == &hp_op_mine;\n}\n' > "$t/src/runtime/bad.c"
out=$(bash "$check" "$t") && { echo "FAIL: a comparison outside the operator's file was accepted"; exit 1; }
echo "$out" | grep -q "src/runtime/bad.c:2: compares the operator pointer &hp_op_mine" || { echo "FAIL: message: $out"; exit 1; }
printf 'int g(const hp_node *n) { return n->op!=&hp_op_other; }\n' > "$t/src/runtime/bad.c"
bash "$check" "$t" >/dev/null && { echo "FAIL: a spacing-free comparison was accepted"; exit 1; }
echo "all checks passed"
