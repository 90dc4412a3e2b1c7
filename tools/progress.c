#include "progress.h"

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void hp_progress_init(hp_progress *p, FILE *out, long total, int every) {
    p->out = out;
    /* under a launcher (mpirun, srun) output goes through a pseudo-terminal to a log: plain lines */
    p->tty = isatty(fileno(out)) && !hp_world_under_launcher();
    p->total = total;
    p->every = every > 0 ? every : 1;
    p->line_open = 0;
}

static void fmt_eta(char *buf, size_t n, double s) {
    if (s < 0) {
        snprintf(buf, n, "--");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

void hp_progress_step(hp_progress *p, long step, float loss, double tok_s, double step_ms, float lr, double eta_s) {
    char eta[32];
    fmt_eta(eta, sizeof eta, eta_s);
    if (p->tty) {
        fprintf(p->out, "\r\033[Kstep %ld/%ld | loss %.4f | lr %.2e | %.0f tok/s | %.1f ms/step | ETA %s", step,
                p->total, loss, lr, tok_s, step_ms, eta);
        fflush(p->out);
        p->line_open = 1;
    } else if (step % p->every == 0 || step == p->total || step == 1) {
        fprintf(p->out, "step %ld/%ld | loss %.4f | lr %.2e | %.0f tok/s | %.1f ms/step | ETA %s\n", step, p->total,
                loss, lr, tok_s, step_ms, eta);
        fflush(p->out);
    }
}

void hp_progress_note(hp_progress *p, const char *fmt, ...) {
    if (p->line_open) {
        fputc('\n', p->out);
        p->line_open = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->out, fmt, ap);
    va_end(ap);
    fputc('\n', p->out);
    fflush(p->out);
}

void hp_progress_done(hp_progress *p) {
    if (p->line_open) fputc('\n', p->out);
    p->line_open = 0;
    fflush(p->out);
}
