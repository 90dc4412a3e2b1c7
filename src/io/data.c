#include "io/data.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "io/data assumes a little-endian host (llm.c shards are little-endian)"
#endif

typedef struct {
    char *path;
    void *map;
    size_t map_len;
    const uint16_t *tok; /* token shards */
    const uint8_t *bytes; /* text */
    int64_t n;           /* tokens in the file */
    int64_t start;       /* index of its first token in the concatenation */
} shard;

struct hp_data {
    hp_data_config cfg; /* path points at `path` below */
    char *path;
    hp_data_kind kind;
    int nshards;
    shard *shards;
    int64_t lo, n;      /* the stream: tokens [lo, lo + n) of the concatenation */
    int64_t bt;         /* B*T */
    int64_t step;       /* world*B*T tokens per step (SEQUENTIAL) */
    int64_t windows;    /* SHUFFLE: W */
    int64_t per_epoch;  /* SHUFFLE: steps per epoch */
    int64_t start_pos;  /* SEQUENTIAL: the seeded first offset */
    hp_data_state st;
};

/* ---- randomness: splitmix64 mixing, and a keyed permutation of [0, n) ---- */

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t epoch_key(uint64_t seed, int64_t epoch) { return mix64(mix64(seed) ^ mix64((uint64_t)epoch + 0x51ed27)); }

/* A 4-round Feistel network on 2*half bits, cycle-walked into [0, n). */
static int64_t permute(int64_t x, int64_t n, uint64_t key) {
    int bits = 2;
    while (bits < 62 && ((int64_t)1 << bits) < n) bits++;
    int half = (bits + 1) / 2;
    uint64_t mask = ((uint64_t)1 << half) - 1;
    uint64_t v = (uint64_t)x;
    do {
        uint64_t L = v >> half, R = v & mask;
        for (int r = 0; r < 4; r++) {
            uint64_t f = mix64(R ^ mix64(key + (uint64_t)r)) & mask;
            uint64_t nl = R;
            R = L ^ f;
            L = nl;
        }
        v = (L << half) | R;
    } while (v >= (uint64_t)n);
    return (int64_t)v;
}

/* ---- files ---- */

static void unmap_shard(shard *s) {
    if (s->map) munmap(s->map, s->map_len);
    free(s->path);
}

void hp_data_close(hp_data *d) {
    if (!d) return;
    for (int i = 0; i < d->nshards; i++) unmap_shard(&d->shards[i]);
    free(d->shards);
    free(d->path);
    free(d);
}

static int has_glob_chars(const char *p) { return strpbrk(p, "*?[") != NULL; }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The file names of the source, sorted. */
static hp_status list_files(char ***names, int *count, const char *path) {
    *names = NULL;
    *count = 0;
    if (!has_glob_chars(path)) {
        char **v = malloc(sizeof *v);
        HP_ASSERT(v != NULL);
        v[0] = strdup(path);
        HP_ASSERT(v[0] != NULL);
        *names = v;
        *count = 1;
        return HP_OK;
    }
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(path, GLOB_NOSORT, NULL, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
        globfree(&g);
        return hp_errorf("%s: no files match this pattern", path);
    }
    if (rc != 0) {
        globfree(&g);
        return hp_errorf("%s: cannot expand the pattern (glob error %d)", path, rc);
    }
    char **v = malloc(g.gl_pathc * sizeof *v);
    HP_ASSERT(v != NULL);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        v[i] = strdup(g.gl_pathv[i]);
        HP_ASSERT(v[i] != NULL);
    }
    *count = (int)g.gl_pathc;
    globfree(&g);
    qsort(v, (size_t)*count, sizeof *v, cmp_str);
    *names = v;
    return HP_OK;
}

static int named_bin(const char *path) {
    size_t n = strlen(path);
    return n >= 4 && !strcmp(path + n - 4, ".bin");
}

/* The kind of a mapped file when asked for AUTO: a token shard when it starts
 * with the magic; otherwise text, but only when it cannot be a shard (its name
 * does not end in .bin and the vocabulary is 256). */
static hp_status auto_kind(hp_data_kind *kind, const shard *s, int vocab) {
    int32_t magic = 0;
    if (s->map_len >= 4) memcpy(&magic, s->map, 4);
    if (s->map_len >= 4 && magic == HP_DATA_MAGIC) {
        *kind = HP_DATA_TOKENS;
        return HP_OK;
    }
    if (named_bin(s->path)) {
        if (s->map_len < 4)
            return hp_errorf("%s: a .bin file of %zu bytes: too short for the llm.c token shard magic %d (data kind "
                             "text reads it as bytes)",
                             s->path, s->map_len, HP_DATA_MAGIC);
        return hp_errorf("%s: bad magic %d (0x%08x) where an llm.c token shard starts with %d: a .bin file is read as "
                         "token shards (data kind text reads it as bytes)",
                         s->path, magic, (unsigned)magic, HP_DATA_MAGIC);
    }
    if (vocab != 256)
        return hp_errorf("%s: not an llm.c token shard (no magic %d) and the vocabulary is %d, not 256: text is read "
                         "as bytes only with vocabulary 256 or data kind text",
                         s->path, HP_DATA_MAGIC, vocab);
    *kind = HP_DATA_TEXT;
    return HP_OK;
}

/* Maps one file and decides its kind (when kind is AUTO). Anything but a
 * regular file (a FIFO, a device, a directory) is refused before it is
 * opened: opening a FIFO for reading waits for a writer. */
static hp_status map_file(shard *s, hp_data_kind *kind, int vocab) {
    struct stat sb;
    if (stat(s->path, &sb) != 0) return hp_errorf("%s: cannot open: %s", s->path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return hp_errorf("%s: not a regular file (%s): data must be a file", s->path,
                         S_ISFIFO(sb.st_mode)  ? "a FIFO"
                         : S_ISDIR(sb.st_mode) ? "a directory"
                         : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                         : S_ISSOCK(sb.st_mode) ? "a socket"
                                                : "not a file");
    /* O_NONBLOCK: should the path turn into a FIFO after the check, open still returns */
    int fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return hp_errorf("%s: cannot open: %s", s->path, strerror(errno));
    hp_status e = HP_OK;
    if (fstat(fd, &sb) != 0)
        e = hp_errorf("%s: cannot stat: %s", s->path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        e = hp_errorf("%s: not a regular file", s->path);
    if (!e && sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            e = hp_errorf("%s: cannot map: %s", s->path, strerror(errno));
        else {
            s->map = m;
            s->map_len = (size_t)sb.st_size;
        }
    }
    close(fd);
    if (e) return e;
    const size_t hbytes = HP_DATA_HEADER_INTS * sizeof(int32_t);
    if (*kind == HP_DATA_AUTO) HP_TRY(auto_kind(kind, s, vocab));
    if (*kind == HP_DATA_TEXT) {
        s->bytes = s->map;
        s->n = (int64_t)s->map_len;
        return HP_OK;
    }
    if (s->map_len < hbytes)
        return hp_errorf("%s: file is %zu bytes, shorter than the %zu-byte token shard header", s->path, s->map_len,
                         hbytes);
    const int32_t *h = s->map;
    if (h[0] != HP_DATA_MAGIC)
        return hp_errorf("%s: bad magic %d (0x%08x; expected %d: not an llm.c token shard)", s->path, h[0],
                         (unsigned)h[0], HP_DATA_MAGIC);
    if (h[1] != HP_DATA_VERSION)
        return hp_errorf("%s: unsupported token shard version %d (expected %d)", s->path, h[1], HP_DATA_VERSION);
    size_t have = (s->map_len - hbytes) / 2;
    if (h[2] < 0 || (s->map_len - hbytes) % 2 != 0 || (size_t)h[2] != have)
        return hp_errorf("%s: header says %d tokens (%lld bytes) but the file holds %zu bytes after the header",
                         s->path, h[2], 2LL * h[2], s->map_len - hbytes);
    s->tok = (const uint16_t *)((const char *)s->map + hbytes);
    s->n = h[2];
    return HP_OK;
}

static const char *kind_name(hp_data_kind k) { return k == HP_DATA_TEXT ? "text" : "llm.c token shards"; }

static hp_status check_tokens(const shard *s, int vocab) {
    if (s->tok) {
        for (int64_t i = 0; i < s->n; i++)
            if (s->tok[i] >= vocab)
                return hp_errorf("%s: token %u at position %" PRId64 " is >= the vocabulary size V = %d", s->path,
                                 s->tok[i], i, vocab);
    } else if (vocab < 256) {
        for (int64_t i = 0; i < s->n; i++)
            if (s->bytes[i] >= vocab)
                return hp_errorf("%s: byte %u at position %" PRId64 " is >= the vocabulary size V = %d", s->path,
                                 s->bytes[i], i, vocab);
    }
    return HP_OK;
}

static hp_status check_config(const hp_data_config *c, const char *path) {
    if (c->B <= 0 || c->T <= 0) return hp_errorf("%s: batch size B = %d and T = %d must be > 0", path, c->B, c->T);
    if (c->vocab <= 0) return hp_errorf("%s: vocabulary size V = %d must be > 0", path, c->vocab);
    int world = c->world ? c->world : 1;
    if (world < 0 || c->rank < 0 || c->rank >= world)
        return hp_errorf("%s: reader rank %d is not in [0, world = %d)", path, c->rank, world);
    if (c->split != HP_DATA_ALL && !(c->val_fraction > 0 && c->val_fraction < 1))
        return hp_errorf("%s: val_fraction = %g must be in (0, 1) to split train and validation", path,
                         c->val_fraction);
    if (c->kind != HP_DATA_AUTO && c->kind != HP_DATA_TOKENS && c->kind != HP_DATA_TEXT)
        return hp_errorf("%s: unknown data kind %d", path, (int)c->kind);
    if (c->order != HP_DATA_SEQUENTIAL && c->order != HP_DATA_SHUFFLE)
        return hp_errorf("%s: unknown data order %d", path, (int)c->order);
    return HP_OK;
}

static hp_status open_body(hp_data *d) {
    const hp_data_config *c = &d->cfg;
    char **names;
    int count;
    HP_TRY(list_files(&names, &count, d->path));
    d->shards = calloc((size_t)count, sizeof *d->shards);
    HP_ASSERT(d->shards != NULL);
    for (int i = 0; i < count; i++) d->shards[i].path = names[i];
    d->nshards = count;
    free(names);
    d->kind = c->kind;
    int64_t total = 0;
    for (int i = 0; i < count; i++) {
        shard *s = &d->shards[i];
        hp_data_kind k = c->kind; /* AUTO: decided per file; every file must come out the same */
        HP_TRY(map_file(s, &k, c->vocab));
        if (d->kind == HP_DATA_AUTO) d->kind = k;
        if (k != d->kind)
            return hp_errorf("%s: is %s but %s is %s: the files of one source must be of one kind", s->path,
                             kind_name(k), d->shards[0].path, kind_name(d->kind));
        HP_TRY(check_tokens(s, c->vocab));
        s->start = total;
        total += s->n;
    }
    d->bt = (int64_t)c->B * c->T;
    int world = c->world ? c->world : 1;
    d->step = world * d->bt;
    int64_t nval = (int64_t)((double)total * c->val_fraction);
    const char *what = "the data";
    d->lo = 0;
    d->n = total;
    if (c->split == HP_DATA_TRAIN) {
        d->n = total - nval;
        what = "the training split";
    } else if (c->split == HP_DATA_VAL) {
        d->lo = total - nval;
        d->n = nval;
        what = "the validation split";
    }
    if (d->n < d->step + 1)
        return hp_errorf("%s: %s has %" PRId64 " tokens, fewer than one %s (%s = %" PRId64 " tokens)", d->path,
                         what, d->n, world > 1 ? "step" : "batch", world > 1 ? "world*B*T+1" : "B*T+1", d->step + 1);
    d->windows = (d->n - 1) / d->bt;
    d->per_epoch = d->windows / world;
    d->start_pos = c->seed ? (int64_t)(mix64(c->seed) % (uint64_t)(d->n - d->step)) : 0;
    return HP_OK;
}

hp_status hp_data_open(hp_data **out, const hp_data_config *cfg) {
    *out = NULL;
    if (!cfg->path || !*cfg->path) return hp_errorf("data: no path given");
    HP_TRY(check_config(cfg, cfg->path));
    hp_data *d = calloc(1, sizeof *d);
    HP_ASSERT(d != NULL);
    d->cfg = *cfg;
    if (!d->cfg.world) d->cfg.world = 1;
    d->path = strdup(cfg->path);
    HP_ASSERT(d->path != NULL);
    d->cfg.path = d->path;
    hp_status e = open_body(d);
    if (e) {
        hp_data_close(d);
        return e;
    }
    hp_data_rewind(d);
    *out = d;
    return HP_OK;
}

void hp_data_rewind(hp_data *d) {
    d->st.position = d->cfg.order == HP_DATA_SEQUENTIAL ? d->start_pos : 0;
    d->st.epoch = 0;
    d->st.rng = epoch_key(d->cfg.seed, 0);
    d->st.n_tokens = d->n;
}

int64_t hp_data_num_tokens(const hp_data *d) { return d->n; }
hp_data_kind hp_data_kind_of(const hp_data *d) { return d->kind; }

int64_t hp_data_steps_per_epoch(const hp_data *d) {
    if (d->cfg.order == HP_DATA_SHUFFLE) return d->per_epoch;
    return (d->n - 1) / d->step;
}

void hp_data_get_state(const hp_data *d, hp_data_state *s) { *s = d->st; }

hp_status hp_data_set_state(hp_data *d, const hp_data_state *s) {
    if (s->n_tokens != d->n)
        return hp_errorf("%s: saved data state is for %" PRId64 " tokens, this stream has %" PRId64 " (data changed?)",
                         d->path, s->n_tokens, d->n);
    if (s->epoch < 0) return hp_errorf("%s: saved data state has a negative epoch %" PRId64, d->path, s->epoch);
    if (s->rng != epoch_key(d->cfg.seed, s->epoch))
        return hp_errorf("%s: saved data state does not match this reader's seed %" PRIu64 " (rng differs)", d->path,
                         d->cfg.seed);
    int64_t limit = d->cfg.order == HP_DATA_SHUFFLE ? d->per_epoch - 1 : d->n - d->step - 1;
    if (s->position < 0 || s->position > limit)
        return hp_errorf("%s: saved data position %" PRId64 " is outside [0, %" PRId64 "] for this stream", d->path,
                         s->position, limit);
    d->st = *s;
    return HP_OK;
}

/* dst[0..count) = tokens [at, at + count) of the stream. */
static void copy_tokens(const hp_data *d, int32_t *dst, int64_t at, int64_t count) {
    int64_t g = d->lo + at;
    int lo = 0, hi = d->nshards - 1; /* the last shard whose start <= g */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (d->shards[mid].start <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    for (int i = lo; count > 0; i++) {
        HP_ASSERT(i < d->nshards);
        const shard *s = &d->shards[i];
        int64_t off = g - s->start;
        int64_t m = s->n - off;
        if (m <= 0) continue; /* empty shard */
        if (m > count) m = count;
        if (s->tok)
            for (int64_t k = 0; k < m; k++) dst[k] = s->tok[off + k];
        else
            for (int64_t k = 0; k < m; k++) dst[k] = s->bytes[off + k];
        dst += m;
        g += m;
        count -= m;
    }
}

hp_status hp_data_next(hp_data *d, int32_t *inputs, int32_t *targets) {
    int64_t at;
    const int64_t world = d->cfg.world, rank = d->cfg.rank;
    if (d->cfg.order == HP_DATA_SHUFFLE) {
        int64_t w = permute(d->st.position * world + rank, d->windows, d->st.rng);
        at = w * d->bt;
    } else {
        at = d->st.position + rank * d->bt;
    }
    copy_tokens(d, inputs, at, d->bt);
    if (d->bt > 1) memcpy(targets, inputs + 1, (size_t)(d->bt - 1) * sizeof *targets);
    copy_tokens(d, targets + d->bt - 1, at + d->bt, 1);

    if (d->cfg.order == HP_DATA_SHUFFLE) {
        if (++d->st.position >= d->per_epoch) {
            d->st.position = 0;
            d->st.epoch++;
            d->st.rng = epoch_key(d->cfg.seed, d->st.epoch);
        }
    } else {
        d->st.position += d->step;
        if (d->st.position + d->step + 1 > d->n) {
            d->st.position = 0;
            d->st.epoch++;
            d->st.rng = epoch_key(d->cfg.seed, d->st.epoch);
        }
    }
    return HP_OK;
}

void hp_data_state_to_json(hp_jw *w, const hp_data_state *s) {
    char buf[32];
    snprintf(buf, sizeof buf, "0x%016" PRIx64, s->rng);
    hp_jw_object_begin(w);
    hp_jw_key(w, "position");
    hp_jw_int(w, s->position);
    hp_jw_key(w, "epoch");
    hp_jw_int(w, s->epoch);
    hp_jw_key(w, "rng");
    hp_jw_string(w, buf);
    hp_jw_key(w, "n_tokens");
    hp_jw_int(w, s->n_tokens);
    hp_jw_object_end(w);
}

hp_status hp_data_state_from_json(hp_data_state *s, const hp_json *obj) {
    hp_data_state t;
    const char *rng;
    HP_TRY(hp_json_get_int(&t.position, obj, "position"));
    HP_TRY(hp_json_get_int(&t.epoch, obj, "epoch"));
    HP_TRY(hp_json_get_int(&t.n_tokens, obj, "n_tokens"));
    HP_TRY(hp_json_get_string(&rng, obj, "rng"));
    char *end;
    errno = 0;
    unsigned long long r = strtoull(rng, &end, 16);
    if (strncmp(rng, "0x", 2) != 0 || *end != 0 || errno == ERANGE || end == rng + 2)
        return hp_errorf("key 'rng': expected a hex string like \"0x0123456789abcdef\", got \"%s\"", rng);
    t.rng = (uint64_t)r;
    if (t.position < 0) return hp_errorf("key 'position': %" PRId64 " is negative", t.position);
    if (t.epoch < 0) return hp_errorf("key 'epoch': %" PRId64 " is negative", t.epoch);
    if (t.n_tokens < 2) return hp_errorf("key 'n_tokens': %" PRId64 " is below 2 (no stream is that short)", t.n_tokens);
    *s = t;
    return HP_OK;
}
