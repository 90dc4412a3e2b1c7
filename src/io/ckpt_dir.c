/* io/ckpt_dir: the directory side of checkpoints (see the header). */
#include "io/ckpt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/ckpt_lineage.h"
#include "io/fault.h"
#include "io/fsutil.h"

/* dir without trailing slashes; malloc'd. */
static char *trimmed(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    char *r = malloc(n + 1);
    HP_ASSERT(r != NULL);
    memcpy(r, dir, n);
    r[n] = 0;
    return r;
}

/* The last path component of dir (without trailing slashes); malloc'd. */
static char *base_name(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    char *r = malloc(n - b + 1);
    HP_ASSERT(r != NULL);
    memcpy(r, dir + b, n - b);
    r[n - b] = 0;
    return r;
}

/* s + suffix; malloc'd. */
static char *with_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    char *r = malloc(a + b + 1);
    HP_ASSERT(r != NULL);
    memcpy(r, s, a);
    memcpy(r + a, suffix, b + 1);
    return r;
}

static int is_dir(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int hp_ckpt_dir_complete(const char *dir) {
    if (!is_dir(dir)) return 0;
    char *p = hp_fs_join(dir, HP_CKPT_COMMIT_FILE);
    struct stat st;
    int ok = lstat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return ok;
}

/* ---- names ---- */

enum { SUFFIX_LEN = 11 }; /* ".tmp-XXXXXX" */

/* 't', 'o' or 'd' when name ends in .tmp-XXXXXX, .old-XXXXXX or .del-XXXXXX
 * (the random part as mkdtemp makes it), else 0. *stem: the length before it. */
static int temp_kind(const char *name, size_t *stem) {
    size_t n = strlen(name);
    if (n <= SUFFIX_LEN) return 0;
    const char *s = name + n - SUFFIX_LEN;
    for (int i = 5; i < SUFFIX_LEN; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return 0;
    }
    *stem = n - SUFFIX_LEN;
    if (!strncmp(s, ".tmp-", 5)) return 't';
    if (!strncmp(s, ".old-", 5)) return 'o';
    if (!strncmp(s, ".del-", 5)) return 'd';
    return 0;
}

/* N for a name "step_N" (digits only, n characters of name), else -1. */
static long long step_number(const char *name, size_t n) {
    if (n < 6 || strncmp(name, "step_", 5)) return -1;
    long long v = 0;
    for (size_t i = 5; i < n; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        if (v > (1LL << 56)) return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

/* The entries of a directory other than . and .. (*names malloc'd, each too). */
typedef struct {
    char **names;
    int n;
} listing;

static void listing_free(listing *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = 0;
}

/* *missing = 1 (and no error) when dir does not exist. */
static hp_status list_dir(listing *l, int *missing, const char *dir) {
    l->names = NULL;
    l->n = 0;
    if (missing) *missing = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT && missing) {
            *missing = 1;
            return HP_OK;
        }
        return hp_errorf("%s: cannot read the checkpoint directory: %s", dir, strerror(errno));
    }
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (l->n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(l->names, sizeof *nn * (size_t)cap);
            HP_ASSERT(nn != NULL);
            l->names = nn;
        }
        l->names[l->n] = strdup(de->d_name);
        HP_ASSERT(l->names[l->n] != NULL);
        l->n++;
    }
    closedir(d);
    return HP_OK;
}

/* ---- saving ---- */

static void stage_release(hp_ckpt_stage *s) {
    free(s->dir), free(s->tmp), free(s->parent);
    s->dir = s->tmp = s->parent = NULL;
}

hp_status hp_ckpt_stage_begin(hp_ckpt_stage *s, const char *dir_in) {
    memset(s, 0, sizeof *s);
    if (!dir_in || !*dir_in) return hp_errorf("checkpoint: empty directory name");
    s->dir = trimmed(dir_in);
    s->parent = hp_fs_dirname(s->dir);
    s->tmp = with_suffix(s->dir, ".tmp-XXXXXX");
    hp_status e = hp_fs_mkdir_p(s->parent);
    if (!e) {
        hp_fault_point("ckpt", "mkdtemp");
        if (!mkdtemp(s->tmp)) e = hp_errorf("%s: cannot create temporary directory %s: %s", s->dir, s->tmp, strerror(errno));
    }
    if (e) stage_release(s);
    return e;
}

void hp_ckpt_stage_abort(hp_ckpt_stage *s) {
    if (s->tmp) {
        hp_status e = hp_fs_remove_tree(s->tmp);
        hp_status_free(e); /* best effort: recovery removes what is left */
    }
    stage_release(s);
}

hp_status hp_ckpt_stage_commit(hp_ckpt_stage *s) {
    const char *dir = s->dir;
    char *old = with_suffix(dir, ".old-XXXXXX");
    int have_tmp = 1, have_old = 0;
    hp_fault_point("ckpt", "sync-stage");
    hp_status e = hp_fs_fsync_dir(s->tmp);
    struct stat sb;
    if (!e && lstat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            e = hp_errorf("%s: exists and is not a checkpoint directory; not replacing it", dir);
        } else {
            hp_fault_point("ckpt", "mkdtemp-aside");
            if (!mkdtemp(old)) {
                e = hp_errorf("%s: cannot create a place for the old checkpoint %s: %s", dir, old, strerror(errno));
            } else {
                have_old = 1;
                /* rename onto the empty directory just made replaces it */
                hp_fault_point("ckpt", "rename-aside");
                if (rename(dir, old) != 0) {
                    e = hp_errorf("%s: cannot move the old checkpoint aside to %s: %s", dir, old, strerror(errno));
                    hp_status_free(hp_fs_remove_tree(old));
                    have_old = 0;
                }
            }
        }
    }
    if (!e) {
        hp_fault_point("ckpt", "rename-in");
        if (rename(s->tmp, dir) != 0) {
            e = hp_errorf("%s: cannot rename %s into place: %s", dir, s->tmp, strerror(errno));
            if (have_old && rename(old, dir) == 0) have_old = 0; /* put the old one back */
        } else {
            have_tmp = 0;
        }
    }
    if (!e) {
        hp_fault_point("ckpt", "sync-parent");
        e = hp_fs_fsync_dir(s->parent);
    }
    if (have_tmp) hp_status_free(hp_fs_remove_tree(s->tmp));
    if (have_old && !have_tmp) { /* the new checkpoint is in place: drop the old one */
        hp_fault_point("ckpt", "remove-old");
        hp_status r = hp_fs_remove_tree(old);
        if (!r) {
            hp_fault_point("ckpt", "sync-parent-removed");
            r = hp_fs_fsync_dir(s->parent);
        }
        if (!e) e = r;
        else hp_status_free(r);
    }
    free(old);
    stage_release(s);
    return e;
}

/* ---- latest ---- */

hp_status hp_ckpt_set_latest(const char *dir) {
    char *t = trimmed(dir);
    char *parent = hp_fs_dirname(t);
    char *name = base_name(t);
    char *path = hp_fs_join(parent, HP_CKPT_LATEST);
    size_t n = strlen(name);
    char *text = with_suffix(name, "\n");
    hp_status e = HP_OK;
    if (!n || !strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, "/"))
        e = hp_errorf("%s: cannot name this directory in a 'latest' file", dir);
    if (!e) e = hp_fs_write_atomic(path, text, n + 1);
    free(text);
    free(path);
    free(name);
    free(parent);
    free(t);
    return e;
}

/* Reads run_dir/latest: *name (malloc'd) the one name it holds; *missing = 1
 * (no error) when there is no such file. */
static hp_status read_latest(char **name, int *missing, const char *run_dir) {
    *name = NULL;
    *missing = 0;
    char *path = hp_fs_join(run_dir, HP_CKPT_LATEST);
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT) {
        *missing = 1;
        free(path);
        return HP_OK;
    }
    char *text;
    size_t n;
    hp_status e = hp_fs_read_bounded(&text, &n, path, 4096); /* one name: a larger file is not read */
    if (e) {
        free(path);
        return e;
    }
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ')) text[--n] = 0;
    if (n == 0 || memchr(text, '/', n) || memchr(text, 0, n) || memchr(text, '\n', n) || !strcmp(text, ".") ||
        !strcmp(text, "..")) {
        e = hp_errorf("%s: expected one checkpoint directory name on one line", path);
        free(text);
    } else {
        *name = text;
    }
    free(path);
    return e;
}

hp_status hp_ckpt_get_latest(char **dir, const char *run_dir) {
    *dir = NULL;
    char *name;
    int missing;
    HP_TRY(read_latest(&name, &missing, run_dir));
    char *path = hp_fs_join(run_dir, HP_CKPT_LATEST);
    hp_status e = HP_OK;
    if (missing) {
        e = hp_errorf("%s: cannot open: %s", path, strerror(ENOENT));
    } else {
        char *d = hp_fs_join(run_dir, name);
        struct stat sb;
        if (stat(d, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            e = hp_errorf("%s: names '%s', but %s is not a directory", path, name, d);
            free(d);
        } else {
            *dir = d;
        }
    }
    free(name);
    free(path);
    return e;
}

/* A complete X.old-* of l whose X (stem) is missing: its index, else -1. */
static int rollback_of(const listing *l, const char *run_dir, const char *stem) {
    size_t sn = strlen(stem);
    for (int i = 0; i < l->n; i++) {
        size_t k;
        if (temp_kind(l->names[i], &k) != 'o' || k != sn || strncmp(l->names[i], stem, sn)) continue;
        char *p = hp_fs_join(run_dir, l->names[i]);
        int ok = hp_ckpt_dir_complete(p);
        free(p);
        if (ok) return i;
    }
    return -1;
}

/* When a complete checkpoint was saved (0: not recorded, or unreadable). */
static int64_t saved_ns(const char *run_dir, const char *name) {
    char *p = hp_fs_join(run_dir, name);
    HP_ASSERT(p != NULL);
    hp_ckpt_stamp s;
    hp_status e = hp_ckpt_stamp_read(&s, p);
    free(p);
    if (e) {
        hp_status_free(e);
        return 0;
    }
    return s.saved_ns;
}

/* The newest complete checkpoint of l: a step_N, or a step_N.old-* whose
 * step_N is missing. Newest: the most recently saved (the head of the
 * lineage that saved last: a run resumed from an earlier step with
 * --overwrite leaves the old run's later steps behind), then the highest step
 * (checkpoints that do not record when they were saved). Its index (*step:
 * N), or -1. */
static int newest_complete(long long *step, const listing *l, const char *run_dir) {
    int best = -1;
    long long bn = -1;
    int64_t bt = -1;
    for (int i = 0; i < l->n; i++) {
        const char *nm = l->names[i];
        size_t stem = strlen(nm);
        int kind = temp_kind(nm, &stem);
        if (kind && kind != 'o') continue;
        long long s = step_number(nm, stem);
        if (s < 0) continue;
        char *p = hp_fs_join(run_dir, nm);
        int ok = hp_ckpt_dir_complete(p);
        free(p);
        if (ok && kind == 'o') { /* only in place of a missing step_N */
            char *x = strndup(nm, stem);
            HP_ASSERT(x != NULL);
            char *xp = hp_fs_join(run_dir, x);
            ok = !hp_fs_exists(xp);
            free(xp);
            free(x);
        }
        if (!ok) continue;
        int64_t t = saved_ns(run_dir, nm);
        if (t > bt || (t == bt && s > bn)) best = i, bn = s, bt = t;
    }
    *step = bn;
    return best;
}

hp_status hp_ckpt_newest_step(long long *step, const char *run_dir) {
    *step = -1;
    listing l;
    int missing;
    HP_TRY(list_dir(&l, &missing, run_dir));
    if (missing) return HP_OK;
    for (int i = 0; i < l.n; i++) {
        long long n = step_number(l.names[i], strlen(l.names[i]));
        if (n <= *step) continue;
        char *p = hp_fs_join(run_dir, l.names[i]);
        if (hp_ckpt_dir_complete(p)) *step = n;
        free(p);
    }
    listing_free(&l);
    return HP_OK;
}

hp_status hp_ckpt_find(char **dir, const char *run_dir) {
    *dir = NULL;
    char *name;
    int missing_latest, missing_dir;
    HP_TRY(read_latest(&name, &missing_latest, run_dir));
    listing l;
    hp_status e = list_dir(&l, &missing_dir, run_dir);
    if (e || missing_dir) {
        free(name);
        if (e) return e;
        return hp_errorf("%s: no such checkpoint directory", run_dir);
    }
    if (name) {
        char *d = hp_fs_join(run_dir, name);
        if (hp_ckpt_dir_complete(d)) {
            *dir = d;
            d = NULL;
        } else if (!hp_fs_exists(d)) {
            int i = rollback_of(&l, run_dir, name);
            if (i >= 0) *dir = hp_fs_join(run_dir, l.names[i]);
        }
        free(d);
    }
    if (!*dir) {
        long long step;
        int i = newest_complete(&step, &l, run_dir);
        if (i >= 0)
            *dir = hp_fs_join(run_dir, l.names[i]);
        else if (name)
            e = hp_errorf("%s/%s: names '%s', which is not a complete checkpoint, and no complete step_* "
                          "directory is there", run_dir, HP_CKPT_LATEST, name);
        else
            e = hp_errorf("%s: no checkpoint: no '%s' file and no complete step_* directory", run_dir, HP_CKPT_LATEST);
    }
    free(name);
    listing_free(&l);
    return e;
}

/* ---- hygiene ---- */

/* Moves run_dir/name to a fresh run_dir/name.del-XXXXXX, then removes it:
 * a crash in between leaves only a .del-* for recovery to remove. */
static hp_status delete_dir(const char *run_dir, const char *name) {
    char *p = hp_fs_join(run_dir, name);
    char *del = with_suffix(p, ".del-XXXXXX");
    hp_status e = HP_OK;
    hp_fault_point("retain", "mkdtemp");
    if (!mkdtemp(del)) {
        e = hp_errorf("%s: cannot create %s to delete it through: %s", p, del, strerror(errno));
    } else {
        hp_fault_point("retain", "rename");
        if (rename(p, del) != 0) {
            e = hp_errorf("%s: cannot move it to %s to delete it: %s", p, del, strerror(errno));
            hp_status_free(hp_fs_remove_tree(del));
        } else {
            hp_fault_point("retain", "sync");
            e = hp_fs_fsync_dir(run_dir);
            if (!e) {
                hp_fault_point("retain", "remove");
                e = hp_fs_remove_tree(del);
            }
        }
    }
    free(del);
    free(p);
    return e;
}

hp_status hp_ckpt_recover(hp_ckpt_recovery *r, const char *run_dir) {
    memset(r, 0, sizeof *r);
    listing l;
    int missing;
    HP_TRY(list_dir(&l, &missing, run_dir));
    if (missing) return HP_OK;
    hp_status e = HP_OK;
    int changed = 0;
    /* a save that crashed between its renames: its old checkpoint goes back */
    for (int i = 0; i < l.n && !e; i++) {
        size_t stem;
        if (temp_kind(l.names[i], &stem) != 'o') continue;
        char *p = hp_fs_join(run_dir, l.names[i]);
        char *sn = strndup(l.names[i], stem);
        HP_ASSERT(sn != NULL);
        char *x = hp_fs_join(run_dir, sn);
        free(sn);
        if (!hp_fs_exists(x) && hp_ckpt_dir_complete(p)) {
            hp_fault_point("recover", "rename-back");
            if (rename(p, x) != 0)
                e = hp_errorf("%s: cannot move %s back after a crashed save: %s", run_dir, l.names[i], strerror(errno));
            else
                r->rolled_back++, changed = 1;
        } else {
            e = hp_fs_remove_tree(p);
            if (!e) r->removed++, changed = 1;
        }
        free(x);
        free(p);
    }
    /* stages, files being written, and directories being deleted */
    for (int i = 0; i < l.n && !e; i++) {
        size_t stem;
        int kind = temp_kind(l.names[i], &stem);
        if (kind != 't' && kind != 'd') continue;
        char *p = hp_fs_join(run_dir, l.names[i]);
        e = hp_fs_remove_tree(p);
        if (!e) r->removed++, changed = 1;
        free(p);
    }
    listing_free(&l);
    if (changed && !e) e = hp_fs_fsync_dir(run_dir);
    if (e) return e;
    /* `latest` missing or dangling: the newest complete step_* */
    char *name;
    HP_TRY(read_latest(&name, &missing, run_dir));
    int fix = missing;
    if (name) {
        char *d = hp_fs_join(run_dir, name);
        fix = !hp_ckpt_dir_complete(d);
        free(d);
    }
    free(name);
    if (!fix) return HP_OK;
    HP_TRY(list_dir(&l, NULL, run_dir));
    long long step;
    int i = newest_complete(&step, &l, run_dir);
    if (i >= 0) {
        char *d = hp_fs_join(run_dir, l.names[i]);
        e = hp_ckpt_set_latest(d);
        free(d);
        if (!e) {
            r->latest_set = 1;
            snprintf(r->latest_name, sizeof r->latest_name, "%s", l.names[i]);
        }
    }
    listing_free(&l);
    return e;
}

typedef struct {
    long long step;
    const char *name;
} step_entry;

static int by_step_desc(const void *a, const void *b) {
    const step_entry *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : 0;
}

/* 1 when the complete checkpoint run_dir/name belongs to lineage lin (NULL: any). */
static int of_lineage(const char *run_dir, const char *name, const hp_ckpt_lineage *lin) {
    if (!lin) return 1;
    char *p = hp_fs_join(run_dir, name);
    HP_ASSERT(p != NULL);
    hp_ckpt_stamp s;
    hp_status e = hp_ckpt_stamp_read(&s, p);
    free(p);
    if (e) { /* unreadable: not this lineage's to delete */
        hp_status_free(e);
        return 0;
    }
    return hp_ckpt_lineage_has(lin, s.lineage.run, s.step);
}

hp_status hp_ckpt_retain(int *removed, const char *run_dir, int keep_last, const hp_ckpt_lineage *lin) {
    *removed = 0;
    if (keep_last <= 0) return HP_OK;
    char *latest;
    int missing;
    HP_TRY(read_latest(&latest, &missing, run_dir));
    listing l;
    hp_status e = list_dir(&l, NULL, run_dir);
    if (e) {
        free(latest);
        return e;
    }
    step_entry *s = malloc(sizeof *s * (size_t)(l.n + 1));
    HP_ASSERT(s != NULL);
    int ns = 0;
    for (int i = 0; i < l.n; i++) {
        long long n = step_number(l.names[i], strlen(l.names[i]));
        if (n < 0) continue;
        char *p = hp_fs_join(run_dir, l.names[i]);
        if (hp_ckpt_dir_complete(p) && of_lineage(run_dir, l.names[i], lin)) s[ns++] = (step_entry){n, l.names[i]};
        free(p);
    }
    qsort(s, (size_t)ns, sizeof *s, by_step_desc);
    for (int i = keep_last; i < ns && !e; i++) {
        if (latest && !strcmp(latest, s[i].name)) continue;
        e = delete_dir(run_dir, s[i].name);
        if (!e) (*removed)++;
    }
    if (*removed && !e) e = hp_fs_fsync_dir(run_dir);
    free(s);
    listing_free(&l);
    free(latest);
    return e;
}

/* ---- the lock ---- */

struct hp_ckpt_lock {
    int fd;
    char *path;
};

/* The pid a lock file holds (0 when none can be read). */
static long read_pid(int fd) {
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *end;
    long pid = strtol(buf, &end, 10);
    return pid > 0 && (*end == '\n' || *end == 0) ? pid : 0;
}

hp_status hp_ckpt_lock_acquire(hp_ckpt_lock **out, long *stale_pid, const char *run_dir) {
    *out = NULL;
    if (stale_pid) *stale_pid = 0;
    if (!run_dir || !*run_dir) return hp_errorf("checkpoint: empty directory name");
    HP_TRY(hp_fs_mkdir_p(run_dir));
    char *path = hp_fs_join(run_dir, HP_CKPT_LOCK);
    /* A releasing run unlinks the file while it holds the lock: a lock taken
     * on a file that is no longer the one under the name is retried. */
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            hp_status e = hp_errorf("%s: cannot create the checkpoint directory's lock file: %s", path, strerror(errno));
            free(path);
            return e;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            long pid = read_pid(fd);
            close(fd);
            hp_status e;
            if (err == EWOULDBLOCK) {
                char who[64];
                if (pid > 0)
                    snprintf(who, sizeof who, "pid %ld%s", pid, pid == (long)getpid() ? ", this process" : "");
                else
                    snprintf(who, sizeof who, "pid unknown");
                e = hp_errorf("%s: another run (%s) is writing checkpoints into this directory (it holds %s); "
                              "stop it or use another checkpoint directory",
                              run_dir, who, path);
            } else {
                e = hp_errorf("%s: cannot lock: %s", path, strerror(err));
            }
            free(path);
            return e;
        }
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
            close(fd);
            continue;
        }
        long old = read_pid(fd);
        char text[32];
        int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
            hp_status e = hp_errorf("%s: cannot write the lock file: %s", path, strerror(errno));
            unlink(path);
            close(fd);
            free(path);
            return e;
        }
        if (stale_pid) *stale_pid = old;
        hp_ckpt_lock *l = malloc(sizeof *l);
        HP_ASSERT(l != NULL);
        l->fd = fd;
        l->path = path;
        *out = l;
        return HP_OK;
    }
    hp_status e = hp_errorf("%s: the lock file keeps changing; another run is starting or stopping here", path);
    free(path);
    return e;
}

void hp_ckpt_lock_release(hp_ckpt_lock *l) {
    if (!l) return;
    unlink(l->path); /* while still holding it: see hp_ckpt_lock_acquire */
    close(l->fd);
    free(l->path);
    free(l);
}
