#include "comm/sync.h"

#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Waiting: spin this many pause iterations (a few us: the peer is running on
 * the other core), then yield the core this many times (the peer may be
 * waiting for this very core), then sleep on a futex. */
#define SPIN_ITERS 256
#define YIELD_ITERS 64
/* A sleeping waiter re-checks the barrier's broken flag at least this often. */
#define MAX_SLEEP_NS 20000000LL

int64_t hp_comm_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void hp_comm_sleep_until(int64_t t_ns) {
    for (;;) {
        int64_t d = t_ns - hp_comm_now_ns();
        if (d <= 0) return;
        struct timespec ts = {(time_t)(d / 1000000000LL), (long)(d % 1000000000LL)};
        nanosleep(&ts, NULL);
    }
}

/* How long before a precise deadline hp_comm_wait_until stops sleeping: the thread's timer slack (how late a
 * sleep may end; the lanes set theirs to 1 us) and 20 us; the rest it yields. A thread that waits on the emulated
 * link leaves the core to the rank's compute. */
#define PRECISE_NS 20000LL

void hp_comm_wait_until(int64_t t_ns) {
    int64_t margin = PRECISE_NS + (int64_t)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (t_ns - hp_comm_now_ns() > margin) hp_comm_sleep_until(t_ns - margin);
    while (hp_comm_now_ns() < t_ns) sched_yield();
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void hp_comm_word_wake(atomic_uint *w) {
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

void hp_comm_word_wait(atomic_uint *w, unsigned val, int64_t deadline_ns) {
    int64_t d = deadline_ns - hp_comm_now_ns();
    if (d <= 0) return;
    if (d > MAX_SLEEP_NS) d = MAX_SLEEP_NS;
    struct timespec ts = {(time_t)(d / 1000000000LL), (long)(d % 1000000000LL)};
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

int hp_comm_spin_until_changed(atomic_uint *w, unsigned val) {
    for (int i = 0; i < SPIN_ITERS; i++) {
        if (atomic_load_explicit(w, memory_order_acquire) != val) return 1;
        cpu_relax();
    }
    for (int i = 0; i < YIELD_ITERS; i++) {
        if (atomic_load_explicit(w, memory_order_acquire) != val) return 1;
        sched_yield();
    }
    return atomic_load_explicit(w, memory_order_acquire) != val;
}

void hp_comm_fence_init(hp_comm_fence *b, int n) {
    atomic_init(&b->count, 0);
    atomic_init(&b->gen, 0);
    atomic_init(&b->waiters, 0);
    atomic_init(&b->broken, 0);
    b->n = n;
}

int hp_comm_fence_wait(hp_comm_fence *b, int64_t deadline_ns) {
    if (atomic_load(&b->broken)) return -2;
    if (b->n <= 1) return 0;
    unsigned g = atomic_load(&b->gen);
    if (atomic_fetch_add(&b->count, 1) == (unsigned)b->n - 1) {
        atomic_store(&b->count, 0);
        atomic_store(&b->gen, g + 1);
        if (atomic_load(&b->waiters)) hp_comm_word_wake(&b->gen);
        return 0;
    }
    if (hp_comm_spin_until_changed(&b->gen, g)) return 0;
    for (;;) {
        atomic_fetch_add(&b->waiters, 1);
        if (atomic_load(&b->gen) == g && !atomic_load(&b->broken))
            hp_comm_word_wait(&b->gen, g, deadline_ns);
        atomic_fetch_sub(&b->waiters, 1);
        if (atomic_load(&b->gen) != g) return 0;
        if (atomic_load(&b->broken)) return -2;
        if (hp_comm_now_ns() >= deadline_ns) return -1;
    }
}

void hp_comm_fence_break(hp_comm_fence *b) {
    atomic_store(&b->broken, 1);
    hp_comm_word_wake(&b->gen);
}
