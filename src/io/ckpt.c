#include "io/ckpt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/fsutil.h"

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

static hp_status check_state_json(const char *dir, const char *state_json) {
    hp_json *j;
    hp_status e = hp_json_parse(&j, state_json, strlen(state_json));
    if (e) return hp_error_wrap(e, "%s/%s: state is not valid JSON", dir, HP_CKPT_STATE);
    if (j->type != HP_JSON_OBJECT)
        e = hp_errorf("%s/%s: state must be a JSON object, got %s", dir, HP_CKPT_STATE, hp_json_type_name(j->type));
    hp_json_free(j);
    return e;
}

static hp_status write_into(const char *tmp, const hp_named_tensor *weights, int nw, const hp_named_tensor *opt,
                            int no, const char *state_json) {
    char *p = hp_fs_join(tmp, HP_CKPT_MODEL);
    hp_status e = hp_safetensors_write(p, weights, nw, NULL);
    free(p);
    if (e) return e;
    p = hp_fs_join(tmp, HP_CKPT_OPTIM);
    e = hp_safetensors_write(p, opt, no, NULL);
    free(p);
    if (e) return e;
    p = hp_fs_join(tmp, HP_CKPT_STATE);
    e = hp_fs_write_atomic(p, state_json, strlen(state_json));
    free(p);
    if (e) return e;
    return hp_fs_fsync_dir(tmp);
}

hp_status hp_ckpt_save(const char *dir_in, const hp_named_tensor *weights, int nw, const hp_named_tensor *opt_state,
                       int no, const char *state_json) {
    if (!dir_in || !*dir_in) return hp_errorf("checkpoint: empty directory name");
    HP_TRY(check_state_json(dir_in, state_json));
    char *dir = trimmed(dir_in);
    char *parent = hp_fs_dirname(dir);
    size_t n = strlen(dir);
    char *tmp = malloc(n + 16), *old = malloc(n + 16);
    HP_ASSERT(tmp && old);
    snprintf(tmp, n + 16, "%s.tmp-XXXXXX", dir);
    snprintf(old, n + 16, "%s.old-XXXXXX", dir);
    int have_tmp = 0, have_old = 0;

    hp_status e = hp_fs_mkdir_p(parent);
    if (!e) {
        if (!mkdtemp(tmp))
            e = hp_errorf("%s: cannot create temporary directory %s: %s", dir, tmp, strerror(errno));
        else
            have_tmp = 1;
    }
    if (!e) e = write_into(tmp, weights, nw, opt_state, no, state_json);
    struct stat sb;
    if (!e && lstat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            e = hp_errorf("%s: exists and is not a checkpoint directory; not replacing it", dir);
        } else if (!mkdtemp(old)) {
            e = hp_errorf("%s: cannot create a place for the old checkpoint %s: %s", dir, old, strerror(errno));
        } else {
            have_old = 1;
            /* rename onto the empty directory just made replaces it */
            if (rename(dir, old) != 0) {
                e = hp_errorf("%s: cannot move the old checkpoint aside to %s: %s", dir, old, strerror(errno));
                (void)hp_fs_remove_tree(old);
                have_old = 0;
            }
        }
    }
    if (!e) {
        if (rename(tmp, dir) != 0) {
            e = hp_errorf("%s: cannot rename %s into place: %s", dir, tmp, strerror(errno));
            if (have_old && rename(old, dir) == 0) have_old = 0; /* put the old one back */
        } else {
            have_tmp = 0;
        }
    }
    if (!e) e = hp_fs_fsync_dir(parent);
    if (have_tmp) (void)hp_fs_remove_tree(tmp);
    if (have_old && !have_tmp) { /* the new checkpoint is in place: drop the old one */
        hp_status r = hp_fs_remove_tree(old);
        if (!r) r = hp_fs_fsync_dir(parent);
        if (!e) e = r;
        else hp_status_free(r);
    }
    free(tmp);
    free(old);
    free(parent);
    free(dir);
    return e;
}

hp_status hp_ckpt_set_latest(const char *dir) {
    char *t = trimmed(dir);
    char *parent = hp_fs_dirname(t);
    char *name = base_name(t);
    char *path = hp_fs_join(parent, HP_CKPT_LATEST);
    size_t n = strlen(name);
    char *text = malloc(n + 2);
    HP_ASSERT(text != NULL);
    memcpy(text, name, n);
    text[n] = '\n';
    text[n + 1] = 0;
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

hp_status hp_ckpt_get_latest(char **dir, const char *run_dir) {
    *dir = NULL;
    char *path = hp_fs_join(run_dir, HP_CKPT_LATEST);
    char *text;
    size_t n;
    hp_status e = hp_fs_read_all(&text, &n, path);
    if (e) {
        free(path);
        return e;
    }
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ')) text[--n] = 0;
    if (n == 0 || memchr(text, '/', n) || memchr(text, 0, n) || memchr(text, '\n', n) || !strcmp(text, ".") ||
        !strcmp(text, ".."))
        e = hp_errorf("%s: expected one checkpoint directory name on one line", path);
    if (!e) {
        char *d = hp_fs_join(run_dir, text);
        struct stat sb;
        if (stat(d, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            e = hp_errorf("%s: names '%s', but %s is not a directory", path, text, d);
            free(d);
        } else {
            *dir = d;
        }
    }
    free(text);
    free(path);
    return e;
}

void hp_ckpt_close(hp_ckpt *ck) {
    hp_safetensors_close(ck->model);
    hp_safetensors_close(ck->optim);
    hp_json_free(ck->state);
    free(ck->state_text);
    memset(ck, 0, sizeof *ck);
}

static hp_status open_ckpt(hp_ckpt *ck, const char *dir, int with_optim) {
    memset(ck, 0, sizeof *ck);
    struct stat sb;
    if (stat(dir, &sb) != 0) return hp_errorf("%s: cannot open checkpoint: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return hp_errorf("%s: not a checkpoint directory", dir);
    char *p = hp_fs_join(dir, HP_CKPT_MODEL);
    hp_status e = hp_safetensors_open(&ck->model, p);
    free(p);
    if (!e && with_optim) {
        p = hp_fs_join(dir, HP_CKPT_OPTIM);
        e = hp_safetensors_open(&ck->optim, p);
        free(p);
    }
    if (!e) {
        p = hp_fs_join(dir, HP_CKPT_STATE);
        size_t n;
        e = hp_fs_read_all(&ck->state_text, &n, p);
        if (!e) {
            e = hp_json_parse(&ck->state, ck->state_text, n);
            if (e)
                e = hp_error_wrap(e, "%s", p);
            else if (ck->state->type != HP_JSON_OBJECT)
                e = hp_errorf("%s: expected a JSON object, got %s", p, hp_json_type_name(ck->state->type));
        }
        free(p);
    }
    if (e) hp_ckpt_close(ck);
    return e;
}

hp_status hp_ckpt_open(hp_ckpt *ck, const char *dir) { return open_ckpt(ck, dir, 1); }
hp_status hp_ckpt_open_weights(hp_ckpt *ck, const char *dir) { return open_ckpt(ck, dir, 0); }
