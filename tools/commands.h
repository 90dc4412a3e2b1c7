/* tools/commands: the subcommands of the `hyperpar` program. Each takes the
 * whole argv (argv[1] is the subcommand) and returns the exit status. */
#ifndef HP_TOOLS_COMMANDS_H
#define HP_TOOLS_COMMANDS_H

int hp_cmd_train(int argc, char **argv);
int hp_cmd_sample(int argc, char **argv);
/* `hyperpar tokenize`, in tools/tokenize.c */
int hp_cmd_tokenize(int argc, char **argv);
int hp_cmd_export(int argc, char **argv);
int hp_cmd_bench(int argc, char **argv);
int hp_cmd_plan(int argc, char **argv);
/* `hyperpar simulate`, in tools/simulate.c */
int hp_cmd_simulate(int argc, char **argv);
/* `hyperpar report`, in tools/report.c */
int hp_cmd_report(int argc, char **argv);
/* `hyperpar ckpt convert SRC DST [--format sharded|single]`, in tools/ckpt.c */
int hp_cmd_ckpt(int argc, char **argv);
/* `hyperpar bench comm ...` (argv[0] = "comm"), in tools/cmd_bench_comm.c */
int hp_cmd_bench_comm(int argc, char **argv);
/* `hyperpar bench parallel ...` (argv[0] = "parallel"), in tools/bench_parallel.c */
int hp_cmd_bench_parallel(int argc, char **argv);
/* `hyperpar bench fsdp ...` (argv[0] = "fsdp"), in tools/bench_fsdp.c */
int hp_cmd_bench_fsdp(int argc, char **argv);
/* `hyperpar bench muon ...` (argv[0] = "muon"), in tools/bench_muon.c */
int hp_cmd_bench_muon(int argc, char **argv);
int hp_cmd_bench_pipeline(int argc, char **argv);
/* `hyperpar bench moe ...` (argv[0] = "moe"), in tools/bench_moe.c */
int hp_cmd_bench_moe(int argc, char **argv);
/* `hyperpar calibrate ...`, in tools/calibrate.c */
int hp_cmd_calibrate(int argc, char **argv);

#endif
