/* runtime/validate_muon: validation mode's check of Muon's updates. Before
 * the validated step's optimizer phase, hp_vmuon_before reads every Muon
 * matrix's momentum whole (runtime/dist_weights, by its checkpoint name);
 * after the phase, hp_vmuon_check reads the updated parameter whole and
 * compares it with one rank's update of the same matrix: the single-device
 * kernels (optim/muon's momentum and apply, optim/newton_schulz on the whole
 * matrix, a stack [..., rows, cols] as a batch) run on the reference program's gradient
 * (runtime/validate), clipped by the reference's global norm, from the
 * parameters the reference was given. Each matrix's error is max|a - b| over
 * the size of one rank's update (max|b - w0 (1 - lr wd)|); one above
 * HP_VMUON_TOL stops the run with one line naming the matrix — a piece
 * orthogonalised alone instead of the whole matrix differs by about the
 * update itself. Routing as the optimizer's (optim/route). Slow on purpose:
 * every matrix's Newton-Schulz runs again on this process. */
#ifndef HP_RUNTIME_VALIDATE_MUON_H
#define HP_RUNTIME_VALIDATE_MUON_H

#include "optim/optimizer.h"
#include "runtime/dist_ckpt.h"
#include "runtime/validate.h"

#define HP_VMUON_TOL 1e-3

typedef struct hp_vmuon hp_vmuon;

/* After hp_validate_step, before the optimizer phase: NULL in *out when no
 * parameter is Muon's. threads: the pool of the reference update (>= 1). */
hp_status hp_vmuon_before(hp_vmuon **out, hp_dist *d, const hp_dist_ckpt *ck, const hp_validator *v,
                          const hp_optim_config *oc, float max_norm, int threads);
/* After the optimizer phase ran with Muon's learning rate muon_lr: rep's
 * updates table, and an error naming the first matrix beyond HP_VMUON_TOL. */
hp_status hp_vmuon_check(hp_vmuon *m, hp_validate_report *rep, float muon_lr);
void hp_vmuon_free(hp_vmuon *m);

#endif
