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
 * a name no rule matches is Replicate. Errors read `FILE:LINE: problem`. */
#ifndef HP_LAYOUT_PLAN_H
#define HP_LAYOUT_PLAN_H

#include <stddef.h>

#include "layout/layout.h"

typedef struct {
    char *pattern;    /* fnmatch glob (owned) */
    hp_layout layout;
    char *where;      /* "FILE:LINE" of the rule, or "api" (owned) */
} hp_plan_rule;

typedef struct {
    hp_mesh mesh;
    int nparams, ninputs;
    hp_plan_rule *params; /* [nparams], in priority order */
    hp_plan_rule *inputs; /* [ninputs] */
    int cap_params, cap_inputs;
} hp_plan;

/* An empty plan on mesh m (every tensor Replicate). */
void hp_plan_init(hp_plan *out, const hp_mesh *m);
void hp_plan_free(hp_plan *p);
/* Reads a plan file; errors are `PATH:LINE: problem`. */
hp_status hp_plan_load(hp_plan *out, const char *path);
/* Parses plan text; `name` stands for the file in errors. */
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
/* The plan in the file format (parses back to the same plan); returns buf.
 * hp_plan_str_size gives the bytes needed (with the terminating 0). */
char *hp_plan_str(char *buf, size_t n, const hp_plan *p);
size_t hp_plan_str_size(const hp_plan *p);

#endif
