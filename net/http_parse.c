/* The status line and headers of an HTTP answer (see http_parse.h). */
#include "net/http_parse.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void http_answer_reset(struct http_answer *a)
{
	memset(a, 0, sizeof(*a));
	a->retry_after = -1;
}

/* A decimal number of up to 19 digits at s (n bytes), moved past; false if none. */
static bool number(const char **s, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	while (*s < end && isdigit((unsigned char)**s) && digits < 19) {
		v = v * 10 + (uint64_t)(**s - '0');
		(*s)++;
		digits++;
	}
	*out = v;
	return digits > 0 && !(*s < end && isdigit((unsigned char)**s));
}

static bool lit(const char **s, const char *end, char c)
{
	if (*s < end && **s == c) {
		(*s)++;
		return true;
	}
	return false;
}

/* "bytes FIRST-LAST/TOTAL", "bytes * /TOTAL" (without the space), "bytes FIRST-LAST/ *". */
static void content_range(struct http_answer *a, const char *v, const char *end)
{
	uint64_t first, last, total;

	if (end - v < 6 || strncasecmp(v, "bytes ", 6) != 0)
		return;
	v += 6;
	if (lit(&v, end, '*')) {
		if (lit(&v, end, '/') && number(&v, end, &total) && v == end) {
			a->have_crange = true;
			a->crange_first = a->crange_last = 0;
			a->crange_total = total;
			a->total_unknown = false;
		}
		return;
	}
	if (!number(&v, end, &first) || !lit(&v, end, '-') || !number(&v, end, &last) ||
	    last < first || !lit(&v, end, '/'))
		return;
	if (lit(&v, end, '*') && v == end) {
		a->have_crange = a->total_unknown = true;
		a->crange_first = first;
		a->crange_last = last;
		return;
	}
	if (number(&v, end, &total) && v == end && last < total) {
		a->have_crange = true;
		a->total_unknown = false;
		a->crange_first = first;
		a->crange_last = last;
		a->crange_total = total;
	}
}

void http_answer_line(struct http_answer *a, const char *line, size_t len)
{
	const char *end = line + len, *v, *colon;
	size_t kl;

	while (end > line && (end[-1] == '\r' || end[-1] == '\n'))
		end--;
	if (end - line >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		const char *sp = memchr(line, ' ', (size_t)(end - line));
		uint64_t st = 0;
		http_answer_reset(a);
		if (sp && (v = sp + 1, number(&v, end, &st)) && st < 1000)
			a->status = (long)st;
		return;
	}
	colon = memchr(line, ':', (size_t)(end - line));
	if (!colon)
		return;
	kl = (size_t)(colon - line);
	v = colon + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	int vl = (int)(end - v);
	if (kl == 4 && strncasecmp(line, "etag", 4) == 0) {
		snprintf(a->etag, sizeof(a->etag), "%.*s", vl, v);
	} else if (kl == 13 && strncasecmp(line, "last-modified", 13) == 0) {
		snprintf(a->lastmod, sizeof(a->lastmod), "%.*s", vl, v);
	} else if (kl == 11 && strncasecmp(line, "retry-after", 11) == 0) {
		uint64_t s;
		a->retry_after = number(&v, end, &s) && v == end && s < 86400 ? (long)s : -1;
	} else if (kl == 13 && strncasecmp(line, "content-range", 13) == 0) {
		content_range(a, v, end);
	}
}
