int hp_cmd_bench_comm(int argc, char **argv); int hp_cmd_bench_comm(int argc, char **argv) { (void)argc; (void)argv; return 1; }
