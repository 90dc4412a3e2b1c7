/* io/fault: crash injection, a test hook. Every step of a checkpoint save
 * (each file created, written, fsynced and renamed, each directory fsynced,
 * the renames of a checkpoint directory, the update of `latest`, the removals
 * of retention) first calls hp_fault_point with a stable name such as
 * "write:model.safetensors" or "ckpt:rename-in". Two environment variables,
 * read at each call, drive it (unset, it does nothing):
 *   HP_FAULT_AT=NAME[#N]  the N-th call (default 1) named NAME kills the process
 *                         (SIGKILL: no clean-up runs, as after a crash or kill -9);
 *   HP_FAULT_LOG=FILE     every call appends its name to FILE, one per line
 *                         (a test lists a save's crash points this way).
 * The hit count for HP_FAULT_AT is the one piece of process-wide state here; it
 * exists for tests (tests/cli/test_crash_ckpt.sh) and never changes a result. */
#ifndef HP_IO_FAULT_H
#define HP_IO_FAULT_H

/* op: the step ("create", "write", "fsync", "rename", "dirsync", "ckpt", ...);
 * what: a file or directory path (its last component names the point) or a
 * fixed word. */
void hp_fault_point(const char *op, const char *what);

#endif
