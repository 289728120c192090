/* What a server's answer says in its status line and headers, as http.c reads it: the parts
 * a ranged GET depends on.  Server bytes are untrusted: every field is bounded and
 * NUL-terminated, a malformed header is ignored (tests/fuzz/fuzz_http.c).
 */
#ifndef TARSEEK_HTTP_PARSE_H
#define TARSEEK_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_answer {
	long status;		 /* of the last status line (0: none yet, or unparsable) */
	char etag[256];		 /* "" if none */
	char lastmod[80];	 /* Last-Modified, "" if none */
	long retry_after;	 /* seconds, -1: none (or a date) */
	bool have_crange;	 /* Content-Range: bytes FIRST-LAST/TOTAL, bytes * /TOTAL ... */
	bool total_unknown;	 /* ... or bytes FIRST-LAST/ * */
	uint64_t crange_first, crange_last, crange_total;
};

/* Forgets everything (a new request). */
void http_answer_reset(struct http_answer *a);

/* Takes one header line of len bytes (not NUL-terminated; its CR LF may be there).  A
 * status line ("HTTP/...") starts a new answer: after a redirect or a 100 Continue, the
 * headers of the last one count. */
void http_answer_line(struct http_answer *a, const char *line, size_t len);

#endif
