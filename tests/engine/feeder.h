/* tests/engine/feeder: the engine tests' input feeder for a step run as a
 * list of actions (hp_step_io.feed, hp_program_run_actions): micro-batch m's
 * tokens and targets copied into the program's inputs, the micro-batch input
 * (when there is one) set to (m, count), and the micro-batches fed recorded
 * in order. */
#ifndef HP_TEST_FEEDER_H
#define HP_TEST_FEEDER_H

#include <string.h>

#include "runtime/program.h"

typedef struct {
    hp_program *p;
    int tokens, targets, micro; /* the program's values (micro -1: none) */
    const int32_t *tok, *tgt;   /* [count][per] each */
    int per, count;             /* tokens per micro-batch (B x T), micro-batches */
    int fed[8], nfed;           /* the micro-batches fed, in order (the first 8) */
} feeder;

/* hp_step_io.feed: c_ is a feeder. */
static inline hp_status feeder_feed(void *c_, int m) {
    feeder *f = c_;
    memcpy(hp_program_data(f->p, f->tokens), f->tok + m * f->per, sizeof(int32_t) * (size_t)f->per);
    memcpy(hp_program_data(f->p, f->targets), f->tgt + m * f->per, sizeof(int32_t) * (size_t)f->per);
    if (f->micro >= 0) {
        int32_t *mi = hp_program_data(f->p, f->micro);
        mi[0] = m, mi[1] = f->count;
    }
    if (f->nfed < 8) f->fed[f->nfed++] = m;
    return HP_OK;
}

#endif
