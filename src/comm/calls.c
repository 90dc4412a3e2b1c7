/* comm/calls: the single-tensor shorthands of comm.h (hp_comm_all_gather,
 * ..., hp_comm_barrier), each one hp_comm_run of a one-tensor call. */
#include "comm/comm.h"

static hp_status run1(hp_comm_rank *r, hp_comm_group *g, hp_comm_kind kind, void *recv, const void *send,
                      int64_t count, const int64_t *counts, const int64_t *rcounts, hp_dtype dt,
                      hp_comm_redop op, int peer) {
    hp_comm_tensor t = {recv, send, count};
    hp_comm_args a = {.kind = kind, .dtype = dt, .op = op, .peer = peer, .t = &t, .nt = 1, .counts = counts,
                      .recv_counts = rcounts};
    return hp_comm_run(r, g, &a);
}

hp_status hp_comm_all_gather(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, const int64_t *counts, hp_dtype dt) {
    return run1(r, g, HP_COMM_ALL_GATHER, recv, send, count, counts, NULL, dt, HP_COMM_SUM, 0);
}
hp_status hp_comm_reduce_scatter(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                                 int64_t count, const int64_t *counts, hp_dtype dt, hp_comm_redop op) {
    return run1(r, g, HP_COMM_REDUCE_SCATTER, recv, send, count, counts, NULL, dt, op, 0);
}
hp_status hp_comm_all_reduce(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, hp_dtype dt, hp_comm_redop op) {
    return run1(r, g, HP_COMM_ALL_REDUCE, recv, send, count, NULL, NULL, dt, op, 0);
}
hp_status hp_comm_broadcast(hp_comm_rank *r, hp_comm_group *g, void *buf, int64_t count, hp_dtype dt,
                            int root) {
    return run1(r, g, HP_COMM_BROADCAST, buf, NULL, count, NULL, NULL, dt, HP_COMM_SUM, root);
}
hp_status hp_comm_all_to_all(hp_comm_rank *r, hp_comm_group *g, void *recv, const void *send,
                             int64_t count, const int64_t *send_counts, const int64_t *recv_counts,
                             hp_dtype dt) {
    return run1(r, g, HP_COMM_ALL_TO_ALL, recv, send, count, send_counts, recv_counts, dt, HP_COMM_SUM, 0);
}
hp_status hp_comm_send(hp_comm_rank *r, hp_comm_group *g, const void *buf, int64_t count, hp_dtype dt,
                       int dst) {
    return run1(r, g, HP_COMM_SEND, NULL, buf, count, NULL, NULL, dt, HP_COMM_SUM, dst);
}
hp_status hp_comm_recv(hp_comm_rank *r, hp_comm_group *g, void *buf, int64_t count, hp_dtype dt,
                       int src) {
    return run1(r, g, HP_COMM_RECV, buf, NULL, count, NULL, NULL, dt, HP_COMM_SUM, src);
}
hp_status hp_comm_barrier(hp_comm_rank *r, hp_comm_group *g) {
    return run1(r, g, HP_COMM_BARRIER, NULL, NULL, 0, NULL, NULL, HP_F32, HP_COMM_SUM, 0);
}
