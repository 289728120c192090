/* Small helpers of tarseek-bench: allocation that cannot fail, sample lists, word splitting.
 *
 * The bench cannot do anything useful without memory, so these helpers do not return NULL:
 * they print "tarseek-bench: out of memory" and exit with BENCH_EXIT_FAILED (3).  What they
 * return is malloc'd and belongs to the caller.  No state of their own.
 */
#ifndef TARSEEK_BENCH_UTIL_H
#define TARSEEK_BENCH_UTIL_H

#include <stddef.h>

struct bench_samples;

/* Prints the out-of-memory message and exits with BENCH_EXIT_FAILED. */
void bench_oom(void) __attribute__((noreturn));

/* malloc, calloc and realloc that exit on failure; a size of 0 allocates 1 byte. */
void *bench_xmalloc(size_t n);
void *bench_xcalloc(size_t n, size_t size);
void *bench_xrealloc(void *p, size_t n);
char *bench_xstrdup(const char *s);
char *bench_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Appends v to s, growing it as needed. */
void bench_samples_add(struct bench_samples *s, double v);

/* Splits s at spaces and tabs into a NULL-terminated argv appended to *v (count in *n). */
void bench_split_words(const char *s, char ***v, size_t *n);

#endif
