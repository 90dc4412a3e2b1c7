/* Checkpoint directory hygiene (io/ckpt_dir, issue 11 defect 7): a stage
 * committed or aborted leaves nothing temporary; hp_ckpt_find falls back to
 * the newest complete step_* when `latest` is missing or dangling (and to a
 * checkpoint moved aside by a save that crashed between its renames);
 * recovery puts each crash's leftovers in order; retention keeps the K
 * newest and latest's; the lock refuses a second writer naming its pid and
 * is taken over from a dead one. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/ckpt_dir.h"
#include "io/fsutil.h"
#include "io_testutil.h"
#include "testutil.h"

static char run[64];

static char *at(const char *name) { return hp_fs_join(run, name); }

/* A complete checkpoint directory run/name holding `tag` in its files. */
static void make_ckpt(const char *name, const char *tag) {
    char *d = at(name);
    CHECK_OK(hp_fs_mkdir_p(d));
    char *f = hp_fs_join(d, "model.bin");
    CHECK_OK(hp_fs_write_atomic(f, tag, strlen(tag)));
    free(f);
    f = hp_fs_join(d, HP_CKPT_COMMIT_FILE);
    CHECK_OK(hp_fs_write_atomic(f, "{}", 2));
    free(f);
    free(d);
}

/* A directory without the commit file (a stage cut short). */
static void make_partial(const char *name) {
    char *d = at(name);
    CHECK_OK(hp_fs_mkdir_p(d));
    char *f = hp_fs_join(d, "model.bin");
    CHECK_OK(hp_fs_write_atomic(f, "part", 4));
    free(f);
    free(d);
}

static void set_latest_text(const char *text) {
    char *p = at(HP_CKPT_LATEST);
    CHECK_OK(hp_fs_write_atomic(p, text, strlen(text)));
    free(p);
}

static int exists(const char *name) {
    char *p = at(name);
    int r = hp_fs_exists(p);
    free(p);
    return r;
}

/* The tag a checkpoint directory's model.bin holds ("" when none). */
static const char *tag_of(const char *dir) {
    static char buf[64];
    char *f = hp_fs_join(dir, "model.bin");
    char *x;
    size_t n;
    buf[0] = 0;
    hp_status e = hp_fs_read_all(&x, &n, f);
    if (!e) {
        snprintf(buf, sizeof buf, "%.*s", (int)n, x);
        free(x);
    }
    hp_status_free(e);
    free(f);
    return buf;
}

static void expect_find(const char *want_tag) {
    char *d = NULL;
    CHECK_OK(hp_ckpt_find(&d, run));
    CHECKF(d && !strcmp(tag_of(d), want_tag), "found %s (%s), expected %s", d ? d : "nothing", d ? tag_of(d) : "",
           want_tag);
    free(d);
}

static void expect_latest(const char *want) {
    char *p = at(HP_CKPT_LATEST), *x;
    size_t n;
    CHECK_OK(hp_fs_read_all(&x, &n, p));
    char w[300];
    snprintf(w, sizeof w, "%s\n", want);
    CHECKF(x && !strcmp(x, w), "latest holds '%s', expected '%s'", x ? x : "", want);
    free(x);
    free(p);
}

static void reset(void) {
    CHECK_OK(hp_fs_remove_tree(run));
    CHECK_OK(hp_fs_mkdir_p(run));
}

static void test_stage(void) {
    reset();
    char *d = at("step_000001");
    hp_ckpt_stage s;
    CHECK_OK(hp_ckpt_stage_begin(&s, d));
    CHECK(count_entries(run) == 1 && s.tmp && strstr(s.tmp, "step_000001.tmp-"));
    hp_ckpt_stage_abort(&s);
    CHECK(count_entries(run) == 0);

    CHECK_OK(hp_ckpt_stage_begin(&s, d));
    char *f = hp_fs_join(s.tmp, HP_CKPT_COMMIT_FILE);
    CHECK_OK(hp_fs_write_atomic(f, "{}", 2));
    free(f);
    CHECK_OK(hp_ckpt_stage_commit(&s));
    CHECK(hp_ckpt_dir_complete(d) && count_entries(run) == 1);
    /* replacing it: the new contents, nothing left aside */
    CHECK_OK(hp_ckpt_stage_begin(&s, d));
    f = hp_fs_join(s.tmp, "model.bin");
    CHECK_OK(hp_fs_write_atomic(f, "new", 3));
    free(f);
    f = hp_fs_join(s.tmp, HP_CKPT_COMMIT_FILE);
    CHECK_OK(hp_fs_write_atomic(f, "{}", 2));
    free(f);
    CHECK_OK(hp_ckpt_stage_commit(&s));
    CHECK(!strcmp(tag_of(d), "new") && count_entries(run) == 1);
    free(d);
    CHECK_ERR(hp_ckpt_stage_begin(&s, ""), "empty directory name");
}

static void test_find(void) {
    reset();
    CHECK_ERR(hp_ckpt_find(&(char *){NULL}, run), "no checkpoint: no 'latest' file and no complete step_* directory");
    make_ckpt("step_000002", "two");
    make_ckpt("step_000010", "ten");
    make_ckpt("step_000009", "nine");
    make_partial("step_000011");                /* no commit file: not a checkpoint */
    make_ckpt("step_000012.tmp-AbC123", "tmp"); /* a stage: not a checkpoint */
    make_ckpt("other", "other");                /* not a step_* name */
    /* missing latest: the newest complete step_* by number */
    expect_find("ten");
    /* latest names a complete checkpoint: that one, even when older */
    set_latest_text("step_000002\n");
    expect_find("two");
    set_latest_text("other\n");
    expect_find("other");
    /* dangling: the newest complete */
    set_latest_text("step_000099\n");
    expect_find("ten");
    set_latest_text("step_000011\n"); /* names an incomplete one */
    expect_find("ten");
    /* a save that crashed between its renames: latest's step moved aside */
    set_latest_text("step_000020\n");
    make_ckpt("step_000020.old-Zz9Yy8", "twenty-old");
    expect_find("twenty-old");
    /* ... and the fallback counts it too (its step_N is missing) */
    set_latest_text("step_000099\n");
    expect_find("twenty-old");
    /* an .old-* next to its step_N is a superseded one, not a candidate */
    make_ckpt("step_000030", "thirty");
    make_ckpt("step_000040.old-aaaaaa", "forty-old");
    make_ckpt("step_000040", "forty");
    expect_find("forty");
    /* malformed latest: an error naming it */
    set_latest_text("../etc\n");
    CHECK_ERR(hp_ckpt_find(&(char *){NULL}, run), "latest: expected one checkpoint directory name on one line");
    /* nothing complete, latest dangling */
    reset();
    set_latest_text("step_000005\n");
    CHECK_ERR(hp_ckpt_find(&(char *){NULL}, run), "names 'step_000005', which is not a complete checkpoint");
    CHECK_ERR(hp_ckpt_find(&(char *){NULL}, "/nonexistent/hp_run"), "/nonexistent/hp_run: no such checkpoint directory");
}

static void test_recover(void) {
    hp_ckpt_recovery r;
    CHECK_OK(hp_ckpt_recover(&r, "/nonexistent/hp_run")); /* nothing there: nothing to do */
    reset();
    CHECK_OK(hp_ckpt_recover(&r, run));
    CHECK(r.removed == 0 && r.rolled_back == 0 && r.latest_set == 0);
    /* every kind of leftover at once */
    make_ckpt("step_000002", "two");
    make_partial("step_000004.tmp-Qw12Er");    /* a stage cut short */
    make_ckpt("step_000006.tmp-Ty34Ui", "six"); /* a complete stage never renamed in */
    make_ckpt("step_000004.old-Op56As", "four-old"); /* crashed between the renames: back */
    make_ckpt("step_000002.old-Df78Gh", "two-older"); /* superseded: step_000002 is there */
    make_partial("step_000001.del-Jk90Lz");    /* retention cut short */
    char *lt = at("latest.tmp-Xc12Vb");         /* latest being written */
    CHECK_OK(hp_fs_write_atomic(lt, "step_000006\n", 12));
    free(lt);
    char *notes = at("notes.txt"); /* not ours: kept */
    CHECK_OK(hp_fs_write_atomic(notes, "x", 1));
    free(notes);
    set_latest_text("step_000004\n");
    CHECK_OK(hp_ckpt_recover(&r, run));
    CHECKF(r.rolled_back == 1 && r.removed == 5 && !r.latest_set, "rolled back %d, removed %d, latest %d",
           r.rolled_back, r.removed, r.latest_set);
    CHECK(count_entries(run) == 4); /* step_000002, step_000004, latest, notes.txt */
    char *d4 = at("step_000004");
    CHECK(!strcmp(tag_of(d4), "four-old"));
    free(d4);
    char *d2 = at("step_000002");
    CHECK(!strcmp(tag_of(d2), "two"));
    free(d2);
    expect_latest("step_000004");
    expect_find("four-old");
    /* idempotent */
    CHECK_OK(hp_ckpt_recover(&r, run));
    CHECK(r.removed == 0 && r.rolled_back == 0 && r.latest_set == 0);
    /* a dangling latest is pointed at the newest complete step_* */
    set_latest_text("step_000008\n");
    CHECK_OK(hp_ckpt_recover(&r, run));
    CHECK(r.latest_set && !strcmp(r.latest_name, "step_000004"));
    expect_latest("step_000004");
    /* a missing one too */
    char *lp = at(HP_CKPT_LATEST);
    CHECK_OK(hp_fs_remove_tree(lp));
    free(lp);
    CHECK_OK(hp_ckpt_recover(&r, run));
    CHECK(r.latest_set && !strcmp(r.latest_name, "step_000004"));
    expect_latest("step_000004");
    /* no checkpoint at all: latest stays missing */
    reset();
    make_partial("step_000003.tmp-Aa11Bb");
    CHECK_OK(hp_ckpt_recover(&r, run));
    CHECK(r.removed == 1 && !r.latest_set && count_entries(run) == 0);
}

static void test_retain(void) {
    reset();
    int removed = -1;
    for (int s = 1; s <= 6; s++) {
        char name[32], tag[16];
        snprintf(name, sizeof name, "step_%06d", s * 10);
        snprintf(tag, sizeof tag, "%d", s);
        make_ckpt(name, tag);
    }
    make_partial("step_000005"); /* incomplete: neither counted nor touched */
    make_ckpt("keepme", "k");    /* not a step_* name */
    set_latest_text("step_000020\n");
    CHECK_OK(hp_ckpt_retain(&removed, run, 0, NULL)); /* 0: keep all */
    CHECK(removed == 0 && count_entries(run) == 9);
    CHECK_OK(hp_ckpt_retain(&removed, run, 2, NULL));
    CHECKF(removed == 3, "removed %d", removed);
    CHECK(exists("step_000060") && exists("step_000050") && exists("step_000020")); /* the 2 newest, and latest's */
    CHECK(!exists("step_000010") && !exists("step_000030") && !exists("step_000040"));
    CHECK(exists("step_000005") && exists("keepme") && count_entries(run) == 6);
    set_latest_text("step_000060\n");
    CHECK_OK(hp_ckpt_retain(&removed, run, 1, NULL));
    CHECK(removed == 2 && exists("step_000060") && !exists("step_000050") && !exists("step_000020"));
}

static void test_lock(void) {
    reset();
    char *sub = at("sub");
    hp_ckpt_lock *a = NULL, *b = NULL;
    long stale = -1;
    CHECK_OK(hp_ckpt_lock_acquire(&a, &stale, sub)); /* creates the directory */
    CHECK(a && stale == 0);
    char *lp = hp_fs_join(sub, HP_CKPT_LOCK), *x;
    size_t n;
    CHECK_OK(hp_fs_read_all(&x, &n, lp));
    char want[32];
    snprintf(want, sizeof want, "%ld\n", (long)getpid());
    CHECK(x && !strcmp(x, want));
    free(x);
    /* a second writer, even in this process, is refused naming the pid */
    char needle[64];
    snprintf(needle, sizeof needle, "another run (pid %ld, this process)", (long)getpid());
    CHECK_ERR(hp_ckpt_lock_acquire(&b, NULL, sub), needle);
    CHECK(b == NULL);
    hp_ckpt_lock_release(a);
    CHECK(!hp_fs_exists(lp)); /* released: the file is gone */
    CHECK_OK(hp_ckpt_lock_acquire(&b, &stale, sub));
    CHECK(stale == 0);
    hp_ckpt_lock_release(b);

    /* another process holds it: refused naming that pid; killed, it is taken over */
    int ready[2], hold[2];
    CHECK(pipe(ready) == 0 && pipe(hold) == 0);
    pid_t child = fork();
    if (child == 0) {
        hp_ckpt_lock *c = NULL;
        hp_status e = hp_ckpt_lock_acquire(&c, NULL, sub);
        char ok = e ? 'n' : 'y';
        if (write(ready[1], &ok, 1) != 1) _exit(2);
        char z;
        if (read(hold[0], &z, 1) < 0) _exit(3); /* until killed */
        _exit(0);
    }
    char ok = 0;
    CHECK(read(ready[0], &ok, 1) == 1 && ok == 'y');
    snprintf(needle, sizeof needle, "another run (pid %ld) is writing checkpoints", (long)child);
    CHECK_ERR(hp_ckpt_lock_acquire(&a, NULL, sub), needle);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(hp_fs_exists(lp)); /* a kill leaves the file */
    CHECK_OK(hp_ckpt_lock_acquire(&a, &stale, sub));
    CHECKF(stale == (long)child, "stale pid %ld, expected %ld", stale, (long)child);
    hp_ckpt_lock_release(a);
    /* a lock file a dead run left with garbage in it */
    CHECK_OK(hp_fs_write_atomic(lp, "garbage", 7));
    CHECK_OK(hp_ckpt_lock_acquire(&a, &stale, sub));
    CHECK(stale == 0);
    hp_ckpt_lock_release(a);
    hp_ckpt_lock_release(NULL);
    close(ready[0]), close(ready[1]), close(hold[0]), close(hold[1]);
    CHECK_ERR(hp_ckpt_lock_acquire(&a, NULL, "/proc/hp_no/such"), "/proc/hp_no/such");
    free(lp);
    free(sub);
}

int main(void) {
    snprintf(run, sizeof run, "/tmp/hp_ckpt_dir_XXXXXX");
    CHECK(mkdtemp(run) != NULL);
    test_stage();
    test_find();
    test_recover();
    test_retain();
    test_lock();
    CHECK_OK(hp_fs_remove_tree(run));
    return hp_test_finish("test_io_ckpt_dir");
}
