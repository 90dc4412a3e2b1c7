/* autopar/cost_link: a collective call's time on each tier — its messages
 * and bytes per rank (autopar/volume) at the tier's α per message and β per
 * rank, from the profile's fit or the cluster's description (see cost.h). */
#include <math.h>

#include "autopar/cost.h"
#include "autopar/volume.h"

/* Messages and bytes of a call per tier for the rank (autopar/volume: as the comm layer moves them). */
static hp_status volume(double *bytes, double *msgs, const hp_cost_call *c, int64_t fuse) {
    int e = c->elem_bytes > 0 ? c->elem_bytes : 4;
    hp_coll_call v = {.kind = c->kind, .elem_bytes = e, .members = c->members, .supernodes = c->supernodes,
                      .a2a_fuse_bytes = fuse, .peer = c->peer, .shared_output = c->shared_output};
    v.bytes = (int64_t)(c->bytes / e + 0.5) * e;
    if (v.kind == HP_PROF_SEND && v.peer < 0) v.peer = 1;
    int member = c->member >= 0 && c->member < c->members ? c->member : -1;
    if (v.kind == HP_PROF_SEND && member == v.peer) member = -1;
    hp_coll_vol o;
    HP_TRY(hp_coll_volume(&o, &v, member));
    for (int t = 0; t < HP_PROF_NTIERS; t++) bytes[t] = (double)o.bytes[t], msgs[t] = (double)o.msgs[t];
    return HP_OK;
}

/* The volume of a call of kind k of N bytes at p members over s supernodes (the calibration's groups). */
static void volume_at(double *bytes, double *msgs, hp_prof_kind k, double N, int p, int s) {
    hp_cost_call c = {.kind = k, .bytes = N, .elem_bytes = 4, .members = p, .supernodes = s, .member = 0, .peer = 1};
    if (volume(bytes, msgs, &c, 0)) bytes[0] = bytes[1] = msgs[0] = msgs[1] = 0; /* the calibration's shapes are valid */
}

/* The tier's α (seconds per message) and β (bytes per second per rank) for kind k. */
static void link_of(double *alpha, double *beta, hp_prof_tier t, hp_prof_kind k, const hp_cost_env *env) {
    const hp_profile *p = env->profile;
    if (p && !(env->links_from_cluster & (1u << t))) {
        hp_prof_kind use = p->coll[t][k].given ? k : HP_PROF_ALL_REDUCE;
        const hp_prof_coll *e = &p->coll[t][use];
        if (e->given) {
            /* the fit is per call at `ranks` members (on tier inter: over 2 supernodes); a call's messages
             * and bytes there turn it into per message and per rank */
            double b[2], m[2], ref = 1 << 20;
            int P = e->ranks >= 2 ? e->ranks : 2;
            volume_at(b, m, use, ref, P, t == HP_PROF_INTER ? 2 : 1);
            *alpha = m[t] > 0 ? e->alpha_us * 1e-6 / m[t] : 0;
            *beta = e->beta_GBps * 1e9 * (b[t] > 0 ? b[t] / ref : 1);
            return;
        }
    }
    const hp_cluster *c = env->cluster;
    if (c) {
        *alpha = (t == HP_PROF_INTER ? c->inter_latency_us : c->intra_latency_us) * 1e-6;
        *beta = (t == HP_PROF_INTER ? c->inter_bandwidth_GBps : c->intra_bandwidth_GBps) * 1e9;
        return;
    }
    *alpha = 0, *beta = INFINITY; /* nothing describes the link: free */
}

hp_status hp_cost_call_time(double *t, double *bytes, double *msgs, const hp_cost_call *c, const hp_cost_env *env) {
    double b[2], m[2];
    HP_TRY(volume(b, m, c, env->a2a_fuse_bytes));
    for (int tier = 0; tier < HP_PROF_NTIERS; tier++) {
        double alpha = 0, beta = 1;
        if (m[tier] > 0 || b[tier] > 0) link_of(&alpha, &beta, (hp_prof_tier)tier, c->kind, env);
        t[tier] = m[tier] * alpha + b[tier] / beta; /* a tier nothing describes (beta 0): not finite */
        if (bytes) bytes[tier] = b[tier];
        if (msgs) msgs[tier] = m[tier];
    }
    return HP_OK;
}
