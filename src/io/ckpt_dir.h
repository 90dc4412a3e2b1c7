/* io/ckpt_dir: the directory side of checkpoints, for any checkpoint format.
 * A run's checkpoint directory (a "run dir", e.g. --ckpt-dir) holds
 *   step_NNNNNN/   one checkpoint each (what is inside is the format's business)
 *   latest         one line naming the newest committed checkpoint
 *   lock           the pid of the run writing here (while it runs)
 *
 * Saving (the rename dance): a format writes its files into a stage,
 * dir.tmp-XXXXXX, with HP_CKPT_COMMIT_FILE (state.json) written last; commit
 * fsyncs the stage, moves an existing dir aside to dir.old-XXXXXX, renames the
 * stage to dir, fsyncs the parent, then deletes the old one. A save is
 * committed when `latest` (written atomically) names it. Retention deletes
 * through dir.del-XXXXXX (renamed first, then removed), so a checkpoint under
 * its final name is never partly written or partly deleted.
 *
 * After a crash at any of these steps, recovery (under the lock) puts the
 * directory back in order: a dir.old-* whose dir is missing (the crash fell
 * between the two renames) is moved back; other .old-*, every .tmp-* and
 * .del-* are removed; a missing or dangling `latest` is pointed at the newest
 * complete step_*. Reading (hp_ckpt_find) never changes anything and finds the
 * same checkpoint recovery would keep. */
#ifndef HP_IO_CKPT_DIR_H
#define HP_IO_CKPT_DIR_H

#include "core/status.h"
#include "io/ckpt_lineage.h"

#define HP_CKPT_LATEST "latest"
#define HP_CKPT_LOCK "lock"
/* The file every format writes last into its stage: its presence marks a
 * complete checkpoint directory. */
#define HP_CKPT_COMMIT_FILE "state.json"

/* ---- saving ---- */

typedef struct {
    char *dir;    /* the final name (trailing slashes trimmed) */
    char *tmp;    /* dir.tmp-XXXXXX: write the checkpoint's files here */
    char *parent; /* dir's parent (the run dir) */
} hp_ckpt_stage;

/* Creates dir's parent when missing and an empty stage next to dir. */
hp_status hp_ckpt_stage_begin(hp_ckpt_stage *s, const char *dir);
/* Publishes the stage as dir (replacing an older dir of that name) durably;
 * on error the stage is removed and an older dir is left in place. Releases s. */
hp_status hp_ckpt_stage_commit(hp_ckpt_stage *s);
/* Removes the stage; releases s. */
void hp_ckpt_stage_abort(hp_ckpt_stage *s);

/* ---- latest ---- */

/* Writes <parent of dir>/latest naming dir's last path component. */
hp_status hp_ckpt_set_latest(const char *dir);
/* Reads <run_dir>/latest strictly; *dir (malloc'd) is run_dir/<name>. Errors
 * if the file is missing, malformed, or names a missing directory. */
hp_status hp_ckpt_get_latest(char **dir, const char *run_dir);
/* The checkpoint a resume of run_dir loads (*dir malloc'd): the one `latest`
 * names when it is complete; when `latest` is missing or dangling, the newest
 * complete step_* (by step number), counting a step_N.old-* whose step_N is
 * missing (a crash between the renames of a save: recovery moves it back).
 * Errors when `latest` is malformed or nothing complete is there. */
hp_status hp_ckpt_find(char **dir, const char *run_dir);
/* 1 when dir is a directory holding HP_CKPT_COMMIT_FILE. */
int hp_ckpt_dir_complete(const char *dir);

/* ---- hygiene ---- */

typedef struct {
    int removed;     /* .tmp-*, .del-* and superseded .old-* entries removed */
    int rolled_back; /* .old-* directories moved back to their missing name */
    int latest_set;  /* 1: `latest` was missing or dangling and now names latest_name */
    char latest_name[256];
} hp_ckpt_recovery;

/* Recovers run_dir after a crashed save (see the top); a missing run_dir is
 * fine (nothing to do). Call it holding the run dir's lock. */
hp_status hp_ckpt_recover(hp_ckpt_recovery *r, const char *run_dir);
/* Keeps the keep_last newest complete step_* of lineage lin in run_dir (by
 * step number) and whatever `latest` names; deletes the lineage's others
 * (*removed: how many). Checkpoints of other lineages are neither counted nor
 * deleted (lin NULL: every checkpoint is counted). */
hp_status hp_ckpt_retain(int *removed, const char *run_dir, int keep_last, const hp_ckpt_lineage *lin);
/* The highest step of a complete step_* in run_dir (-1: none, or no run_dir). */
hp_status hp_ckpt_newest_step(long long *step, const char *run_dir);

/* ---- the lock ---- */

/* A run writing into a run dir holds run_dir/lock: a file with its pid, under
 * an exclusive flock, so a second writer is refused and the lock of a process
 * that died (even by kill -9) is free to take over. */
typedef struct hp_ckpt_lock hp_ckpt_lock;

/* Creates run_dir when missing. Errors naming the pid of the run that holds
 * the lock. *stale_pid: the pid a taken-over lock file named (0: none). */
hp_status hp_ckpt_lock_acquire(hp_ckpt_lock **out, long *stale_pid, const char *run_dir);
/* Removes the lock file and releases the lock (NULL is fine). */
void hp_ckpt_lock_release(hp_ckpt_lock *l);

#endif
