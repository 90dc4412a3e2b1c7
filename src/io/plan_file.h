/* io/plan_file: a sharding plan file read whole (through io/fsutil: a
 * regular file only, no more than its size and PLAN_MAX_BYTES) and parsed
 * (layout/plan). */
#ifndef HP_IO_PLAN_FILE_H
#define HP_IO_PLAN_FILE_H

#include "layout/plan.h"

/* Reads the plan file at path into *out (a plan of its own); errors are `PATH:LINE: problem`.
 * Anything but a regular file (a FIFO, a device) is refused without waiting on it, "PATH: not a
 * regular file (a FIFO)", and at most 64 MiB is read. */
hp_status hp_plan_load(hp_plan *out, const char *path);

#endif
