/* tools/output: closing what a command wrote, checked. A file (--json) or
 * stdout that could not be written whole (a full disk, a closed pipe) is an
 * error naming it, never a silent loss. */
#ifndef HP_TOOLS_OUTPUT_H
#define HP_TOOLS_OUTPUT_H

#include <stdio.h>

/* Closes f (a file opened for writing, named `path`); on a failed write or
 * close prints "hyperpar: PATH: ..." on stderr and returns 1, else 0. */
int hp_cli_close_output(FILE *f, const char *path);
/* Flushes stdout; returns rc, or 1 (with the error printed) when stdout lost
 * output. */
int hp_cli_finish_stdout(int rc);

#endif
