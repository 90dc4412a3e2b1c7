/* api/plan_report: between the files of hp_plan_report — plan_report.c
 * checks the config, compiles each reported rank and owns the report;
 * plan_report_gather.c fills one rank's report from its compile,
 * plan_report_fsdp.c its FSDP units; plan_fit.c sums the programs of a
 * process's ranks against the memory available. */
#ifndef HP_API_PLAN_REPORT_H
#define HP_API_PLAN_REPORT_H

#include <hyperpar/hyperpar.h>

#include "models/gpt2_config.h"
#include "parallel/compile.h"

/* Fills r from the rank's compile cc: the values listed[nlisted] of the
 * global graph with their layouts and local shapes, the collectives and
 * totals, and the memory of its program (threads: the rank's, for the
 * operators' scratch). r->rank is set here; on error what was allocated is
 * left for hp_plan_rank_report_free. */
hp_status hp_plan_gather_rank(hp_plan_rank_report *r, const hp_compiled *cc, const int *listed, int nlisted,
                              int threads);
void hp_plan_rank_report_free(hp_plan_rank_report *r);
/* What compiling a report's config needs: the model's shape, the
 * optimizer, the compile options (co.optim points at oc: keep the struct in
 * place; co.supernode_ranks from the config's processes). Checks the config
 * as hp_plan_report_create does. */
typedef struct {
    hp_gpt2_config mc;
    hp_optim_config oc;
    hp_compile_opts co;
} hp_api_plan_setup;
hp_status hp_api_plan_setup_init(hp_api_plan_setup *s, const hp_plan_report_config *c);

/* The model graph c describes (GPT-2 or c->model_kind's family, of s's shape, for c's batch and seq). */
hp_status hp_api_plan_model(hp_graph **out, const hp_api_plan_setup *s, const hp_plan_report_config *c);

/* b bytes with a decimal unit: "512 B", "1.5 MB". */
char *hp_api_bytes_str(char *buf, size_t n, double b);

/* The memory of the rank's program (as hp_plan_gather_rank gives it): autopar/memory's model, its
 * communication buffers counted in the scratch. */
void hp_plan_gather_memory(hp_plan_memory *m, const hp_compiled *cc, int threads);

/* api/plan_report_fsdp: the rank's FSDP units and shards (f->units
 * malloc'd; level 0 without FSDP), and the parameters' parts of them (t:
 * the listed tensors; their fsdp_unit -1 unless managed, -2 when another pipeline stage holds it). */
hp_status hp_plan_gather_fsdp(hp_plan_fsdp *f, hp_plan_tensor *t, const hp_compiled *cc, const int *listed,
                              int nlisted);
/* What the compile does not keep, from the plan (reshard), and the summary. */
void hp_api_fsdp_finish(hp_plan_fsdp *f, const hp_plan *plan);

/* api/plan_fit: hp_trainer_config.before_alloc of hp_train (ctx: the
 * hp_train): the programs of the process's ranks against the memory
 * available, an error saying what would fit when they do not. An FSDP plan
 * with keep_bytes=auto first gets the most bytes of units kept from the
 * forward for the backward that fit the budget (--memory, or 90% of the
 * memory available), in co->fsdp_keep_auto. */
hp_status hp_api_train_fit(void *ctx, hp_comm_world *world, hp_compile_opts *co, int threads_per_rank);
/* The bytes the programs of ranks first..first+count-1 of model g under plan
 * need (compiled with c, nothing allocated, counted as the plan report
 * counts them); *transient: whether FSDP gathers into transient slots there
 * (where keep_bytes matters). */
hp_status hp_api_hosted_need(double *need, int *transient, const hp_graph *g, const hp_plan *plan,
                             const hp_compile_opts *c, int first, int count, int threads_per_rank);
/* keep_bytes=auto: the most bytes of units kept from the forward for the
 * backward (co->fsdp_keep_auto tried by bisection over the bytes, to 1/256
 * of the parameters' or 64 KiB)
 * whose programs fit in budget bytes; 0 when none fit or no unit is gathered
 * twice; every parameter's bytes when all fit. */
hp_status hp_api_fsdp_keep_auto(int64_t *out, const hp_graph *g, const hp_plan *plan, const hp_compile_opts *co,
                                int first, int count, int threads_per_rank, double budget);

/* The ranks of rank's group along a mesh axis: "tp[0,1]". */
void hp_plan_group_str(char *buf, size_t n, const hp_mesh *m, int axis, int rank);

#endif
