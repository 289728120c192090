/* Small helpers of tarseek-bench (see bench_util.h): every allocation failure ends in
 * bench_oom(), so the rest of the program never checks for NULL from these.
 */
#include "tools/bench/bench_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"

void bench_oom(void)
{
	fputs("tarseek-bench: out of memory\n", stderr);
	exit(BENCH_EXIT_FAILED);
}

void *bench_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		bench_oom();
	return p;
}

void *bench_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		bench_oom();
	return p;
}

void *bench_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		bench_oom();
	return p;
}

char *bench_xstrdup(const char *s)
{
	char *p = bench_xmalloc(strlen(s) + 1);

	return strcpy(p, s);
}

char *bench_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		bench_oom();
	return s;
}

void bench_samples_add(struct bench_samples *s, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 8;
		s->v = bench_xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = v;
}

void bench_split_words(const char *s, char ***v, size_t *n)
{
	char *copy = bench_xstrdup(s), *save = NULL;

	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		*v = bench_xrealloc(*v, (*n + 2) * sizeof(**v));
		(*v)[(*n)++] = bench_xstrdup(w);
		(*v)[*n] = NULL;
	}
	free(copy);
}
