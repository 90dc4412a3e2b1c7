/* comm/group: groups of ranks: their member tables (member -> rank,
 * supernode, local index, lane), the per-supernode shared state of the
 * zero-copy protocol (a barrier and one slot per local member, where the
 * supernode is hosted), and their queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"

hp_status hp_comm_group_create(hp_comm_group **out, hp_comm_world *w, const int *ranks, int n,
                               const char *name) {
    *out = NULL;
    int size = w->S * w->R;
    if (n < 1) return hp_errorf("comm group '%s': needs at least one rank, got %d", name ? name : "?", n);
    hp_comm_group *g = calloc(1, sizeof *g);
    if (!g) return hp_errorf("comm: out of memory");
    g->w = w;
    g->n = n;
    g->gid = atomic_fetch_add(&w->next_gid, 1);
    if (name) snprintf(g->name, sizeof g->name, "%s", name);
    else snprintf(g->name, sizeof g->name, "group%d", g->gid);
    pthread_mutex_init(&g->fail_mu, NULL);
    atomic_init(&g->failed, 0);
    g->ranks = malloc((size_t)n * sizeof(int));
    g->member_of = malloc((size_t)size * sizeof(int));
    g->sn = malloc((size_t)n * sizeof(int));
    g->lidx = malloc((size_t)n * sizeof(int));
    g->lane = calloc((size_t)n, sizeof(int));
    int *cnt = calloc((size_t)w->S, sizeof(int));
    hp_status st = HP_OK;
    if (!g->ranks || !g->member_of || !g->sn || !g->lidx || !g->lane || !cnt) {
        st = hp_errorf("comm: out of memory");
        goto fail;
    }
    for (int i = 0; i < size; i++) g->member_of[i] = -1;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size) {
            st = hp_errorf("comm group '%s': ranks[%d] = %d is outside the world of %d ranks", g->name, i, ranks[i], size);
            goto fail;
        }
        if (g->member_of[ranks[i]] >= 0) {
            st = hp_errorf("comm group '%s': rank %d appears twice", g->name, ranks[i]);
            goto fail;
        }
        g->ranks[i] = ranks[i];
        g->member_of[ranks[i]] = i;
        g->lidx[i] = cnt[ranks[i] / w->R]++;
    }
    for (int s = 0; s < w->S; s++) g->k += cnt[s] > 0;
    g->sn_list = malloc((size_t)g->k * sizeof(int));
    g->sn_n = malloc((size_t)g->k * sizeof(int));
    g->sn_members = calloc((size_t)g->k, sizeof(int *));
    g->sng = calloc((size_t)g->k, sizeof *g->sng);
    if (!g->sn_list || !g->sn_n || !g->sn_members || !g->sng) {
        st = hp_errorf("comm: out of memory");
        goto fail;
    }
    int pos = 0;
    for (int s = 0; s < w->S; s++) {
        if (!cnt[s]) continue;
        g->sn_list[pos] = s;
        g->sn_n[pos] = cnt[s];
        g->sn_members[pos] = malloc((size_t)cnt[s] * sizeof(int));
        if (!g->sn_members[pos]) {
            st = hp_errorf("comm: out of memory");
            goto fail;
        }
        int j = 0;
        for (int i = 0; i < n; i++)
            if (ranks[i] / w->R == s) {
                g->sn[i] = pos;
                g->sn_members[pos][j++] = i;
            }
        int hosted = s * w->R >= w->first && s * w->R < w->first + w->nhosted;
        hp_comm_fence_init(&g->sng[pos].bar, cnt[s]);
        if (hosted) {
            g->sng[pos].slots = aligned_alloc(64, sizeof(hp_comm_slot) * (size_t)cnt[s]);
            if (!g->sng[pos].slots) {
                st = hp_errorf("comm: out of memory");
                goto fail;
            }
            memset(g->sng[pos].slots, 0, sizeof(hp_comm_slot) * (size_t)cnt[s]);
            for (j = 0; j < cnt[s]; j++) {
                atomic_init(&g->sng[pos].slots[j].phase, 0);
                atomic_init(&g->sng[pos].slots[j].link_peer, 0);
            }
        }
        pos++;
    }
    free(cnt);
    /* each hosted member's lane: the one with the fewest live groups of its rank */
    for (int i = 0; i < n; i++)
        if (ranks[i] >= w->first && ranks[i] < w->first + w->nhosted) {
            hp_comm_rank *r = &w->ranks[ranks[i] - w->first];
            int best = 0;
            for (int l = 1; l < HP_COMM_LANES; l++)
                if (r->lane_groups[l] < r->lane_groups[best]) best = l;
            g->lane[i] = best;
            r->lane_groups[best]++;
        }
    g->lanes_taken = 1;
    *out = g;
    return HP_OK;
fail:
    free(cnt);
    hp_comm_group_destroy(g);
    return st;
}

void hp_comm_group_destroy(hp_comm_group *g) {
    if (!g) return;
    hp_comm_world *w = g->w;
    for (int i = 0; g->lanes_taken && i < g->n; i++)
        if (g->ranks[i] >= w->first && g->ranks[i] < w->first + w->nhosted)
            w->ranks[g->ranks[i] - w->first].lane_groups[g->lane[i]]--;
    for (int p = 0; g->sng && p < g->k; p++) free(g->sng[p].slots);
    for (int p = 0; g->sn_members && p < g->k; p++) free(g->sn_members[p]);
    free(g->sng);
    free(g->sn_members);
    free(g->sn_list);
    free(g->sn_n);
    free(g->ranks);
    free(g->member_of);
    free(g->sn);
    free(g->lidx);
    free(g->lane);
    pthread_mutex_destroy(&g->fail_mu);
    free(g);
}

int hp_comm_group_size(const hp_comm_group *g) { return g->n; }
int hp_comm_group_index(const hp_comm_group *g, int rank) {
    return rank >= 0 && rank < g->w->S * g->w->R ? g->member_of[rank] : -1;
}
const char *hp_comm_group_name(const hp_comm_group *g) { return g->name; }
