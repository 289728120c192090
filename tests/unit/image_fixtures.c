/* Images made by the real tools, parsed and decoded in memory (see image_fixtures.h). */
#include "image_fixtures.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codecs/codec.h"
#include "common/source.h"
#include "testutil.h"

#define IMG_DECODE_MAX ((uint64_t)64 << 20)

bool img_damaged;

const char *img_tmpdir(void)
{
	static char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/tarseek-img.XXXXXX");
	return mkdtemp(dir);
}

int img_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

void img_write(const char *dir, const char *name, const void *p, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	CHECK(dir && name); /* (and gcc -O1 -Wformat-truncation then knows they are not NULL) */
	if (!dir || !name)
		return;
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK(fwrite(p, 1, len, f) == len);
	fclose(f);
}

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct img_parse *p = opaque;
	struct img_stream *k;

	CHECK(s->codec && strlen(s->codec) < sizeof(k->codec));
	CHECK(s->usize > 0);
	p->s = realloc(p->s, (p->ns + 1) * sizeof(*p->s));
	k = &p->s[p->ns];
	memset(k, 0, sizeof(*k));
	snprintf(k->codec, sizeof(k->codec), "%s", s->codec);
	k->coff = s->coff;
	k->clen = s->clen;
	k->usize = s->usize;
	k->params_len = s->params_len;
	k->params = malloc(s->params_len ? s->params_len : 1);
	if (s->params_len)
		memcpy(k->params, s->params, s->params_len);
	*id = ++p->ns;
	return 0;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct img_parse *p = opaque;
	struct img_member *k;

	CHECK(m->path && m->path[m->path_len] == '\0' && m->link && m->uname && m->gname);
	CHECK((m->mode & ~07777u) == 0);
	CHECK(m->stream <= p->ns);
	CHECK(!m->unreadable || (m->why && m->stream == 0));
	if (m->stream)
		CHECK(m->data_off <= p->s[m->stream - 1].usize &&
		      m->size <= p->s[m->stream - 1].usize - m->data_off);
	p->m = realloc(p->m, (p->nm + 1) * sizeof(*p->m));
	k = &p->m[p->nm++];
	*k = (struct img_member){.path = strndup((const char *)m->path, m->path_len),
				 .link = strdup((const char *)m->link), .type = m->type,
				 .size = m->size, .stream = m->stream, .data_off = m->data_off,
				 .uid = m->uid, .gid = m->gid, .mode = m->mode,
				 .dev_major = m->dev_major, .dev_minor = m->dev_minor,
				 .mtime = m->mtime_sec, .unreadable = m->unreadable,
				 .nxattrs = m->nxattrs};
	return 0;
}

void img_parse(const struct container *c, const uint8_t *buf, size_t len, bool probe,
	       struct img_parse *out)
{
	struct src *in = src_from_mem(buf, len);
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = out,
				 .name = "test-image"};

	memset(out, 0, sizeof(*out));
	if (probe)
		CHECK(c->probe(in, buf, len < 512 ? len : 512));
	out->err = c->parse(in, &sink, &out->st);
	if (out->err == 0)
		CHECK_EQ(out->st.members, out->nm);
	src_free(in);
}

void img_parse_free(struct img_parse *p)
{
	for (size_t i = 0; i < p->nm; i++) {
		free(p->m[i].path);
		free(p->m[i].link);
	}
	for (size_t i = 0; i < p->ns; i++)
		free(p->s[i].params);
	free(p->m);
	free(p->s);
	memset(p, 0, sizeof(*p));
}

const struct img_member *img_find(const struct img_parse *p, const char *path)
{
	for (size_t i = 0; i < p->nm; i++)
		if (strcmp(p->m[i].path, path) == 0)
			return &p->m[i];
	return NULL;
}

struct ck_list {
	struct codec_ckpt c[256];
	void *aux[256];
	size_t auxlen[256];
	size_t n;
};

static int on_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct ck_list *l = opaque;

	CHECK(l->n == 0 ? ck->uoff == 0 : ck->uoff > l->c[l->n - 1].uoff);
	if (l->n == 256)
		return 0;
	l->c[l->n] = *ck;
	l->aux[l->n] = malloc(auxlen ? auxlen : 1);
	memcpy(l->aux[l->n], aux, auxlen);
	l->auxlen[l->n++] = auxlen;
	return 0;
}

/* Decoders at every checkpoint: their bytes must be the scan's, up to got. */
static void check_decoders(const struct codec *c, struct src *win, struct ck_list *l,
			   const uint8_t *want, size_t got, int scan_err)
{
	for (size_t i = 0; i < l->n; i++) {
		struct codec_ckpt ck = l->c[i];
		uint64_t end = i + 1 < l->n ? l->c[i + 1].uoff : got;
		struct codec_dec *d = NULL;
		uint8_t *b;
		uint64_t at = 0;

		if (ck.uoff >= got)
			break;
		ck.ulen = end > ck.uoff ? end - ck.uoff : 0;
		CHECK_EQ(c->dec_new(win, &ck, l->aux[i], l->auxlen[i], &d), 0);
		if (!d)
			continue;
		b = malloc(ck.ulen + 1);
		while (at < ck.ulen) {
			ssize_t n = c->dec_read(d, b + at, ck.ulen - at);
			if (n <= 0) {
				/* an error only where the scan failed too, or on damaged input
				 * (where SQLite, walking a cut overflow chain from its start, may
				 * fail where the scan's walk along it did not): never 0 early */
				if (!(n < 0 && (scan_err != 0 || img_damaged)))
					fprintf(stderr, "decoder %zu of %zu: %zd at %" PRIu64 " of %" PRIu64
						" (scan: %d, %zu bytes)\n", i, l->n, n, at, ck.ulen,
						scan_err, got);
				CHECK(n < 0 && (scan_err != 0 || img_damaged));
				break;
			}
			at += (uint64_t)n;
		}
		CHECK(at <= ck.ulen && memcmp(b, want + ck.uoff, at) == 0);
		free(b);
		c->dec_free(d);
	}
}

int img_decode(const struct img_parse *p, uint64_t id, const uint8_t *buf, size_t len,
	       uint8_t **out, size_t *got)
{
	const struct img_stream *s = &p->s[id - 1];
	const struct codec *c = codec_by_name(s->codec);
	struct src *file = src_from_mem(buf, len);
	struct src *win = src_window(file, s->coff, s->clen);
	struct codec_opts opts = {.spacing = 64 << 10, .threads = 1, .params = s->params,
				  .params_len = s->params_len};
	struct ck_list *l = calloc(1, sizeof(*l));
	struct codec_sink sink = {.checkpoint = on_ckpt, .opaque = l};
	struct codec_scan *sc = NULL;
	int err;

	*got = 0;
	*out = NULL;
	if (s->usize > IMG_DECODE_MAX)
		return -EFBIG; /* a damaged image's sizes: not compared */
	*out = malloc(s->usize + 1);
	CHECK(c != NULL);
	err = c ? c->scan_new(win, &opts, &sink, &sc) : -EINVAL;
	while (!err) {
		size_t step = 1 + (*got * 7919 + 12345) % 200000; /* varying reads */
		if (step > s->usize + 1 - *got)
			step = s->usize + 1 - *got;
		ssize_t n = c->scan_read(sc, *out + *got, step);
		if (n < 0)
			err = (int)n;
		if (n <= 0)
			break;
		*got += (size_t)n;
		if (*got > s->usize) {
			err = -E2BIG;
			break;
		}
	}
	if (!err && *got != s->usize)
		err = -EIO;
	if (sc)
		c->scan_free(sc);
	if (c)
		check_decoders(c, win, l, *out, *got, err);
	for (size_t i = 0; i < l->n; i++)
		free(l->aux[i]);
	free(l);
	src_free(win);
	src_free(file);
	return err;
}

void img_check_files(const struct img_parse *p, const uint8_t *buf, size_t len, const char *dir,
		     size_t *ok, size_t *failed, size_t *wrong)
{
	uint8_t **dec = calloc(p->ns + 1, sizeof(*dec));
	size_t *dlen = calloc(p->ns + 1, sizeof(*dlen));
	int *derr = calloc(p->ns + 1, sizeof(*derr));
	bool *done = calloc(p->ns + 1, sizeof(*done));

	*ok = *failed = *wrong = 0;
	for (size_t i = 0; i < p->nm; i++) {
		const struct img_member *m = &p->m[i];
		char path[PATH_MAX];
		size_t elen = 0;
		uint8_t *e;

		if (m->type != MEMBER_REG || m->size == 0)
			continue;
		if (m->unreadable || !m->stream) {
			(*failed)++;
			continue;
		}
		if (!done[m->stream]) {
			derr[m->stream] = img_decode(p, m->stream, buf, len, &dec[m->stream],
						     &dlen[m->stream]);
			done[m->stream] = true;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, m->path);
		e = tu_read_file(path, &elen);
		if (m->data_off + m->size > dlen[m->stream]) {
			(*failed)++; /* past where its stream failed */
			CHECK(derr[m->stream] != 0);
		} else if (e && elen == m->size && memcmp(dec[m->stream] + m->data_off, e, elen) == 0) {
			(*ok)++;
		} else {
			(*wrong)++;
		}
		free(e);
	}
	for (size_t i = 0; i <= p->ns; i++)
		free(dec[i]);
	free(dec);
	free(dlen);
	free(derr);
	free(done);
}
