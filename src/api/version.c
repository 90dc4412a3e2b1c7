/* api/version: the library's version string. */
#include "api/api.h"

#define HP_STR_(x) #x
#define HP_STR(x) HP_STR_(x)

const char *hp_version(void) {
    return HP_STR(HP_VERSION_MAJOR) "." HP_STR(HP_VERSION_MINOR) "." HP_STR(HP_VERSION_PATCH);
}
