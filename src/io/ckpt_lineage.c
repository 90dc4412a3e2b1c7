/* io/ckpt_lineage: run ids and lineages of checkpoints (see the header). */
#include "io/ckpt_lineage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "io/fsutil.h"

hp_status hp_ckpt_lineage_new_id(char id[HP_LINEAGE_ID]) {
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return hp_errorf("run id: cannot read the system's random source: %s", strerror(errno));
        got += (size_t)r;
    }
    for (int i = 0; i < 16; i++) snprintf(id + 2 * i, 3, "%02x", b[i]);
    return HP_OK;
}

void hp_ckpt_lineage_child(hp_ckpt_lineage *out, const hp_ckpt_lineage *parent, int64_t step, const char *run) {
    memset(out, 0, sizeof *out);
    snprintf(out->run, sizeof out->run, "%s", run);
    if (!parent) return;
    int n = parent->n, drop = n + 1 > HP_LINEAGE_MAX ? n + 1 - HP_LINEAGE_MAX : 0;
    for (int i = drop; i < n; i++) out->links[out->n++] = parent->links[i];
    hp_lineage_link *l = &out->links[out->n++];
    snprintf(l->run, sizeof l->run, "%s", parent->run);
    l->until = step;
}

static int valid_id(const char *s, size_t len) {
    if (len >= HP_LINEAGE_ID) return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

hp_status hp_ckpt_lineage_from_json(hp_ckpt_lineage *out, const hp_json *state) {
    memset(out, 0, sizeof *out);
    const hp_json *id = hp_json_get(state, "run_id");
    if (id) {
        if (id->type != HP_JSON_STRING || !valid_id(id->str, id->len))
            return hp_errorf("key 'run_id': expected up to %d lowercase hex digits", HP_LINEAGE_ID - 1);
        memcpy(out->run, id->str, id->len);
    }
    const hp_json *lin = hp_json_get(state, "lineage");
    if (!lin) return HP_OK;
    if (lin->type != HP_JSON_ARRAY) return hp_errorf("key 'lineage': expected an array, got %s", hp_json_type_name(lin->type));
    if (lin->n > HP_LINEAGE_MAX) return hp_errorf("key 'lineage': %d entries, above the limit of %d", lin->n, HP_LINEAGE_MAX);
    for (int i = 0; i < lin->n; i++) {
        const hp_json *e = &lin->items[i];
        if (e->type != HP_JSON_OBJECT) return hp_errorf("lineage[%d]: expected an object, got %s", i, hp_json_type_name(e->type));
        const char *run;
        int64_t until;
        hp_status st = hp_json_get_string(&run, e, "run");
        if (!st) st = hp_json_get_int(&until, e, "until");
        if (st) return hp_error_wrap(st, "lineage[%d]", i);
        if (!valid_id(run, strlen(run)))
            return hp_errorf("lineage[%d]: key 'run': expected up to %d lowercase hex digits", i, HP_LINEAGE_ID - 1);
        if (until < 0) return hp_errorf("lineage[%d]: key 'until': %lld is negative", i, (long long)until);
        snprintf(out->links[i].run, sizeof out->links[i].run, "%s", run);
        out->links[i].until = until;
        out->n++;
    }
    return HP_OK;
}

void hp_ckpt_lineage_to_json(hp_jw *w, const hp_ckpt_lineage *l) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    hp_jw_key(w, "run_id"), hp_jw_string(w, l->run);
    hp_jw_key(w, "saved_ns"), hp_jw_int(w, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
    hp_jw_key(w, "lineage");
    hp_jw_array_begin(w);
    for (int i = 0; i < l->n; i++) {
        hp_jw_object_begin(w);
        hp_jw_key(w, "run"), hp_jw_string(w, l->links[i].run);
        hp_jw_key(w, "until"), hp_jw_int(w, l->links[i].until);
        hp_jw_object_end(w);
    }
    hp_jw_array_end(w);
}

int hp_ckpt_lineage_has(const hp_ckpt_lineage *l, const char *run, int64_t step) {
    if (!strcmp(l->run, run)) return 1;
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->links[i].run, run) && step <= l->links[i].until) return 1;
    return 0;
}

/* A state.json is small: a larger one is not read whole. */
#define STAMP_MAX_BYTES (16 << 20)

hp_status hp_ckpt_stamp_read(hp_ckpt_stamp *out, const char *dir) {
    memset(out, 0, sizeof *out);
    char *path = hp_fs_join(dir, "state.json"), *text = NULL;
    if (!path) return hp_errorf("%s: out of memory", dir);
    size_t n = 0;
    hp_status st = hp_fs_read_bounded(&text, &n, path, STAMP_MAX_BYTES);
    hp_json *js = NULL;
    if (!st) st = hp_json_parse(&js, text, n);
    if (!st && js->type != HP_JSON_OBJECT) st = hp_errorf("expected an object, got %s", hp_json_type_name(js->type));
    if (!st) st = hp_json_get_int(&out->step, js, "step");
    if (!st && hp_json_get(js, "saved_ns")) st = hp_json_get_int(&out->saved_ns, js, "saved_ns");
    if (!st) st = hp_ckpt_lineage_from_json(&out->lineage, js);
    if (st && text) st = hp_error_wrap(st, "%s", path);
    hp_json_free(js);
    free(text);
    free(path);
    return st;
}
