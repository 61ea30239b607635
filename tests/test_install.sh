#!/usr/bin/env bash
# Install the build into a temporary prefix, move the installed tree to
# another prefix (the package must be relocatable: no path of the build
# tree or of the first prefix in its CMake files, no absolute library path
# in the exported targets or sla.pc), and build a small consumer program
# against the moved copy three ways: CMake's find_package(sla) with
# sla::shared and sla::static, and pkg-config. Each consumer solves a 2D
# Poisson problem with CG and checks the residual and the version macros
# of the generated sla/config.h.
#   bash test_install.sh <source-dir> <build-dir>
set -u

SRC=${1:?usage: test_install.sh <source-dir> <build-dir>}
BUILD=${2:?usage: test_install.sh <source-dir> <build-dir>}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sla-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
orig=$tmp/first-prefix           # cmake --install goes here
prefix=$tmp/moved/second-prefix # ... and the tree is moved here
fails=0

fail() {
    fails=$((fails + 1))
    echo "FAIL: $*"
}
# step DESCRIPTION COMMAND...: run, keep the log, show it on failure.
step() {
    local what=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then
        echo "ok: $what"
        return 0
    fi
    fail "$what"
    sed 's/^/  | /' "$tmp/log" | tail -40
    return 1
}

step "cmake --install" cmake --install "$BUILD" --prefix "$orig" || exit 1

# Relocatable: the installed CMake files name neither the build tree, the
# source tree nor the prefix they were installed to, and the exported
# targets and sla.pc carry no absolute library path (dependencies are found
# again on the consumer's side).
cmakedir=$(find "$orig" -name 'slaConfig.cmake' -printf '%h\n' | head -n 1)
if [ -z "$cmakedir" ]; then
    fail "no slaConfig.cmake installed"
    exit 1
fi
named=0
for path in "$BUILD" "$SRC" "$orig"; do
    real=$(cd "$path" && pwd -P)
    if hits=$(grep -rlF -e "$path" -e "$real" "$cmakedir"); then
        fail "installed CMake files name $path:" $hits
        named=1
    fi
done
[ "$named" -eq 0 ] && echo "ok: installed CMake files name neither the source or build tree nor the install prefix"
# (a path that starts the value or follows " ; : >, not ${_IMPORT_PREFIX}/...)
if hits=$(grep -nE '(^|[";:> ])/[^ ";]*\.(so|a)([.;" >]|$)' "$cmakedir"/slaTargets*.cmake); then
    fail "absolute library paths in the exported targets:"
    echo "$hits" | sed 's/^/  | /'
else
    echo "ok: exported targets carry no absolute library path"
fi
pcfile=$(find "$orig" -name 'sla.pc' | head -n 1)
if [ -n "$pcfile" ] && hits=$(grep -nE '(-L|-I|^[A-Za-z.]+:.* )/' "$pcfile"); then
    fail "absolute paths in sla.pc:"
    echo "$hits" | sed 's/^/  | /'
fi
mkdir -p "$(dirname "$prefix")"
step "move the installed tree to another prefix" mv "$orig" "$prefix" || exit 1

# What was installed.
for f in include/sla.h include/sla/base.h include/sla/matrix.h include/sla/io.h \
         include/sla/gen.h include/sla/ops.h include/sla/solver.h include/sla/config.h bin/sla; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# The installed headers are the source tree's.
for h in "$SRC"/include/sla.h "$SRC"/include/sla/*.h; do
    cmp -s "$h" "$prefix/include/${h#"$SRC"/include/}" || fail "installed ${h#"$SRC"/} differs from the source"
done
libso=$(find "$prefix" -name 'libsla.so*' -type f | head -n 1)
liba=$(find "$prefix" -name 'libsla.a' | head -n 1)
pc=$(find "$prefix" -name 'sla.pc' | head -n 1)
cfg=$(find "$prefix" -name 'slaConfig.cmake' | head -n 1)
[ -n "$libso" ] || fail "no shared library installed"
[ -n "$liba" ] || fail "no static library installed"
[ -n "$pc" ] || fail "no sla.pc installed"
[ -n "$cfg" ] || fail "no slaConfig.cmake installed"
[ "$fails" -eq 0 ] || exit 1
libdir=$(dirname "$libso")

# The installed tool finds its library through its RPATH.
if out=$(env -u LD_LIBRARY_PATH "$prefix/bin/sla" --version 2>&1); then
    echo "ok: installed sla runs ($out)"
else
    fail "installed bin/sla does not run: $out"
fi

mkdir -p "$tmp/consumer"
cat >"$tmp/consumer/consumer.c" <<'EOF'
/* A program that uses the installed sla: CG on 2D Poisson. */
#include <sla.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *b = NULL, *x = NULL, *r = NULL;
    int rc = 1;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    if (sla_gen_poisson(ctx, 2, 20, &A) != SLA_OK) {
        fprintf(stderr, "consumer: gen: %s\n", sla_ctx_message(ctx));
        goto done;
    }
    sla_int n = sla_matrix_nrows(A);
    b = malloc((size_t)n * sizeof *b);
    x = calloc((size_t)n, sizeof *x);
    r = malloc((size_t)n * sizeof *r);
    if (!b || !x || !r) goto done;
    for (sla_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 3);

    sla_solver_options opts;
    sla_solver_options_default(&opts);
    opts.method = SLA_METHOD_CG;
    opts.precond = SLA_PRECOND_JACOBI;
    opts.rtol = 1e-10;
    sla_solve_info info;
    sla_status st = sla_solve(ctx, A, &opts, b, x, &info);
    if (st != SLA_OK) {
        fprintf(stderr, "consumer: solve: %s %s\n", sla_status_name(st), sla_ctx_message(ctx));
        goto done;
    }
    if (sla_matvec(ctx, A, 0, 1, x, n, r, n) != SLA_OK) goto done;
    double rr = 0, bb = 0;
    for (sla_int i = 0; i < n; i++) {
        rr += (b[i] - r[i]) * (b[i] - r[i]);
        bb += b[i] * b[i];
    }
    double rel = sqrt(rr / bb);
    printf("consumer: sla %s, n = %lld, %s, %lld iterations, residual %.2e\n", sla_version(),
           (long long)n, info.method, (long long)info.iterations, rel);
    rc = (info.converged && rel <= 1e-8) ? 0 : 1;
    /* The generated sla/config.h matches the library. */
    char ver[64];
    snprintf(ver, sizeof ver, "%d.%d.%d", SLA_VERSION_MAJOR, SLA_VERSION_MINOR, SLA_VERSION_PATCH);
    if (strcmp(ver, SLA_VERSION_STRING) != 0 || strcmp(sla_version(), SLA_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: version %s / %s / %s\n", ver, SLA_VERSION_STRING, sla_version());
        rc = 1;
    }
    if (sla_has_feature("suitesparse") != SLA_HAS_SUITESPARSE ||
        sla_has_feature("mpi") != SLA_HAS_MPI || sla_has_feature("no-such") != 0) {
        fprintf(stderr, "consumer: sla_has_feature disagrees with sla/config.h\n");
        rc = 1;
    }
done:
    free(b);
    free(x);
    free(r);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return rc;
}
EOF

# 1. CMake package.
cat >"$tmp/consumer/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(sla_consumer LANGUAGES C)
find_package(sla REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer sla::shared m)
add_executable(consumer_static consumer.c)
target_link_libraries(consumer_static sla::static m)
EOF
if step "configure consumer with find_package(sla)" \
        cmake -S "$tmp/consumer" -B "$tmp/consumer-build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" &&
   step "build consumer (CMake)" cmake --build "$tmp/consumer-build"; then
    step "run consumer (sla::shared)" env LD_LIBRARY_PATH="$libdir" "$tmp/consumer-build/consumer" &&
        cat "$tmp/log"
    # Must use the installed library, not the build tree's.
    if command -v ldd >/dev/null; then
        so=$(LD_LIBRARY_PATH="$libdir" ldd "$tmp/consumer-build/consumer" | awk '/libsla/ { print $3 }')
        case $so in "$prefix"/*) echo "ok: consumer links $so" ;;
            *) fail "consumer resolves libsla to '$so', not the installed one" ;; esac
    fi
    step "run consumer (sla::static)" "$tmp/consumer-build/consumer_static" && cat "$tmp/log"
fi

# 2. pkg-config.
if command -v pkg-config >/dev/null; then
    pcdir=$(dirname "$pc")
    flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs sla 2>"$tmp/log")
    if [ $? -ne 0 ]; then
        fail "pkg-config --cflags --libs sla"
        cat "$tmp/log"
    else
        echo "ok: pkg-config flags: $flags"
        # The flags must point into the install prefix (not the configure-time
        # CMAKE_INSTALL_PREFIX, where another sla may live).
        for var in includedir libdir; do
            dir=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable="$var" sla)
            real=$( [ -d "$dir" ] && cd "$dir" && pwd -P)
            if case "$real/" in "$(cd "$prefix" && pwd -P)"/*) true ;; *) false ;; esac; then
                echo "ok: sla.pc $var = $dir"
            else
                fail "sla.pc $var = '$dir' is not inside the install prefix $prefix" \
                    "(a prefix fixed at configure time? make sla.pc relocatable with \${pcfiledir})"
            fi
        done
        ver=$(PKG_CONFIG_PATH="$pcdir" pkg-config --modversion sla)
        tool=$("$prefix/bin/sla" --version 2>/dev/null | awk '{ print $2 }')
        [ "$ver" = "$tool" ] || fail "pkg-config version '$ver' != sla --version '$tool'"
        # shellcheck disable=SC2086
        step "build consumer (pkg-config)" \
            cc -std=c11 -O2 "$tmp/consumer/consumer.c" -o "$tmp/consumer-pc" $flags -lm &&
            step "run consumer (pkg-config)" env LD_LIBRARY_PATH="$libdir" "$tmp/consumer-pc" &&
            cat "$tmp/log"
    fi
else
    fail "pkg-config not found"
fi

if [ "$fails" -eq 0 ]; then
    echo "test_install: all passed"
else
    echo "test_install: $fails failed"
fi
[ "$fails" -eq 0 ]
