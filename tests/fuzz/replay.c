/* tests/fuzz/replay: a main for a fuzz target without libFuzzer. It runs
 * LLVMFuzzerTestOneInput once on every file given, and on every file in
 * every directory given (sorted by name), so the seed corpus and the
 * regression inputs run in the normal test suites (gcc, release and
 * ASan+UBSan). A broken property aborts; no input at all is an error. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: out of memory reading %s\n", path);
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: read error on %s\n", path);
        free(buf);
        return -1;
    }
    /* an exact-size copy, so ASan sees reads past the input's end */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 1;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) abort();
            names = nn;
        }
        names[n] = strdup(de->d_name);
        if (!names[n]) abort();
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            int r = run_file(path);
            if (r < 0) count = -1;
            if (count >= 0) count += r;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            return 1;
        }
        int r = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        if (r < 0) return 1;
        total += r;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs (usage: %s FILE|DIR...)\n", argv[0]);
        return 1;
    }
    printf("replay: %d input(s), every property held\n", total);
    return 0;
}
