/* api/ckpt_convert: a checkpoint rewritten in the other format (hp_ckpt_convert; io/ckpt_convert does it). */
#include <stdlib.h>

#include "api/api.h"
#include "api/ckpt_state.h"
#include "io/ckpt_convert.h"
#include "io/fsutil.h"

hp_status hp_ckpt_convert(const char *dst, const char *src, int sharded, int *was_sharded) {
    if (!dst || !dst[0]) return hp_errorf("hp_ckpt_convert: no destination directory given");
    if (!src || !src[0]) return hp_errorf("hp_ckpt_convert: no source checkpoint given");
    if (hp_fs_exists(dst)) return hp_errorf("%s: exists; the converted checkpoint goes to a new directory", dst);
    hp_ckpt ck;
    char *dir;
    HP_TRY(hp_api_ckpt_open(&ck, &dir, src, 1));
    if (was_sharded) *was_sharded = ck.shards != NULL;
    if (sharded < 0) sharded = ck.shards == NULL;
    hp_status st = hp_ckpt_convert_dir(dst, &ck, sharded);
    hp_ckpt_close(&ck);
    free(dir);
    return st;
}
