/* tools/main: the `hyperpar` command line. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "output.h"

static void usage(FILE *f) {
    fputs("usage: hyperpar <command> [flags]\n"
          "commands:\n"
          "  train    train a model (no flags: a small GPT on text every Debian machine has)\n"
          "  sample   generate text from a checkpoint (--tokenizer DIR: GPT-2 text in and out)\n"
          "  tokenize text files to llm.c token shards with GPT-2's byte-level BPE\n"
          "  export   write a checkpoint's weights in another format (--llmc FILE)\n"
          "  ckpt     checkpoints: 'ckpt convert SRC DST [--format sharded|single]'\n"
          "  plan     print a sharding plan: layouts, inserted collectives, memory per rank\n"
          "  simulate predict a plan's step time, its split, MFU and memory (cost model)\n"
          "  report   one self-contained HTML page for a run directory (--compare: runs\n"
          "           overlaid) or benchmark JSON files (--bench)\n"
          "  bench    measure training speed, FLOP/s and MFU (bench comm: collectives;\n"
          "           bench parallel: sharding plans against the plain engine;\n"
          "           bench fsdp: DP, the fsdp2 style and hyperpar's FSDP/HSDP;\n"
          "           bench muon: distributed Muon's strategies under FSDP/HSDP;\n"
          "           bench pipeline: pipeline schedules' bubble and memory, remat;\n"
          "           bench moe: a MoE model under expert parallelism, all-to-all and load)\n"
          "  calibrate measure this machine's kernels, peaks and collectives into a\n"
          "           calibration profile for the cost model (--out profile.json)\n"
          "Run 'hyperpar <command> --help' for its flags.\n",
          f);
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) return hp_cmd_train(argc, argv);
    if (!strcmp(cmd, "sample")) return hp_cmd_sample(argc, argv);
    if (!strcmp(cmd, "tokenize")) return hp_cmd_tokenize(argc, argv);
    if (!strcmp(cmd, "export")) return hp_cmd_export(argc, argv);
    if (!strcmp(cmd, "plan")) return hp_cmd_plan(argc, argv);
    if (!strcmp(cmd, "simulate")) return hp_cmd_simulate(argc, argv);
    if (!strcmp(cmd, "report")) return hp_cmd_report(argc, argv);
    if (!strcmp(cmd, "ckpt")) return hp_cmd_ckpt(argc, argv);
    if (!strcmp(cmd, "calibrate")) return hp_cmd_calibrate(argc, argv);
    if (!strcmp(cmd, "bench")) {
        if (argc > 2 && !strcmp(argv[2], "comm")) return hp_cmd_bench_comm(argc - 2, argv + 2);
        if (argc > 2 && !strcmp(argv[2], "parallel")) return hp_cmd_bench_parallel(argc - 2, argv + 2);
        if (argc > 2 && !strcmp(argv[2], "fsdp")) return hp_cmd_bench_fsdp(argc - 2, argv + 2);
        if (argc > 2 && !strcmp(argv[2], "muon")) return hp_cmd_bench_muon(argc - 2, argv + 2);
        if (argc > 2 && !strcmp(argv[2], "pipeline")) return hp_cmd_bench_pipeline(argc - 2, argv + 2);
        if (argc > 2 && !strcmp(argv[2], "moe")) return hp_cmd_bench_moe(argc - 2, argv + 2);
        return hp_cmd_bench(argc, argv);
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "hyperpar: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv) { return hp_cli_finish_stdout(dispatch(argc, argv)); }
