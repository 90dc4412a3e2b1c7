/* api/simulate_out: what `hyperpar simulate --timeline PREFIX` writes — the
 * predicted timeline, one runtime/trace file per pipeline stage
 * (PREFIX.rankN.json, N the stage's first rank), and PREFIX.sim.json, the
 * prediction it belongs to (the split, the mesh, the ranks traced), which
 * `hyperpar report` reads to draw a simulated step's page. The directory is
 * made when missing; every file is written atomically. */
#include "api/simulate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"
#include "io/json.h"
#include "layout/layout.h"
#include "runtime/trace.h"

/* The first rank of each pipeline stage (stage s: the pp coordinate s, the others 0). */
int hp_api_stage_rank(const hp_mesh *m, int axis, int s) {
    int coord[HP_MESH_MAX_DIMS] = {0};
    if (axis >= 0) coord[axis] = s;
    return hp_mesh_rank(m, coord);
}

static hp_status make_dir(const char *prefix) {
    char *dir = hp_fs_dirname(prefix);
    if (!dir) return hp_errorf("%s: out of memory", prefix);
    hp_status st = hp_fs_mkdir_p(dir);
    free(dir);
    return st;
}

/* The timeline: one trace per stage, the compute stream on track 0, each lane's calls on a track of its own. */
hp_status hp_api_sim_write_trace(const hp_cost *k, const char *prefix, const hp_mesh *m, int axis) {
    HP_TRY(make_dir(prefix));
    hp_status st = HP_OK;
    for (int s = 0; !st && s < k->nstages; s++) {
        int lanes[HP_COST_NLANES], nl = 0;
        size_t nev = 0;
        for (int i = 0; i < k->nevents; i++) {
            const hp_cost_event *e = &k->events[i];
            if (e->stage != s) continue;
            nev++;
            if (!e->comm) continue;
            int seen = 0;
            for (int j = 0; j < nl && !seen; j++) seen = lanes[j] == e->lane;
            if (!seen) lanes[nl++] = e->lane;
        }
        hp_trace *t = NULL;
        st = hp_trace_create(&t, hp_api_stage_rank(m, axis, s), nl > 0 ? nl : 1, nev > 0 ? nev : 1);
        if (st) break;
        hp_trace_set_origin(t, 0);
        for (int i = 0; i < k->nevents; i++) {
            const hp_cost_event *e = &k->events[i];
            if (e->stage != s) continue;
            int track = HP_TRACE_COMPUTE;
            for (int j = 0; e->comm && j < nl; j++)
                if (lanes[j] == e->lane) track = j + 1;
            hp_trace_event(t, e->name, e->phase, track, e->t0, e->t1, (int64_t)e->bytes);
        }
        st = hp_trace_write(t, prefix);
        hp_trace_destroy(t);
    }
    return st;
}

static void num(hp_jw *w, const char *key, double v) {
    hp_jw_key(w, key);
    hp_jw_double(w, v);
}

hp_status hp_api_sim_write_summary(const hp_sim_report *r, const hp_mesh *m, const char *prefix) {
    HP_TRY(make_dir(prefix));
    const char *base = strrchr(prefix, '/');
    base = base ? base + 1 : prefix;
    if (!base[0]) return hp_errorf("%s: the timeline's prefix names a directory, not a file prefix", prefix);
    char mesh[256];
    hp_mesh_str(mesh, sizeof mesh, m);
    int axis = hp_mesh_axis(m, "pp");
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "format"), hp_jw_string(&w, "hyperpar-simulated-step");
    hp_jw_key(&w, "version"), hp_jw_int(&w, 1);
    hp_jw_key(&w, "trace"), hp_jw_string(&w, base);
    hp_jw_key(&w, "mesh"), hp_jw_string(&w, mesh);
    hp_jw_key(&w, "ranks"), hp_jw_int(&w, r->ranks);
    hp_jw_key(&w, "stages"), hp_jw_int(&w, r->stages);
    hp_jw_key(&w, "ranks_traced");
    hp_jw_array_begin(&w);
    for (int s = 0; s < r->stages; s++) hp_jw_int(&w, hp_api_stage_rank(m, axis, s));
    hp_jw_array_end(&w);
    hp_jw_key(&w, "slowest_stage"), hp_jw_int(&w, r->stage);
    hp_jw_key(&w, "cluster"), hp_jw_string(&w, r->cluster);
    hp_jw_key(&w, "profile"), hp_jw_string(&w, r->profile);
    num(&w, "step_ms", r->step_s * 1e3);
    num(&w, "compute_ms", r->compute_s * 1e3);
    num(&w, "optimizer_ms", r->optimizer_s * 1e3);
    num(&w, "exposed_intra_ms", r->exposed_intra_s * 1e3);
    num(&w, "exposed_inter_ms", r->exposed_inter_s * 1e3);
    num(&w, "bubble_ms", r->bubble_s * 1e3);
    num(&w, "comm_intra_ms", r->comm_intra_s * 1e3);
    num(&w, "comm_inter_ms", r->comm_inter_s * 1e3);
    num(&w, "bytes_intra", r->bytes_intra);
    num(&w, "bytes_inter", r->bytes_inter);
    num(&w, "tokens_per_s", r->tokens_per_s);
    num(&w, "mfu", r->mfu);
    num(&w, "compute_scale", r->compute_scale);
    hp_jw_key(&w, "memory_bytes");
    hp_jw_array_begin(&w);
    for (int s = 0; s < r->stages && r->memory; s++) hp_jw_double(&w, r->memory[s].total);
    hp_jw_array_end(&w);
    hp_jw_key(&w, "assumptions");
    hp_jw_array_begin(&w);
    for (int i = 0; i < r->nassumptions; i++) hp_jw_string(&w, r->assumptions[i]);
    hp_jw_array_end(&w);
    hp_jw_object_end(&w);
    char *text = NULL;
    size_t len = 0;
    HP_TRY(hp_jw_finish(&text, &len, &w));
    char path[1200];
    hp_status st = HP_OK;
    if (snprintf(path, sizeof path, "%s.sim.json", prefix) >= (int)sizeof path)
        st = hp_errorf("%s: the timeline's prefix is too long", prefix);
    if (!st) st = hp_fs_write_atomic(path, text, len);
    free(text);
    return st;
}
