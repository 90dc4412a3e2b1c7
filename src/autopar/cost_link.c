/* autopar/cost_link: a collective call's time on each tier — its messages
 * and bytes per rank (autopar/volume) at the tier's α per message and β per
 * rank, from the profile's fit or the cluster's description (see cost.h). */
#include <math.h>

#include "autopar/cost.h"

/* Messages and bytes per rank and tier of a call (the comm layer's algorithms; see the comment of each). */
static void volume(double *bytes, double *msgs, hp_prof_kind kind, double N, int p, int s) {
    bytes[0] = bytes[1] = msgs[0] = msgs[1] = 0;
    if (p <= 1) return;
    if (s < 1) s = 1;
    double q = (double)p / s, P = p, S = s;
    switch (kind) {
    case HP_PROF_ALL_REDUCE:
        if (s == 1) {
            msgs[0] = 2 * (P - 1), bytes[0] = 2 * (P - 1) / P * N;
        } else { /* reduce-scatter inside, all-reduce of the shard across, all-gather inside */
            msgs[0] = 2 * (q - 1), bytes[0] = 2 * (q - 1) / q * N;
            msgs[1] = 2 * (S - 1), bytes[1] = 2 * (S - 1) / S * N / q;
        }
        break;
    case HP_PROF_ALL_GATHER:
    case HP_PROF_REDUCE_SCATTER:
        if (s == 1) {
            msgs[0] = P - 1, bytes[0] = (P - 1) / P * N;
        } else {
            msgs[0] = q - 1, bytes[0] = (q - 1) / q * N;
            msgs[1] = S - 1, bytes[1] = (S - 1) / S * N / q;
        }
        break;
    case HP_PROF_ALL_TO_ALL:
        msgs[0] = q - 1, bytes[0] = (q - 1) / P * N;
        msgs[1] = P - q, bytes[1] = (P - q) / P * N;
        break;
    default: /* a send: one message to the one peer */
        msgs[s > 1] = 1, bytes[s > 1] = N;
        break;
    }
}

/* The tier's α (seconds per message) and β (bytes per second per rank) for kind k. */
static void link_of(double *alpha, double *beta, hp_prof_tier t, hp_prof_kind k, const hp_cost_env *env) {
    const hp_profile *p = env->profile;
    if (p && !(env->links_from_cluster & (1u << t))) {
        hp_prof_kind use = p->coll[t][k].given ? k : HP_PROF_ALL_REDUCE;
        const hp_prof_coll *e = &p->coll[t][use];
        if (e->given) {
            /* the fit is per call at 2 ranks (on tier inter: over 2 supernodes); a call's messages and bytes
             * there turn it into per message and per rank */
            double b[2], m[2], ref = 1e6;
            volume(b, m, use, ref, 2, t == HP_PROF_INTER ? 2 : 1);
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

void hp_cost_call_time(double *t, double *bytes, double *msgs, const hp_cost_call *c, const hp_cost_env *env) {
    double b[2], m[2];
    volume(b, m, c->kind, c->bytes, c->members, c->supernodes);
    for (int tier = 0; tier < HP_PROF_NTIERS; tier++) {
        double alpha = 0, beta = 1;
        if (m[tier] > 0 || b[tier] > 0) link_of(&alpha, &beta, (hp_prof_tier)tier, c->kind, env);
        t[tier] = m[tier] * alpha + b[tier] / beta; /* a tier nothing describes (beta 0): not finite */
        if (bytes) bytes[tier] = b[tier];
        if (msgs) msgs[tier] = m[tier];
    }
}
