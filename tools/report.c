/* tools/report: `hyperpar report` — one self-contained HTML page for a run
 * directory (with other runs overlaid and compared: --compare) or for
 * benchmark JSON files (--bench). Parses the arguments and prints the
 * summary; the library (hp_report_write) reads the files and draws. Uses
 * include/hyperpar/hyperpar.h alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "hyperpar/hyperpar.h"

enum { MAXF = HP_REPORT_MAX_COMPARE };

static void usage(void) {
    printf("usage: hyperpar report DIR [-o FILE.html] [--compare DIR2 ...] [--width PX] [--trace-steps A:B]\n"
           "       hyperpar report --bench FILE.json [FILE2.json ...] [-o FILE.html]\n"
           "Writes one self-contained HTML page (inline SVG, no network): a run directory's curves, memory,\n"
           "settings, plan and per-rank timeline; or benchmark JSON rows (bench, bench comm, bench parallel).\n\n"
           "  DIR                 a run directory (hyperpar train --run-dir), a metrics file, or a simulated step\n"
           "                      (hyperpar simulate --timeline DIR/NAME: DIR, or DIR/NAME.sim.json)\n"
           "  -o, --out FILE      the page (default DIR/report.html, or the bench file with .html)\n"
           "  --compare DIR2 ...  runs overlaid on DIR; prints each one's Pearson r and max |dloss| against DIR\n"
           "  --bench FILE ...    benchmark JSON files (hyperpar bench --json, bench comm --json, bench parallel --json)\n"
           "  --width PX          plot width in pixels; points beyond it are decimated, min/max kept (default 760)\n"
           "  --trace-steps A:B   traced steps shown in the timeline, 1-based (default: all traced)\n");
}

static hp_status parse_range(long *a, long *b, const char *v) {
    char *end;
    *a = strtol(v, &end, 10);
    if (end == v || *end != ':') return hp_errorf("hyperpar report: --trace-steps: expected A:B, got '%s'", v);
    const char *w = end + 1;
    *b = strtol(w, &end, 10);
    if (end == w || *end || *a < 1 || *b < *a)
        return hp_errorf("hyperpar report: --trace-steps: expected 1 <= A <= B, got '%s'", v);
    return HP_OK;
}

static hp_status parse(hp_report_config *c, const char **cmp, const char **bench, int *help, int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return HP_OK;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
            if (!has) return hp_errorf("hyperpar report: %s needs a file", a);
            c->out = argv[++i];
        } else if (!strcmp(a, "--compare") || !strcmp(a, "--bench")) {
            int bn = !strcmp(a, "--bench"), k = 0;
            while (i + 1 < argc && strncmp(argv[i + 1], "-", 1)) {
                if ((bn ? c->nbench : c->ncompare) >= MAXF)
                    return hp_errorf("hyperpar report: %s: at most %d files", a, MAXF);
                if (bn) bench[c->nbench++] = argv[++i];
                else cmp[c->ncompare++] = argv[++i];
                k++;
            }
            if (!k) return hp_errorf("hyperpar report: %s needs at least one %s", a, bn ? "file" : "run directory");
        } else if (!strcmp(a, "--width")) {
            char *end;
            if (!has) return hp_errorf("hyperpar report: --width needs a number");
            long w = strtol(argv[++i], &end, 10);
            if (*end || w < 200 || w > 10000) return hp_errorf("hyperpar report: --width: expected 200..10000, got '%s'", argv[i]);
            c->width = (int)w;
        } else if (!strcmp(a, "--trace-steps")) {
            if (!has) return hp_errorf("hyperpar report: --trace-steps needs A:B");
            HP_TRY(parse_range(&c->trace_from, &c->trace_to, argv[++i]));
        } else if (a[0] == '-') {
            return hp_errorf("hyperpar report: unknown flag '%s' (see hyperpar report --help)", a);
        } else if (c->run_dir) {
            return hp_errorf("hyperpar report: one run directory, got '%s' and '%s' (others go after --compare)",
                             c->run_dir, a);
        } else {
            c->run_dir = a;
        }
    }
    if (!c->run_dir && !c->nbench) return hp_errorf("hyperpar report: give a run directory or --bench FILE.json");
    if (c->run_dir && c->nbench) return hp_errorf("hyperpar report: give a run directory or --bench files, not both");
    c->compare = cmp, c->bench = bench;
    return HP_OK;
}

int hp_cmd_report(int argc, char **argv) {
    hp_report_config c;
    memset(&c, 0, sizeof c);
    const char *cmp[MAXF], *bench[MAXF];
    int help = 0;
    hp_status st = parse(&c, cmp, bench, &help, argc, argv);
    if (!st && help) {
        usage();
        return 0;
    }
    hp_report_summary s;
    if (!st) st = hp_report_write(&s, &c);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    printf("report: %s (%ld bytes)", s.out, s.bytes);
    if (c.run_dir && s.simulated) {
        printf(": a simulated step (predicted %.3f ms), %d traced ranks", s.predicted_ms, s.traced_ranks);
        if (s.hidden_share >= 0) printf(", communication hidden %.1f%%", 100 * s.hidden_share);
    } else if (c.run_dir) {
        printf(": %ld steps%s%s", s.steps, s.finished ? "" : ", run not finished", s.truncated ? ", last metrics line cut short" : "");
        if (s.traced_ranks) printf(", %d traced ranks", s.traced_ranks);
        if (s.hidden_share >= 0) printf(", communication hidden %.1f%%", 100 * s.hidden_share);
    }
    printf("\n");
    for (int i = 0; i < s.ncompare; i++) {
        if (isnan(s.compare[i].pearson))
            printf("compare %s with %s: %ld common steps, pearson n/a, max |dloss| %.9g\n", s.compare[i].run, c.run_dir,
                   s.compare[i].steps, s.compare[i].max_abs_delta);
        else
            printf("compare %s with %s: %ld common steps, pearson %.9f, max |dloss| %.9g\n", s.compare[i].run,
                   c.run_dir, s.compare[i].steps, s.compare[i].pearson, s.compare[i].max_abs_delta);
    }
    return 0;
}
