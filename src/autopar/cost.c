/* autopar/cost: the step simulated over the stages' programs (see cost.h):
 * each stage's compute stream walks its actions' nodes; collectives go on
 * lanes; waits, blocking calls and pipeline receives hold the stream. */
#include "autopar/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/opdef.h"

double hp_cost_node_time(const hp_graph *g, int node, const hp_cost_env *env, int *fallback) {
    const hp_node *n = &g->nodes[node];
    if (n->op->communicates) return 0;
    double flops = n->op->flops ? n->op->flops(g, n) : 0, bytes = n->op->bytes ? n->op->bytes(g, n) : 0;
    if (flops <= 0 && bytes <= 0) return 0;
    int v = n->nout > 0 ? n->out[0] : n->nin > 0 ? n->in[0] : -1;
    hp_prof_dtype dt = v >= 0 && g->vals[v].dtype == HP_BF16 ? HP_PROF_BF16 : HP_PROF_FP32;
    hp_prof_rate r;
    hp_profile_kernel_rate(&r, env->profile, hp_profile_family_of_op(n->op->name), dt, flops);
    if (fallback) *fallback = r.fallback != HP_PROF_EXACT;
    double scale = env->compute_scale > 0 ? env->compute_scale : 1;
    /* each family at the bound calibration measured it by: the matrix products by their FLOPs, the rest by
     * their bytes (a calibrated rate is both numbers of one timed shape: the other one says nothing of a shape
     * with another ratio of FLOPs to bytes); a node that has only the other number, by it */
    hp_prof_family f = hp_profile_family_of_op(n->op->name);
    int by_flops = f == HP_PROF_GEMM || f == HP_PROF_GROUPED_GEMM || f == HP_PROF_ATTENTION;
    if ((by_flops && flops > 0) || bytes <= 0) return flops / (r.gflops * 1e9 * scale);
    return bytes / (r.gbps * 1e9 * scale);
}

/* ---- the simulation ---- */

typedef struct {
    double end, tier[HP_PROF_NTIERS]; /* when its calls end; their seconds per tier (the wait's split) */
    int live;
    int from, seq; /* a receive: the sending stage and the message's index from it */
} pend;

typedef struct {
    double *at; /* arrival times, in send order */
    int n, cap, taken;
} queue;

typedef struct {
    const hp_compiled *cc;
    hp_action_expansion ex;
    int stage, pos, done;
    double t, lane[HP_COST_NLANES];
    pend *slot, *unit;
    int nslot, nunit;
    pend *reducing; /* the fsdp2 style's reduction in flight (its unit's pair), NULL: none */
    double compute, opt, exposed[HP_PROF_NTIERS], bubble, comm[HP_PROF_NTIERS], bytes[HP_PROF_NTIERS],
        msgs[HP_PROF_NTIERS], flops, family[HP_PROF_NFAMILIES];
    int fallbacks;
    /* processor sharing (share_stages): the kernel running, its work left (seconds at the all-computing rate) */
    int computing;
    double work;
} stage_sim;

typedef struct {
    stage_sim *st;
    int nst;
    queue *q; /* [nst * nst]: from * nst + to */
    const hp_cost_env *env;
    int rps;
    hp_cost *out;
    int timeline, cap_events;
} sim;

static const char *phase_name(hp_phase ph) { return ph == HP_PHASE_FWD ? "fwd" : ph == HP_PHASE_BWD ? "bwd" : "opt"; }

static hp_status event(sim *s, const stage_sim *st, int comm, int lane, const hp_node *n, double t0, double t1,
                       double bytes) {
    if (!s->timeline || t1 <= t0) return HP_OK;
    hp_cost *o = s->out;
    if (o->nevents == s->cap_events) {
        int cap = s->cap_events ? 2 * s->cap_events : 1024;
        hp_cost_event *e = realloc(o->events, sizeof *e * (size_t)cap);
        if (!e) return hp_errorf("hp_cost_predict: out of memory for the timeline");
        o->events = e, s->cap_events = cap;
    }
    o->events[o->nevents++] = (hp_cost_event){.stage = st->stage, .comm = comm, .lane = lane, .name = n->name,
                                              .phase = phase_name(n->phase), .t0 = t0, .t1 = t1, .bytes = bytes};
    return HP_OK;
}

/* Runs the calls of node n on their lanes from the stream's time: *p gets when they end and their tier
 * split (a send's message is there when they end). */
static hp_status run_calls(sim *s, stage_sim *st, const hp_node *n, const hp_cost_call *c, int nc, pend *p) {
    memset(p, 0, sizeof *p);
    p->end = st->t;
    for (int i = 0; i < nc; i++) {
        double tt[HP_PROF_NTIERS], b[HP_PROF_NTIERS], m[HP_PROF_NTIERS], dur = 0;
        HP_TRY(hp_cost_call_time(tt, b, m, &c[i], s->env));
        for (int k = 0; k < HP_PROF_NTIERS; k++) {
            dur += tt[k];
            p->tier[k] += tt[k];
            st->comm[k] += tt[k], st->bytes[k] += b[k], st->msgs[k] += m[k];
        }
        /* a call starts when its lane is free and the calls before it of this node have ended */
        double t0 = fmax(fmax(st->t, st->lane[c[i].lane]), p->end);
        st->lane[c[i].lane] = t0 + dur;
        p->end = t0 + dur;
        HP_TRY(event(s, st, 1, c[i].lane, n, t0, t0 + dur, c[i].bytes));
    }
    p->live = nc > 0;
    return HP_OK;
}

/* The stream holds until p ends: exposed by tier (forward, backward) or the optimizer's. */
static void hold(stage_sim *st, const hp_node *n, pend *p) {
    if (!p->live) return;
    p->live = 0;
    double w = p->end - st->t;
    if (w <= 0) return;
    st->t = p->end;
    if (n->phase == HP_PHASE_OPT) {
        st->opt += w;
        return;
    }
    double sum = 0;
    for (int k = 0; k < HP_PROF_NTIERS; k++) sum += p->tier[k];
    for (int k = 0; k < HP_PROF_NTIERS; k++) st->exposed[k] += sum > 0 ? w * p->tier[k] / sum : w / HP_PROF_NTIERS;
}

static hp_status push_msg(sim *s, int from, int to, double at) {
    if (from < 0 || to < 0 || from >= s->nst || to >= s->nst)
        return hp_errorf("hp_cost_predict: a pipeline message from stage %d to stage %d: no such stage", from, to);
    queue *q = &s->q[from * s->nst + to];
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 16;
        double *a = realloc(q->at, sizeof *a * (size_t)cap);
        if (!a) return hp_errorf("hp_cost_predict: out of memory");
        q->at = a, q->cap = cap;
    }
    q->at[q->n++] = at;
    return HP_OK;
}

static pend *pair_of(stage_sim *st, const hp_coll_desc *d) {
    if (d->pair == HP_COLL_PAIR_SLOT && d->pair_key >= 0 && d->pair_key < st->nslot) return &st->slot[d->pair_key];
    if (d->pair == HP_COLL_PAIR_UNIT && d->pair_key >= 0 && d->pair_key < st->nunit) return &st->unit[d->pair_key];
    return NULL;
}

static int fsdp2(const hp_compiled *cc) { return cc->fsdp.level && cc->fsdp.style == HP_FSDP_STYLE_FSDP2; }

/* Bytes of FSDP unit u's whole buffer (elements of 2 bytes when bf16). */
static double unit_bytes(const hp_compiled *cc, int u, int bf16) {
    return u >= 0 && u < cc->fsdp.nunits ? (bf16 ? 2.0 : 4.0) * (double)cc->fsdp.units[u].size : 0;
}

/* A copy of `bytes` on the compute stream (read and written at the profile's large pointwise rate). */
static hp_status local_copy(sim *s, stage_sim *st, const hp_node *n, double bytes) {
    if (bytes <= 0) return HP_OK;
    hp_prof_rate r;
    hp_profile_kernel_rate(&r, s->env->profile, HP_PROF_POINTWISE, HP_PROF_FP32, HP_PROFILE_LARGE_FROM);
    double scale = s->env->compute_scale > 0 ? s->env->compute_scale : 1;
    double dt = 2 * bytes / (r.gbps * 1e9 * scale);
    HP_TRY(event(s, st, 0, 0, n, st->t, st->t + dt, 0));
    st->t += dt;
    if (n->phase == HP_PHASE_OPT) st->opt += dt;
    else st->compute += dt;
    return HP_OK;
}

/* One collective node. *blocked: a receive whose message is not sent yet (the stage waits). */
static hp_status step_coll(sim *s, stage_sim *st, const hp_node *n, const hp_coll_desc *d, int node, int *blocked) {
    const hp_compiled *cc = st->cc;
    hp_cost_call c[HP_COST_MAX_CALLS];
    pend *p = pair_of(st, d), tmp;
    int me = st->stage;
    if (d->role == HP_COLL_WAIT) {
        if (!p) return HP_OK;
        if (d->kind == HP_COLL_RECV) {
            if (!p->live) return HP_OK;
            queue *q = &s->q[p->from * s->nst + me];
            if (p->seq >= q->n) {
                *blocked = 1;
                return HP_OK;
            }
            double at = q->at[p->seq];
            p->live = 0;
            if (at > st->t) {
                if (n->phase == HP_PHASE_OPT) st->opt += at - st->t;
                else st->bubble += at - st->t;
                st->t = at;
            }
            return HP_OK;
        }
        hold(st, n, p);
        if (fsdp2(cc) && d->group == HP_COLL_GROUP_FSDP_SHARD && d->kind == HP_COLL_ALL_GATHER)
            HP_TRY(local_copy(s, st, n, unit_bytes(cc, d->unit, cc->fsdp.gather_bf16))); /* staging out to the params */
        return HP_OK;
    }
    if (d->kind == HP_COLL_RECV) { /* a receive's start: which message it takes */
        if (!p) return HP_OK;
        if (d->peer < 0 || d->peer >= s->nst)
            return hp_errorf("hp_cost_predict: node '%s' receives from stage %d of %d", n->name, d->peer, s->nst);
        queue *q = &s->q[d->peer * s->nst + me];
        *p = (pend){.live = 1, .from = d->peer, .seq = q->taken++};
        return HP_OK;
    }
    /* FSDP's reduce-scatter wait starts the replicas' all-reduce: it waits for the reduce-scatter first,
     * unless the two are one fused call on the shard group's lane */
    if (d->role == HP_COLL_START && d->group == HP_COLL_GROUP_FSDP_REPLICAS && p && !cc->fsdp.fuse_replicas)
        hold(st, n, p);
    if (fsdp2(cc) && d->role == HP_COLL_START && d->group == HP_COLL_GROUP_FSDP_SHARD &&
        d->kind == HP_COLL_REDUCE_SCATTER) { /* one reduction in flight; the gradient staged first */
        if (st->reducing) hold(st, n, st->reducing);
        st->reducing = NULL;
        HP_TRY(local_copy(s, st, n, unit_bytes(cc, d->unit, cc->fsdp.reduce_bf16)));
    }
    int nc = hp_cost_calls_of(c, cc, node, s->rps);
    if (d->kind == HP_COLL_SEND) {
        HP_TRY(run_calls(s, st, n, c, nc, &tmp));
        HP_TRY(push_msg(s, me, d->peer, nc ? tmp.end : st->t));
        if (d->role == HP_COLL_START && p) *p = tmp;
        return HP_OK; /* a staged send is not waited for */
    }
    HP_TRY(run_calls(s, st, n, c, nc, &tmp));
    if (s->env->inter_holds && tmp.live && tmp.tier[HP_PROF_INTER] > 0) {
        pend held = tmp; /* the stream waits out the call; its wait later finds it done */
        hold(st, n, &held);
    }
    if (d->role == HP_COLL_START && fsdp2(cc) && d->group == HP_COLL_GROUP_FSDP_REPLICAS) {
        hold(st, n, &tmp); /* fsdp2: the replicas' all-reduce is a blocking call after the reduce-scatter */
        if (p) p->live = 0;
        return HP_OK;
    }
    if (d->role == HP_COLL_START) {
        if (p) *p = tmp;
        else hold(st, n, &tmp); /* no pair to wait at: as blocking */
        if (p && fsdp2(cc) && d->kind == HP_COLL_REDUCE_SCATTER) st->reducing = p;
        return HP_OK;
    }
    hold(st, n, &tmp);
    return HP_OK;
}

/* The kernel at st's position ran from t0 to t1: the stream's time, the step's split, the timeline. */
static hp_status ran(sim *s, stage_sim *st, double t0, double t1) {
    const hp_graph *g = st->cc->rg.g;
    const hp_node *n = &g->nodes[st->ex.nodes[st->pos]];
    double dt = t1 - t0;
    st->family[hp_profile_family_of_op(n->op->name)] += dt;
    HP_TRY(event(s, st, 0, 0, n, t0, t1, 0));
    st->t = t1;
    if (n->phase == HP_PHASE_OPT) {
        st->opt += dt;
    } else {
        st->compute += dt;
        st->flops += n->op->flops ? n->op->flops(g, n) : 0;
    }
    return HP_OK;
}

/* Runs stage st until it ends, waits for a message not sent yet, or (shared: on the shared clock at `now`) its
 * stream is held past now or starts a kernel; *progress: it ran or started a node. */
static hp_status advance(sim *s, stage_sim *st, int *progress, int shared, double now) {
    const hp_graph *g = st->cc->rg.g;
    while (st->pos < st->ex.n && !(shared && st->t > now)) {
        int node = st->ex.nodes[st->pos];
        const hp_node *n = &g->nodes[node];
        hp_coll_desc d;
        if (hp_coll_describe(&d, g, n)) {
            int blocked = 0;
            HP_TRY(step_coll(s, st, n, &d, node, &blocked));
            if (blocked) return HP_OK;
        } else if (!n->op->communicates) {
            int fb = 0;
            double dt = hp_cost_node_time(g, node, s->env, &fb);
            st->fallbacks += fb;
            if (shared && dt > 0) { /* runs on the shared clock: run_shared ends it */
                st->computing = 1, st->work = dt;
                *progress = 1;
                return HP_OK;
            }
            HP_TRY(ran(s, st, st->t, st->t + dt));
        }
        st->pos++;
        *progress = 1;
    }
    if (st->pos >= st->ex.n) st->done = 1;
    return HP_OK;
}

/* The largest pair key of each space among g's nodes, plus one. */
static void key_counts(int *nslot, int *nunit, const hp_graph *g) {
    *nslot = *nunit = 0;
    for (int i = 0; i < g->nnodes; i++) {
        hp_coll_desc d;
        if (!hp_coll_describe(&d, g, &g->nodes[i]) || d.pair_key < 0) continue;
        if (d.pair == HP_COLL_PAIR_SLOT && d.pair_key + 1 > *nslot) *nslot = d.pair_key + 1;
        if (d.pair == HP_COLL_PAIR_UNIT && d.pair_key + 1 > *nunit) *nunit = d.pair_key + 1;
    }
}

static void sim_free(sim *s) {
    for (int i = 0; i < s->nst; i++) {
        hp_action_expansion_free(&s->st[i].ex);
        free(s->st[i].slot);
        free(s->st[i].unit);
    }
    if (s->q)
        for (int i = 0; i < s->nst * s->nst; i++) free(s->q[i].at);
    free(s->q);
    free(s->st);
}

static hp_status sim_init(sim *s, const hp_compiled *const *stage, int nstages) {
    s->st = calloc((size_t)nstages, sizeof *s->st);
    s->q = calloc((size_t)nstages * (size_t)nstages, sizeof *s->q);
    if (!s->st || !s->q) return hp_errorf("hp_cost_predict: out of memory");
    s->nst = nstages;
    for (int i = 0; i < nstages; i++) {
        stage_sim *st = &s->st[i];
        const hp_compiled *cc = stage[i];
        st->cc = cc;
        st->stage = cc->pp.axis >= 0 ? cc->pp.stage : 0;
        if (st->stage != i)
            return hp_errorf("hp_cost_predict: program %d of %d is stage %d's (give one program per stage, in order)",
                             i, nstages, st->stage);
        HP_TRY(hp_action_expand(&st->ex, cc->rg.g, cc->sched.order, cc->sched.n, &cc->sched.step));
        key_counts(&st->nslot, &st->nunit, cc->rg.g);
        st->slot = calloc((size_t)st->nslot + 1, sizeof *st->slot);
        st->unit = calloc((size_t)st->nunit + 1, sizeof *st->unit);
        if (!st->slot || !st->unit) return hp_errorf("hp_cost_predict: out of memory");
    }
    return HP_OK;
}

static hp_status stuck(const sim *s) {
    for (int i = 0; i < s->nst; i++)
        if (!s->st[i].done)
            return hp_errorf("hp_cost_predict: stage %d waits at node '%s' for a message no stage sends", i,
                             s->st[i].cc->rg.g->nodes[s->st[i].ex.nodes[s->st[i].pos]].name);
    return HP_OK;
}

/* Each stage on a clock of its own (they meet only at pipeline messages). */
static hp_status run_free(sim *s) {
    for (;;) {
        int progress = 0, left = 0;
        for (int i = 0; i < s->nst; i++) {
            if (s->st[i].done) continue;
            HP_TRY(advance(s, &s->st[i], &progress, 0, INFINITY));
            left += !s->st[i].done;
        }
        if (!left) return HP_OK;
        if (!progress) return stuck(s);
    }
}

/* The stages on one clock, sharing the cores: at each moment every stage that can go on runs its nodes up to
 * its next kernel; the A stages computing run at share_speed[A] times the all-computing rate; the clock moves to
 * the first kernel's end or the first held stream's release. */
static hp_status run_shared(sim *s) {
    double now = 0;
    for (;;) {
        int progress = 1;
        while (progress) { /* everything that can happen at `now` (a send at now may wake a receiver) */
            progress = 0;
            for (int i = 0; i < s->nst; i++)
                if (!s->st[i].done && !s->st[i].computing) HP_TRY(advance(s, &s->st[i], &progress, 1, now));
        }
        int active = 0, left = 0;
        double next = INFINITY;
        for (int i = 0; i < s->nst; i++) {
            active += s->st[i].computing;
            left += !s->st[i].done;
        }
        if (!left) return HP_OK;
        double speed = active && s->env->share_speed[active] > 0 ? s->env->share_speed[active] : 1;
        for (int i = 0; i < s->nst; i++) {
            const stage_sim *st = &s->st[i];
            if (st->computing) next = fmin(next, now + st->work / speed);
            else if (!st->done && st->t > now) next = fmin(next, st->t);
        }
        if (!isfinite(next)) return stuck(s);
        for (int i = 0; i < s->nst; i++) {
            stage_sim *st = &s->st[i];
            if (!st->computing) continue;
            st->work -= (next - now) * speed;
            if (st->work > 1e-12) continue; /* (a picosecond: rounding, not a kernel) */
            st->computing = 0; /* the kernel that started when the stream was last free ends now */
            HP_TRY(ran(s, st, st->t, next));
            st->pos++;
        }
        now = next;
    }
}

static hp_status run_all(sim *s) {
    int shared = s->env->share_stages > 1 && s->env->share_stages <= HP_COST_SHARE_MAX && s->nst == s->env->share_stages;
    HP_TRY(shared ? run_shared(s) : run_free(s));
    /* the host's work around each step (the profile's; a trainer's batch, schedule, loss): the optimizer's share */
    double host = s->env->profile->step_overhead_us * 1e-6;
    for (int i = 0; i < s->nst; i++) s->st[i].t += host, s->st[i].opt += host;
    return HP_OK;
}

hp_status hp_cost_predict(hp_cost *out, const hp_compiled *const *stage, int nstages, const hp_cost_env *env,
                          int timeline) {
    memset(out, 0, sizeof *out);
    if (!stage || nstages < 1 || !env || !env->profile)
        return hp_errorf("hp_cost_predict: needs the stages' programs (got %d) and a profile", nstages);
    int world = hp_mesh_size(&stage[0]->mesh);
    if (env->cluster && world > env->cluster->world)
        return hp_errorf("hp_cost_predict: the plan's mesh has %d ranks, the cluster '%s' %d", world,
                         env->cluster->name, env->cluster->world);
    sim s = {.env = env, .rps = env->cluster ? env->cluster->ranks_per_supernode : 0, .out = out,
             .timeline = timeline};
    hp_status st = sim_init(&s, stage, nstages);
    if (!st) st = run_all(&s);
    if (!st) {
        int crit = 0;
        for (int i = 1; i < nstages; i++)
            if (s.st[i].t > s.st[crit].t) crit = i;
        const stage_sim *c = &s.st[crit];
        out->step_s = c->t;
        out->compute_s = c->compute;
        out->optimizer_s = c->opt;
        out->bubble_s = c->bubble;
        for (int k = 0; k < HP_PROF_NTIERS; k++) {
            out->exposed_s[k] = c->exposed[k];
            out->comm_s[k] = c->comm[k];
            out->comm_bytes[k] = c->bytes[k];
            out->comm_msgs[k] = c->msgs[k];
        }
        out->flops = c->flops;
        memcpy(out->family_s, c->family, sizeof out->family_s);
        out->stage = crit;
        out->nstages = nstages;
        out->stage_bytes = calloc((size_t)nstages, sizeof *out->stage_bytes);
        out->stage_msgs = calloc((size_t)nstages, sizeof *out->stage_msgs);
        if (!out->stage_bytes || !out->stage_msgs) st = hp_errorf("hp_cost_predict: out of memory");
        for (int i = 0; !st && i < nstages; i++)
            for (int k = 0; k < HP_PROF_NTIERS; k++)
                out->stage_bytes[i][k] = s.st[i].bytes[k], out->stage_msgs[i][k] = s.st[i].msgs[k];
        for (int i = 0; i < nstages; i++) out->fallbacks += s.st[i].fallbacks;
    }
    sim_free(&s);
    if (st) hp_cost_free(out);
    return st;
}

void hp_cost_free(hp_cost *c) {
    free(c->stage_bytes);
    free(c->stage_msgs);
    c->stage_bytes = NULL, c->stage_msgs = NULL;
    free(c->events);
    c->events = NULL;
    c->nevents = 0;
}
