/* parallel/compile: hp_compile's pass list (see the header). */
#include "parallel/compile.h"
#include "parallel/ep.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/autodiff.h"
#include "ops/ops.h"
#include "parallel/accum.h"
#include "parallel/gemm_policy.h"
#include "parallel/grad_inplace.h"
#include "parallel/grad_rows.h"
#include "parallel/loss_chunk.h"
#include "parallel/moe_chunk.h"
#include "parallel/optim_phase.h"
#include "parallel/precision.h"
#include "parallel/reduce_dtype.h"
#include "parallel/wgrad_first.h"

static void note(hp_compiled *c, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(hp_compiled *c, const char *name, const char *fmt, ...) {
    if (c->npasses == HP_MAX_PASSES) return;
    hp_pass_log *l = &c->passes[c->npasses++];
    snprintf(l->name, sizeof l->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->note, sizeof l->note, fmt, ap);
    va_end(ap);
}

/* Every rule of the plan matches a parameter or input of g. */
static hp_status check_rules(const hp_plan *p, const hp_graph *g) {
    const char **names = malloc(sizeof *names * (size_t)(g->nvals ? g->nvals : 1));
    if (!names) return hp_errorf("compile: out of memory");
    int np = 0, ni = 0;
    for (int v = 0; v < g->nvals; v++) /* parameters from the front, inputs from the back */
        if (g->vals[v].kind == HP_V_PARAM) names[np++] = g->vals[v].name;
    for (int v = g->nvals - 1; v >= 0; v--)
        if (g->vals[v].kind == HP_V_INPUT) names[g->nvals - 1 - ni++] = g->vals[v].name;
    hp_status st = hp_plan_check_rules(p, names, np, names + g->nvals - ni, ni);
    free(names);
    return st;
}

hp_status hp_layouts_from_plan(hp_layout *layouts, unsigned char *fixed, const hp_plan *p, const hp_graph *g) {
    HP_TRY(check_rules(p, g));
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        fixed[v] = 0;
        layouts[v] = hp_layout_replicated(&p->mesh);
        if (val->kind != HP_V_PARAM && val->kind != HP_V_INPUT) continue;
        HP_TRY(hp_plan_layout_of(&layouts[v], p, val->name, val->kind == HP_V_INPUT, val->shape.ndim));
        layouts[v] = hp_layout_canonical(&layouts[v], &p->mesh); /* size-1 axes: nothing to shard */
        fixed[v] = 1;
    }
    return HP_OK;
}

static int count_phase(const hp_graph *g, hp_phase ph) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].phase == ph;
    return n;
}

/* precision: the operators' compute dtypes (bf16 mode). */
static hp_status pass_precision(hp_compiled *c, const hp_compile_opts *o, const hp_plan *plan) {
    int gather16 = plan->fsdp.level > 0 && plan->fsdp.gather_bf16, all = o->bf16_params_all || gather16;
    if (o->dtype == HP_F32 && gather16)
        return hp_errorf("%s: fsdp gather=bf16 needs bf16 compute (--dtype bf16)",
                         plan->fsdp.where ? plan->fsdp.where : "plan");
    if (o->dtype == HP_F32 && all) return hp_errorf("compile: every parameter in bf16 needs --dtype bf16");
    if (o->dtype == HP_F32) return HP_OK;
    if (c->global->loss_seed >= 0)
        return hp_errorf("compile: --dtype %s needs the forward graph (this one came differentiated)",
                         hp_dtype_name(o->dtype));
    int ncasts = 0, nparams = 0;
    HP_TRY(hp_pass_precision(c->global, o->dtype, all, &ncasts, &nparams));
    int nb = 0;
    for (int v = 0; v < c->global->nvals; v++) nb += c->global->vals[v].dtype == HP_BF16;
    note(c, "precision", "%s: %d casts (%d parameter copies%s), %d bf16 values", hp_dtype_name(o->dtype), ncasts,
         nparams, all ? ", every parameter through bf16" : "", nb);
    return HP_OK;
}

/* expert parallelism: the token exchange around experts split by expert. */
static hp_status pass_ep(hp_compiled *c, const hp_plan *plan, const hp_compile_opts *o) {
    int layers = 0, axis = -1;
    if (c->global->loss_seed >= 0) return HP_OK; /* a differentiated graph is taken as it comes */
    HP_TRY(hp_pass_ep(c->global, plan, &c->lmesh, o->deterministic, &layers, &axis));
    if (layers)
        note(c, "ep", "%d MoE layer%s: experts split over '%s' (%d members), tokens exchanged by all-to-all", layers,
             layers == 1 ? "" : "s", c->lmesh.name[axis], c->lmesh.size[axis]);
    return HP_OK;
}

/* moe chunks: each MoE layer's tokens in chunks, each its own dispatch, experts and combine. */
static hp_status pass_moe_chunk(hp_compiled *c, const hp_compile_opts *o) {
    int layers = 0;
    if (o->moe_chunks <= 1 || c->global->loss_seed >= 0) return HP_OK;
    if (o->deterministic) /* a chunk is a part of the rank's tokens: which ones depends on the rank count */
        return hp_errorf("moe chunks: --moe-chunks %d with the deterministic mode is not built (a chunk's tokens "
                         "depend on the rank count, so would the bits)", o->moe_chunks);
    HP_TRY(hp_pass_moe_chunk(&layers, c->global, o->moe_chunks));
    if (!layers) return hp_errorf("moe chunks: the model has no MoE layer to cut into %d chunks", o->moe_chunks);
    note(c, "moe chunks", "%d MoE layer%s: tokens in %d chunks", layers, layers == 1 ? "" : "s", o->moe_chunks);
    return HP_OK;
}

/* loss chunk: the LM head and its cross-entropy fused over vocabulary chunks. */
static hp_status pass_loss_chunk(hp_compiled *c, const hp_compile_opts *o, const hp_plan *plan) {
    if (o->loss_chunk <= 0) return HP_OK;
    int n = 0;
    HP_TRY(hp_pass_loss_chunk(&n, c->global, o->loss_chunk, plan));
    if (!n) return hp_errorf("loss chunk: the model has no cross-entropy over a bias-free linear's logits to fuse");
    note(c, "loss chunk", "%d head%s and loss%s fused over %lld vocabulary columns at a time", n, n == 1 ? "" : "s",
         n == 1 ? "" : "es", (long long)o->loss_chunk);
    return HP_OK;
}

/* autodiff: backward nodes from each operator's rule. */
static hp_status pass_autodiff(hp_compiled *c, const hp_compile_opts *o) {
    if (!o->train) {
        note(c, "autodiff", "skipped (forward only)");
        return HP_OK;
    }
    if (c->global->loss_seed >= 0) {
        note(c, "autodiff", "the graph came differentiated (%d backward nodes)", count_phase(c->global, HP_PHASE_BWD));
        return HP_OK;
    }
    if (c->global->loss < 0) return hp_errorf("compile: a training graph needs a loss (hp_graph.loss)");
    HP_TRY(hp_autodiff(c->global, c->global->loss, &hp_op_add));
    note(c, "autodiff", "%d forward nodes, %d backward nodes", count_phase(c->global, HP_PHASE_FWD),
         count_phase(c->global, HP_PHASE_BWD));
    return HP_OK;
}

/* propagate: the plan's layouts, then every value's by the operators' rules. */
static hp_status pass_propagate(hp_compiled *c, const hp_plan *plan) {
    const hp_graph *g = c->global;
    c->layouts = calloc((size_t)(g->nvals ? g->nvals : 1), sizeof *c->layouts);
    c->fixed = calloc((size_t)(g->nvals ? g->nvals : 1), 1);
    if (!c->layouts || !c->fixed) return hp_errorf("compile: out of memory");
    HP_TRY(hp_layouts_from_plan(c->layouts, c->fixed, plan, g));
    for (int v = 0; v < g->nvals; v++) c->layouts[v] = hp_layout_canonical(&c->layouts[v], &c->lmesh);
    HP_TRY(hp_propagate(&c->prop, g, &c->lmesh, c->layouts, c->fixed));
    char mb[128];
    note(c, "propagate", "mesh %s: %d values laid out, %d operators without a rule",
         hp_mesh_str(mb, sizeof mb, &c->mesh), g->nvals, c->prop.nnotes);
    return HP_OK;
}

/* rows split: a gradient summed from a dense part and rows reduced in two parts. */
static hp_status pass_rows_split(hp_compiled *c, const hp_compile_opts *o) {
    int pp = hp_mesh_axis(&c->mesh, "pp");
    if (!o->train || (pp >= 0 && c->mesh.size[pp] > 1)) return HP_OK; /* a pipeline: the rows stay in the sum */
    int n = 0;
    HP_TRY(hp_pass_rows_split(&n, c->global, &c->prop, &c->mesh, o->deterministic));
    if (n)
        note(c, "rows split", "%d parameter gradient%s reduced in two parts: the dense part where complete, the rows "
             "at the end", n, n == 1 ? "" : "s");
    return HP_OK;
}

/* rows: the split gradients' rows kept, gathered and added after the reduction. */
static hp_status pass_rows(hp_compiled *c, const hp_compile_opts *o) {
    if (!o->train) return HP_OK;
    int n = 0;
    HP_TRY(hp_pass_rows(&n, &c->rg, c->global, &c->prop, &c->mesh, c->fsdp.level ? &c->fsdp : NULL, c->micro,
                        o->grad_accum > 1 ? o->grad_accum : 1));
    if (n) note(c, "rows", "%d parameter%s: rows kept per micro-batch, gathered and added at the end of the backward",
                n, n == 1 ? "" : "s");
    return HP_OK;
}

/* What rank's pipeline stage holds of every global value, as hp_fsdp_prepare takes it: 0 none, 1 the stage's
 * own, 2 read by other stages too (a tied parameter). */
static void stage_held(unsigned char *held, const hp_compiled *c, int rank) {
    for (int v = 0; v < c->global->nvals; v++)
        held[v] = !hp_pp_holds(&c->pp, &c->mesh, v, rank) ? 0 : hp_pp_copies(&c->pp, v) > 1 ? 2 : 1;
}

/* fsdp: units, the store layout, the gradients it reduces itself. */
static hp_status pass_fsdp(hp_compiled *c, const hp_plan *plan, const hp_compile_opts *o) {
    unsigned char *held = NULL; /* a pipeline stage: its parameters, those tied to other stages marked 2 */
    if (c->pp.axis >= 0 && plan->fsdp.level > 0) {
        held = malloc((size_t)c->global->nvals + 1);
        if (!held) return hp_errorf("compile: out of memory");
        stage_held(held, c, c->rank);
    }
    hp_status st = hp_fsdp_prepare(&c->fsdp, c->global, &c->prop, &c->mesh, plan, c->rank, o->supernode_ranks,
                                   o->fsdp_keep_auto, held);
    free(held);
    HP_TRY(st);
    if (!c->fsdp.level) {
        note(c, "fsdp", "off");
        return HP_OK;
    }
    if (c->pp.axis >= 0 && c->fsdp.transient)
        return hp_errorf("%s: pipeline stages with transiently gathered units (level 3 over a shard group that spans "
                         "supernodes) are not built: use reshard=off or level 2",
                         plan->fsdp.where ? plan->fsdp.where : "fsdp");
    if (c->pp.axis >= 0 && c->fsdp.level == 1 && c->pp.kind == HP_PP_ZBH1)
        return hp_errorf("%s: level 1 reduces each unit's gradient in place, but a zero-bubble schedule has several "
                         "micro-batches' gradients in flight: use level 2 or 3 with ZB-H1",
                         plan->fsdp.where ? plan->fsdp.where : "fsdp");
    c->state = (hp_rank_state_hook){hp_fsdp_rt_attach, hp_fsdp_rt_detach, &c->fsdp};
    size_t managed = 0, big = hp_fsdp_largest_unit(&c->fsdp);
    for (int u = 0; u < c->fsdp.nunits; u++) managed += c->fsdp.units[u].size;
    note(c, "fsdp", "level %d over %s (%d members%s): %d units, %.2f MB managed, largest unit %.2f MB, shard %.2f MB",
         c->fsdp.level, c->mesh.name[c->fsdp.shard_axis], c->fsdp.members,
         c->fsdp.replicas > 1 ? ", HSDP replicas" : "", c->fsdp.nunits, (double)managed * 4e-6, (double)big * 4e-6,
         (double)managed * 4e-6 / c->fsdp.members);
    return HP_OK;
}

/* fsdp nodes: every unit's gather and reduction. */
static hp_status pass_fsdp_nodes(hp_compiled *c) {
    if (!c->fsdp.level) return HP_OK;
    int n0 = c->rg.g->nnodes;
    HP_TRY(hp_fsdp_emit(&c->fsdp, &c->rg));
    int nkept = 0;
    double kept = 0;
    for (int u = 0; u < c->fsdp.nunits; u++)
        if (c->fsdp.units[u].keep) nkept++, kept += (double)c->fsdp.units[u].size * 4e-6;
    if (c->fsdp.transient)
        note(c, "fsdp nodes", "%d gather and reduction nodes, prefetch %d; units gathered into %d transient slots, "
             "%.2f MB; %d kept from the forward for the backward (%.2f MB, keep_bytes %.2f MB)",
             c->rg.g->nnodes - n0, c->fsdp.prefetch, c->fsdp.nslots, (double)c->fsdp.slot_floats * 4e-6, nkept, kept,
             (double)c->fsdp.keep_bytes * 1e-6);
    else
        note(c, "fsdp nodes", "%d gather and reduction nodes, prefetch %d", c->rg.g->nnodes - n0, c->fsdp.prefetch);
    return HP_OK;
}

/* reduce dtype: the parameter gradients' all-reduces in bf16. */
static hp_status pass_reduce_dtype(hp_compiled *c, const hp_compile_opts *o) {
    if (o->dp_reduce == HP_F32) return HP_OK;
    hp_reduce_dtype_result r;
    HP_TRY(hp_pass_reduce_dtype(&r, &c->rg, o->dp_reduce));
    note(c, "dp reduce", "%s: %d gradient all-reduces narrowed (%.0f -> %.0f bytes per step)",
         hp_dtype_name(o->dp_reduce), r.nreductions, r.bytes_before, r.bytes_after);
    return HP_OK;
}

/* accumulate: gradient accumulators over micro-batches. */
static hp_status pass_accumulate(hp_compiled *c, const hp_compile_opts *o) {
    c->micro = -1;
    if (!o->train || o->grad_accum <= 1) return HP_OK;
    HP_TRY(hp_pass_accumulate(&c->micro, &c->rg, c->fsdp.level ? &c->fsdp : NULL, o->grad_accum, o->accum_comm_last,
                                 o->deterministic));
    note(c, "accumulate", "%d micro-batches per step: an accumulator per gradient%s", o->grad_accum,
         !c->fsdp.level ? "" : o->accum_comm_last ? " (FSDP: per whole unit, reduced at the last micro-batch)"
                                                  : " (FSDP: per reduced shard)");
    return HP_OK;
}

/* pipeline: which stage runs which node. */
static hp_status pass_pipeline(hp_compiled *c, const hp_compile_opts *o) {
    HP_TRY(hp_pp_plan_build(&c->pp, c->global, &c->mesh, c->rank, &o->pp, o->train ? o->grad_accum : 1));
    if (c->pp.axis < 0) return HP_OK;
    if (!o->train) return hp_errorf("pipeline: a pipelined plan compiles for training (a forward-only program runs "
                                    "every stage on one rank)");
    if (o->optim && o->optim->kind == HP_OPT_MUON)
        return hp_errorf("pipeline: Muon over pipeline stages is not built yet (use --optimizer adamw)");
    note(c, "pipeline", "%d stages%s over axis %s (%s split over %d units, max/mean %.2f); this rank: stage %d; %s, %d "
         "micro-batches", c->pp.stages, c->pp.chunks > 1 ? (c->pp.chunks == 2 ? " x 2 chunks" : " x chunks") : "",
         c->mesh.name[c->pp.axis], o->pp.split == HP_PP_SPLIT_EVEN ? "even"
         : o->pp.split == HP_PP_SPLIT_EXPLICIT ? "explicit" : "balanced", c->pp.nunits, c->pp.imbalance,
         c->pp.stage, hp_pp_kind_name(c->pp.kind), c->pp.micro);
    return HP_OK;
}

/* stage: the rank's graph cut to its stage. */
static hp_status pass_stage(hp_compiled *c) {
    if (c->pp.axis < 0) return HP_OK;
    HP_TRY(hp_pass_pp_stage(&c->pp, &c->rg, c->global));
    note(c, "stage", "stage %d: %d nodes; %d sends, %d receives per micro-batch (%.0f + %.0f bytes)", c->pp.stage,
         c->rg.g->nnodes, c->pp.nsend, c->pp.nrecv, c->pp.send_bytes, c->pp.recv_bytes);
    return HP_OK;
}

/* shared: tied parameters' gradients summed across their stages. */
static hp_status pass_shared(hp_compiled *c) {
    if (c->pp.axis < 0) return HP_OK;
    HP_TRY(hp_pass_pp_shared(&c->pp, &c->rg, c->global, &c->fsdp));
    if (c->pp.nshared)
        note(c, "shared", "%d parameter%s read on several stages: gradient parts exchanged and summed in stage order",
             c->pp.nshared, c->pp.nshared == 1 ? "" : "s");
    return HP_OK;
}

/* lower: the rank's local graph. */
static hp_status pass_lower(hp_compiled *c) {
    HP_TRY(hp_lower_rank(&c->rg, c->global, &c->prop, &c->lmesh, c->lrank, c->fsdp.level ? c->fsdp.grad_layout : NULL));
    c->rg.ctx.rank = c->rank; /* its groups are the real rank's (on every axis but "pp" the same coordinates) */
    c->rg.ctx.mesh = &c->mesh;
    note(c, "lower", "rank %d: %d local nodes, %d + %d redistributions (%.0f + %.0f bytes per step)", c->rank,
         c->rg.g->nnodes, c->rg.nredist[0], c->rg.nredist[1], c->rg.bytes[0], c->rg.bytes[1]);
    return HP_OK;
}

/* gemm policy: how the fp32 linears pick their GEMMs. */
static hp_status pass_gemm_policy(hp_compiled *c, const hp_compile_opts *o) {
    int nset = 0;
    HP_TRY(hp_pass_gemm_policy(&nset, &c->rg, o->fp32_gemm));
    if (nset)
        note(c, "gemm policy", "%d fp32 linear nodes on %s", nset,
             o->fp32_gemm == 1 ? "oneDNN" : "the faster of OpenBLAS and oneDNN per product, measured at start");
    return HP_OK;
}

/* remat: blocks' forward values recomputed in the backward. */
static hp_status pass_remat(hp_compiled *c, const hp_compile_opts *o) {
    if (!o->train || o->remat.policy == HP_REMAT_NONE) return HP_OK;
    hp_remat_result r;
    HP_TRY(hp_pass_remat(&r, &c->rg, c->global, &o->remat));
    note(c, "remat", "%s: %d blocks, %d forward nodes recomputed in the backward (%.2f MB, %.3f GFLOP per micro-batch)",
         hp_remat_name(o->remat.policy), r.nblocks, r.nnodes, r.bytes / 1e6, r.flops / 1e9);
    return HP_OK;
}

/* optimizer: clipping and the update nodes. */
static hp_status pass_optimizer(hp_compiled *c, const hp_compile_opts *o) {
    memset(&c->optim, -1, sizeof c->optim);
    if (!o->train || !o->optim) {
        note(c, "optimizer", "skipped (no optimizer)");
        return HP_OK;
    }
    HP_TRY(hp_pass_optimizer(&c->optim, &c->rg, c->global, &c->prop, &c->mesh, o->optim, o->max_norm,
                             c->fsdp.level ? &c->fsdp : NULL, &c->pp));
    c->has_optim = 1;
    note(c, "optimizer", "%s: %d adamw tensors, %d muon shape groups, %d state tensors; clip %g%s",
         hp_opt_kind_name(o->optim->kind), c->optim.nadamw, c->optim.nmuon_groups, c->optim.nstates,
         (double)o->max_norm, hp_mesh_size(&c->mesh) > 1 ? "; norm summed over ranks" : "");
    return HP_OK;
}

/* wgrad first: a linear's weight gradient before its input gradient where a reduction starts on it. */
static hp_status pass_wgrad_first(hp_compiled *c, const hp_compile_opts *o) {
    if (!o->train) return HP_OK;
    int n = 0;
    HP_TRY(hp_pass_wgrad_first(&n, &c->rg, o->schedule.overlap));
    if (n)
        note(c, "wgrad first", "%d linear backward%s split: the input gradient after the weight gradient's "
             "reduction starts", n, n == 1 ? "" : "s");
    return HP_OK;
}

/* split backward: linear backwards in input and weight parts (zero-bubble schedules). */
static hp_status pass_split_backward(hp_compiled *c) {
    int n = 0;
    HP_TRY(hp_pass_pp_split_backward(&n, &c->pp, &c->rg));
    if (n) note(c, "split bwd", "%d linear backwards in input- and weight-gradient nodes (the Ws fill the bubbles)", n);
    return HP_OK;
}

/* grad in place: a tied parameter's first gradient part written in the gradient's own storage. */
static hp_status pass_grad_inplace(hp_compiled *c, const hp_compile_opts *o) {
    if (!o->train) return HP_OK;
    int n = 0;
    HP_TRY(hp_pass_grad_inplace(&n, &c->rg));
    if (n) note(c, "grad in place", "%d tied gradient%s: the first part written where the sum goes", n, n == 1 ? "" : "s");
    return HP_OK;
}

/* ep overlap: the expert-parallel exchanges started before, waited after the compute that does not need them. */
static hp_status pass_ep_overlap(hp_compiled *c, const hp_compile_opts *o) {
    int always = o->schedule.ep_overlap == HP_EP_OVERLAP_ALWAYS;
    if (o->schedule.ep_overlap == HP_EP_OVERLAP_OFF || (!always && o->supernode_ranks <= 0)) return HP_OK;
    int n = 0, moved = 0;
    HP_TRY(hp_pass_ep_overlap(&n, &moved, &c->rg, always ? 0 : o->supernode_ranks));
    if (n)
        note(c, "ep overlap", "%d expert exchange%s split into start and wait around %d independent nodes", n,
             n == 1 ? "" : "s", moved);
    return HP_OK;
}

/* schedule: the step order. */
static hp_status pass_schedule(hp_compiled *c, const hp_compile_opts *o) {
    hp_schedule_opts so = o->schedule;
    so.micro = o->train && o->grad_accum > 1 ? o->grad_accum : 1;
    so.tree = o->deterministic;
    if (c->pp.axis >= 0) {
        const hp_pp_sched *t = &c->pp.sched;
        so.stage_act = t->act + t->at[c->pp.stage];
        so.nstage_act = t->at[c->pp.stage + 1] - t->at[c->pp.stage];
        so.chunks = c->pp.chunks;
    }
    HP_TRY(hp_pass_schedule(&c->sched, &c->rg, &so));
    note(c, "schedule", "%d steps (%d forward, %d backward, %d optimizer); %d gradient reductions overlapped",
         c->sched.n, c->sched.begin[1] - c->sched.begin[0], c->sched.begin[2] - c->sched.begin[1],
         c->sched.begin[3] - c->sched.begin[2], c->sched.nsplit);
    return HP_OK;
}

/* memory: arena offsets by liveness over the step order. */
static hp_status pass_memory(hp_compiled *c) {
    int needs = 0;
    HP_TRY(hp_action_list_needs_slots(&needs, &c->sched.step));
    if (needs) { /* the program is planned for the step's actions (runtime/dist): an activation slot per
                  * micro-batch in flight; this is that plan */
        hp_action_expansion ex;
        HP_TRY(hp_action_expand(&ex, c->rg.g, c->sched.order, c->sched.n, &c->sched.step));
        hp_status st = hp_memplan_build_slots(&c->mem, c->rg.g, ex.nodes, ex.tenure, ex.n, ex.slot_of, ex.ntenures,
                                              ex.nslots);
        int inflight = ex.nslots;
        hp_action_expansion_free(&ex);
        HP_TRY(st);
        note(c, "memory", "arena %.1f MB, %d micro-batches' activations in flight (one buffer per value: %.1f MB)",
             (double)c->mem.arena_bytes / 1e6, inflight, (double)c->mem.naive_bytes / 1e6);
        return HP_OK;
    }
    HP_TRY(hp_memplan_build(&c->mem, c->rg.g, c->sched.order, c->sched.n));
    note(c, "memory", "arena %.1f MB (one buffer per value: %.1f MB)", (double)c->mem.arena_bytes / 1e6,
         (double)c->mem.naive_bytes / 1e6);
    return HP_OK;
}

/* holdings: the table of the pieces this rank holds (no note: the reported passes stay the ones that
 * transform the program). */
static hp_status pass_holdings(hp_compiled *c, const hp_plan *plan, const hp_compile_opts *o) {
    if (!c->fsdp.level || c->pp.axis < 0)
        return hp_holdings_build(&c->hold, c->global, &c->prop, &c->mesh, &c->rg, &c->fsdp, NULL, c->rank, &c->pp);
    /* a pipeline under FSDP: every stage lays out its own units, and the table gives every rank's pieces */
    int nv = c->global->nvals;
    hp_fsdp_place *place = calloc((size_t)nv + 1, sizeof *place);
    unsigned char *held = malloc((size_t)nv + 1);
    hp_status st = place && held ? HP_OK : hp_errorf("compile: out of memory");
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, &c->mesh, c->rank);
    for (int s = 0; s < c->pp.stages && !st; s++) {
        if (s == c->pp.stage) {
            hp_fsdp_places(place, &c->fsdp);
            continue;
        }
        coord[c->pp.axis] = s;
        int r = hp_mesh_rank(&c->mesh, coord);
        stage_held(held, c, r);
        hp_fsdp_plan other;
        st = hp_fsdp_prepare(&other, c->global, &c->prop, &c->mesh, plan, r, o->supernode_ranks, o->fsdp_keep_auto,
                             held);
        if (st) break;
        hp_fsdp_places(place, &other);
        hp_fsdp_plan_free(&other);
    }
    if (!st) st = hp_holdings_build(&c->hold, c->global, &c->prop, &c->mesh, &c->rg, &c->fsdp, place, c->rank, &c->pp);
    free(place), free(held);
    return st;
}

hp_status hp_compile(hp_compiled *out, const hp_graph *model, const hp_plan *plan, int rank,
                     const hp_compile_opts *o) {
    memset(out, 0, sizeof *out);
    out->rank = rank;
    out->supernode_ranks = o->supernode_ranks > 0 ? o->supernode_ranks : 0;
    out->micro = -1;
    out->pp.axis = out->pp.loss_rank = -1;
    out->rg.loss = -1;
    hp_plan one;
    int own_plan = 0;
    if (!plan) {
        hp_mesh m;
        HP_TRY(hp_mesh_parse(&m, "dp=1"));
        hp_plan_init(&one, &m);
        plan = &one;
        own_plan = 1;
    }
    out->mesh = out->lmesh = plan->mesh;
    hp_status st = hp_mesh_size(&out->mesh) > rank && rank >= 0
                       ? HP_OK
                       : hp_errorf("compile: rank %d is not in the mesh (%d ranks)", rank, hp_mesh_size(&out->mesh));
    out->lrank = rank;
    int ppa = hp_mesh_axis(&out->mesh, "pp");
    if (!st && ppa >= 0 && out->mesh.size[ppa] > 1) { /* a pipeline: nothing is laid out along its axis */
        int coord[HP_MESH_MAX_DIMS];
        hp_mesh_coords(coord, &out->mesh, rank);
        coord[ppa] = 0;
        out->lmesh.size[ppa] = 1;
        out->lrank = hp_mesh_rank(&out->lmesh, coord);
    }
    if (!st) st = hp_graph_clone(&out->global, model);
    if (!st) st = pass_loss_chunk(out, o, plan);
    if (!st) st = pass_precision(out, o, plan);
    if (!st) st = pass_moe_chunk(out, o);
    if (!st) st = pass_ep(out, plan, o);
    if (!st) st = pass_autodiff(out, o);
    if (!st) st = pass_propagate(out, plan);
    if (!st) st = pass_rows_split(out, o);
    if (!st) st = pass_pipeline(out, o);
    if (!st) st = pass_fsdp(out, plan, o);
    if (!st) st = pass_lower(out);
    if (!st) st = pass_stage(out);
    if (!st) st = pass_gemm_policy(out, o);
    if (!st) st = pass_remat(out, o);
    if (!st) out->rg.ctx.tree = o->deterministic;
    if (!st) st = pass_fsdp_nodes(out);
    if (!st) st = pass_reduce_dtype(out, o);
    if (!st) st = pass_accumulate(out, o);
    if (!st) st = pass_shared(out);
    if (!st) st = pass_rows(out, o);
    if (!st) st = pass_optimizer(out, o);
    if (!st) st = pass_wgrad_first(out, o);
    if (!st) st = pass_split_backward(out);
    if (!st) st = pass_grad_inplace(out, o);
    if (!st) st = pass_ep_overlap(out, o);
    if (!st) st = pass_schedule(out, o);
    if (!st) st = pass_memory(out);
    if (!st) st = pass_holdings(out, plan, o);
    if (own_plan) hp_plan_free(&one);
    if (st) hp_compiled_free(out);
    return st;
}

void hp_compiled_free(hp_compiled *c) {
    hp_holdings_free(&c->hold);
    hp_pp_plan_free(&c->pp);
    hp_memplan_free(&c->mem);
    hp_schedule_free(&c->sched);
    hp_rank_graph_free(&c->rg);
    hp_fsdp_plan_free(&c->fsdp);
    if (c->global) hp_propagation_free(&c->prop);
    free(c->layouts);
    free(c->fixed);
    hp_graph_destroy(c->global);
    memset(c, 0, sizeof *c);
}
