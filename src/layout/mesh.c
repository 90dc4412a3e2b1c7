/* layout/mesh: device meshes — parsing "dp=2,tp=2", rank <-> coordinates,
 * the ranks of one axis group, printing. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"
#include "layout/text.h"

static int valid_axis_name(const char *s) {
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
    return 1;
}

hp_status hp_mesh_parse(hp_mesh *out, const char *text) {
    memset(out, 0, sizeof *out);
    if (!text) return hp_errorf("mesh: no text given");
    const char *p = text;
    hp_mesh m;
    memset(&m, 0, sizeof m);
    for (;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        char item[64];
        if (hp_text_trimmed(item, sizeof item, p, end) < 0)
            return hp_errorf("mesh '%s': an axis entry is too long", text);
        if (!item[0]) return hp_errorf("mesh '%s': empty axis entry (expected name=size)", text);
        if (!eq) return hp_errorf("mesh '%s': axis '%s' has no '=size'", text, item);
        char name[64], num[64];
        if (hp_text_trimmed(name, sizeof name, p, eq) < 0 || hp_text_trimmed(num, sizeof num, eq + 1, end) < 0)
            return hp_errorf("mesh '%s': an axis entry is too long", text);
        if (!name[0]) return hp_errorf("mesh '%s': axis entry '%s' has no name", text, item);
        if (strlen(name) >= HP_AXIS_NAME_LEN)
            return hp_errorf("mesh '%s': axis name '%s' is longer than %d characters", text, name,
                             HP_AXIS_NAME_LEN - 1);
        if (!valid_axis_name(name))
            return hp_errorf("mesh '%s': axis name '%s' must be letters, digits and '_' (not starting with a digit)",
                             text, name);
        for (int a = 0; a < m.ndim; a++)
            if (!strcmp(m.name[a], name)) return hp_errorf("mesh '%s': axis '%s' appears twice", text, name);
        if (m.ndim == HP_MESH_MAX_DIMS)
            return hp_errorf("mesh '%s': more than %d axes", text, HP_MESH_MAX_DIMS);
        char *stop = NULL;
        errno = 0;
        long v = num[0] ? strtol(num, &stop, 10) : 0;
        if (!num[0] || *stop || errno)
            return hp_errorf("mesh '%s': axis '%s' size '%s' is not an integer", text, name, num);
        if (v < 1) return hp_errorf("mesh '%s': axis '%s' size must be >= 1", text, name);
        if (v > 1 << 20) return hp_errorf("mesh '%s': axis '%s' size %ld is too large", text, name, v);
        memcpy(m.name[m.ndim], name, strlen(name) + 1); /* length checked above */
        m.size[m.ndim] = (int)v;
        m.ndim++;
        if (!*end) break;
        p = end + 1;
    }
    long total = 1;
    for (int a = 0; a < m.ndim; a++) {
        total *= m.size[a];
        if (total > 1 << 20) return hp_errorf("mesh '%s': more than %d ranks", text, 1 << 20);
    }
    *out = m;
    return HP_OK;
}

int hp_mesh_size(const hp_mesh *m) {
    int n = 1;
    for (int a = 0; a < m->ndim; a++) n *= m->size[a];
    return n;
}

int hp_mesh_axis(const hp_mesh *m, const char *name) {
    for (int a = 0; a < m->ndim; a++)
        if (!strcmp(m->name[a], name)) return a;
    return -1;
}

void hp_mesh_coords(int *coord, const hp_mesh *m, int rank) {
    for (int a = m->ndim - 1; a >= 0; a--) {
        coord[a] = rank % m->size[a];
        rank /= m->size[a];
    }
}

int hp_mesh_rank(const hp_mesh *m, const int *coord) {
    int r = 0;
    for (int a = 0; a < m->ndim; a++) r = r * m->size[a] + coord[a];
    return r;
}

void hp_mesh_axis_group(int *ranks, int *index, const hp_mesh *m, int axis, int rank) {
    int c[HP_MESH_MAX_DIMS];
    hp_mesh_coords(c, m, rank);
    if (index) *index = c[axis];
    for (int i = 0; i < m->size[axis]; i++) {
        c[axis] = i;
        ranks[i] = hp_mesh_rank(m, c);
    }
}

char *hp_mesh_str(char *buf, size_t n, const hp_mesh *m) {
    size_t used = 0;
    if (n) buf[0] = 0;
    for (int a = 0; a < m->ndim; a++) {
        int k = snprintf(buf + used, used < n ? n - used : 0, "%s%s=%d", a ? "," : "", m->name[a], m->size[a]);
        if (k > 0) used += (size_t)k;
        if (used >= n) break;
    }
    return buf;
}
