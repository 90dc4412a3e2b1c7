/* io/ckpt_lineage: which run wrote a checkpoint, and the runs before it.
 * Every run has an id; a resumed run's checkpoints carry the chain of runs it
 * continues, each with the step it was resumed at. A checkpoint directory may
 * hold checkpoints of several lineages (a run resumed from an earlier step
 * with --overwrite); retention and the fallback without 'latest' consider
 * only one lineage: the current run's, or the most recently saved one's.
 *
 * In state.json: "run_id": "<hex>", "saved_ns": <unix ns>, "lineage":
 * [{"run": "<hex>", "until": <step>}, ...] (oldest first). A checkpoint
 * written before lineages existed has none: its run id is "". */
#ifndef HP_IO_CKPT_LINEAGE_H
#define HP_IO_CKPT_LINEAGE_H

#include <stdint.h>

#include "core/status.h"
#include "io/json.h"

#define HP_LINEAGE_ID 33  /* 32 hex digits and a NUL */
#define HP_LINEAGE_MAX 64 /* ancestors kept; older ones drop off (their checkpoints count as another lineage's) */

typedef struct {
    char run[HP_LINEAGE_ID];
    int64_t until; /* the step the next run resumed at: this run's checkpoints up to it belong to the lineage */
} hp_lineage_link;

typedef struct {
    char run[HP_LINEAGE_ID]; /* this run's id ("" : a checkpoint from before lineages) */
    int n;                   /* ancestors */
    hp_lineage_link links[HP_LINEAGE_MAX];
} hp_ckpt_lineage;

/* A fresh id (32 hex digits from the system's random source). */
hp_status hp_ckpt_lineage_new_id(char id[HP_LINEAGE_ID]);
/* The lineage of a run with id `run` resumed at `step` from a checkpoint of
 * lineage `parent` (NULL: a fresh run). */
void hp_ckpt_lineage_child(hp_ckpt_lineage *out, const hp_ckpt_lineage *parent, int64_t step, const char *run);
/* Reads "run_id" and "lineage" of a parsed state.json (absent: run "" and no
 * ancestors). Errors name the key. */
hp_status hp_ckpt_lineage_from_json(hp_ckpt_lineage *out, const hp_json *state);
/* Writes the keys "run_id", "saved_ns" (now) and "lineage" into an open object. */
void hp_ckpt_lineage_to_json(hp_jw *w, const hp_ckpt_lineage *l);
/* 1 when a checkpoint at `step` written by run `run` belongs to lineage l. */
int hp_ckpt_lineage_has(const hp_ckpt_lineage *l, const char *run, int64_t step);

/* What a complete checkpoint directory's state.json says about it. */
typedef struct {
    int64_t step;
    int64_t saved_ns; /* 0: not recorded */
    hp_ckpt_lineage lineage;
} hp_ckpt_stamp;
/* Reads dir/state.json (a regular file, bounded). */
hp_status hp_ckpt_stamp_read(hp_ckpt_stamp *out, const char *dir);

#endif
