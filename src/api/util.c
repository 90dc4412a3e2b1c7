/* api/util: small helpers of the api room. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

hp_status hp_api_strdup(char **out, const char *s) {
    *out = NULL;
    if (!s) return HP_OK;
    *out = strdup(s);
    return *out ? HP_OK : hp_errorf("hyperpar: out of memory copying '%s'", s);
}
