/* report/pages: hyperpar's reports as one self-contained HTML page each —
 * inline SVG and CSS, a few lines of inline JavaScript (the log-scale
 * switches; errors written into the page), nothing fetched from anywhere.
 * A run's page (run directories read by report/rundir): its curves
 * (loss and validation loss, learning rate, gradient norm, throughput, MFU
 * and the step-time split when recorded), memory per rank, the per-rank
 * timeline of a traced step range with the share of communication hidden
 * behind compute, the resolved settings, the plan's layouts and the
 * machine; with more runs, their curves overlaid and compared. A benchmark
 * page draws the JSON rows of `hyperpar bench`, `bench comm` and `bench
 * parallel` (and any array of flat objects) as charts. */
#ifndef HP_REPORT_PAGES_H
#define HP_REPORT_PAGES_H

#include <stddef.h>

#include "report/rundir.h"
#include "report/sbuf.h"

typedef struct {
    int width;              /* plot width in CSS pixels (points decimated to it); 0: 760 */
    int trace_from, trace_to; /* traced steps in the timeline, 1-based, inclusive; 0: all */
} hp_rep_opts;

#define HP_REP_MAX_CMP 16

typedef struct {
    char name[256]; /* the other run */
    long n;         /* common steps */
    double pearson, max_abs_delta; /* of the training loss over them (pearson NaN: undefined) */
} hp_rep_cmp;

typedef struct {
    long steps;          /* training-loss points of the first run */
    int truncated;       /* its metrics' last line was cut short */
    int finished;        /* run.json says done */
    int ncmp;
    hp_rep_cmp cmp[HP_REP_MAX_CMP]; /* runs[1..] against runs[0] */
    int ntraces;         /* ranks traced */
    double hidden_share; /* communication hidden behind compute over the shown steps (-1: no trace) */
    int simulated;       /* runs[0] is a simulated step (hyperpar simulate --timeline) */
    double predicted_ms; /* its predicted step */
} hp_rep_summary;

/* The page of runs[0] (runs[1..]: compared with it). */
hp_status hp_rep_run_page(char **html, size_t *len, hp_rep_summary *sum, const hp_rep_run *runs, int nruns,
                          const hp_rep_opts *o);
/* One page for benchmark JSON files (each an array of objects). */
hp_status hp_rep_bench_page(char **html, size_t *len, const char *const *files, int nfiles, const hp_rep_opts *o);

/* The page's head (title, CSS, the error catcher) and end (scripts). */
void hp_rep_page_begin(hp_sbuf *b, const char *title);
void hp_rep_page_end(hp_sbuf *b);

#endif
