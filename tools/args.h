/* tools/args: command-line flags and config files for the hyperpar commands.
 * A command declares its options once in a table; `--config FILE` (a key =
 * value file, io/config) is applied first and flags override it. Errors are
 * one line naming the flag or FILE:LINE and key. */
#ifndef HP_TOOLS_ARGS_H
#define HP_TOOLS_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "hyperpar/hyperpar.h"

typedef struct {
    const char *name; /* without the leading "--" */
    hp_opt_type type;
    void *ptr;        /* int*, long*, float*, char[cap], int* (flag), uint64_t* */
    size_t cap;       /* HP_OPT_STR buffer size */
    const char *help;
} hp_opt;

/* Parses argv[first..argc). Sets *help when --help/-h was given as a flag,
 * and then applies nothing (neither --config nor the other flags), so the
 * table still holds its defaults for hp_args_usage. */
hp_status hp_args_parse(int *help, const hp_opt *opts, int nopts, int argc, char **argv, int first,
                        const char *cmd);
/* The same, and where each option's value came from: src[i] (src has nopts
 * entries) = "flag", "config" (the --config file) or "default". */
hp_status hp_args_parse_sources(const char **src, int *help, const hp_opt *opts, int nopts, int argc, char **argv,
                                int first, const char *cmd);
/* --help: every option's description with its default, the value its table
 * holds now written as hp_args_format writes it ("(default 0.001)"); none for
 * an empty string, a flag that is off, an int at INT_MIN (a "not given"
 * marker such as train's HP_SHAPE_UNSET) or a description that states its own
 * (says "default" or "not given"). */
void hp_args_usage(const hp_opt *opts, int nopts, const char *cmd, const char *summary);
/* Prints a command's error as one line on stderr, "hyperpar: " first unless
 * the message already names the command ("hyperpar train: ..."); frees st. */
void hp_cli_error(hp_status st);



/* Sets option `name` from text as a flag would (error names `where`). */
hp_status hp_args_set(const hp_opt *opts, int nopts, const char *name, const char *value, const char *where);
/* Writes option o's current value as text (hp_opt_format). */
void hp_args_format(char *buf, size_t n, const hp_opt *o);
#endif
