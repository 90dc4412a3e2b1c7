/* comm/coll_base: what every collective leans on: reporting a failure (and
 * breaking the group so that its peers stop waiting), the supernode barrier,
 * waiting for and withdrawing link requests, and the executor's scratch
 * (grown once per lane or rank thread, then reused). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll_internal.h"
#include "comm/coll_scratch.h"

/* ---- failure ---- */

hp_status hp_coll_fail(ctx *c, const char *fmt, ...) {
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    hp_comm_group *g = c->g;
    char msg[400];
    snprintf(msg, sizeof msg, "comm: %s on group '%s' (rank %d): %s", c->what, g->name, c->r->rank, detail);
    pthread_mutex_lock(&g->fail_mu);
    if (!atomic_load(&g->failed)) {
        snprintf(g->fail_msg, sizeof g->fail_msg, "%s", msg);
        atomic_store(&g->failed, 1);
        atomic_store(&g->w->failed, 1);
    }
    pthread_mutex_unlock(&g->fail_mu);
    for (int p = 0; p < g->k; p++)
        if (g->sng[p].slots) hp_comm_fence_break(&g->sng[p].bar);
    return hp_errorf("%s", msg);
}

hp_status hp_coll_broken(ctx *c) {
    hp_comm_group *g = c->g;
    char first[400];
    pthread_mutex_lock(&g->fail_mu);
    snprintf(first, sizeof first, "%s", g->fail_msg);
    pthread_mutex_unlock(&g->fail_mu);
    return hp_errorf("comm: %s on group '%s' (rank %d): group broken by an earlier failure: %s", c->what,
                     g->name, c->r->rank, first);
}

hp_status hp_coll_bar(ctx *c) {
    if (c->L == 1) /* alone in its supernode: nobody to meet (a lone rank's call never waits here) */
        return atomic_load(&c->bar->broken) ? hp_coll_broken(c) : HP_OK;
    hp_comm_slot *mine = &c->slots[c->myl];
    long ph = atomic_fetch_add(&mine->phase, 1) + 1;
    int rc = hp_comm_fence_wait(c->bar, c->deadline);
    if (rc == 0) return HP_OK;
    if (rc == -2) return hp_coll_broken(c);
    int missing = -1, behind = -1;
    for (int j = 0; j < c->L; j++)
        if (atomic_load(&c->slots[j].phase) < ph) {
            missing = c->g->ranks[c->g->sn_members[c->T][j]];
            behind = atomic_load(&c->slots[j].link_peer) - 1;
            break;
        }
    double secs = (double)c->r->w->timeout_ns / 1e9;
    if (behind >= 0) /* the missing rank is itself waiting on another supernode: name that one */
        return hp_coll_fail(c, "timed out after %g s waiting for rank %d (supernode %d), which rank %d of this "
                               "supernode waits for",
                            secs, behind, behind / c->r->w->R, missing);
    return hp_coll_fail(c, "timed out after %g s waiting for rank %d", secs, missing);
}

/* Link waits wake every 20 ms to notice a failure elsewhere in the group,
 * and allow a grace period past the deadline (a quarter of the timeout, 50 ms
 * to 30 s) so that a peer stuck behind the really missing rank reports that
 * rank first: the error then names the root cause. */
static int64_t link_deadline(const ctx *c) {
    int64_t grace = c->r->w->timeout_ns / 4;
    if (grace < 50000000LL) grace = 50000000LL;
    if (grace > 30000000000LL) grace = 30000000000LL;
    return c->deadline + grace;
}

static int64_t slice_end(const ctx *c) {
    int64_t t = hp_comm_now_ns() + 20000000LL, d = link_deadline(c);
    return t < d ? t : d;
}

hp_status hp_coll_wait_all(ctx *c, hp_comm_lreq *q, int n) {
    hp_status st = HP_OK;
    for (int i = 0; i < n; i++) {
        if (st) {
            hp_comm_link_cancel(c->r, &q[i]);
            continue;
        }
        int rc, peer = q[i].is_send ? q[i].dst : q[i].src;
        atomic_store(&c->slots[c->myl].link_peer, peer + 1);
        while ((rc = hp_comm_link_wait(c->r, &q[i], slice_end(c))) && hp_comm_now_ns() < link_deadline(c) &&
               !atomic_load(&c->g->failed)) {
        }
        atomic_store(&c->slots[c->myl].link_peer, 0);
        if (rc && atomic_load(&c->g->failed)) {
            st = hp_coll_broken(c);
            hp_comm_link_cancel(c->r, &q[i]);
        } else if (rc) {
            st = hp_coll_fail(c, "timed out after %g s waiting for rank %d (supernode %d)",
                              (double)c->r->w->timeout_ns / 1e9, peer, peer / c->r->w->R);
            hp_comm_link_cancel(c->r, &q[i]);
        } else if (q[i].size_mismatch && c->defer_size) {
            if (!c->size_bad) c->size_bad = 1, c->size_peer = q[i].src, c->size_bytes = q[i].bytes;
        } else if (q[i].size_mismatch) {
            st = hp_coll_fail(c, "message from rank %d has %s size than expected (%zu bytes posted)", q[i].src,
                              "a different", q[i].bytes);
        }
    }
    return st;
}

hp_status hp_coll_size_error(const ctx *c) {
    if (!c->size_bad) return HP_OK;
    return hp_errorf("comm: %s on group '%s' (rank %d): message from rank %d has a different size than expected "
                     "(%zu bytes posted)", c->what, c->g->name, c->r->rank, c->size_peer, c->size_bytes);
}

/* Withdraws posted requests when a call fails half-way, so no late message
 * lands in memory that is reused. */
void hp_coll_cancel_all(ctx *c, hp_comm_lreq *q, int n) {
    for (int i = 0; i < n; i++) hp_comm_link_cancel(c->r, &q[i]);
}


/* ---- scratch (hp_comm_scratch: one per executor) ---- */

void *hp_coll_grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return *p;
    size_t n = hp_comm_scratch_capacity(need); /* the rule the memory model reads (coll_scratch.h) */
    void *q = aligned_alloc(64, n);
    if (!q) return NULL;
    free(*p);
    *p = q;
    *cap = n;
    return q;
}

hp_status hp_coll_scratch(ctx *c, void **out, size_t bytes) {
    *out = hp_coll_grow(&c->s->buf, &c->s->cap, bytes ? bytes : 64);
    return *out ? HP_OK : hp_coll_fail(c, "out of memory for %zu bytes of scratch", bytes);
}

void hp_comm_scratch_free(hp_comm_scratch *s) {
    free(s->buf);
    free(s->ptrs);
    free(s->ptrs2);
    free(s->lreqs);
    memset(s, 0, sizeof *s);
}

hp_status hp_coll_lreqs(ctx *c, hp_comm_lreq **out, size_t n) {
    *out = hp_coll_grow((void **)&c->s->lreqs, &c->s->lreqs_cap, (n ? n : 1) * sizeof(hp_comm_lreq));
    return *out ? HP_OK : hp_coll_fail(c, "out of memory for requests");
}
