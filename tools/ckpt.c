/* tools/ckpt: `hyperpar ckpt convert SRC DST [--format sharded|single]` —
 * a checkpoint written again in the other format. */
#include <stdio.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "commands.h"

static hp_status convert(int argc, char **argv) {
    char format[16] = "";
    hp_opt tab[] = {{"format", HP_OPT_STR, format, sizeof format,
                     "sharded | single (default: the other one than SRC's)"}};
    /* the two positional arguments come first: ckpt convert SRC DST [flags] */
    int npos = 0;
    const char *pos[2] = {NULL, NULL};
    while (npos < 2 && 3 + npos < argc && argv[3 + npos][0] != '-') {
        pos[npos] = argv[3 + npos];
        npos++;
    }
    int help = 0;
    HP_TRY(hp_args_parse(&help, tab, 1, argc, argv, 3 + npos, "ckpt convert"));
    if (help) {
        hp_args_usage(tab, 1, "ckpt convert SRC DST", "Writes checkpoint SRC (a checkpoint directory, or a run "
                                                      "directory with 'latest') as the new directory DST in the "
                                                      "other format.");
        return HP_OK;
    }
    if (npos < 2) return hp_errorf("hyperpar ckpt convert: expected SRC and DST directories");
    int sharded = -1;
    if (!strcmp(format, "sharded")) sharded = 1;
    else if (!strcmp(format, "single")) sharded = 0;
    else if (format[0]) return hp_errorf("hyperpar ckpt convert: --format must be sharded or single, got '%s'", format);
    int was = 0;
    HP_TRY(hp_ckpt_convert(pos[1], pos[0], sharded, &was));
    if (sharded < 0) sharded = !was;
    printf("wrote %s (%s format, from the %s checkpoint %s)\n", pos[1], sharded ? "sharded" : "single",
           was ? "sharded" : "single", pos[0]);
    return HP_OK;
}

int hp_cmd_ckpt(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[2], "convert")) {
        if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            printf("usage: hyperpar ckpt convert SRC DST [--format sharded|single]\n");
            return 0;
        }
        fprintf(stderr, "usage: hyperpar ckpt convert SRC DST [--format sharded|single]\n");
        return 2;
    }
    hp_status st = convert(argc, argv);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    return 0;
}
