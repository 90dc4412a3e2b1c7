/* api/tokenize: text files to llm.c token shards (`hyperpar tokenize`):
 * the inputs expanded and checked, every file mapped and encoded (io/bpe)
 * after an <|endoftext|>, the tokens of the first val_fraction of the bytes
 * to the val shards, the rest to the train shards (io/shard_write). On an
 * error the shards this run committed are removed again. */
#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "core/timing.h"
#include "io/bpe.h"
#include "io/fsutil.h"
#include "io/regfile.h"
#include "io/shard_write.h"

#define WHAT "a text input"
#define REPORT_EVERY (1ll << 20)

void hp_tokenize_config_default(hp_tokenize_config *c) {
    memset(c, 0, sizeof *c);
    c->out_dir = ".";
    c->prefix = "tok";
    c->val_fraction = 0.1;
    c->shard_tokens = 100000000;
}

/* ---- inputs -------------------------------------------------------------- */

typedef struct {
    char **path;
    size_t *size;
    int n, cap;
} file_list;

static void list_free(file_list *l) {
    for (int i = 0; i < l->n; i++) free(l->path[i]);
    free(l->path);
    free(l->size);
}

static hp_status list_add(file_list *l, const char *path) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->path[i], path)) return HP_OK; /* named twice: read once */
    size_t size;
    HP_TRY(hp_regfile_check(&size, path, WHAT));
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->path = realloc(l->path, (size_t)l->cap * sizeof *l->path);
        l->size = realloc(l->size, (size_t)l->cap * sizeof *l->size);
        HP_ASSERT(l->path && l->size);
    }
    l->path[l->n] = strdup(path);
    HP_ASSERT(l->path[l->n] != NULL);
    l->size[l->n++] = size;
    return HP_OK;
}

static hp_status expand(file_list *l, const char *pattern) {
    if (!strpbrk(pattern, "*?[")) return list_add(l, pattern);
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(pattern, 0, NULL, &g); /* sorted */
    hp_status e = HP_OK;
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0))
        e = hp_errorf("%s: no files match this pattern", pattern);
    else if (rc != 0)
        e = hp_errorf("%s: cannot expand the pattern (glob error %d)", pattern, rc);
    for (size_t i = 0; !e && i < g.gl_pathc; i++) e = list_add(l, g.gl_pathv[i]);
    globfree(&g);
    return e;
}

/* Shards named PREFIX_val_* or PREFIX_train_* (.bin) in dir: an error, or
 * removed when overwrite. */
static hp_status old_shards(const char *dir, const char *prefix, int overwrite) {
    DIR *d = opendir(dir);
    if (!d) return HP_OK; /* made later */
    size_t pn = strlen(prefix);
    hp_status e = HP_OK;
    struct dirent *de;
    while (!e && (de = readdir(d)) != NULL) {
        const char *s = de->d_name;
        size_t n = strlen(s);
        if (n < pn + 5 || strncmp(s, prefix, pn) || strcmp(s + n - 4, ".bin")) continue;
        if (strncmp(s + pn, "_val_", 5) && strncmp(s + pn, "_train_", 7)) continue;
        char *path = hp_fs_join(dir, s);
        if (!overwrite)
            e = hp_errorf("%s: already there (remove the old shards, or give --overwrite to replace them)", path);
        else if (unlink(path) != 0)
            e = hp_errorf("%s: cannot remove the old shard", path);
        free(path);
    }
    closedir(d);
    return e;
}

static hp_status check_config(const hp_tokenize_config *c) {
    if (!c->tokenizer || !c->tokenizer[0]) return hp_errorf("hp_tokenize_files: no tokenizer given");
    if (c->ninputs < 1 || !c->inputs) return hp_errorf("hp_tokenize_files: no input files given");
    if (!c->out_dir || !c->out_dir[0]) return hp_errorf("hp_tokenize_files: no output directory given");
    if (!c->prefix || !c->prefix[0] || strchr(c->prefix, '/'))
        return hp_errorf("hp_tokenize_files: prefix '%s' must be a non-empty file name part (no '/')",
                         c->prefix ? c->prefix : "");
    if (!(c->val_fraction >= 0 && c->val_fraction < 1))
        return hp_errorf("hp_tokenize_files: val_fraction must be in [0, 1), got %g", c->val_fraction);
    if (c->shard_tokens < 1 || c->shard_tokens > INT32_MAX)
        return hp_errorf("hp_tokenize_files: shard_tokens must be in [1, %d], got %lld", INT32_MAX, c->shard_tokens);
    return HP_OK;
}

/* ---- the run --------------------------------------------------------------- */

typedef struct {
    const hp_tokenize_config *c;
    hp_shard_writer val, train;
    long long cut;   /* bytes before it are validation text */
    long long base;  /* bytes of the files before this one */
    size_t start;    /* where the next piece starts in this file */
    long long next_report;
    hp_tokenize_progress p;
    double t0;
} job;

static void report(job *j) {
    j->p.tokens = j->val.total + j->train.total;
    j->p.seconds = hp_now() - j->t0;
    if (j->c->on_progress) j->c->on_progress(j->c->ctx, &j->p);
}

static hp_status put(void *ctx, const int32_t *ids, size_t n, size_t end) {
    job *j = ctx;
    hp_shard_writer *w = j->base + (long long)j->start < j->cut ? &j->val : &j->train;
    HP_TRY(hp_shard_writer_put(w, ids, n));
    j->start = end;
    j->p.bytes_done = j->base + (long long)end;
    if (j->p.bytes_done >= j->next_report) {
        report(j);
        j->next_report = j->p.bytes_done + REPORT_EVERY;
    }
    return HP_OK;
}

static hp_status one_file(job *j, hp_bpe *b, const char *path) {
    int32_t eot = hp_bpe_eot(b);
    HP_TRY(put(j, &eot, 1, 0));
    const uint8_t *s;
    size_t n;
    HP_TRY(hp_regfile_map(&s, &n, path, WHAT));
    hp_status e = hp_bpe_encode(b, s, n, put, j);
    hp_regfile_unmap(s, n);
    return e;
}

static hp_status run(job *j, hp_bpe *b, const file_list *l) {
    const hp_tokenize_config *c = j->c;
    HP_TRY(hp_shard_writer_open(&j->val, c->out_dir, c->prefix, "val", c->shard_tokens));
    hp_status e = hp_shard_writer_open(&j->train, c->out_dir, c->prefix, "train", c->shard_tokens);
    for (int i = 0; !e && i < l->n; i++) {
        j->p.file = i;
        j->start = 0;
        e = one_file(j, b, l->path[i]);
        j->base += (long long)l->size[i];
    }
    if (!e) e = hp_shard_writer_close(&j->val);
    if (!e) e = hp_shard_writer_close(&j->train);
    return e;
}

/* After an error: the temporaries and the shards committed by this run go. */
static void undo(job *j) {
    hp_shard_writer *ws[2] = {&j->val, &j->train};
    static const char *const split[2] = {"val", "train"};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < ws[k]->shards; i++) {
            char *p = hp_shard_name(j->c->out_dir, j->c->prefix, split[k], i);
            unlink(p);
            free(p);
        }
        if (ws[k]->dir) hp_shard_writer_abort(ws[k]); /* not yet released */
    }
}

hp_status hp_tokenize_files(hp_tokenize_summary *sum, const hp_tokenize_config *c) {
    memset(sum, 0, sizeof *sum);
    HP_TRY(check_config(c));
    double t0 = hp_now();
    hp_bpe *b;
    HP_TRY(hp_bpe_load(&b, c->tokenizer));
    hp_status e = HP_OK;
    if (hp_bpe_vocab(b) > 65536)
        e = hp_errorf("%s: %d tokens; llm.c shards hold ids up to 65535", hp_bpe_source(b), hp_bpe_vocab(b));
    else if (hp_bpe_eot(b) < 0)
        e = hp_errorf("%s: no <|endoftext|> token to put between the files", hp_bpe_source(b));
    file_list l = {0};
    for (int i = 0; !e && i < c->ninputs; i++) e = expand(&l, c->inputs[i]);
    if (!e) e = hp_fs_mkdir_p(c->out_dir);
    if (!e) e = old_shards(c->out_dir, c->prefix, c->overwrite);
    job j;
    memset(&j, 0, sizeof j);
    if (!e) {
        j.c = c;
        j.t0 = t0;
        j.p.files = l.n;
        for (int i = 0; i < l.n; i++) j.p.bytes_total += (long long)l.size[i];
        j.cut = (long long)(c->val_fraction * (double)j.p.bytes_total);
        j.next_report = REPORT_EVERY;
        e = run(&j, b, &l);
        if (e) undo(&j);
    }
    if (!e) {
        j.p.file = l.n;
        report(&j);
        sum->bytes = j.p.bytes_total;
        sum->val_tokens = j.val.total;
        sum->train_tokens = j.train.total;
        sum->val_shards = j.val.shards;
        sum->train_shards = j.train.shards;
        sum->files = l.n;
        sum->vocab = hp_bpe_vocab(b);
        sum->seconds = hp_now() - t0;
    }
    list_free(&l);
    hp_bpe_free(b);
    return e;
}
