/* tests/io/io_testutil: helpers shared by the io tests. */
#ifndef HP_IO_TESTUTIL_H
#define HP_IO_TESTUTIL_H

#include <dirent.h>
#include <string.h>

/* Entries of a directory other than . and .. (-1 if it cannot be opened):
 * the tests use it to see that nothing temporary was left behind. */
static inline int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
}

#endif
