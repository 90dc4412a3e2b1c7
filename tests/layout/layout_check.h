/* tests/layout/layout_check: helpers shared by the layout tests — a mesh and
 * a layout from their text form, a layout compared by its text, and an
 * operator no sharding rule knows. Include after testutil.h. */
#ifndef HP_TEST_LAYOUT_CHECK_H
#define HP_TEST_LAYOUT_CHECK_H

#include <stdio.h>
#include <string.h>

#include "core/graph.h"
#include "layout/layout.h"

static inline hp_mesh mesh(const char *text) {
    hp_mesh m;
    memset(&m, 0, sizeof m);
    CHECK_OK(hp_mesh_parse(&m, text));
    return m;
}

static inline hp_layout L(const char *text, const hp_mesh *m) {
    hp_layout l = hp_layout_replicated(m);
    CHECK_OK(hp_layout_parse(&l, text, m));
    return l;
}

/* Does `l` print as `want`? Prints both when not. */
static inline int is(const hp_layout *l, const char *want, const hp_mesh *m) {
    char buf[160];
    hp_layout_str(buf, sizeof buf, l, m);
    if (strcmp(buf, want) == 0) return 1;
    fprintf(stderr, "  layout %s, expected %s\n", buf, want);
    return 0;
}

/* "mystery": one output shaped like its first input; no rule knows it. */
static inline hp_status mystery_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    os[0] = g->vals[n->in[0]].shape;
    od[0] = HP_F32;
    return HP_OK;
}
static const hp_opdef mystery = {.name = "mystery", .nout = 1, .infer = mystery_infer};

#endif
