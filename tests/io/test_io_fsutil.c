/* Atomic files: contents land whole, no temporaries stay behind, errors name
 * the file; mkdir -p, read_all, remove_tree, dirname. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsutil.h"
#include "io_testutil.h"
#include "testutil.h"

static void check_dirname(const char *path, const char *want) {
    char *d = hp_fs_dirname(path);
    CHECK(!strcmp(d, want));
    if (strcmp(d, want)) fprintf(stderr, "  dirname(%s) = %s, want %s\n", path, d, want);
    free(d);
}

int main(void) {
    char dir[] = "/tmp/hp_io_fs_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);

    char *f = hp_fs_join(dir, "a.txt");
    CHECK_OK(hp_fs_write_atomic(f, "hello", 5));
    char *data;
    size_t n;
    CHECK_OK(hp_fs_read_all(&data, &n, f));
    CHECK(n == 5 && !memcmp(data, "hello", 5) && data[5] == 0);
    free(data);
    /* overwrite with something shorter; the directory holds only the file */
    CHECK_OK(hp_fs_write_atomic(f, "hi", 2));
    CHECK_OK(hp_fs_read_all(&data, &n, f));
    CHECK(n == 2 && !memcmp(data, "hi", 2));
    free(data);
    CHECK(count_entries(dir) == 1);
    struct stat sb;
    CHECK(stat(f, &sb) == 0 && (sb.st_mode & 0777) == 0644);

    /* streaming writer: abort leaves nothing, commit publishes */
    char *g = hp_fs_join(dir, "b.bin");
    hp_afile af;
    CHECK_OK(hp_afile_open(&af, g));
    CHECK_OK(hp_afile_write(&af, "xyz", 3));
    hp_afile_abort(&af);
    CHECK(!hp_fs_exists(g) && count_entries(dir) == 1);
    CHECK_OK(hp_afile_open(&af, g));
    CHECK_OK(hp_afile_write(&af, "xy", 2));
    CHECK_OK(hp_afile_write(&af, "z", 1));
    CHECK_OK(hp_afile_commit(&af));
    CHECK_OK(hp_fs_read_all(&data, &n, g));
    CHECK(n == 3 && !memcmp(data, "xyz", 3));
    free(data);
    CHECK(count_entries(dir) == 2);

    /* empty file */
    CHECK_OK(hp_fs_write_atomic(g, "", 0));
    CHECK_OK(hp_fs_read_all(&data, &n, g));
    CHECK(n == 0 && data && data[0] == 0);
    free(data);

    /* errors name the file */
    char *nodir = hp_fs_join(dir, "no/such/dir/c.txt");
    CHECK_ERR(hp_fs_write_atomic(nodir, "x", 1), "no/such/dir/c.txt: cannot create the temporary file beside it");
    CHECK_ERR(hp_fs_read_all(&data, &n, nodir), "no/such/dir/c.txt: cannot open: No such file or directory");
    CHECK_ERR(hp_fs_read_all(&data, &n, dir), "not a regular file (a directory)");
    CHECK_ERR(hp_fs_write_atomic("", "x", 1), "empty path");

    /* mkdir -p, then remove the tree */
    char *deep = hp_fs_join(dir, "p//q/r/");
    CHECK_OK(hp_fs_mkdir_p(deep));
    CHECK_OK(hp_fs_mkdir_p(deep)); /* again: fine */
    CHECK(stat(deep, &sb) == 0 && S_ISDIR(sb.st_mode));
    char *inner = hp_fs_join(deep, "file");
    CHECK_OK(hp_fs_write_atomic(inner, "1", 1));
    char *blocked = hp_fs_join(f, "sub"); /* a.txt is a file */
    CHECK_ERR(hp_fs_mkdir_p(blocked), "a.txt exists and is not a directory");
    char *p = hp_fs_join(dir, "p");
    CHECK_OK(hp_fs_remove_tree(p));
    CHECK(!hp_fs_exists(p));
    CHECK_OK(hp_fs_remove_tree(p)); /* missing: fine */

    check_dirname("/a/b/c", "/a/b");
    check_dirname("/a/b/c/", "/a/b");
    check_dirname("c", ".");
    check_dirname("/c", "/");
    check_dirname("a//c", "a");
    char *j = hp_fs_join("/x/", "y");
    CHECK(!strcmp(j, "/x/y"));
    free(j);

    free(p);
    free(blocked);
    free(inner);
    free(deep);
    free(nodir);
    free(g);
    free(f);
    CHECK_OK(hp_fs_remove_tree(dir));
    CHECK(!hp_fs_exists(dir));
    return hp_test_finish("test_io_fsutil");
}
