/* api/bench_muon: hp_bench_muon_row — GPT-2's training step with Muon under
 * one strategy of distributed Muon (or AdamW), on bench_fsdp's plans and
 * emulated supernodes; the optimizer phase split by node. */
#include <string.h>

#include "api/api.h"
#include "parallel/muon_plan.h"

hp_status hp_bench_muon_row(hp_bench_muon_result *res, const hp_bench_muon_config *cfg) {
    memset(res, 0, sizeof *res);
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    if (cfg->muon_dist) {
        hp_muon_dist d;
        HP_TRY(hp_muon_dist_parse(&d, cfg->muon_dist));
        oc.kind = HP_OPT_MUON;
        oc.muon_dist = (int)d;
    }
    oc.muon_waves = cfg->waves;
    hp_api_bench_out o;
    HP_TRY(hp_api_bench_fsdp(&o, &cfg->run, &oc));
    *res = (hp_bench_muon_result){.step_ms = o.step_s * 1e3,
                                  .compute_ms = o.compute_s * 1e3,
                                  .exposed_comm_ms = o.wait_s * 1e3,
                                  .optimizer_ms = o.optimizer_s * 1e3,
                                  .gather_ms = o.gather_s * 1e3,
                                  .ns_ms = o.ns_s * 1e3,
                                  .return_ms = o.return_s * 1e3,
                                  .update_ms = o.update_s * 1e3,
                                  .rest_ms = o.opt_rest_s * 1e3,
                                  .opt_comm_ms = o.opt_comm_s * 1e3,
                                  .memory_mb = o.memory_bytes / 1e6};
    return HP_OK;
}
