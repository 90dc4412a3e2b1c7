/* tools/child: runs a benchmark in a forked child process (so its peak
 * memory is its own) and brings its fixed-size result back through a pipe. */
#ifndef HP_TOOLS_CHILD_H
#define HP_TOOLS_CHILD_H

#include <stddef.h>

/* fn(result, ctx) runs in a child; result (size bytes) is copied back. Returns
 * 0 on success, -1 if the child failed to report (result is then zeroed). If
 * no pipe can be made, fn runs in this process. */
int hp_run_in_child(void *result, size_t size, void (*fn)(void *result, void *ctx), void *ctx);

#endif
