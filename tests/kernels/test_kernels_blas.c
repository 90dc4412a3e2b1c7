/* OpenBLAS's kernels after hp_kernels_init (kernels/blas_init): with
 * OPENBLAS_CORETYPE unset they use at least the ISA this CPU offers (AVX-512
 * or AVX2 + FMA), whatever OpenBLAS chose for the CPU model by itself (an
 * Intel Xeon of model 207 got Prescott from Debian 12's 0.3.21), and a
 * product computed through them is right; a set OPENBLAS_CORETYPE is left as
 * it is (kernels/blas_core_env runs this with OPENBLAS_CORETYPE=Haswell).
 * OpenBLAS reads the variable when it loads, so to check the unset case from
 * any environment the test runs itself again without it. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "testutil.h"

static void product(void) {
    enum { M = 37, N = 29, K = 53 };
    static float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7) % 11) - 5.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)((i * 5) % 13) - 6.0f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[i * K + k] * b[k * N + j];
            CHECKF(c[i * N + j] == (float)s, "C[%d,%d] = %g, expected %g", i, j, (double)c[i * N + j], s);
        }
}

int main(int argc, char **argv) {
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (argc == 1 && env) { /* the unset case first, in a fresh process */
        char set[64];
        snprintf(set, sizeof set, "%s", env);
        unsetenv("OPENBLAS_CORETYPE");
        pid_t pid = fork();
        if (pid == 0) {
            execl(argv[0], argv[0], "unset", (char *)NULL);
            _exit(127);
        }
        int ws = 0;
        CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        setenv("OPENBLAS_CORETYPE", set, 1);
    }
    const char *before = openblas_get_corename();
    char was[32];
    snprintf(was, sizeof was, "%s", before);
    hp_kernels_init();
    const char *core = openblas_get_corename();
    hp_isa cpu = hp_cpu_best_isa(), want = cpu >= HP_ISA_AVX512 ? HP_ISA_AVX512 : cpu;
    printf("OpenBLAS: %s before, %s after hp_kernels_init (OPENBLAS_CORETYPE=%s, CPU %s)%s%s\n", was, core,
           env ? env : "unset", hp_isa_name(cpu), hp_kernels_openblas_note()[0] ? ": " : "",
           hp_kernels_openblas_note());
    if (env) {
        CHECK(!strcmp(was, core)); /* the user's choice stands */
        CHECK(!hp_kernels_openblas_note()[0]);
    } else {
        CHECKF(hp_openblas_core_isa(core) >= want, "OpenBLAS runs %s (%s) on a %s CPU", core,
               hp_isa_name(hp_openblas_core_isa(core)), hp_isa_name(cpu));
        CHECK(!strcmp(was, core) == !hp_kernels_openblas_note()[0]); /* a change is reported */
    }
    hp_kernels_init(); /* again: nothing changes */
    CHECK(!strcmp(core, openblas_get_corename()));
    product();
    return hp_test_finish(argc > 1 ? "test_kernels_blas (OPENBLAS_CORETYPE unset)" : "test_kernels_blas");
}
