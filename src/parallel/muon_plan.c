/* parallel/muon_plan: layout-driven distributed Muon's plan (see the header). */
#include "parallel/muon_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/newton_schulz.h"

int64_t hp_muon_held(const hp_graph *g, const hp_propagation *prop, const hp_mesh *m, const hp_fsdp_plan *fsdp,
                     int v, int k, int r) {
    hp_shape local;
    hp_local_shape(&local, NULL, &g->vals[v].shape, &prop->val[v], m, r);
    int64_t n = hp_shape_numel(&local);
    if (!fsdp || fsdp->level <= 0 || k < 0 || fsdp->unit_of[k] < 0) return n;
    const hp_fsdp_unit *un = &fsdp->units[fsdp->unit_of[k]];
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, r);
    int64_t o = (int64_t)(fsdp->offset[k] - un->offset), lo = (int64_t)un->shard * coord[fsdp->shard_axis];
    int64_t hi = lo + (int64_t)un->shard, a = o > lo ? o : lo, b = o + n < hi ? o + n : hi;
    return a < b ? b - a : 0;
}

/* What mesh axis a does to parameter v (FSDP index k). */
static hp_muon_axis axis_kind(const hp_propagation *prop, const hp_mesh *m, const hp_fsdp_plan *fsdp, int v, int k,
                              int ndim, int a) {
    if (m->size[a] <= 1) return HP_MUON_AX_NONE;
    if (fsdp && fsdp->level > 0 && k >= 0 && fsdp->unit_of[k] >= 0 && a == fsdp->shard_axis) return HP_MUON_AX_F;
    const hp_placement *p = &prop->val[v].p[a];
    if (p->kind != HP_SHARD) return HP_MUON_AX_R;
    if (p->dim == ndim - 2) return HP_MUON_AX_SR;
    if (p->dim == ndim - 1) return HP_MUON_AX_SC;
    return HP_MUON_AX_B;
}

static double ns_flops(int64_t rows, int64_t cols, int steps) {
    double mm = (double)(rows < cols ? rows : cols), nn = (double)(rows < cols ? cols : rows);
    return (double)steps * (4.0 * mm * mm * nn + 2.0 * mm * mm * mm);
}

/* The group with this key and these B coordinates (made when new); -1 when out of memory. */
static int group_of(hp_muon_plan *p, int *cap, const hp_muon_axis *ax, const int *bcoord, const hp_mesh *m) {
    for (int i = 0; i < p->ngrp; i++)
        if (!memcmp(p->grp[i].ax, ax, sizeof p->grp[i].ax) && !memcmp(p->grp[i].bcoord, bcoord, sizeof p->grp[i].bcoord))
            return i;
    if (p->ngrp == *cap) {
        int c = *cap ? 2 * *cap : 8;
        hp_muon_group *q = realloc(p->grp, sizeof *q * (size_t)c);
        if (!q) return -1;
        p->grp = q, *cap = c;
    }
    hp_muon_group *gr = &p->grp[p->ngrp];
    memset(gr, 0, sizeof *gr);
    memcpy(gr->ax, ax, sizeof gr->ax);
    memcpy(gr->bcoord, bcoord, sizeof gr->bcoord);
    static const char *const kname[] = {"", "R", "F", "Sr", "Sc", "B"};
    size_t used = 0;
    int any = 0;
    for (int a = 0; a < m->ndim; a++) {
        if (ax[a] == HP_MUON_AX_NONE) continue;
        int k = snprintf(gr->key + used, sizeof gr->key - used, "%s%s=%s", any++ ? " " : "", m->name[a], kname[ax[a]]);
        if (k > 0 && used + (size_t)k < sizeof gr->key) used += (size_t)k;
        if (ax[a] == HP_MUON_AX_B) {
            k = snprintf(gr->key + used, sizeof gr->key - used, "%d", bcoord[a]);
            if (k > 0 && used + (size_t)k < sizeof gr->key) used += (size_t)k;
        }
    }
    if (!any) snprintf(gr->key, sizeof gr->key, "local");
    /* its ranks: those with its B coordinates */
    int coord[HP_MESH_MAX_DIMS];
    for (int r = 0; r < hp_mesh_size(m); r++) {
        hp_mesh_coords(coord, m, r);
        int in = 1;
        for (int a = 0; a < m->ndim && in; a++) in = ax[a] != HP_MUON_AX_B || coord[a] == bcoord[a];
        gr->nranks += in;
    }
    return p->ngrp++;
}

/* 1 if rank r is in group gr. */
static int in_group(const hp_muon_group *gr, const hp_mesh *m, int r) {
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, r);
    for (int a = 0; a < m->ndim; a++)
        if (gr->ax[a] == HP_MUON_AX_B && coord[a] != gr->bcoord[a]) return 0;
    return 1;
}

/* 1 if rank r shares rank o's coordinates on every R axis (its replica slice). */
static int same_slice(const hp_muon_group *gr, const hp_mesh *m, int r, int o) {
    int cr[HP_MESH_MAX_DIMS], co[HP_MESH_MAX_DIMS];
    hp_mesh_coords(cr, m, r);
    hp_mesh_coords(co, m, o);
    for (int a = 0; a < m->ndim; a++)
        if (gr->ax[a] == HP_MUON_AX_R && cr[a] != co[a]) return 0;
    return 1;
}

/* h[r]: the bytes of global parameter v rank r holds (0 outside group gr); ids[np]: the parameters (FSDP's
 * indices). */
static void held_bytes(double *h, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                       const hp_fsdp_plan *fsdp, const int *ids, int np, const hp_muon_group *gr, int v, int nr) {
    int fk = -1;
    for (int j = 0; fsdp && fsdp->level > 0 && j < np; j++)
        if (ids[j] == v) fk = j;
    for (int r = 0; r < nr; r++) h[r] = in_group(gr, m, r) ? 4.0 * (double)hp_muon_held(g, prop, m, fsdp, v, fk, r) : 0;
}

/* A matrix to give an owner: its cost, name and group, and its index in the plan. */
typedef struct {
    double flops;
    const char *name;
    int group, i;
} pending;

static int by_cost(const void *a, const void *b) {
    const pending *x = a, *y = b;
    if (x->flops != y->flops) return x->flops > y->flops ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : x->group - y->group;
}

/* 1 if no axis cuts or replicates the group's matrices (B axes only): orthogonalised where they live. */
static int is_local(const hp_muon_group *gr, const hp_mesh *m) {
    for (int a = 0; a < m->ndim; a++)
        if (gr->ax[a] != HP_MUON_AX_NONE && gr->ax[a] != HP_MUON_AX_B) return 0;
    return 1;
}

/* ---- teams (the header's Teams) ---- */

/* 1 if group gi may iterate in teams: one axis cuts its matrices (F, Sr or Sc), nothing else. */
static int team_group(const hp_muon_plan *p, int gi, const hp_mesh *m) {
    const hp_muon_group *gr = &p->grp[gi];
    int cuts = 0;
    for (int a = 0; a < m->ndim; a++) {
        if (gr->ax[a] == HP_MUON_AX_NONE) continue;
        if (gr->ax[a] != HP_MUON_AX_F && gr->ax[a] != HP_MUON_AX_SR && gr->ax[a] != HP_MUON_AX_SC) return 0;
        cuts++;
    }
    return cuts == 1;
}

/* A piece of a matrix to deal: its blocks [b0, b1) of mat[i], i's place in the owners' order, its cost. */
typedef struct {
    double flops;
    int i, ord, b0, b1, rank;
} titem;

static int by_item(const void *a, const void *b) {
    const titem *x = a, *y = b;
    if (x->flops != y->flops) return x->flops > y->flops ? -1 : 1;
    return x->ord != y->ord ? x->ord - y->ord : x->b0 - y->b0;
}

static int64_t iter_rows(const hp_muon_matrix *x) { return x->rows < x->cols ? x->rows : x->cols; }

/* x's blocks: hp_ns_blocks of each of its matrices, matrix after matrix */
static int nblocks_of(const hp_muon_matrix *x) { return x->count * (int)hp_ns_blocks((long)x->rows, (long)x->cols); }

/* rows of x's block j */
static int64_t block_rows(const hp_muon_matrix *x, int j) {
    int64_t r = iter_rows(x), b = j % hp_ns_blocks((long)x->rows, (long)x->cols);
    return (b + 1) * HP_NS_ROW_BLOCK < r ? HP_NS_ROW_BLOCK : r - b * HP_NS_ROW_BLOCK;
}

/* blocks [b0, b1)'s share of x's cost (a block costs its rows) */
static double blocks_flops(const hp_muon_matrix *x, int b0, int b1) {
    double rows = 0;
    for (int j = b0; j < b1; j++) rows += (double)block_rows(x, j);
    return x->flops * rows / ((double)iter_rows(x) * x->count);
}

/* Deals the items (sorted) over their groups' ranks from load base[]: each to the least loaded, ties to a rank
 * already holding a block of its matrix, then the lowest; load[] gets the result. */
static void deal(titem *it, int n, const hp_muon_plan *p, const hp_mesh *m, const double *base, double *load) {
    memcpy(load, base, sizeof *load * (size_t)p->nranks);
    for (int q = 0; q < n; q++) {
        const hp_muon_group *gr = &p->grp[p->mat[it[q].i].group];
        int best = -1, best_in = 0;
        for (int r = 0; r < p->nranks; r++) {
            if (!in_group(gr, m, r)) continue;
            int in = 0;
            for (int j = 0; j < q && !in; j++) in = it[j].i == it[q].i && it[j].rank == r;
            if (best < 0 || load[r] < load[best] || (load[r] == load[best] && in && !best_in)) best = r, best_in = in;
        }
        it[q].rank = best;
        load[best] += it[q].flops;
    }
}

static double max_of(const double *v, int n) {
    double mx = 0;
    for (int r = 0; r < n; r++) mx = v[r] > mx ? v[r] : mx;
    return mx;
}

/* The teams of the groups that may have them, given owners already chosen (order[0..n): the owners' order). */
static hp_status teams(hp_muon_plan *p, const hp_mesh *m, const pending *order, int n, double bound) {
    int nr = p->nranks, nblk = 0, ni = 0, *ok = calloc((size_t)p->ngrp + 1, sizeof *ok);
    double *base = malloc(sizeof *base * (size_t)nr), *load = malloc(sizeof *load * (size_t)nr);
    titem *it = NULL;
    hp_status st = ok && base && load ? HP_OK : hp_errorf("muon plan: out of memory");
    if (st) goto done;
    memcpy(base, p->load, sizeof *base * (size_t)nr);
    for (int gi = 0; gi < p->ngrp; gi++) ok[gi] = team_group(p, gi, m);
    for (int q = 0; q < n; q++) {
        const hp_muon_matrix *x = &p->mat[order[q].i];
        if (!ok[x->group] || x->owner < 0) continue;
        base[x->owner] -= x->flops;
        nblk += nblocks_of(x);
    }
    it = malloc(sizeof *it * (size_t)(nblk + 1));
    if (!it) {
        st = hp_errorf("muon plan: out of memory");
        goto done;
    }
    for (int q = 0; q < n; q++) {
        const hp_muon_matrix *x = &p->mat[order[q].i];
        if (ok[x->group] && x->owner >= 0)
            it[ni++] = (titem){x->flops, order[q].i, q, 0, nblocks_of(x), -1};
    }
    for (;;) { /* deal; while the bound is missed, cut the costliest item of several blocks in two */
        qsort(it, (size_t)ni, sizeof *it, by_item);
        deal(it, ni, p, m, base, load);
        double mean = 0;
        for (int r = 0; r < nr; r++) mean += load[r] / nr;
        int c = -1;
        for (int q = 0; q < ni && c < 0; q++)
            if (it[q].b1 - it[q].b0 > 1) c = q;
        if (max_of(load, nr) <= bound * mean || c < 0) break;
        const hp_muon_matrix *x = &p->mat[it[c].i];
        int mid = it[c].b0 + (it[c].b1 - it[c].b0 + 1) / 2;
        it[ni] = (titem){blocks_flops(x, mid, it[c].b1), it[c].i, it[c].ord, mid, it[c].b1, -1};
        it[c].b1 = mid, it[c].flops = blocks_flops(x, it[c].b0, mid);
        ni++;
    }
    if (max_of(load, nr) >= max_of(p->load, nr)) goto done; /* no better than whole matrices */
    p->blk = malloc(sizeof *p->blk * (size_t)(nblk + 1));
    if (!p->blk) {
        st = hp_errorf("muon plan: out of memory");
        goto done;
    }
    memcpy(p->load, load, sizeof *load * (size_t)nr);
    for (int q = 0; q < n; q++) { /* each matrix's blocks, in the owners' order */
        hp_muon_matrix *x = &p->mat[order[q].i];
        if (!ok[x->group] || x->owner < 0) continue;
        x->nblk = nblocks_of(x), x->blk_at = p->nblk;
        for (int j = 0; j < ni; j++)
            if (it[j].i == order[q].i)
                for (int b = it[j].b0; b < it[j].b1; b++) p->blk[x->blk_at + b] = it[j].rank;
        x->owner = p->blk[x->blk_at];
        p->nblk += x->nblk;
        p->grp[x->group].teams = 1;
    }
done:
    free(ok), free(base), free(load), free(it);
    return st;
}

/* A team's bytes (fp32): the lead sends each matrix's first iterate to every other rank iterating it; every
 * step each rank sends its rows of X X^T and of the next iterate to every other rank iterating the matrix. */
static void team_bytes(hp_muon_plan *p, const hp_muon_matrix *x, int steps) {
    int64_t r = iter_rows(x), c = x->rows + x->cols - r;
    int nb = (int)hp_ns_blocks((long)x->rows, (long)x->cols);
    const int *bo = p->blk + x->blk_at;
    for (int k = 0; k < x->count; k++) {
        /* the ranks iterating matrix k: its blocks' and the lead, each once */
        int who[64 + 1], n = 0;
        for (int j = -1; j < nb && n < 64; j++) {
            int q = j < 0 ? bo[0] : bo[k * nb + j], seen = 0;
            for (int i = 0; i < n && !seen; i++) seen = who[i] == q;
            if (!seen) who[n++] = q;
        }
        for (int i = 0; i < n; i++) {
            int64_t rows = 0;
            for (int j = k * nb; j < (k + 1) * nb; j++) rows += bo[j] == who[i] ? block_rows(x, j) : 0;
            for (int o = 0; o < n; o++) {
                if (o == i) continue;
                double rb = 4.0 * (double)rows * (double)(r + c) * steps;
                p->sent[who[i]] += rb, p->recv[who[o]] += rb;
                if (who[i] == x->owner) p->sent[who[i]] += 4.0 * (double)(r * c), p->recv[who[o]] += 4.0 * (double)(r * c);
            }
        }
    }
}

const char *hp_muon_dist_name(hp_muon_dist d) {
    static const char *const names[] = {"layout", "round-robin", "zero1-gather", "all-to-all", "gather-all"};
    return d >= 0 && d < HP_MUON_DIST_COUNT ? names[d] : "?";
}

hp_status hp_muon_dist_parse(hp_muon_dist *out, const char *name) {
    for (int d = 0; d < HP_MUON_DIST_COUNT; d++)
        if (name && !strcmp(name, hp_muon_dist_name((hp_muon_dist)d))) {
            *out = (hp_muon_dist)d;
            return HP_OK;
        }
    return hp_errorf("muon_dist: unknown strategy '%s' (layout, round-robin, zero1-gather, all-to-all, gather-all)",
                     name ? name : "");
}

hp_status hp_muon_plan_build(hp_muon_plan *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                             const hp_fsdp_plan *fsdp, const hp_optim_config *cfg) {
    return hp_muon_plan_build_as(out, g, prop, m, fsdp, cfg, HP_MUON_DIST_LAYOUT);
}

/* The owner strategies' choice for a matrix: i its place in the order (ROUND_ROBIN), shape_i the group's
 * matrices of its shape before it (ALL_TO_ALL), held[r] the bytes of it rank r holds (LAYOUT's tie-break). */
static int choose_owner(const hp_muon_plan *p, const hp_muon_group *gr, const hp_mesh *m, hp_muon_dist d, int i,
                        int shape_i, const double *held) {
    int nr = p->nranks, best = -1, seen = 0;
    int want = d == HP_MUON_DIST_ROUND_ROBIN ? i % gr->nranks : shape_i % gr->nranks;
    for (int r = 0; r < nr; r++) {
        if (!in_group(gr, m, r)) continue;
        if (d == HP_MUON_DIST_LAYOUT) {
            /* the least loaded; between equals, the one holding most of the matrix (fewer bytes to move) */
            if (best < 0 || p->load[r] < p->load[best] || (p->load[r] == p->load[best] && held[r] > held[best])) best = r;
        } else if (seen++ == want) {
            best = r;
        }
    }
    return best;
}

hp_status hp_muon_plan_build_as(hp_muon_plan *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                                const hp_fsdp_plan *fsdp, const hp_optim_config *cfg, hp_muon_dist dist) {
    memset(out, 0, sizeof *out);
    int nr = hp_mesh_size(m);
    out->nranks = nr;
    out->dist = dist;
    out->load = calloc((size_t)nr, sizeof *out->load);
    out->sent = calloc((size_t)nr, sizeof *out->sent);
    out->recv = calloc((size_t)nr, sizeof *out->recv);
    int np = hp_graph_params(g, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1));
    pending *order = NULL;
    hp_opt_param *op = calloc((size_t)(np ? np : 1), sizeof *op);
    hp_opt_kind *kinds = calloc((size_t)(np ? np : 1), sizeof *kinds);
    hp_status st = out->load && out->sent && out->recv && ids && op && kinds ? HP_OK : hp_errorf("muon plan: out of memory");
    if (st || cfg->kind != HP_OPT_MUON) goto done;
    hp_graph_params(g, ids, np);
    for (int k = 0; k < np; k++) {
        const hp_value *v = &g->vals[ids[k]];
        op[k] = (hp_opt_param){v->name, NULL, NULL, v->shape, hp_optim_hidden_matrix(v->name, &v->shape)};
    }
    st = hp_optim_route(kinds, cfg->kind, cfg->muon_params, cfg->adamw_params, op, np);
    if (st) goto done;
    int nmuon = 0, cap = 0;
    for (int k = 0; k < np; k++) nmuon += kinds[k] == HP_OPT_MUON;
    /* a matrix entry per parameter and coordinate of its B axes (one, without B axes) */
    out->mat = calloc((size_t)(nmuon ? nmuon : 1) * (size_t)nr, sizeof *out->mat);
    if (!out->mat) {
        st = hp_errorf("muon plan: out of memory");
        goto done;
    }
    int steps = cfg->ns.steps > 0 ? cfg->ns.steps : 5;
    for (int k = 0; k < np && !st; k++) {
        if (kinds[k] != HP_OPT_MUON) continue;
        int v = ids[k], nd = g->vals[v].shape.ndim;
        int fk = fsdp && fsdp->level > 0 ? k : -1;
        hp_muon_axis ax[HP_MESH_MAX_DIMS] = {0};
        for (int a = 0; a < m->ndim; a++) ax[a] = axis_kind(prop, m, fsdp, v, fk, nd, a);
        /* one entry per distinct B coordinate: walk the ranks, first rank of each coordinate */
        int coord[HP_MESH_MAX_DIMS];
        for (int r = 0; r < nr && !st; r++) {
            hp_mesh_coords(coord, m, r);
            int bc[HP_MESH_MAX_DIMS], first = 1;
            for (int a = 0; a < HP_MESH_MAX_DIMS; a++) bc[a] = a < m->ndim && ax[a] == HP_MUON_AX_B ? coord[a] : -1;
            for (int a = 0; a < m->ndim && first; a++) /* the first rank of its coordinate: all others' at 0 */
                if (ax[a] != HP_MUON_AX_B && coord[a] != 0) first = 0;
            if (!first) continue;
            int gi = group_of(out, &cap, ax, bc, m);
            if (gi < 0) {
                st = hp_errorf("muon plan: out of memory");
                break;
            }
            hp_shape local;
            hp_local_shape(&local, NULL, &g->vals[v].shape, &prop->val[v], m, r);
            hp_muon_matrix *x = &out->mat[out->nmat++];
            x->v = v, x->group = gi, x->owner = -1;
            x->rows = g->vals[v].shape.d[nd - 2], x->cols = g->vals[v].shape.d[nd - 1];
            x->count = (int)hp_optim_stack_count(&local); /* the rank's part of a stack's leading dims */
            x->flops = ns_flops(x->rows, x->cols, steps) * x->count;
            out->grp[gi].nmatrices++;
            out->grp[gi].flops += x->flops;
        }
    }
    if (st) goto done;
    /* local matrices: every holder runs its own */
    for (int i = 0; i < out->nmat; i++) {
        const hp_muon_group *gr = &out->grp[out->mat[i].group];
        if (!is_local(gr, m)) continue;
        for (int r = 0; r < nr; r++)
            if (in_group(gr, m, r)) out->load[r] += out->mat[i].flops;
    }
    /* owners by decreasing cost, each to the least-loaded rank of its group */
    order = malloc(sizeof *order * (size_t)(out->nmat ? out->nmat : 1));
    if (!order) {
        st = hp_errorf("muon plan: out of memory");
        goto done;
    }
    int n = 0;
    for (int i = 0; i < out->nmat; i++)
        if (!is_local(&out->grp[out->mat[i].group], m))
            order[n++] = (pending){out->mat[i].flops, g->vals[out->mat[i].v].name, out->mat[i].group, i};
    if (dist == HP_MUON_DIST_LAYOUT) qsort(order, (size_t)n, sizeof *order, by_cost); /* the others: model order */
    double h[1024];
    if (nr > 1024) {
        st = hp_errorf("muon plan: more than 1024 ranks");
        goto done;
    }
    for (int q = 0; q < n; q++) {
        hp_muon_matrix *x = &out->mat[order[q].i];
        const hp_muon_group *gr = &out->grp[x->group];
        held_bytes(h, g, prop, m, fsdp, ids, np, gr, x->v, nr);
        double whole = 4.0 * (double)hp_shape_numel(&g->vals[x->v].shape);
        if (dist == HP_MUON_DIST_ZERO1_GATHER || dist == HP_MUON_DIST_GATHER_ALL) {
            /* several ranks orthogonalise it: each toucher (or every rank of the group) gathers what it lacks
             * from its replica slice */
            x->owner = -2;
            for (int r = 0; r < nr; r++) {
                if (!in_group(gr, m, r) || (dist == HP_MUON_DIST_ZERO1_GATHER && h[r] <= 0)) continue;
                out->load[r] += x->flops;
                out->recv[r] += whole - h[r] > 0 ? whole - h[r] : 0; /* (a TP box: its slice's pieces) */
                for (int j = 0; j < nr; j++)
                    if (j != r && in_group(gr, m, j) && same_slice(gr, m, j, r) && h[j] > 0) out->sent[j] += h[j];
            }
            continue;
        }
        int shape_i = 0; /* ALL_TO_ALL: matrices of its shape before it in its group */
        for (int p2 = 0; p2 < q; p2++) {
            const hp_muon_matrix *y = &out->mat[order[p2].i];
            shape_i += y->group == x->group && y->rows == x->rows && y->cols == x->cols;
        }
        int best = choose_owner(out, gr, m, dist, q, shape_i, h);
        x->owner = best;
        out->load[best] += x->flops;
    }
    if (dist == HP_MUON_DIST_LAYOUT && cfg->muon_balance > 0 && hp_muon_plan_imbalance(out) > cfg->muon_balance) {
        st = teams(out, m, order, n, cfg->muon_balance);
        if (st) goto done;
    }
    /* bytes of the owner strategies: the owner's slice sends its pieces in, every holder gets its piece of
     * the update back; a team's members also get the first iterate and trade rows every step */
    for (int q = 0; q < n; q++) {
        hp_muon_matrix *x = &out->mat[order[q].i];
        const hp_muon_group *gr = &out->grp[x->group];
        if (x->owner < 0) continue;
        held_bytes(h, g, prop, m, fsdp, ids, np, gr, x->v, nr);
        for (int r = 0; r < nr; r++) {
            if (r == x->owner || !in_group(gr, m, r)) continue;
            if (same_slice(gr, m, r, x->owner)) out->sent[r] += h[r], out->recv[x->owner] += h[r];
            out->recv[r] += h[r], out->sent[x->owner] += h[r];
        }
        if (x->nblk > 0) team_bytes(out, x, steps);
    }
done:
    free(ids), free(op), free(kinds), free(order);
    if (st) hp_muon_plan_free(out);
    return st;
}

void hp_muon_plan_free(hp_muon_plan *p) {
    free(p->mat), free(p->grp), free(p->load), free(p->sent), free(p->recv), free(p->blk);
    memset(p, 0, sizeof *p);
}

double hp_muon_plan_imbalance(const hp_muon_plan *p) {
    double mx = 0, sum = 0;
    for (int r = 0; r < p->nranks; r++) {
        sum += p->load[r];
        if (p->load[r] > mx) mx = p->load[r];
    }
    return sum > 0 ? mx / (sum / p->nranks) : 1.0;
}
