/* parallel/pp_stages: which pipeline stage runs which part of a model (issue
 * 26). A model's forward graph is read as units in order: the embeddings
 * (everything before the first block), its blocks ("<prefix>.<l>." names:
 * "h.3.attn...", the prefix the one most parameters share), and the head
 * (everything after the last block). A split gives each of p stages a run of
 * consecutive units (first[s] .. first[s + 1]):
 *   even      torchtitan's rule: the embeddings and the head count as one
 *             unit each, the units spread evenly, the remainder to the
 *             earliest stages;
 *   balanced  by the units' forward FLOPs (the operators' own counts): the
 *             split whose costliest stage is cheapest, earlier stages taking
 *             more where several are; the head's GEMM over the vocabulary
 *             weighs what it costs;
 *   explicit  the plan's blocks per stage (the embeddings with stage 0, the
 *             head with the last).
 * Nothing here runs or allocates a model's tensors. */
#ifndef HP_PARALLEL_PP_STAGES_H
#define HP_PARALLEL_PP_STAGES_H

#include "core/graph.h"

typedef struct {
    char prefix[32]; /* the blocks' name prefix ("h") */
    int nblocks;     /* L */
    double *cost;    /* [L + 2]: forward FLOPs of the embeddings (0), block l (1 + l), the head (L + 1) */
    int *unit_of;    /* [g->nnodes]: each forward node's unit (-1: not a forward node) */
} hp_pp_units;

/* The units of forward graph g (a model as written: parameters named by
 * block). Errors: no "<prefix>.<l>." parameters, or blocks whose nodes
 * interleave (a node of block l after one of block l + 1), naming them. */
hp_status hp_pp_units_of(hp_pp_units *out, const hp_graph *g);
void hp_pp_units_free(hp_pp_units *u);

/* Splits of n units over p stages (1 <= p <= n): first[p + 1], first[0] = 0,
 * first[p] = n, every stage at least one unit; errors name the field. */
hp_status hp_pp_split_even(int *first, int n, int p);
hp_status hp_pp_split_balanced(int *first, const double *cost, int n, int p);
/* blocks[p]: the blocks of each stage (>= 1 each, summing to n - 2). */
hp_status hp_pp_split_explicit(int *first, const int *blocks, int n, int p);

/* The costliest stage's cost over the mean (1: balanced). */
double hp_pp_split_imbalance(const int *first, const double *cost, int p);

/* What a split cuts (forward graph g, its units u, the split first[p + 1]):
 * each forward node's stage; every activation a stage produces and a later
 * one reads (what the pipeline sends forward per micro-batch, and its
 * gradient back), once per (value, reading stage); every input and
 * parameter read on more than one stage — a tied parameter (GPT-2's wte:
 * the embeddings' table is the head's) has its gradients summed between
 * its stages each step. */
typedef struct {
    int value, from, to; /* produced on stage from, read on stage to (> from) */
    int64_t bytes;       /* its size per step (global shapes: the micro-batch's is a share) */
} hp_pp_send;
typedef struct {
    int value;      /* an input or a parameter */
    int first, last; /* the first and last stage reading it */
} hp_pp_shared;
typedef struct {
    int stages;
    int *stage_of;        /* [g->nnodes]: a forward node's stage (-1: not forward) */
    hp_pp_send *send;     /* [nsend], in the reading nodes' order */
    int nsend;
    hp_pp_shared *shared; /* [nshared], by value id */
    int nshared;
} hp_pp_cut;

hp_status hp_pp_cut_of(hp_pp_cut *out, const hp_graph *g, const hp_pp_units *u, const int *first, int p);
void hp_pp_cut_free(hp_pp_cut *c);

#endif
