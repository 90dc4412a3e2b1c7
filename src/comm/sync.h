/* comm/sync: the waiting primitives of the comm room. A monotonic clock, a
 * futex-backed word wait with deadline, and a sense-counting barrier for the
 * ranks of one supernode that spins briefly, then sleeps (so rank-threads do
 * not starve compute on two cores), and can be broken from outside when a
 * collective fails. Internal to src/comm. */
#ifndef HP_COMM_SYNC_H
#define HP_COMM_SYNC_H

#include <stdatomic.h>
#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC. */
int64_t hp_comm_now_ns(void);
/* Sleeps until the monotonic clock reaches t_ns (returns at once if past). */
void hp_comm_sleep_until(int64_t t_ns);
/* The same to within about a microsecond: sleeps until shortly before t_ns
 * (a sleep can overshoot by the kernel's timer slack, 50 us by default),
 * then yields the core until t_ns. For the link emulator's delays. */
void hp_comm_wait_until(int64_t t_ns);

/* Wakes every thread sleeping in hp_comm_word_wait on *w. */
void hp_comm_word_wake(atomic_uint *w);
/* Sleeps while *w == val, for at most until deadline_ns (may return early). */
void hp_comm_word_wait(atomic_uint *w, unsigned val, int64_t deadline_ns);

/* Bounded waiting for *w != val: spins, then yields the core; 1 if it changed. */
int hp_comm_spin_until_changed(atomic_uint *w, unsigned val);

typedef struct {
    _Alignas(64) atomic_uint count;
    _Alignas(64) atomic_uint gen;
    atomic_uint waiters;
    atomic_int broken;
    int n;
} hp_comm_fence;

void hp_comm_fence_init(hp_comm_fence *b, int n);
/* 0 when all n arrived; -1 on deadline; -2 when the barrier was broken. */
int hp_comm_fence_wait(hp_comm_fence *b, int64_t deadline_ns);
/* Marks the barrier broken and wakes every waiter. */
void hp_comm_fence_break(hp_comm_fence *b);

#endif
