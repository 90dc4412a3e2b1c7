/* api/infer_finite: weights that are used or written must be finite (infer.h). */
#include <math.h>

#include "api/infer.h"

hp_status hp_api_params_finite(const hp_param_store *ps, const char *what) {
    for (int k = 0; k < ps->n; k++) {
        const float *p = hp_param_ptr(ps, k);
        size_t n = hp_param_numel(ps, k);
        for (size_t j = 0; j < n; j++)
            if (!isfinite(p[j]))
                return hp_errorf("%s: parameter '%s' holds a non-finite value (%g at element %zu)", what, ps->name[k],
                                 (double)p[j], j);
    }
    return HP_OK;
}
