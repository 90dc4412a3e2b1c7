/* io/outpath: checks, before a run's first step, that the places it will
 * write can be written — so that a bad --ckpt-dir or trace path fails at
 * start, not hours later at the first save. A check creates nothing that
 * stays: it probes by making and removing a temporary directory
 * (hp_outpath_make_file_dir also makes the file's directory). */
#ifndef HP_IO_OUTPATH_H
#define HP_IO_OUTPATH_H

#include "core/status.h"

/* dir (created later with its missing parents) must be a directory or not
 * exist yet; the nearest existing ancestor must be a directory in which
 * entries can be created. `what` names the setting in errors. */
hp_status hp_outpath_check_dir(const char *dir, const char *what);
/* path's directory must exist and take new files; path itself, if it exists,
 * must not be a directory. */
hp_status hp_outpath_check_file(const char *path, const char *what);
/* path's directory is created (with its missing parents, as a checkpoint
 * directory is) when it can be, then hp_outpath_check_file; errors name path
 * (a parent that is a file, one that cannot be written). */
hp_status hp_outpath_make_file_dir(const char *path, const char *what);

#endif
