/* What test_tar.c's tests share (tar_fixtures.c): an archive writer (headers of every format,
 * PAX records, GNU long names), the recording callbacks that keep every entry the parser
 * reports and what it logged, parse helpers, and a forward-only source that records every read.
 */
#ifndef TARSEEK_TEST_TAR_FIXTURES_H
#define TARSEEK_TEST_TAR_FIXTURES_H

#include "containers/tar/tar.h"
#include "common/log.h"
#include "testutil.h"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

struct arch {
	uint8_t *p;
	size_t len, cap;
};

enum fmt { F_V7, F_USTAR, F_GNU };

struct hdr {
	enum fmt fmt;
	const char *name; /* copied with strncpy into 100 bytes: may fill it without NUL */
	const char *prefix;
	char type;
	uint64_t size;
	unsigned mode;
	uint64_t uid, gid;
	int64_t mtime;
	const char *link;
	const char *uname, *gname;
	unsigned devmajor, devminor;
	bool b256_size, b256_mtime, b256_uid;
};

struct got {
	char *path, *link, *uname, *gname;
	size_t path_len, link_len;
	enum member_type type;
	uint64_t hdr_off, data_off, size, stored, uid, gid;
	uint32_t mode, mtime_nsec, dev_major, dev_minor;
	int64_t mtime_sec;
	bool has_sparse;
	struct member_sparse sp[64];
	size_t nsp;
	size_t nx;
	char xname[8][64];
	uint8_t xval[8][64];
	size_t xlen[8];
};

#define MAXGOT 1024

struct result {
	struct got e[MAXGOT];
	size_t n;
	int ret;
	int stop_at; /* entry callback fails at this entry (1-based) */
	struct tar_stats st;
	unsigned long warnings, notices;
	unsigned progress_calls;
	uint64_t last_progress;
	bool progress_backwards;
};

struct rec_src {
	const uint8_t *buf;
	size_t len;
	uint64_t pos; /* end of the previous read */
	bool backwards;
	uint64_t (*reads)[2];
	size_t nreads, cap;
};

void a_put(struct arch *a, const void *d, size_t n);
void a_pad(struct arch *a);
void a_zeros(struct arch *a, size_t blocks);
void octal(uint8_t *f, size_t n, uint64_t v);
void b256(uint8_t *f, size_t n, int64_t v);
void set_chksum(uint8_t *b);
void mk_header(uint8_t *b, const struct hdr *h);
size_t add(struct arch *a, const struct hdr *h, const void *data, size_t len);
size_t add_file(struct arch *a, enum fmt fmt, const char *name, const char *data);
void pax_rec(struct arch *r, const char *key, const void *val, size_t vlen);
void pax_str(struct arch *r, const char *key, const char *val);
size_t add_meta(struct arch *a, char type, const void *payload, size_t len);
void add_long(struct arch *a, char type, const char *name);
void sink(int level, const char *msg, void *opaque);
bool logged(const char *s);
void result_free(struct result *r);
extern bool opt_ignore_zeros;
struct result *parse_src(struct src *s, int stop_at);
struct result *parse_mem(const void *buf, size_t len);
extern const struct src_ops rec_ops;

#endif
