/* The fixtures of test_tar.c (see tar_fixtures.h). */
#include "tar_fixtures.h"

/* ---- an archive writer ------------------------------------------------------------------ */

void a_put(struct arch *a, const void *d, size_t n)
{
	if (a->len + n > a->cap) {
		size_t cap = a->cap ? a->cap : 4096;

		while (cap < a->len + n)
			cap *= 2;
		a->p = realloc(a->p, cap);
		if (!a->p)
			abort();
		a->cap = cap;
	}
	if (d)
		memcpy(a->p + a->len, d, n);
	else
		memset(a->p + a->len, 0, n);
	a->len += n;
}

void a_pad(struct arch *a)
{
	if (a->len % 512)
		a_put(a, NULL, 512 - a->len % 512);
}

void a_zeros(struct arch *a, size_t blocks)
{
	a_put(a, NULL, blocks * 512);
}

void octal(uint8_t *f, size_t n, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%0*" PRIo64, (int)n - 1, v);
	memcpy(f, buf, n - 1);
	f[n - 1] = 0;
}

void b256(uint8_t *f, size_t n, int64_t v)
{
	uint64_t u = (uint64_t)v;

	for (size_t i = n; i-- > 0;) {
		f[i] = (uint8_t)u;
		u = (uint64_t)((int64_t)u >> 8);
	}
	f[0] = v < 0 ? 0xff : 0x80;
}

void set_chksum(uint8_t *b)
{
	unsigned sum = 0;

	memset(b + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += b[i];
	snprintf((char *)b + 148, 8, "%06o", sum);
	b[155] = ' ';
}

void mk_header(uint8_t *b, const struct hdr *h)
{
	memset(b, 0, 512);
	strncpy((char *)b, h->name, 100);
	octal(b + 100, 8, h->mode ? h->mode : 0644);
	if (h->b256_uid) {
		b256(b + 108, 8, (int64_t)h->uid);
		b256(b + 116, 8, (int64_t)h->gid);
	} else {
		octal(b + 108, 8, h->uid);
		octal(b + 116, 8, h->gid);
	}
	if (h->b256_size)
		b256(b + 124, 12, (int64_t)h->size);
	else
		octal(b + 124, 12, h->size);
	if (h->b256_mtime)
		b256(b + 136, 12, h->mtime);
	else
		octal(b + 136, 12, (uint64_t)h->mtime);
	b[156] = (uint8_t)h->type;
	if (h->link)
		strncpy((char *)b + 157, h->link, 100);
	if (h->fmt == F_USTAR) {
		memcpy(b + 257, "ustar", 6);
		memcpy(b + 263, "00", 2);
	} else if (h->fmt == F_GNU)
		memcpy(b + 257, "ustar  \0", 8);
	if (h->fmt != F_V7) {
		strncpy((char *)b + 265, h->uname ? h->uname : "", 32);
		strncpy((char *)b + 297, h->gname ? h->gname : "", 32);
		octal(b + 329, 8, h->devmajor);
		octal(b + 337, 8, h->devminor);
	}
	if (h->fmt == F_USTAR && h->prefix)
		strncpy((char *)b + 345, h->prefix, 155);
	set_chksum(b);
}

/* Header + data + padding; returns the header's offset. */
size_t add(struct arch *a, const struct hdr *h, const void *data, size_t len)
{
	uint8_t b[512];
	size_t off = a->len;

	mk_header(b, h);
	a_put(a, b, 512);
	if (len)
		a_put(a, data, len);
	a_pad(a);
	return off;
}

size_t add_file(struct arch *a, enum fmt fmt, const char *name, const char *data)
{
	struct hdr h = {.fmt = fmt, .name = name, .type = '0', .size = strlen(data), .mtime = 1000};

	return add(a, &h, data, strlen(data));
}

/* One PAX record "LEN key=value\n". */
void pax_rec(struct arch *r, const char *key, const void *val, size_t vlen)
{
	size_t base = strlen(key) + vlen + 3, len = base, digits;
	char num[32];

	for (;;) {
		digits = (size_t)snprintf(num, sizeof(num), "%zu", len);
		if (base + digits == len)
			break;
		len = base + digits;
	}
	a_put(r, num, digits);
	a_put(r, " ", 1);
	a_put(r, key, strlen(key));
	a_put(r, "=", 1);
	a_put(r, val, vlen);
	a_put(r, "\n", 1);
}

void pax_str(struct arch *r, const char *key, const char *val)
{
	pax_rec(r, key, val, strlen(val));
}

/* An x/g (or L/K) header carrying payload. */
size_t add_meta(struct arch *a, char type, const void *payload, size_t len)
{
	struct hdr h = {.fmt = type == 'L' || type == 'K' ? F_GNU : F_USTAR,
			.name = type == 'L' || type == 'K' ? "././@LongLink" : "PaxHeader/x",
			.type = type,
			.size = len};

	return add(a, &h, payload, len);
}

void add_long(struct arch *a, char type, const char *name)
{
	add_meta(a, type, name, strlen(name) + 1);
}

/* ---- collecting entries ----------------------------------------------------------------- */

static char logbuf[1 << 16];
static size_t loglen;

void sink(int level, const char *msg, void *opaque)
{
	int n = snprintf(logbuf + loglen, sizeof(logbuf) - loglen, "%d %s\n", level, msg);

	if (n > 0 && (size_t)n < sizeof(logbuf) - loglen)
		loglen += (size_t)n;
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "log %d: %s\n", level, msg);
}

bool logged(const char *s)
{
	return strstr(logbuf, s) != NULL;
}

static char *dupn(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static int on_entry(void *opaque, const struct arc_member *e)
{
	struct result *r = opaque;
	struct got *g;

	if (r->n >= MAXGOT)
		return -ENOSPC;
	g = &r->e[r->n++];
	if (r->stop_at && (int)r->n == r->stop_at)
		return -ECANCELED;
	CHECK(e->path[e->path_len] == 0);
	CHECK(e->link[e->link_len] == 0);
	CHECK(strlen((const char *)e->path) == e->path_len);
	g->path = dupn(e->path, e->path_len);
	g->path_len = e->path_len;
	g->link = dupn(e->link, e->link_len);
	g->link_len = e->link_len;
	g->uname = strdup(e->uname);
	g->gname = strdup(e->gname);
	g->type = e->type;
	g->hdr_off = e->hdr_off;
	g->data_off = e->data_off;
	g->size = e->size;
	g->stored = e->stored;
	g->mode = e->mode;
	g->uid = e->uid;
	g->gid = e->gid;
	g->mtime_sec = e->mtime_sec;
	g->mtime_nsec = e->mtime_nsec;
	g->dev_major = e->dev_major;
	g->dev_minor = e->dev_minor;
	g->has_sparse = e->sparse != NULL;
	CHECK(e->sparse || !e->nsparse);
	g->nsp = e->nsparse;
	for (size_t i = 0; i < e->nsparse && i < 64; i++)
		g->sp[i] = e->sparse[i];
	g->nx = e->nxattrs;
	CHECK(e->xattrs || !e->nxattrs);
	for (size_t i = 0; i < e->nxattrs && i < 8; i++) {
		snprintf(g->xname[i], sizeof(g->xname[i]), "%s", e->xattrs[i].name);
		g->xlen[i] = e->xattrs[i].len;
		memcpy(g->xval[i], e->xattrs[i].value,
		       e->xattrs[i].len < 64 ? e->xattrs[i].len : 64);
	}
	return 0;
}

static void on_progress(void *opaque, uint64_t off)
{
	struct result *r = opaque;

	if (off < r->last_progress)
		r->progress_backwards = true;
	r->last_progress = off;
	r->progress_calls++;
}

void result_free(struct result *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->e[i].path);
		free(r->e[i].link);
		free(r->e[i].uname);
		free(r->e[i].gname);
	}
	free(r);
}

bool opt_ignore_zeros; /* parse_src: tar --ignore-zeros */

struct result *parse_src(struct src *s, int stop_at)
{
	struct result *r = calloc(1, sizeof(*r));
	struct tar_callbacks cb = {.entry = on_entry,
				   .progress = on_progress,
				   .opaque = r,
				   .ignore_zeros = opt_ignore_zeros};
	unsigned long w = tfs_log_count(TFS_LOG_WARNING), nt = tfs_log_count(TFS_LOG_NOTICE);

	loglen = 0;
	logbuf[0] = 0;
	r->stop_at = stop_at;
	r->ret = tar_parse(s, &cb, &r->st);
	r->warnings = tfs_log_count(TFS_LOG_WARNING) - w;
	r->notices = tfs_log_count(TFS_LOG_NOTICE) - nt;
	CHECK(!r->progress_backwards);
	if (r->ret == 0)
		CHECK_EQ(r->st.members, r->n);
	return r;
}

struct result *parse_mem(const void *buf, size_t len)
{
	struct src *s = src_from_mem(buf, len);
	struct result *r = parse_src(s, 0);

	src_free(s);
	return r;
}

/* ---- a recording source: forward-only, logs every read ---------------------------------- */

static ssize_t rec_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct rec_src *r = opaque;

	if (off < r->pos) {
		r->backwards = true;
		return -ESPIPE;
	}
	if (r->nreads == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->reads = realloc(r->reads, r->cap * sizeof(*r->reads));
	}
	r->reads[r->nreads][0] = off;
	r->reads[r->nreads][1] = off + len;
	r->nreads++;
	r->pos = off + len;
	if (off >= r->len)
		return 0;
	if (len > r->len - off)
		len = r->len - off;
	memcpy(buf, r->buf + off, len);
	return (ssize_t)len;
}

const struct src_ops rec_ops = {.pread = rec_pread};
