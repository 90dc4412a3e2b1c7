/* bench_comm_main: runs `hyperpar bench comm` on its own (argv[0] = "comm")
 * until tools/main.c dispatches to it. */
#include "../tools/cmd_bench_comm.c"

int main(int argc, char **argv) {
    argv[0] = "comm";
    return hp_cmd_bench_comm(argc, argv);
}
