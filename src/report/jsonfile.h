/* report/jsonfile: a whole JSON file parsed (io/json), with errors that name
 * the file and the line ("FILE:LINE: json: offset N: problem"). */
#ifndef HP_REPORT_JSONFILE_H
#define HP_REPORT_JSONFILE_H

#include "io/json.h"

hp_status hp_rep_json_load(hp_json **out, const char *path);
/* obj[key] as a string, or def when absent or not a string. */
const char *hp_rep_json_str(const hp_json *obj, const char *key, const char *def);
/* obj[key] as a number, or def when absent or not a number. */
double hp_rep_json_num(const hp_json *obj, const char *key, double def);

#endif
