/* tools/tokenize: `hyperpar tokenize` — text files to llm.c token shards with
 * GPT-2's byte-level BPE (hp_tokenize_files), a live progress line on a
 * terminal and a one-line summary; --print-ids prints the ids of files and
 * --decode the text of ids instead. Inputs are the arguments that are not
 * flags (files or quoted glob patterns) and --input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "commands.h"
#include "progress.h"

#define MAX_ARGS 4096

typedef struct {
    char tokenizer[1024], input[1024], out_dir[1024], prefix[256];
    float val_fraction;
    long shard_tokens;
    int overwrite, print_ids, decode;
} tok_opts;

static void on_progress(void *ctx, const hp_tokenize_progress *p) {
    hp_progress *pr = ctx;
    if (!pr->tty) return;
    double pct = p->bytes_total ? 100.0 * (double)p->bytes_done / (double)p->bytes_total : 100.0;
    double rate = p->seconds > 0 ? (double)p->bytes_done / p->seconds : 0;
    double eta = rate > 0 ? (double)(p->bytes_total - p->bytes_done) / rate : -1;
    fprintf(pr->out, "\r\033[Ktokenize: file %d/%d | %5.1f%% | %.1f MB/s | %lld tokens | ETA %.0fs",
            p->file < p->files ? p->file + 1 : p->files, p->files, pct, rate / 1e6, p->tokens, eta < 0 ? 0 : eta);
    fflush(pr->out);
    pr->line_open = 1;
}

static hp_status write_shards(const tok_opts *o, const char *const *inputs, int n) {
    hp_tokenize_config c;
    hp_tokenize_config_default(&c);
    c.tokenizer = o->tokenizer;
    c.inputs = inputs;
    c.ninputs = n;
    c.out_dir = o->out_dir;
    c.prefix = o->prefix;
    c.val_fraction = o->val_fraction;
    c.shard_tokens = o->shard_tokens;
    c.overwrite = o->overwrite;
    hp_progress pr;
    hp_progress_init(&pr, stderr, 0, 1);
    c.on_progress = on_progress;
    c.ctx = &pr;
    hp_tokenize_summary s;
    hp_status e = hp_tokenize_files(&s, &c);
    hp_progress_done(&pr);
    HP_TRY(e);
    printf("tokenize: %lld tokens (val %lld in %d shard%s, train %lld in %d shard%s) from %d file%s, %lld bytes, "
           "in %.2f s -> %s/%s_{val,train}_*.bin\n",
           s.val_tokens + s.train_tokens, s.val_tokens, s.val_shards, s.val_shards == 1 ? "" : "s", s.train_tokens,
           s.train_shards, s.train_shards == 1 ? "" : "s", s.files, s.files == 1 ? "" : "s", s.bytes, s.seconds,
           o->out_dir, o->prefix);
    return HP_OK;
}

/* One line of ids per file. */
static hp_status print_ids(hp_tokenizer *t, const char *const *inputs, int n) {
    for (int i = 0; i < n; i++) {
        int32_t *ids;
        size_t k;
        HP_TRY(hp_tokenizer_encode_file(&ids, &k, t, inputs[i]));
        for (size_t j = 0; j < k; j++) printf(j ? " %d" : "%d", ids[j]);
        putchar('\n');
        free(ids);
    }
    return HP_OK;
}

/* The text of the ids given as arguments, as raw bytes. */
static hp_status decode(hp_tokenizer *t, const char *const *args, int n) {
    int32_t *ids = malloc(sizeof *ids * (size_t)(n ? n : 1));
    if (!ids) return hp_errorf("hyperpar tokenize: out of memory");
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long v = strtol(args[i], &end, 10);
        if (end == args[i] || *end || errno || v < 0 || v > INT32_MAX) {
            free(ids);
            return hp_errorf("hyperpar tokenize: --decode: '%s' is not a token id", args[i]);
        }
        ids[i] = (int32_t)v;
    }
    char *text;
    size_t len;
    hp_status e = hp_tokenizer_decode(&text, &len, t, ids, (size_t)n);
    free(ids);
    HP_TRY(e);
    fwrite(text, 1, len, stdout);
    free(text);
    return HP_OK;
}

static hp_status tokenize(const tok_opts *o, const char **pos, int npos) {
    if (!o->tokenizer[0]) return hp_errorf("hyperpar tokenize: --tokenizer DIR is required");
    if (o->print_ids + o->decode > 1) return hp_errorf("hyperpar tokenize: --print-ids and --decode exclude each other");
    if (o->input[0]) pos[npos++] = o->input;
    if (!o->decode && npos == 0) return hp_errorf("hyperpar tokenize: no input files (give FILE... or --input PATTERN)");
    if (!o->print_ids && !o->decode) {
        if (!(o->val_fraction >= 0 && o->val_fraction < 1))
            return hp_errorf("hyperpar tokenize: --val-fraction must be in [0, 1), got %g", (double)o->val_fraction);
        if (o->shard_tokens < 1 || o->shard_tokens > 2147483647L)
            return hp_errorf("hyperpar tokenize: --shard-tokens must be in [1, 2147483647], got %ld", o->shard_tokens);
        return write_shards(o, pos, npos);
    }
    hp_tokenizer *t;
    HP_TRY(hp_tokenizer_load(&t, o->tokenizer));
    hp_status e = o->decode ? decode(t, pos, npos) : print_ids(t, pos, npos);
    hp_tokenizer_free(t);
    return e;
}

/* Splits argv[2..] into the flags (and their values), for hp_args_parse,
 * and the other arguments. */
static hp_status split_args(char **flags, int *nflags, const char **pos, int *npos, const hp_opt *tab, int ntab,
                            int argc, char **argv) {
    flags[0] = argv[0], flags[1] = argv[1];
    *nflags = 2, *npos = 0;
    if (argc > MAX_ARGS) return hp_errorf("hyperpar tokenize: more than %d arguments", MAX_ARGS);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 && strcmp(a, "-h") != 0) {
            pos[(*npos)++] = a;
            continue;
        }
        flags[(*nflags)++] = argv[i];
        if (strchr(a, '=') || !strcmp(a, "--help") || !strcmp(a, "-h")) continue;
        int takes_value = !strcmp(a, "--config");
        for (int k = 0; k < ntab; k++)
            if (!strcmp(a + 2, tab[k].name)) takes_value = tab[k].type != HP_OPT_FLAG;
        if (takes_value && i + 1 < argc) flags[(*nflags)++] = argv[++i];
    }
    return HP_OK;
}

int hp_cmd_tokenize(int argc, char **argv) {
    tok_opts o = {.val_fraction = 0.1f, .shard_tokens = 100000000L};
    snprintf(o.out_dir, sizeof o.out_dir, ".");
    snprintf(o.prefix, sizeof o.prefix, "tok");
    hp_opt tab[] = {
        {"tokenizer", HP_OPT_STR, o.tokenizer, sizeof o.tokenizer,
         "GPT-2 tokenizer: DIR with vocab.json + merges.txt or tokenizer.json, or such a file"},
        {"input", HP_OPT_STR, o.input, sizeof o.input, "a text file or a glob pattern (also: FILE... as arguments)"},
        {"out-dir", HP_OPT_STR, o.out_dir, sizeof o.out_dir, "where the shards go (made if missing)"},
        {"prefix", HP_OPT_STR, o.prefix, sizeof o.prefix, "shard names: PREFIX_val_000000.bin, PREFIX_train_000000.bin"},
        {"val-fraction", HP_OPT_FLOAT, &o.val_fraction, 0,
         "the first share of the text (by bytes) for the val shards"},
        {"shard-tokens", HP_OPT_LONG, &o.shard_tokens, 0, "tokens per shard at most"},
        {"overwrite", HP_OPT_FLAG, &o.overwrite, 0, "replace shards of the same prefix already in --out-dir"},
        {"print-ids", HP_OPT_FLAG, &o.print_ids, 0, "print each file's token ids (one line per file), write no shards"},
        {"decode", HP_OPT_FLAG, &o.decode, 0, "print the text of the token ids given as arguments"},
    };
    int help = 0, n = (int)(sizeof tab / sizeof tab[0]), nflags, npos;
    static char *flags[MAX_ARGS + 2];
    static const char *pos[MAX_ARGS + 1];
    hp_status st = split_args(flags, &nflags, pos, &npos, tab, n, argc, argv);
    if (!st) st = hp_args_parse(&help, tab, n, nflags, flags, 2, "tokenize");
    if (!st && help) {
        hp_args_usage(tab, n, "tokenize [FILE...]",
                      "Turns text files into llm.c token shards with GPT-2's byte-level BPE: every file is preceded\n"
                      "by <|endoftext|>; the first --val-fraction of the text goes to PREFIX_val_*.bin, the rest to\n"
                      "PREFIX_train_*.bin (for hyperpar train --data 'DIR/PREFIX_train_*.bin' --val-data ...).");
        return 0;
    }
    if (!st) st = tokenize(&o, pos, npos);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    return 0;
}
