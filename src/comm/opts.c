/* comm/opts: the world's options: their defaults and the command-line flags
 * that set them (--ranks, --supernodes, --comm-timeout, --inter-bw,
 * --inter-latency, --a2a-fuse-bytes). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

void hp_comm_opts_default(hp_comm_opts *o) {
    memset(o, 0, sizeof *o);
    o->ranks_per_supernode = 1;
    o->supernodes = 0;
    o->mpi = -1;
    o->timeout_s = 300;
    o->a2a_fuse_bytes = HP_COMM_A2A_FUSE_BYTES_DEFAULT;
}

static hp_status parse_num(double *out, const char *flag, const char *v, double lo, double hi) {
    if (!v) return hp_errorf("comm options: %s needs a value", flag);
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi))
        return hp_errorf("comm options: %s: '%s' is not a number in [%g, %g]", flag, v, lo, hi);
    *out = d;
    return HP_OK;
}

hp_status hp_comm_opts_parse(hp_comm_opts *o, const char *flag, const char *value, int *used) {
    double d = 0;
    *used = 1;
    if (!strcmp(flag, "--ranks")) {
        HP_TRY(parse_num(&d, flag, value, 1, 4096));
        o->ranks_per_supernode = (int)d;
    } else if (!strcmp(flag, "--supernodes")) {
        HP_TRY(parse_num(&d, flag, value, 1, 4096));
        o->supernodes = (int)d;
    } else if (!strcmp(flag, "--comm-timeout")) {
        HP_TRY(parse_num(&d, flag, value, 1e-3, 1e7));
        o->timeout_s = d;
    } else if (!strcmp(flag, "--inter-bw")) {
        HP_TRY(parse_num(&d, flag, value, 0, 1e6));
        o->inter_bw_gbps = d;
    } else if (!strcmp(flag, "--inter-latency")) {
        HP_TRY(parse_num(&d, flag, value, 0, 1e9));
        o->inter_latency_us = d;
    } else if (!strcmp(flag, "--a2a-fuse-bytes")) {
        HP_TRY(parse_num(&d, flag, value, 0, 1e15));
        o->a2a_fuse_bytes = (int64_t)d;
    } else {
        *used = 0;
    }
    return HP_OK;
}
