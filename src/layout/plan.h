/* layout/plan: the sharding plan — a mesh plus the layouts of parameters and
 * graph inputs, read from a text file or built through the C API. Every other
 * tensor's layout follows by propagation; no plan changes model code.
 *
 * File format (one entry per line; blanks around tokens are ignored):
 *
 *     # GPT-2, data x tensor parallel          <- '#' starts a comment
 *     mesh: dp=2,tp=2                          <- exactly once, before any rule
 *     input tokens: S(0)@dp                    <- a graph input by name (fnmatch glob)
 *     input targets: S(0)@dp
 *     param h.*.attn.qkv.weight: S(1)@tp       <- parameter-name glob (fnmatch)
 *     param wte: S(0)@tp
 *
 * Layouts use the text form of layout.h; axes a layout does not name are
 * Replicate, and "R" alone is replicated everywhere. Rules are tried in file
 * order and the first whose glob matches wins (params and inputs separately);
 * a name no rule matches is Replicate. Errors read `FILE:LINE: problem`.
 *
 * FSDP / ZeRO (parallel/fsdp applies it; see hp_fsdp_spec):
 *
 *     fsdp: shard=dp level=3 reshard=on prefetch=1 reduce=fp32 gather=fp32 style=hyperpar
 *     fsdp: shard=dp replicate=rep             <- HSDP: replicas over `rep`
 *     fsdp: shard=dp unit_bytes=8M             <- units by bytes (K, M, G: 2^10, 2^20, 2^30)
 *     fsdp: shard=dp keep_bytes=64M            <- across supernodes: units kept from forward to backward
 *     unit block0: h.0.*                       <- a unit: name, then globs
 *     unit root: wte wpe lnf.*                 <- (none given: one unit per
 *                                                 block "h.N", plus "root") */
#ifndef HP_LAYOUT_PLAN_H
#define HP_LAYOUT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "layout/layout.h"

typedef struct {
    char *pattern;    /* fnmatch glob (owned) */
    hp_layout layout;
    char *where;      /* "FILE:LINE" of the rule, or "api" (owned) */
} hp_plan_rule;

/* FSDP levels (ZeRO): 1 = optimizer state sharded, 2 = + gradients, 3 = +
 * parameters (one copy per supernode, shared by its ranks). */
#define HP_FSDP_KEEP_AUTO (-1) /* hp_fsdp_spec.keep_bytes: chosen by the memory budget */
typedef enum { HP_FSDP_STYLE_HYPERPAR = 0, HP_FSDP_STYLE_FSDP2 = 1 } hp_fsdp_style;

typedef struct {
    char *name;     /* owned */
    char **globs;   /* [nglobs] owned fnmatch globs over parameter names */
    int nglobs;
    char *where;    /* "FILE:LINE" or "api" (owned) */
} hp_fsdp_unit_rule;

typedef struct {
    int level;                 /* 0: off; 1, 2 or 3 */
    int shard_axis;            /* mesh axis of the shards */
    int replicate_axis;        /* HSDP: the replicas' axis; -1: none */
    int reshard_after_forward; /* 1: the backward gathers again across supernodes */
    int prefetch;              /* units whose gather starts ahead of use (>= 0) */
    int reduce_bf16;           /* gradients reduced in bf16 (summed in fp32) */
    int gather_bf16;           /* parameters gathered in bf16 (narrowed from the fp32 shards; every
                                * parameter then reaches compute rounded to bf16: needs bf16 compute) */
    hp_fsdp_style style;
    int64_t keep_bytes;        /* transient gathered units: bytes of units kept whole from their forward to
                                * their backward (no second gather), the backward's first ones first;
                                * HP_FSDP_KEEP_AUTO ("keep_bytes=auto"): as many as the memory budget allows
                                * (hp_compile_opts.fsdp_keep_auto, which the trainer settles) */
    int64_t unit_bytes;        /* > 0: automatic units by bytes (parallel/fsdp: runs of parameters in the
                                * forward's first-use order up to this many bytes); 0: one per block + root */
    hp_fsdp_unit_rule *units;  /* [nunits]: first matching unit wins; none: the default units */
    int nunits, capunits;
    char *where;               /* where the fsdp line was (owned), NULL: api */
} hp_fsdp_spec;

typedef struct {
    hp_mesh mesh;
    hp_fsdp_spec fsdp;
    char remat[160];          /* the 'remat:' line ("selective save=linear,attention", "full"; parallel/remat
                               * reads it), "" none */
    char pipeline[256];       /* the 'pipeline:' line ("schedule=zb-h1 chunks=2 split=3,5"; parallel/pp_pass),
                               * "" none */
    char remat_where[64], pipeline_where[64]; /* "FILE:LINE" of those lines */
    int nparams, ninputs;
    hp_plan_rule *params; /* [nparams], in priority order */
    hp_plan_rule *inputs; /* [ninputs] */
    int cap_params, cap_inputs;
} hp_plan;

/* An empty plan on mesh m (every tensor Replicate). */
void hp_plan_init(hp_plan *out, const hp_mesh *m);
void hp_plan_free(hp_plan *p);
/* Parses plan text; `name` stands for the file in errors. A UTF-8 byte
 * order mark at the start is refused, named as such; a repeated rule is found
 * through an index, so the first error of a plan of any length comes at once. */
hp_status hp_plan_parse(hp_plan *out, const char *text, const char *name);
/* Appends a rule (the layout must fit the plan's mesh). */
hp_status hp_plan_add_param(hp_plan *p, const char *pattern, const hp_layout *l);
hp_status hp_plan_add_input(hp_plan *p, const char *pattern, const hp_layout *l);
/* The same with the layout in text form ("S(0)@dp"). */
hp_status hp_plan_add_param_str(hp_plan *p, const char *pattern, const char *layout);
hp_status hp_plan_add_input_str(hp_plan *p, const char *pattern, const char *layout);
/* The layout of parameter (is_input = 0) or input (1) `name`, checked against
 * the tensor's rank; errors name the rule, the layout and the tensor. */
hp_status hp_plan_layout_of(hp_layout *out, const hp_plan *p, const char *name, int is_input, int tensor_ndim);
/* Every rule must match at least one of the model's parameter (params[np])
 * or input (inputs[ni]) names: a rule that matches none (a typo such as
 * `h.*.mlp.fc.wieght`) is an error naming the rule's place (`FILE:LINE`) with
 * the closest real name (edit distance) as a hint. */
hp_status hp_plan_check_rules(const hp_plan *p, const char *const *params, int np, const char *const *inputs, int ni);
/* The plan in the file format (parses back to the same plan); returns buf.
 * hp_plan_str_size gives the bytes needed (with the terminating 0). */
char *hp_plan_str(char *buf, size_t n, const hp_plan *p);
size_t hp_plan_str_size(const hp_plan *p);

/* FSDP settings in the `fsdp:` line's form ("shard=dp level=3 ..."); where
 * names the source in errors. Keys not given keep their defaults (level 3,
 * reshard on, prefetch 1, reduce fp32, style hyperpar). */
hp_status hp_plan_set_fsdp(hp_plan *p, const char *settings, const char *where);
/* The same settings as values (no text to print and parse back): the axes by
 * name (replicate NULL: none), the rest as the spec's fields. */
typedef struct {
    const char *shard, *replicate;
    int level, reshard_after_forward, prefetch, reduce_bf16, gather_bf16;
    hp_fsdp_style style;
    int64_t unit_bytes; /* 0: the default units */
    int64_t keep_bytes; /* 0: none kept beyond the slots' own */
} hp_fsdp_request;
/* Level 3, reshard on, prefetch 1, fp32, style hyperpar, no axes. */
void hp_fsdp_request_default(hp_fsdp_request *r);
hp_status hp_plan_set_fsdp_request(hp_plan *p, const hp_fsdp_request *r, const char *where);
/* A unit: its name and space-separated globs. */
hp_status hp_plan_add_fsdp_unit(hp_plan *p, const char *name, const char *globs, const char *where);
/* layout/plan_fsdp.c: the spec's text form (the plan file's lines),
 * appended to buf[n] at *used as hp_text_appendf does (hp_plan_str); and its
 * release. */
void hp_fsdp_spec_free(hp_fsdp_spec *f);
void hp_fsdp_spec_print(char *buf, size_t n, size_t *used, const hp_fsdp_spec *f, const hp_mesh *m);

#endif
