/* report/jsonfile: a whole JSON file parsed (io/json), with errors that name
 * the file and the line ("FILE:LINE: json: offset N: problem"), and the
 * lookups the report uses; a number becomes an integer only after a range
 * check (no cast of 1e60 to int). */
#ifndef HP_REPORT_JSONFILE_H
#define HP_REPORT_JSONFILE_H

#include "io/json.h"

hp_status hp_rep_json_load(hp_json **out, const char *path);
/* obj[key] as a string, or def when absent or not a string. */
const char *hp_rep_json_str(const hp_json *obj, const char *key, const char *def);
/* obj[key] as a number, or def when absent or not a number. */
double hp_rep_json_num(const hp_json *obj, const char *key, double def);

/* The largest rank count the report reads (ranks, nranks, rank numbers). */
#define HP_REP_MAX_RANKS (1 << 20)
/* 2^53: integers above it are not exact in a double. */
#define HP_REP_MAX_INT 9007199254740992.0

/* obj[key] as a whole number in [lo, hi] into *out; def when obj is NULL or
 * the key is absent or null. Anything else is an error naming the file and
 * the field (where: the enclosing field, "" at the top): "FILE: field
 * 'WHERE.KEY': expected a whole number in LO..HI, got 1e+60". */
hp_status hp_rep_json_int(long *out, const hp_json *obj, const char *key, long lo, long hi, long def, const char *file,
                          const char *where);
/* obj[key] as a whole number in [lo, hi], or def when it is absent or is
 * anything else. */
long hp_rep_json_long(const hp_json *obj, const char *key, long lo, long hi, long def);

#endif
