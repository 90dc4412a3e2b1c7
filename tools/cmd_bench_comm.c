/* tools/cmd_bench_comm: `hyperpar bench comm` measures the collectives and
 * prints algorithm and bus bandwidth (as nccl-tests define them) per
 * collective and size, next to Open MPI's own all-reduce, reduce-scatter,
 * all-gather and all-to-all (its variable-count form) when started under mpirun.
 *
 *   hyperpar bench comm [--ranks R] [--sizes 1M,16M,64M] [--iters N] [--repeat K]
 *                       [--sections memcpy,supernode,shared,fused,emul,fusedlink,mpi,a2a]
 *                       [--inter-bw GBPS] [--inter-latency US] [--bind cores|none]
 *                       [--a2a-fuse-bytes N] [--json FILE]
 *
 * Sections: memcpy bandwidth; one supernode of R rank-threads (R defaults to
 * the number of MPI processes, or 2) with private outputs, out of place and
 * in place (each row with the bytes and messages a rank moves per call inside
 * the supernode, as the comm layer counts them); the same with one output buffer shared by the supernode, out of
 * place and in place (every shard already at its place: FSDP's flat buffer);
 * 100 fused 4 KiB tensors against 100 separate calls; the two-tier
 * all-reduce over emulated supernodes at --inter-bw (default 1 GB/s) with its
 * counted bytes and messages per rank on each tier; fused against separate calls between 2 emulated
 * supernodes whose link has a network's cost (25 GB/s, 5 us per message);
 * with mpirun, Open MPI (out of place and in place) and hyperpar over MPI
 * (one rank per process) on the same sizes; a2a: the all-to-all with its
 * cross-supernode leg direct (a message per rank pair) and fused (one per
 * pair of supernodes), on 2 emulated supernodes x R at --inter-bw and, with
 * mpirun, on the processes x R rank-threads (R: --ranks, default 2).
 * --a2a-fuse-bytes sets every other world's fusion threshold (default the
 * library's). Every figure is the median of K
 * runs (--repeat, default 1); every row carries the 1-minute load average
 * read when the run started. The timing itself is the library's
 * (hp_bench_comm_*).
 * --bind cores (the default) pins global rank g's thread, and MPI process p's
 * main thread (Open MPI's own collectives), to the (g or p mod n)-th of the n
 * CPUs the process may use, as `mpirun --bind-to core` does for one rank per
 * process: unpinned, two busy ranks are at times scheduled on one core. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "output.h"

typedef struct {
    FILE *json;
    int nrows;
    int iters;
    double load1;
} bc_out;

static const char *bc_name(hp_bench_coll k) {
    return k == HP_BENCH_ALL_REDUCE       ? "all_reduce"
           : k == HP_BENCH_REDUCE_SCATTER ? "reduce_scatter"
           : k == HP_BENCH_ALL_TO_ALL     ? "all_to_all"
                                          : "all_gather";
}

/* nccl-tests: bus bandwidth = algbw * 2(n-1)/n (all-reduce) or (n-1)/n. */
static double bc_busfactor(hp_bench_coll k, int n) {
    return k == HP_BENCH_ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
}

static void bc_row(bc_out *o, const char *coll, const char *impl, const char *tier, int ranks, double bytes,
                   double sec, double busf, const char *extra) {
    double alg = bytes / sec / 1e9, bus = alg * busf;
    printf("| %-22s | %-8s | %-24s | %5d | %10.0f | %10.1f | %8.2f | %8.2f |%s\n", coll, impl, tier, ranks, bytes,
           sec * 1e6, alg, bus, extra ? extra : "");
    if (o->json) {
        fprintf(o->json,
                "%s{\"collective\":\"%s\",\"impl\":\"%s\",\"tier\":\"%s\",\"ranks\":%d,\"bytes\":%.0f,"
                "\"time_us\":%.2f,\"algbw_GBps\":%.4f,\"busbw_GBps\":%.4f,\"load_avg_1min\":%.2f%s%s}",
                o->nrows ? ",\n" : "", coll, impl, tier, ranks, bytes, sec * 1e6, alg, bus, o->load1, extra ? "," : "",
                extra ? extra : "");
        o->nrows++;
    }
}

static int bc_iters(int64_t bytes, int base) {
    int64_t it = ((int64_t)256 << 20) / (bytes ? bytes : 1);
    if (it > base) it = base;
    if (it < 3) it = 3;
    return (int)it;
}

static int64_t bc_parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    if (*end == 'K' || *end == 'k') v *= 1024, end++;
    else if (*end == 'M' || *end == 'm') v *= 1 << 20, end++;
    else if (*end == 'G' || *end == 'g') v *= 1 << 30, end++;
    if (*end) return -1;
    return (int64_t)v;
}

static hp_status bc_world(hp_world **w, int S, int R, int mpi, double bw, double lat, int64_t fuse) {
    hp_world_options o;
    hp_world_options_default(&o);
    if (fuse >= 0) o.a2a_fuse_bytes = fuse;
    o.ranks_per_supernode = R;
    o.supernodes = mpi ? 0 : S;
    o.mpi = mpi;
    o.inter_bw_gbps = bw;
    o.inter_latency_us = lat;
    return hp_world_create(w, &o);
}

/* Seconds per call of a case (hp_bench_comm_run), -1 on error (printed). */
static double bc_time(hp_bench_comm *b, hp_world *w, hp_bench_coll coll, int64_t bytes, int iters, int fused,
                      int64_t *inter_bytes, int shared, int inplace, double *runs) {
    hp_bench_comm_case c = {coll, bytes, iters, fused, shared, inplace};
    double sec;
    hp_status st = hp_bench_comm_run(&sec, inter_bytes, runs, b, w, &c);
    if (st) {
        fprintf(stderr, "bench comm: %s\n", hp_status_msg(st));
        hp_status_free(st);
        return -1;
    }
    return sec;
}

/* The last run's counted traffic per call and rank (hp_bench_comm_tiers), as a JSON fragment: the intra
 * tier's, and with `inter` the inter tier's too. */
static void bc_tiers(char *ex, size_t cap, const hp_bench_comm *b, int inter) {
    int64_t bytes[2], msgs[2];
    hp_bench_comm_tiers(b, bytes, msgs);
    int p = snprintf(ex, cap, "\"intra_bytes_per_rank\":%lld,\"intra_msgs_per_rank\":%lld", (long long)bytes[0],
                     (long long)msgs[0]);
    if (inter && p >= 0 && (size_t)p < cap)
        snprintf(ex + p, cap - (size_t)p, ",\"inter_bytes_per_rank\":%lld,\"inter_msgs_per_rank\":%lld",
                 (long long)bytes[1], (long long)msgs[1]);
}

static const char *bc_header =
    "| collective             | impl     | tier                     | ranks |      bytes |    time us | algbw GB/s | busbw GB/s |";

static int bc_has(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

static double bc_load1(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* The runs of a fused-vs-separate comparison, as a JSON fragment. */
static void bc_speedups(char *ex, size_t cap, double med, const double *sep, const double *fus, int repeat) {
    int p = snprintf(ex, cap, "\"speedup\":%.2f,\"speedup_runs\":[", med);
    for (int k = 0; k < repeat && p < (int)cap; k++)
        p += snprintf(ex + p, cap - (size_t)p, "%s%.2f", k ? "," : "", sep[k] / fus[k]);
    if (p < (int)cap) snprintf(ex + p, cap - (size_t)p, "]");
}

/* 100 separate calls, then one fused call, on 100 tensors of 4 KiB (shared:
 * every rank of the supernode passes the same outputs). */
static void bc_fused(bc_out *out, hp_world *w, hp_bench_coll kind, int n, int iters, int shared, hp_bench_comm *cfg,
                     int repeat, const char *prefix) {
    double sr[64], fr[64];
    double sep = bc_time(cfg, w, kind, 100 * 4096, iters, -1, NULL, shared, 0, sr);
    double fus = bc_time(cfg, w, kind, 100 * 4096, iters, 1, NULL, shared, 0, fr);
    if (sep < 0 || fus < 0) return;
    char ex[512], name[64], t1[64], t2[64];
    bc_speedups(ex, sizeof ex, sep / fus, sr, fr, repeat < 64 ? repeat : 64);
    snprintf(name, sizeof name, "%s 100x4K", bc_name(kind));
    snprintf(t1, sizeof t1, "%s100 separate calls", prefix);
    snprintf(t2, sizeof t2, "%s1 fused call", prefix);
    bc_row(out, name, "hyperpar", t1, n, 100 * 4096.0, sep, bc_busfactor(kind, n), NULL);
    bc_row(out, name, "hyperpar", t2, n, 100 * 4096.0, fus, bc_busfactor(kind, n), ex);
}

/* The all-to-all with its cross leg direct (threshold 0) and fused (every pair), S supernodes x R ranks:
 * emulated at bw/lat, or the MPI processes (mpi; every process calls, `print` prints). */
static void bc_a2a(bc_out *out, hp_bench_comm *cfg, int S, int R, int mpi, double bw, double lat, const int64_t *sz,
                   int nsz, int iters, int print) {
    hp_world *w[2] = {NULL, NULL};
    for (int f = 0; f < 2; f++) {
        hp_status st = bc_world(&w[f], S, R, mpi, bw, lat, f ? ((int64_t)1 << 60) : 0);
        if (st) {
            fprintf(stderr, "bench comm: %s\n", hp_status_msg(st));
            hp_status_free(st);
            if (mpi) hp_bench_comm_mpi_abort(1);
            if (w[0]) hp_world_free(w[0]);
            return;
        }
    }
    int n = S * R;
    for (int s = 0; s < nsz; s++)
        for (int f = 0; f < 2; f++) {
            char tier[96];
            if (mpi) snprintf(tier, sizeof tier, "%d processes x %d, %s", S, R, f ? "fused" : "direct");
            else
                snprintf(tier, sizeof tier, "emul %dx%d @%.3g GB/s %.3g us, %s", S, R, bw, lat, f ? "fused" : "direct");
            double sec = bc_time(cfg, w[f], HP_BENCH_ALL_TO_ALL, sz[s], bc_iters(sz[s], iters), 0, NULL, 0, 0, NULL);
            if (print && sec > 0)
                bc_row(out, "all_to_all", "hyperpar", tier, n, (double)sz[s], sec, bc_busfactor(HP_BENCH_ALL_TO_ALL, n),
                       NULL);
        }
    hp_world_free(w[0]);
    hp_world_free(w[1]);
}

int hp_cmd_bench_comm(int argc, char **argv) {
    int R = 0, iters = 20, repeat = 1, bind = 1;
    double bw = 1.0, lat = 0;
    int64_t fuse = -1; /* the library's default */
    const char *json = NULL, *sizes = "1M,16M,64M", *sections = "memcpy,supernode,shared,fused,emul,fusedlink,mpi";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--ranks") && v) R = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && v) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && v) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--inter-bw") && v) bw = atof(argv[++i]);
        else if (!strcmp(argv[i], "--inter-latency") && v) lat = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json") && v) json = argv[++i];
        else if (!strcmp(argv[i], "--a2a-fuse-bytes") && v) {
            fuse = bc_parse_size(argv[++i]);
            if (fuse < 0) fuse = -2; /* not a size: refused below */
        }
        else if (!strcmp(argv[i], "--sizes") && v) sizes = argv[++i];
        else if (!strcmp(argv[i], "--sections") && v) sections = argv[++i];
        else if (!strcmp(argv[i], "--bind") && v && (!strcmp(v, "cores") || !strcmp(v, "none")))
            bind = !strcmp(argv[++i], "cores");
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: hyperpar bench comm [flags]\n"
                   "Times the collectives (supernode, shared output, fused, emulated link, MPI) against memcpy and "
                   "Open MPI.\n\nflags:\n"
                   "  --ranks N              rank-threads per supernode (0 = the section's default)\n"
                   "  --iters N              timed calls per measurement (default 20)\n"
                   "  --repeat N             measurements per row, the median printed (1..64, default 1)\n"
                   "  --sizes LIST           message sizes, e.g. 1M,16M,64M\n"
                   "  --sections LIST        memcpy,supernode,shared,fused,emul,fusedlink,mpi,a2a\n"
                   "  --inter-bw GBPS        emulated inter-supernode bandwidth (default 1)\n"
                   "  --inter-latency US     emulated inter-supernode latency (default 0)\n"
                   "  --bind cores|none      pin rank threads to cores (default cores)\n"
                   "  --a2a-fuse-bytes N     the all-to-all's fusion threshold (0: never; default the library's)\n"
                   "  --json FILE            also write the rows as JSON\n");
            return 0;
        } else {
            fprintf(stderr, "bench comm: unknown or incomplete argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (iters < 1 || bw <= 0 || lat < 0 || R < 0 || repeat < 1 || repeat > 64 || fuse < -1) {
        fprintf(stderr, "bench comm: --iters, --inter-bw must be positive, --repeat in [1, 64]; --ranks, "
                        "--inter-latency, --a2a-fuse-bytes not negative\n");
        return 2;
    }
    int64_t sz[16];
    int nsz = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *tok = strtok(buf, ","); tok && nsz < 16; tok = strtok(NULL, ",")) {
        sz[nsz] = bc_parse_size(tok);
        if (sz[nsz] < 0) {
            fprintf(stderr, "bench comm: --sizes: '%s' is not a size like 4K, 1M, 64M\n", tok);
            return 2;
        }
        nsz++;
    }
    int launched = hp_world_launched_processes() > 0, me = 0, np = 1;
    hp_status mst = hp_bench_comm_mpi_start(&me, &np);
    if (mst) {
        fprintf(stderr, "bench comm: %s\n", hp_status_msg(mst));
        hp_status_free(mst);
        return 2;
    }
    if (R == 0) R = launched ? np : 2;
    /* pins this process's main thread: Open MPI's own collectives, memcpy */
    hp_bench_comm *cfg = NULL;
    hp_status cst = hp_bench_comm_create(&cfg, repeat, bind, me);
    if (cst) {
        fprintf(stderr, "bench comm: %s\n", hp_status_msg(cst));
        hp_status_free(cst);
        if (launched) hp_bench_comm_mpi_abort(2);
        return 2;
    }
    bc_out out = {NULL, 0, iters, bc_load1()};
    if (me == 0 && json) {
        out.json = fopen(json, "w");
        if (!out.json) {
            fprintf(stderr, "bench comm: --json: cannot write '%s'\n", json);
            if (launched) hp_bench_comm_mpi_abort(2);
            hp_bench_comm_free(cfg);
            return 2;
        }
        fputs("[\n", out.json);
    }
    static const hp_bench_coll kinds[4] = {HP_BENCH_REDUCE_SCATTER, HP_BENCH_ALL_GATHER, HP_BENCH_ALL_REDUCE,
                                           HP_BENCH_ALL_TO_ALL};
    int rc = 0;
    if (me == 0) {
        printf("load average (1 min) at start: %.2f; median of %d run(s)\n", out.load1, repeat);
        printf("%s\n|---|---|---|---|---|---|---|---|\n", bc_header);
        int64_t mb = (int64_t)64 << 20;
        if (bc_has(sections, "memcpy")) {
            bc_row(&out, "memcpy", "memcpy", "1 thread", 1, (double)mb, hp_bench_comm_memcpy(cfg, mb, 10), 1, NULL);
        }
        hp_world *w;
        hp_status st = bc_world(&w, 1, R, 0, 0, 0, fuse);
        if (st) {
            fprintf(stderr, "bench comm: %s\n", hp_status_msg(st));
            hp_status_free(st);
            rc = 1;
        } else {
            char tier[64];
            snprintf(tier, sizeof tier, "1 supernode x %d", R);
            if (bc_has(sections, "supernode"))
                for (int k = 0; k < 4; k++)
                    for (int s = 0; s < nsz; s++) {
                        double sec = bc_time(cfg, w, kinds[k], sz[s], bc_iters(sz[s], iters), 0, NULL, 0, 0, NULL);
                        char ex[192];
                        bc_tiers(ex, sizeof ex, cfg, 0);
                        if (sec > 0) bc_row(&out, bc_name(kinds[k]), "hyperpar", tier, R, (double)sz[s], sec, bc_busfactor(kinds[k], R), ex);
                        else rc = 1;
                        if (kinds[k] != HP_BENCH_ALL_GATHER) continue;
                        sec = bc_time(cfg, w, kinds[k], sz[s], bc_iters(sz[s], iters), 0, NULL, 0, 1, NULL);
                        snprintf(tier, sizeof tier, "1 supernode x %d, in place", R);
                        if (sec > 0) bc_row(&out, "all_gather", "hyperpar", tier, R, (double)sz[s], sec, bc_busfactor(kinds[k], R), NULL);
                        snprintf(tier, sizeof tier, "1 supernode x %d", R);
                    }
            if (bc_has(sections, "shared"))
                for (int s = 0; s < nsz; s++) { /* one output buffer shared by the supernode */
                    double sec = bc_time(cfg, w, HP_BENCH_ALL_GATHER, sz[s], bc_iters(sz[s], iters), 0, NULL, 1, 0, NULL);
                    if (sec > 0) bc_row(&out, "all_gather", "hyperpar", "1 supernode, shared out", R, (double)sz[s], sec, bc_busfactor(HP_BENCH_ALL_GATHER, R), NULL);
                    /* every shard already in place in the shared buffer: synchronisation only */
                    sec = bc_time(cfg, w, HP_BENCH_ALL_GATHER, sz[s], 50 * iters, 0, NULL, 1, 1, NULL);
                    if (sec > 0) bc_row(&out, "all_gather", "hyperpar", "1 supernode, shared in place", R, (double)sz[s], sec, bc_busfactor(HP_BENCH_ALL_GATHER, R), NULL);
                }
            if (bc_has(sections, "fused")) /* 100 tensors of 4 KiB: separate calls, then one fused call */
                for (int k = 0; k < 5; k++) /* then all-gather and all-reduce into supernode-shared outputs */
                    bc_fused(&out, w, kinds[k < 3 ? k : k - 2], R, iters * 5, k >= 3, cfg, repeat, k < 3 ? "" : "shared out, ");
            hp_world_free(w);
        }
        /* two-tier all-reduce under the link emulator */
        const int emu[3][2] = {{2, 1}, {2, 2}, {4, 1}};
        for (int c = 0; c < 3 && bc_has(sections, "emul"); c++) {
            st = bc_world(&w, emu[c][0], emu[c][1], 0, bw, lat, fuse);
            if (st) {
                fprintf(stderr, "bench comm: %s\n", hp_status_msg(st));
                hp_status_free(st);
                rc = 1;
                continue;
            }
            int64_t ib = 0, bytes = (int64_t)16 << 20;
            double sec = bc_time(cfg, w, HP_BENCH_ALL_REDUCE, bytes, 3, 0, &ib, 0, 0, NULL);
            char tier[96], ex[192];
            snprintf(tier, sizeof tier, "emul %dx%d @%.3g GB/s", emu[c][0], emu[c][1], bw);
            bc_tiers(ex, sizeof ex, cfg, 1); /* inter_bytes_per_rank: ib, the same count */
            (void)ib;
            int n = emu[c][0] * emu[c][1];
            if (sec > 0) bc_row(&out, "all_reduce", "hyperpar", tier, n, (double)bytes, sec, bc_busfactor(HP_BENCH_ALL_REDUCE, n), ex);
            hp_world_free(w);
        }
        /* fusion over a network-like link: 2 emulated supernodes x 1 rank, each
         * port 25 GB/s with 5 us per message (an InfiniBand HDR-class NIC) */
        if (bc_has(sections, "fusedlink")) {
            st = bc_world(&w, 2, 1, 0, 25.0, 5.0, fuse);
            if (st) {
                fprintf(stderr, "bench comm: %s\n", hp_status_msg(st));
                hp_status_free(st);
                rc = 1;
            } else {
                for (int k = 0; k < 3; k++) bc_fused(&out, w, kinds[k], 2, iters, 0, cfg, repeat, "emul 2x1 @25 GB/s 5 us, ");
                hp_world_free(w);
            }
        }
        if (bc_has(sections, "a2a")) bc_a2a(&out, cfg, 2, R > 1 ? R : 2, 0, bw, lat, sz, nsz, iters, 1);
        if (launched) hp_bench_comm_idle_wait();
    } else {
        hp_bench_comm_idle_wait();
    }
    if (launched && np > 1 && bc_has(sections, "mpi")) {
        /* Open MPI against hyperpar over MPI, np processes x 1 rank */
        hp_world *w;
        hp_status st = bc_world(&w, np, 1, 1, 0, 0, fuse);
        if (st) {
            fprintf(stderr, "bench comm: %s\n", hp_status_msg(st));
            hp_status_free(st);
            hp_bench_comm_mpi_abort(1);
        }
        char tier[64], tip[64];
        snprintf(tier, sizeof tier, "%d processes x 1", np);
        snprintf(tip, sizeof tip, "%d processes x 1, in place", np);
        for (int k = 0; k < 4; k++)
            for (int s = 0; s < nsz; s++) {
                int it = bc_iters(sz[s], iters);
                double ms = hp_bench_comm_mpi(cfg, kinds[k], sz[s], it, 0, 0);
                double hs = bc_time(cfg, w, kinds[k], sz[s], it, 0, NULL, 0, 0, NULL);
                double mi = -1, hi = -1;
                if (kinds[k] == HP_BENCH_ALL_GATHER) {
                    mi = hp_bench_comm_mpi(cfg, kinds[k], sz[s], it, 1, 0);
                    hi = bc_time(cfg, w, kinds[k], sz[s], it, 0, NULL, 0, 1, NULL);
                }
                if (me == 0) {
                    double bf = bc_busfactor(kinds[k], np);
                    bc_row(&out, bc_name(kinds[k]), "mpi", tier, np, (double)sz[s], ms, bf, NULL);
                    if (hs > 0) bc_row(&out, bc_name(kinds[k]), "hyperpar", tier, np, (double)sz[s], hs, bf, NULL);
                    if (mi > 0) bc_row(&out, bc_name(kinds[k]), "mpi", tip, np, (double)sz[s], mi, bf, NULL);
                    if (hi > 0) bc_row(&out, bc_name(kinds[k]), "hyperpar", tip, np, (double)sz[s], hi, bf, NULL);
                }
            }
        for (int k = 0; k < 3; k++) { /* 100 tensors of 4 KiB across processes */
            double ms = hp_bench_comm_mpi(cfg, kinds[k], 100 * 4096, iters, 0, 1);
            if (me == 0) {
                char name[64];
                snprintf(name, sizeof name, "%s 100x4K", bc_name(kinds[k]));
                bc_row(&out, name, "mpi", "100 separate calls", np, 100 * 4096.0, ms, bc_busfactor(kinds[k], np), NULL);
                bc_fused(&out, w, kinds[k], np, iters, 0, cfg, repeat, "MPI, ");
            } else { /* the same calls, unreported */
                bc_time(cfg, w, kinds[k], 100 * 4096, iters, -1, NULL, 0, 0, NULL);
                bc_time(cfg, w, kinds[k], 100 * 4096, iters, 1, NULL, 0, 0, NULL);
            }
        }
        hp_world_free(w);
    }
    if (launched && np > 1 && bc_has(sections, "a2a"))
        bc_a2a(&out, cfg, np, R > 1 ? R : 2, 1, 0, 0, sz, nsz, iters, me == 0);
    if (out.json) {
        fputs("\n]\n", out.json);
        if (hp_cli_close_output(out.json, json)) rc = 1;
    }
    hp_bench_comm_free(cfg);
    if (launched) hp_bench_comm_mpi_end();
    return rc;
}
