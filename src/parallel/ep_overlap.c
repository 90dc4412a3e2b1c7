/* parallel/ep_overlap: the expert-parallel overlap pass (see parallel/ep.h).
 *
 * For each exchange X, in creation order: the nodes of X's phase that neither lead to X (its ancestors) nor read
 * what it makes (its descendants) are its candidates, between the exchange before it and the one after the next
 * (a MoE layer's shared experts are independent of both its exchanges; a node touching an FSDP slot stays:
 * slots are reused); each is given to one exchange, the
 * candidates X shares with the next exchange split by FLOPs so that both have about as much to hide. X becomes a
 * start (the node itself) and a wait placed right before X's first descendant, the chosen nodes right before the
 * wait (schedule hints). The step's order is then simulated as the schedule pass will place it, and a moved node
 * that would make it invalid (a value read before it is made, a write out of its place among the accesses to its
 * buffer) goes back, until the order is valid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll_desc.h"
#include "core/opdef.h"
#include "parallel/ep.h"

typedef struct {
    hp_rank_graph *rg;
    int nn;                   /* nodes (grows with the waits) */
    int *pos, *pos0;          /* [cap] simulated position now / before the pass */
    int *before, *after, *next; /* simulation: per anchor, linked lists in creation order */
    int *rd_at, *rd;          /* CSR over values: the nodes touching each value's buffer (a view: its base's) */
    int *in_at, *in;          /* CSR over values: the nodes reading the value itself or a view of it */
    int *mark, *stack;        /* [cap] per exchange: 1 ancestor, 2 descendant, 3 candidate, 4 taken */
    int *owner;               /* [cap] the exchange a node was moved for, -1 */
    int *wait_of;             /* [cap] a split exchange's wait, -1 */
    int cap, n0;              /* room for every node; nodes before the pass */
} ovl;

static int base_of(const hp_graph *g, int v) {
    while (v >= 0 && g->vals[v].view_of >= 0) v = g->vals[v].view_of;
    return v;
}

static int is_exchange(const hp_node *n) {
    hp_ep_x x = hp_ep_exchange_of(n->op);
    return x == HP_EP_X_SEND || x == HP_EP_X_RETURN || x == HP_EP_X_RESEND;
}

/* 1 if node n touches a value in one of FSDP's gathered-unit slots: a slot is reused by unit after unit, an
 * aliasing the graph's values do not show (the gathers are placed by the uses FSDP saw). */
static int in_slot(const hp_graph *g, const hp_node *n) {
    for (int k = 0; k < hp_node_nin_all(n) + n->nout; k++) {
        int v = k < hp_node_nin_all(n) ? hp_node_input(g, n, k) : n->out[k - hp_node_nin_all(n)];
        for (; v >= 0; v = g->vals[v].view_of)
            if (g->vals[v].store_slot >= 0) return 1;
    }
    return 0;
}

/* 1 if node n is a parameter gradient's reduction the schedule starts where it is placed. */
static int grad_reduction(const hp_graph *g, const hp_node *n) {
    hp_coll_desc d;
    return n->op->communicates && hp_coll_describe(&d, g, n) && d.kind == HP_COLL_REDISTRIBUTE &&
           d.role == HP_COLL_BLOCKING && d.grad;
}

/* What may move: compute, or a gradient's reduction, that touches no FSDP slot. */
static int movable(const hp_graph *g, const hp_node *n) {
    return !in_slot(g, n) && (!n->op->communicates || grad_reduction(g, n));
}

static void sim_place(ovl *o, int i, int *at) {
    if (o->pos[i] != -1) return; /* placed, or being placed: a cycle of hints leaves a node out */
    o->pos[i] = -2;
    for (int j = o->before[i]; j >= 0; j = o->next[j]) sim_place(o, j, at);
    o->pos[i] = (*at)++;
    for (int j = o->after[i]; j >= 0; j = o->next[j]) sim_place(o, j, at);
}

static void link(ovl *o, int *head, int j) {
    while (*head >= 0) head = &o->next[*head];
    *head = j;
}

/* pos[]: the order the schedule pass will give (its split reductions aside: they only wait later) */
static void simulate(ovl *o) {
    const hp_graph *g = o->rg->g;
    const int *hint = o->rg->hint;
    for (int i = 0; i < o->nn; i++) o->before[i] = o->after[i] = o->next[i] = -1, o->pos[i] = -1;
    for (int j = 0; j < o->nn; j++) {
        if (hint[j] < 0) continue;
        int a = hint[j] / 3;
        link(o, hint[j] % 3 ? &o->after[a] : &o->before[a], j);
    }
    int at = 0;
    for (int ph = 0; ph < HP_NPHASES; ph++) {
        for (int i = 0; i < o->nn; i++)
            if ((int)g->nodes[i].phase == ph && hint[i] == -1) sim_place(o, i, &at);
        for (int i = 0; i < o->nn; i++)
            if ((int)g->nodes[i].phase == ph && hint[i] == HP_HINT_END) sim_place(o, i, &at);
    }
}

static int writes(const hp_graph *g, const hp_node *n, int base) {
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && base_of(g, n->out[k]) == base) return 1;
    return 0;
}

/* The moved node that places node i (itself, or the anchor its hints lead to), -1 if none. */
static int moved_root(const ovl *o, int i) {
    for (int hops = 0; i >= 0 && hops < o->nn; hops++) {
        if (o->owner[i] >= 0) return i < o->n0 ? i : -1; /* a wait is not undone alone */
        int h = o->rg->hint[i];
        i = h >= 0 ? h / 3 : -1;
    }
    return -1;
}

/* The first node of the simulated order that breaks it, -1 if none: a node left out (a cycle of hints), a node
 * reading a value made after it (or the rows an exchange's start receives before its wait), or a moved node out
 * of its place (as before the pass) against another access to a buffer either writes. Where a moved node is
 * involved, *culprit is it. */
static int first_violation(const ovl *o, int *culprit) {
    const hp_graph *g = o->rg->g;
    *culprit = -1;
    for (int b = 0; b < o->nn; b++)
        if (o->pos[b] < 0) {
            *culprit = moved_root(o, b);
            return b;
        }
    for (int b = 0; b < o->nn; b++) {
        const hp_node *n = &g->nodes[b];
        for (int k = 0; k < hp_node_nin_all(n); k++) {
            int v = hp_node_input(g, n, k);
            for (int u = v; u >= 0; u = g->vals[u].view_of) {
                int p = g->vals[u].producer, ready = p;
                if (p >= 0 && o->wait_of[p] >= 0 && o->wait_of[p] != b && hp_ep_exchange_of(g->nodes[p].op) == HP_EP_X_RETURN_START &&
                    u == g->nodes[p].out[0])
                    ready = o->wait_of[p];
                if (p < 0 || p == b || o->pos[ready] < o->pos[b]) continue;
                if (ready == p && p < o->n0 && b < o->n0 && o->pos0[p] > o->pos0[b]) continue; /* so before */
                *culprit = moved_root(o, b) >= 0 ? moved_root(o, b) : moved_root(o, p);
                return b;
            }
        }
        if (moved_root(o, b) < 0 || b >= o->n0) continue;
        /* a moved node against the other accesses to the buffers it writes, and the writers of those it reads */
        for (int k = 0; k < hp_node_nin_all(n) + n->nout; k++) {
            int v = k < hp_node_nin_all(n) ? hp_node_input(g, n, k) : n->out[k - hp_node_nin_all(n)];
            int base = base_of(g, v);
            if (base < 0) continue;
            int bw = writes(g, n, base);
            for (int q = o->rd_at[base]; q < o->rd_at[base + 1]; q++) {
                int t = o->rd[q];
                if (t == b || t >= o->n0 || (!bw && !writes(g, &g->nodes[t], base))) continue;
                if ((o->pos0[t] < o->pos0[b]) != (o->pos[t] < o->pos[b])) {
                    *culprit = moved_root(o, b);
                    return b;
                }
            }
        }
    }
    return -1;
}

/* ancestors (1) of node x within its phase: the producers of its inputs, transitively */
static void mark_ancestors(ovl *o, int x) {
    const hp_graph *g = o->rg->g;
    int sp = 0;
    o->stack[sp++] = x;
    while (sp) {
        const hp_node *n = &g->nodes[o->stack[--sp]];
        for (int k = 0; k < hp_node_nin_all(n); k++)
            for (int u = hp_node_input(g, n, k); u >= 0; u = g->vals[u].view_of) {
                int p = g->vals[u].producer;
                if (p < 0 || o->mark[p] || g->nodes[p].phase != g->nodes[x].phase) continue;
                o->mark[p] = 1;
                o->stack[sp++] = p;
            }
    }
}

/* descendants (2) of node x within its phase: the readers of its outputs (or of views of them), transitively */
static void mark_descendants(ovl *o, int x) {
    const hp_graph *g = o->rg->g;
    int sp = 0;
    o->stack[sp++] = x;
    while (sp) {
        const hp_node *n = &g->nodes[o->stack[--sp]];
        for (int k = 0; k < n->nout; k++) {
            int v = n->out[k];
            if (v < 0) continue;
            for (int q = o->in_at[v]; q < o->in_at[v + 1]; q++) {
                int r = o->in[q];
                if (o->mark[r] == 1 || o->mark[r] == 2 || r == x || g->nodes[r].phase != g->nodes[x].phase) continue;
                o->mark[r] = 2;
                o->stack[sp++] = r;
            }
        }
    }
}

/* Marks x's candidates (3) in (lo, hi): movable, unhinted, neither ancestor nor descendant, not yet taken. */
static void mark_candidates(ovl *o, int x, int lo, int hi, const int *taken) {
    const hp_graph *g = o->rg->g;
    for (int i = 0; i < o->nn; i++) o->mark[i] = 0;
    mark_ancestors(o, x);
    mark_descendants(o, x);
    for (int i = lo + 1; i < hi; i++) {
        const hp_node *n = &g->nodes[i];
        if (i == x || o->mark[i] || taken[i] || n->phase != g->nodes[x].phase || o->rg->hint[i] != -1 ||
            is_exchange(n) || !movable(g, n))
            continue;
        o->mark[i] = 3;
    }
}

static double flops_of(const hp_graph *g, int i) {
    const hp_node *n = &g->nodes[i];
    return n->op->flops ? n->op->flops(g, n) : 0;
}

/* The values node i touches, by kind: 0 the base buffers it reads or writes in place (not those it makes), 1 the
 * values it reads and the values those are views of. Calls add(ctx, v) for each. */
static void touched(const hp_graph *g, int i, int kind, void (*add)(void *, int), void *ctx) {
    const hp_node *n = &g->nodes[i];
    int nin = hp_node_nin_all(n);
    for (int k = 0; k < nin + (kind ? 0 : n->nout); k++) {
        int v = k < nin ? hp_node_input(g, n, k) : n->out[k - nin];
        if (!kind) {
            int base = base_of(g, v);
            if (base >= 0 && !(k >= nin && g->vals[base].producer == i)) add(ctx, base);
            continue;
        }
        for (int hop = 0; v >= 0 && hop < 2; hop++, v = g->vals[v].view_of) add(ctx, v);
    }
}

typedef struct {
    int *at, *list, node, pass;
} csr_fill;

static void csr_add(void *ctx, int v) {
    csr_fill *f = ctx;
    if (f->pass == 0) f->at[v + 1]++;
    else f->list[f->at[v]++] = f->node;
}

/* A CSR table over values: *at[v]..*at[v + 1] index *list, the nodes touching v by `kind` (touched). */
static hp_status build_csr(int **at, int **list, const ovl *o, int kind) {
    const hp_graph *g = o->rg->g;
    int nv = g->nvals;
    free(*at), free(*list);
    *list = NULL;
    *at = calloc((size_t)nv + 2, sizeof **at);
    if (!*at) return hp_errorf("ep overlap: out of memory");
    csr_fill f = {*at, NULL, 0, 0};
    for (f.pass = 0; f.pass < 2; f.pass++) {
        for (f.node = 0; f.node < o->nn; f.node++) touched(g, f.node, kind, csr_add, &f);
        if (f.pass == 0) {
            for (int v = 0; v < nv; v++) (*at)[v + 1] += (*at)[v];
            f.list = *list = malloc(sizeof **list * (size_t)((*at)[nv] ? (*at)[nv] : 1));
            if (!*list) return hp_errorf("ep overlap: out of memory");
        } else {
            for (int v = nv; v > 0; v--) (*at)[v] = (*at)[v - 1];
            (*at)[0] = 0;
        }
    }
    return HP_OK;
}

/* The two tables: the nodes touching each value's base buffer (reading it, or writing it in place), and the
 * readers of each value or of a view of it. */
static hp_status build_readers(ovl *o) {
    HP_TRY(build_csr(&o->rd_at, &o->rd, o, 0));
    return build_csr(&o->in_at, &o->in, o, 1);
}

/* Splits exchange x into its start (x) and a wait; returns the wait's id (-1: the graph's error). */
static int split(hp_rank_graph *rg, int x, int slot) {
    hp_graph *g = rg->g;
    hp_node *n = &g->nodes[x];
    int64_t rows, wide;
    hp_ep_rows_wide(&rows, &wide, g, n);
    size_t floats = hp_ep_stage_floats((long)n->a.i[0], (long)n->a.i[1], rows, wide);
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.80s.stage", n->name);
    int stage = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1((int64_t)floats), nm);
    if (stage < 0) return -1;
    g->vals[stage].no_grad = 1;
    n = &g->nodes[x];
    n->a.i[HP_EP_SLOT] = slot, n->a.i[HP_EP_ROWS] = rows, n->a.i[HP_EP_WIDE] = wide;
    hp_attrs a = n->a;
    int in[HP_MAX_IN], nin = 0, out[HP_MAX_OUT] = {-1, -1, -1, -1, -1}, nout = 0;
    in[nin++] = stage;
    const hp_opdef *start, *wait;
    hp_ep_x kind = hp_ep_exchange_of(n->op);
    hp_ep_split_ops(&start, &wait, n->op);
    if (kind == HP_EP_X_SEND) {
        for (int k = 0; k < n->nin && nin < HP_MAX_IN; k++) in[nin++] = n->in[k];
        nout = n->nout; /* the rows, experts, sources (and with a capacity the drops) */
        for (int k = 0; k < nout; k++) out[k] = n->out[k], n->out[k] = -1;
        n->op = start, n->out[0] = stage, n->nout = 1;
    } else if (kind == HP_EP_X_RETURN) {
        in[nin++] = n->out[0];
        n->op = start, n->out[1] = stage, n->nout = 2;
    } else {
        for (int k = 0; k < n->nin && nin < HP_MAX_IN; k++) in[nin++] = n->in[k];
        out[0] = n->out[0], nout = 1;
        n->op = start, n->out[0] = stage, n->nout = 1;
    }
    g->vals[stage].producer = x;
    hp_phase ph = g->nodes[x].phase;
    int fwd = g->nodes[x].fwd_node;
    snprintf(nm, sizeof nm, "%.88s.wait", g->nodes[x].name);
    if (hp_graph_node_into(g, wait, in, nin, nout ? out : NULL, nout, &a, ph, fwd) < 0) return -1;
    int w = g->nnodes - 1;
    memcpy(g->nodes[w].name, nm, HP_NAME_LEN);
    return w;
}

/* at[p]: the node the simulated order places p-th (-1: none), the order simulated now. */
static void sim_order(ovl *o, int *at) {
    simulate(o);
    for (int i = 0; i < o->nn; i++) at[i] = -1;
    for (int i = 0; i < o->nn; i++)
        if (o->pos[i] >= 0 && o->pos[i] < o->nn) at[o->pos[i]] = i;
}

/* Of the nodes below lim that make node x's inputs (through views) in x's phase, the one placed last by pos[] (placed:
 * pos >= 0), -1 if none. */
static int last_producer(const ovl *o, int x, const int *pos, int lim) {
    const hp_graph *g = o->rg->g;
    const hp_node *n = &g->nodes[x];
    int p = -1;
    for (int k = 0; k < hp_node_nin_all(n); k++)
        for (int u = hp_node_input(g, n, k); u >= 0; u = g->vals[u].view_of) {
            int pr = g->vals[u].producer;
            if (pr >= 0 && pr < lim && pr != x && g->nodes[pr].phase == n->phase && pos[pr] >= 0 &&
                (p < 0 || pos[pr] > pos[p]))
                p = pr;
        }
    return p;
}

/* Split exchange x's start as early as its inputs allow: right after the last of their producers in the order so
 * far (of chunks, the second chunk's backward runs while the first's rows travel). It counts as one of x's moves. */
static void early_start(ovl *o, int x) {
    if (o->rg->hint[x] != -1) return;
    simulate(o);
    int p = last_producer(o, x, o->pos, o->nn);
    if (p < 0 || o->pos[p] + 1 >= o->pos[x] || o->rg->hint[p] != -1) return; /* (a moved producer: left) */
    o->rg->hint[x] = HP_HINT_AFTER(p), o->owner[x] = x;
}

/* Undoes x's moves (its nodes back to their creation places). */
static void put_back(ovl *o, int x, int except) {
    for (int i = 0; i < o->nn; i++)
        if (o->owner[i] == x && i != except) o->owner[i] = -1, o->rg->hint[i] = -1;
}

/* 1 if exchange node n's group (along mesh axis i[2], the rank context's rank in it) has members in more than one
 * supernode of `per` ranks (per <= 0: every exchange counts). */
static int spans(const hp_rank_graph *rg, const hp_node *n, int per) {
    const hp_mesh *m = rg->ctx.mesh;
    int axis = (int)n->a.i[2];
    if (per <= 0) return 1;
    if (!m || axis < 0 || axis >= m->ndim) return 0;
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rg->ctx.rank);
    for (int k = 0; k < m->size[axis]; k++) {
        coord[axis] = k;
        if (hp_mesh_rank(m, coord) / per != rg->ctx.rank / per) return 1;
    }
    return 0;
}

/* A gradient reduction placed (or moved by this pass) in a MoE layer's backward, before the layer's last exchange that returns rows
 * (send's gradient; no resend between), goes right after that exchange's start: the comm lane runs calls in the
 * order they start, and a shared expert's gradient queued first would hold the exchange the next compute waits
 * for (the reduction is only needed at the step's end). A move that breaks the order is undone. xk[i]: the kind
 * of exchange node i was (HP_EP_X_NONE: none). */
static hp_status reductions_after_returns(int *moved, ovl *o, const unsigned char *xk) {
    hp_graph *g = o->rg->g;
    int *at = malloc(sizeof(int) * (size_t)o->nn);
    int *list = malloc(sizeof(int) * (size_t)o->nn), nl = 0;
    int *target = malloc(sizeof(int) * (size_t)o->nn);
    if (!at || !list || !target) {
        free(at), free(list), free(target);
        return hp_errorf("ep overlap: out of memory");
    }
    sim_order(o, at);
    for (int p = 0; p < o->nn; p++) { /* decided on the order before any of these moves */
        int i = at[p];
        if (i < 0 || i >= o->n0 || g->nodes[i].phase != HP_PHASE_BWD || (o->rg->hint[i] != -1 && o->owner[i] < 0) ||
            !grad_reduction(g, &g->nodes[i]) || in_slot(g, &g->nodes[i]))
            continue;
        int t = -1;
        for (int q = p + 1; q < o->nn; q++) {
            int j = at[q];
            if (j < 0) continue;
            if (g->nodes[j].phase != HP_PHASE_BWD || (j < o->n0 && xk[j] == HP_EP_X_RESEND)) break;
            if (j < o->n0 && xk[j] == HP_EP_X_RETURN) t = j;
        }
        if (t >= 0) list[nl] = i, target[nl++] = t;
    }
    for (int k = 0; k < nl; k++) {
        int i = list[k], culprit, h = o->rg->hint[i], w = o->owner[i];
        o->rg->hint[i] = HP_HINT_AFTER(target[k]), o->owner[i] = i;
        simulate(o);
        if (first_violation(o, &culprit) >= 0) o->rg->hint[i] = h, o->owner[i] = w; /* as it was */
        else *moved += h == -1;
    }
    free(at), free(list), free(target);
    return HP_OK;
}

/* Request slots: each split exchange a set of HP_EP_SEND_SLOTS from `slot` on, free from its start to its wait in
 * the simulated order (the exchanges of a layer cut into chunks are in flight together); the rank's slot count
 * grows by the sets used at once. */
static hp_status assign_slots(ovl *o, int slot, int nx) {
    hp_graph *g = o->rg->g;
    int *at = malloc(sizeof(int) * (size_t)o->nn), *busy = malloc(sizeof(int) * (size_t)(nx ? nx : 1));
    if (!at || !busy) {
        free(at), free(busy);
        return hp_errorf("ep overlap: out of memory");
    }
    sim_order(o, at);
    int nsets = 0;
    for (int s = 0; s < nx; s++) busy[s] = -1;
    for (int p = 0; p < o->nn; p++) {
        int i = at[p];
        if (i < 0) continue;
        if (i < o->n0 && o->wait_of[i] >= 0) { /* a start: the first free set */
            int set = 0;
            while (busy[set] >= 0) set++;
            busy[set] = i;
            nsets = set + 1 > nsets ? set + 1 : nsets;
            g->nodes[i].a.i[HP_EP_SLOT] = g->nodes[o->wait_of[i]].a.i[HP_EP_SLOT] = slot + set * HP_EP_SEND_SLOTS;
        } else if (i >= o->n0 && o->owner[i] >= 0) { /* a wait: its start's set is free again */
            for (int set = 0; set < nsets; set++)
                if (busy[set] == o->owner[i]) busy[set] = -1;
        }
    }
    o->rg->ctx.nslots += nsets * HP_EP_SEND_SLOTS;
    free(at), free(busy);
    return HP_OK;
}

hp_status hp_pass_ep_overlap(int *nsplit, int *moved, hp_rank_graph *rg, int supernode_ranks) {
    *nsplit = *moved = 0;
    hp_graph *g = rg->g;
    int n0 = g->nnodes, nx = 0;
    for (int i = 0; i < n0; i++) nx += is_exchange(&g->nodes[i]) && spans(rg, &g->nodes[i], supernode_ranks);
    if (!nx) return HP_OK;
    ovl o = {.rg = rg, .cap = n0 + nx};
    size_t sz = sizeof(int) * (size_t)o.cap;
    int *ex = malloc(sz), *taken = calloc((size_t)o.cap, sizeof(int)), *cand = malloc(sz), *mine = malloc(sz);
    o.pos = malloc(sz), o.pos0 = malloc(sz), o.before = malloc(sz), o.after = malloc(sz), o.next = malloc(sz);
    o.mark = malloc(sz), o.stack = malloc(sz), o.owner = malloc(sz), o.wait_of = malloc(sz);
    hp_status st = HP_OK;
    if (!ex || !taken || !cand || !mine || !o.pos || !o.pos0 || !o.before || !o.after || !o.next || !o.mark ||
        !o.stack || !o.owner || !o.wait_of)
        st = hp_errorf("ep overlap: out of memory");
    o.n0 = o.nn = n0;
    if (!st) st = build_readers(&o);
    nx = 0;
    hp_ep_x *kinds = malloc(sizeof(hp_ep_x) * (size_t)o.cap);
    if (!kinds && !st) st = hp_errorf("ep overlap: out of memory");
    for (int i = 0; !st && i < n0; i++)
        if (is_exchange(&g->nodes[i]) && spans(rg, &g->nodes[i], supernode_ranks))
            kinds[nx] = hp_ep_exchange_of(g->nodes[i].op), ex[nx++] = i;
    if (!st) {
        for (int i = 0; i < o.cap; i++) o.owner[i] = o.wait_of[i] = -1;
        simulate(&o);
        memcpy(o.pos0, o.pos, sizeof(int) * (size_t)n0);
    }
    int slot = rg->ctx.nslots; /* the first slot of the exchanges' sets (assign_slots) */
    for (int e = 0; e < nx && !st; e++) {
        int x = ex[e];
        hp_phase ph = g->nodes[x].phase;
        int lo = e > 0 && g->nodes[ex[e - 1]].phase == ph ? ex[e - 1] : -1;
        int nxt = e + 1 < nx && g->nodes[ex[e + 1]].phase == ph ? ex[e + 1] : -1;
        int hi = e + 2 < nx && g->nodes[ex[e + 2]].phase == ph ? ex[e + 2] : n0;
        /* candidates of x, and of the next exchange (what both could take is split by FLOPs) */
        int nmine = 0;
        double excl = 0, shared = 0, excl_next = 0;
        mark_candidates(&o, x, lo, hi, taken);
        for (int i = 0; i < o.nn; i++) cand[i] = o.mark[i] == 3;
        int first = -1; /* x's first descendant in the order before the pass */
        for (int i = 0; i < n0; i++)
            if (o.mark[i] == 2 && (first < 0 || o.pos0[i] < o.pos0[first])) first = i;
        if (nxt >= 0) {
            int hi2 = e + 3 < nx && g->nodes[ex[e + 3]].phase == ph ? ex[e + 3] : n0;
            mark_candidates(&o, nxt, x, hi2, taken);
            for (int i = 0; i < o.nn; i++) {
                if (cand[i] && o.mark[i] == 3) shared += flops_of(g, i);
                else if (cand[i]) excl += flops_of(g, i);
                else if (o.mark[i] == 3) excl_next += flops_of(g, i);
            }
        } else {
            for (int i = 0; i < o.nn; i++)
                if (cand[i]) excl += flops_of(g, i);
        }
        double target = nxt >= 0 ? (excl + shared + excl_next) / 2 - excl : shared, got = 0;
        /* the next exchange could start inside x's window (its inputs made before x's first reader: chunks):
         * what it needs stays where it is, as moved after x's start it would start later */
        int keep_nxt = 0;
        if (nxt >= 0 && first >= 0) {
            int last = last_producer(&o, nxt, o.pos0, n0);
            keep_nxt = (last < 0 ? -1 : o.pos0[last]) < o.pos0[first];
        }
        for (int i = 0; i < n0; i++) {
            if (!cand[i] || (keep_nxt && o.mark[i] == 1)) continue;
            int both = nxt >= 0 && o.mark[i] == 3;
            if (both && got >= target) continue;
            if (both) got += flops_of(g, i);
            mine[nmine++] = i;
        }
        /* nothing to hide it behind (no node to move, none between it and its first reader): it stays blocking */
        if (!nmine && first >= 0 && o.pos0[first] == o.pos0[x] + 1) continue;
        int w = split(rg, x, slot);
        if (w < 0 || (st = hp_graph_error(g)) || (st = hp_rank_graph_sync_nodes(rg))) {
            if (!st) st = hp_graph_error(g);
            break;
        }
        rg->node_of[w] = rg->node_of[x];
        rg->hint[w] = first >= 0 ? HP_HINT_BEFORE(first) : HP_HINT_END;
        o.nn = g->nnodes;
        o.owner[w] = x, o.wait_of[x] = w;
        if ((st = build_readers(&o))) break;
        for (int q = 0; q < nmine; q++) rg->hint[mine[q]] = HP_HINT_BEFORE(w), o.owner[mine[q]] = x;
        early_start(&o, x);
        for (int tries = 0, gave_way = 0; tries <= o.nn; tries++) {
            simulate(&o);
            int culprit = -1, bad = first_violation(&o, &culprit);
            if (bad < 0) break;
            if (culprit >= 0 && o.owner[culprit] != x && !gave_way) { /* an earlier exchange's move: x's give way */
                put_back(&o, x, w);
                gave_way = 1;
                continue;
            }
            if (culprit < 0 || culprit == w || tries == o.nn) { /* no move to undo, or still invalid */
                put_back(&o, x, w);
                simulate(&o);
                if (first_violation(&o, &culprit) >= 0)
                    st = hp_errorf("ep overlap: '%s' cannot be split where it is", g->nodes[x].name);
                break;
            }
            o.owner[culprit] = -1, rg->hint[culprit] = -1;
        }
        for (int q = 0; q < nmine; q++)
            if (o.owner[mine[q]] == x) taken[mine[q]] = 1, ++*moved;
        ++*nsplit;
    }
    if (!st && *nsplit) {
        unsigned char *xk = calloc((size_t)o.nn + 1, 1);
        if (!xk) st = hp_errorf("ep overlap: out of memory");
        for (int e = 0; !st && e < nx; e++) xk[ex[e]] = (unsigned char)kinds[e];
        if (!st) st = reductions_after_returns(moved, &o, xk);
        free(xk);
    }
    if (!st && *nsplit) st = assign_slots(&o, slot, nx);
    free(ex), free(kinds), free(taken), free(cand), free(mine);
    free(o.pos), free(o.pos0), free(o.before), free(o.after), free(o.next), free(o.mark), free(o.stack);
    free(o.owner), free(o.wait_of), free(o.rd_at), free(o.rd), free(o.in_at), free(o.in);
    return st;
}
