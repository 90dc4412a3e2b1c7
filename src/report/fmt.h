/* report/fmt: figures as the report prints them — rounded to what a reader
 * uses (whole numbers as they are; otherwise three significant digits, at
 * least to the unit; no exponent between 1e-4 and 1e15) and followed by
 * their unit; byte counts in B, kB, MB or GB (powers of 1000). */
#ifndef HP_REPORT_FMT_H
#define HP_REPORT_FMT_H

#include <stddef.h>

/* v rounded, then " unit" when unit is non-empty; "n/a" when v is not finite. */
void hp_rep_fmt(char *buf, size_t n, double v, const char *unit);
/* The unit for byte values of which the largest is `most`, and its size in bytes (*div). */
const char *hp_rep_bytes_unit(double *div, double most);
/* A byte count in its own unit: "512 B", "1.5 kB", "58.9 MB". */
void hp_rep_fmt_bytes(char *buf, size_t n, double bytes);
/* The unit of a benchmark or metrics field, from its name ("step_ms": "ms",
 * "tokens_per_s": "tokens/s", "busbw_GBps": "GB/s", "mfu": "of peak"); "" when it has none
 * or it is not known. */
const char *hp_rep_field_unit(const char *key);

#endif
