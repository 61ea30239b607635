/* cli_output.h — how the command-line tool writes its output files.
 * Part of the CLI, not the library.
 *
 * The guarantees (docs/cli.md, "Output files"):
 *   - every output name is checked before any work: no control characters,
 *     an existing folder that we may write, not a directory, not one of the
 *     command's input files, not the same file as another output (compared
 *     by device and inode when the file exists, by the resolved folder and
 *     name when it does not);
 *   - nothing is written unless the command has every result: a failed run
 *     leaves existing files as they were;
 *   - all outputs or none: each is first written in full (through the
 *     library's atomic writer) to a temporary file next to its target, and
 *     only when all are written are they renamed into place; SIGINT, SIGTERM
 *     and SIGHUP wait until the renames are done;
 *   - an existing output that is not a regular file (/dev/null, /dev/full,
 *     a FIFO) is written in place, before the regular files: a write error
 *     there stops the command before any regular file is replaced.
 */
#ifndef SLA_CLI_OUTPUT_H
#define SLA_CLI_OUTPUT_H

#include <sla.h>

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* DENSE_Z and PATTERN_Z are the complex counterparts of DENSE and PATTERN
 * (values in zdata, written as "complex general"). */
typedef enum {
    CLI_OUT_DENSE,
    CLI_OUT_PATTERN,
    CLI_OUT_MATRIX,
    CLI_OUT_DENSE_Z,
    CLI_OUT_PATTERN_Z
} cli_out_kind;

typedef struct cli_output {
    const char *opt;  /* the option, for messages ("--out") */
    const char *path; /* NULL: not requested */
    const char *what; /* what it holds, for messages ("x") */
    /* the data (set before cli_outputs_write) */
    cli_out_kind kind;
    sla_int nrows, ncols;   /* CLI_OUT_DENSE */
    const double *data;     /* DENSE: nrows*ncols column-major; PATTERN: nnz values */
    const sla_complex *zdata; /* DENSE_Z, PATTERN_Z: as data, complex */
    const sla_matrix *A;    /* PATTERN, PATTERN_Z and MATRIX */
    /* filled by cli_outputs_check */
    int exists, in_place;
    dev_t dev;
    ino_t ino;
    char *target; /* the file the rename replaces (links resolved) */
    char *key;    /* resolved folder + name of a file that does not exist yet */
    char *stage;  /* temporary file while writing */
} cli_output;

/* 0, or EXIT_BAD with a message: an output name with a control character
 * (or empty) is refused. */
int cli_check_name(const char *opt, const char *path);

/* Check every requested output (see above) against each other and against
 * the inputs (NULL entries skipped). 0, or EXIT_BAD with a message. */
int cli_outputs_check(cli_output *o, int n, const char *const *inputs, int nin);

/* The first output whose data hold Inf or NaN: writes "x entry 3 (row 3,
 * column 0) is inf" into msg and returns its index; -1 when all are finite. */
int cli_outputs_nonfinite(const cli_output *o, int n, char *msg, size_t len);

/* Write every requested output, all or none (see above). 0, or an exit
 * code with a message. */
int cli_outputs_write(sla_ctx *ctx, cli_output *o, int n);

/* Put a copy of the finished file src at output o (checked by
 * cli_outputs_check) atomically: copy next to the target, fsync, rename.
 * 0, or EXIT_BAD with a message (o->path untouched). */
int cli_output_install_copy(cli_output *o, const char *src);

/* s as a JSON string. Valid UTF-8 is copied; each byte that is not part of
 * a valid UTF-8 sequence (a file name in another encoding) is written as
 * \ufffd, the replacement character, and control characters as \u00XX,
 * so the output is always valid JSON. */
void cli_json_string(FILE *f, const char *s);

/* Free what cli_outputs_check allocated (and remove stray stage files). */
void cli_outputs_free(cli_output *o, int n);

#endif
