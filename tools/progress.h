/* tools/progress: the live one-line progress display on a terminal (step/total,
 * loss, tok/s, ETA, redrawn in place) and plain lines otherwise: every N steps
 * (--log-every), and always under a launcher (mpirun's pseudo-terminal leads
 * to a log, not a screen). */
#ifndef HP_TOOLS_PROGRESS_H
#define HP_TOOLS_PROGRESS_H

#include <stdio.h>

#include "hyperpar/hyperpar.h"

typedef struct {
    FILE *out;
    int tty;
    long total;
    int every; /* plain mode: print every N steps (and the last) */
    int line_open;
} hp_progress;

void hp_progress_init(hp_progress *p, FILE *out, long total, int every);
/* One step done; eta_s < 0 when unknown. */
void hp_progress_step(hp_progress *p, long step, float loss, double tok_s, double step_ms, float lr, double eta_s);
/* A message on its own line (closes the live line first). */
void hp_progress_note(hp_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hp_progress_done(hp_progress *p);


#endif
