#!/usr/bin/env bash
# tests/api/test_install.sh BUILD_DIR SOURCE_DIR CMAKE CC: installs the
# library into a temporary prefix (cmake --install), checks that the public
# header compiles alone (-std=c11 -Wpedantic, nothing from src/), builds
# examples/train_tiny.c out of tree against the installed copy with
# pkg-config and with a CMake project (find_package(hyperpar)), runs both and
# checks that the loss fell; then moves the prefix and builds again
# (the .pc file finds its prefix from its own place).
set -euo pipefail
build=${1:?usage: test_install.sh BUILD_DIR SOURCE_DIR CMAKE CC}
src=${2:?}
cmake=${3:-cmake}
cc=${4:-cc}
command -v pkg-config >/dev/null || { echo "test_install: pkg-config is missing (scripts/setup.sh --tests installs it)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hp_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "test_install: FAIL: $*"; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in lib/libhyperpar.a include/hyperpar/hyperpar.h lib/pkgconfig/hyperpar.pc \
         lib/cmake/hyperpar/hyperparConfig.cmake lib/cmake/hyperpar/hyperparConfigVersion.cmake; do
    [[ -f $prefix/$f ]] || fail "$prefix/$f was not installed"
done

# The header alone: only the C library, strict C11.
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$prefix/include/hyperpar/hyperpar.h"; then
    fail "hyperpar.h includes a project header"
fi
printf '#include <hyperpar/hyperpar.h>\nint main(void) { return hp_version() ? 0 : 1; }\n' >"$tmp/alone.c"
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$prefix/include" "$tmp/alone.c" || fail "hyperpar.h does not compile alone"

# Out of tree, with pkg-config.
mkdir "$tmp/app"
cp "$src/examples/train_tiny.c" "$tmp/app/"
run_tiny() { # BINARY LABEL
    "$1" >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; fail "$2: train_tiny exited non-zero"; }
    grep -q "falls" "$tmp/out.txt" || { cat "$tmp/out.txt"; fail "$2: the loss did not fall"; }
    echo "$2: $(tail -n 1 "$tmp/out.txt")"
}
pc_build() { # PREFIX OUT
    local flags
    flags=$(PKG_CONFIG_PATH=$1/lib/pkgconfig pkg-config --cflags --libs hyperpar) || fail "pkg-config hyperpar"
    # shellcheck disable=SC2086
    (cd "$tmp/app" && "$cc" -std=c11 -Wall -Wextra -Werror train_tiny.c $flags -o "$2") || fail "cc with pkg-config ($flags)"
}
pc_build "$prefix" "$tmp/app/tiny_pc"
run_tiny "$tmp/app/tiny_pc" "pkg-config"

# Out of tree, with CMake's find_package.
cat >"$tmp/app/CMakeLists.txt" <<'CML'
cmake_minimum_required(VERSION 3.18)
project(tiny C)
find_package(hyperpar 0.1 REQUIRED)
add_executable(train_tiny train_tiny.c)
target_link_libraries(train_tiny PRIVATE hyperpar::hyperpar)
CML
"$cmake" -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=Release >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "find_package(hyperpar)"; }
"$cmake" --build "$tmp/app/build" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake build of train_tiny"; }
run_tiny "$tmp/app/build/train_tiny" "find_package"

# The installed tree is relocatable.
mv "$prefix" "$tmp/moved"
pc_build "$tmp/moved" "$tmp/app/tiny_moved"
run_tiny "$tmp/app/tiny_moved" "moved prefix"
echo "api/install: ok"
