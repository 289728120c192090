/* libFuzzer harness: the zip container (containers/zip.c) and the codecs of its streams on
 * arbitrary bytes.
 *
 *  1. cont_zip.probe and cont_zip.parse over the input in memory, with a sink that checks what
 *     container.h and member.h promise (NUL-terminated paths, a known type and permission bits
 *     only, streams declared before the members that use them with a codec that exists and a
 *     local header inside the file, a member's bytes inside its stream, a reason for every
 *     unreadable member, the count in the stats) and keeps a copy of every stream;
 *  2. zip_local_data at every member's header offset and every stream's: 0 with the data
 *     after the 30-byte header and its two variable fields, or -EIO;
 *  3. each stream (up to FZ_STREAMS of them, FZ_MAX_OUT decoded bytes each: a compression bomb
 *     makes executions slow rather than finds bugs) scanned, as the builder does, with its
 *     codec (codec_by_name) through the window of the input that follows its local header,
 *     in reads of varying size.  It may fail.  The codecs that are told the size -- "stored"
 *     (the window is the data), "lzma-zip" and "ppmd-zip" (the size in their params) -- must
 *     never return more than usize, and exactly usize when they end cleanly; the others (deflate, deflate64,
 *     bzip2, xz, zstd) do not know it, so they are read to at most usize + 1 bytes (one more is a
 *     stream the reader refuses: reader.c's "decodes to more than its size");
 *  4. decoders started at (some of) the checkpoints the scan emitted: they must start (or run
 *     out of memory), and every byte they return below the scan's verified offset must be the
 *     scan's; after a clean scan they must read to where it ended without an error;
 *  5. an input that starts with the split marker (PK\7\10, `zip -s`'s first part) is parsed
 *     once more as a split zip: cut into parts of one size (64 KiB, `zip -s 64k`'s, or one
 *     from the input) joined by parts_join, so that the translation of (disk, offset) pairs
 *     (containers/zip.c entry_disk, dir_split, the zip64 locator's disk) reads what the input
 *     says, with the same checks as 1 and 2.
 *
 * An encrypted entry (its AES extra field 0x9901 parsed, or ZipCrypto's flag) must come with
 * a record zcr_parse takes; its stream is scanned as the reader does, through zcr_open's
 * plaintext under the keyring's one password ("secret", added once): so the check bytes,
 * the AES verification value and authentication code, and the decryption of whatever the
 * input holds are fuzzed too (a stored entry's window is then its data and the encryption's
 * overhead).
 *
 *   build-fuzz/tests/fuzz/fuzz_zip -max_len=131072 CORPUS_DIR
 */
#include "common/byteio.h"
#include "common/parts.h"
#include "containers/container.h"
#include "fuzz_common.h"
#include "containers/zip.h"
#include "crypto/keyring.h"
#include "crypto/winzip_aes.h"
#include "crypto/zip_crypt.h"
#include "crypto/zipcrypto.h"

#include <stdbool.h>

#define FZ_STREAMS 8
#define FZ_MAX_OUT (4u << 20)
#define FZ_DECODERS 4
#define FZ_MAX_CKPTS 64
#define FZ_TRACKED 1024 /* streams (members) whose size (offset) is kept for the checks */
#define FZ_LOCAL_MAX (30 + 2 * 65535) /* a local header with the longest name and extra */

struct fz_stream {
	struct cont_stream s;
	const struct codec *codec;
	uint8_t params[8];
	uint8_t crypt[ZCR_LEN];
};

struct fz_walk {
	struct fz_stream st[FZ_STREAMS];
	uint64_t usize[FZ_TRACKED]; /* of every stream declared (the first FZ_TRACKED) */
	uint64_t nstreams;
	uint64_t members;
	uint64_t hdr_off[FZ_TRACKED]; /* of the members (the first FZ_TRACKED) */
	uint64_t size;		      /* of the archive */
	struct src *in;
};

static bool known_codec(const char *name)
{
	static const char *const names[] = {"deflate", "deflate64", "bzip2", "lzma-zip",
					    "ppmd-zip", "stored", "xz", "zstd"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* zip_local_data's contract at off. */
static void check_local(struct fz_walk *w, uint64_t off)
{
	uint64_t data = 0;
	int err = zip_local_data(w->in, off, "fuzz", &data);

	FZ_ASSERT(err == 0 || err == -EIO);
	if (err == 0)
		FZ_ASSERT(data >= off + 30 && data - off <= FZ_LOCAL_MAX && off + 30 <= w->size);
}

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct fz_walk *w = opaque;

	FZ_ASSERT(s->codec && known_codec(s->codec));
	FZ_ASSERT(s->zip_local);
	FZ_ASSERT(s->coff <= w->size);
	FZ_ASSERT(s->usize > 0); /* an empty entry is a member without a stream */
	if (strcmp(s->codec, "lzma-zip") == 0 || strcmp(s->codec, "ppmd-zip") == 0) {
		FZ_ASSERT(s->params && s->params_len == 8);
		FZ_ASSERT(le64(s->params) == s->usize);
	} else {
		FZ_ASSERT(s->params == NULL && s->params_len == 0);
	}
	uint64_t overhead = 0;
	if (s->crypt) {
		struct zcr_rec r;
		FZ_ASSERT(zcr_parse(s->crypt, ZCR_LEN, &r) == 0);
		overhead = r.kind == ZCR_AES ? wz_salt_len(r.strength) + WZ_PV + WZ_MAC : ZC_HEADER;
	}
	if (strcmp(s->codec, "stored") == 0)
		FZ_ASSERT(s->clen == s->usize + overhead);
	if (w->nstreams < FZ_STREAMS) {
		struct fz_stream *k = &w->st[w->nstreams];
		k->s = *s;
		if (s->crypt) {
			memcpy(k->crypt, s->crypt, ZCR_LEN);
			k->s.crypt = k->crypt;
		}
		k->codec = codec_by_name(s->codec); /* NULL: zstd not compiled in */
		if (s->params_len) {
			memcpy(k->params, s->params, s->params_len);
			k->s.params = k->params;
		}
	}
	if (w->nstreams < FZ_TRACKED)
		w->usize[w->nstreams] = s->usize;
	*id = ++w->nstreams;
	return 0;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;
	size_t sum = 0;

	FZ_ASSERT(m->path && m->path[m->path_len] == '\0');
	for (size_t i = 0; i < m->path_len; i++) /* every byte read: ASan sees an overrun */
		sum += m->path[i];
	FZ_ASSERT(sum <= 255 * m->path_len);
	FZ_ASSERT(m->link && m->uname && m->gname);
	FZ_ASSERT(m->type == MEMBER_REG || m->type == MEMBER_DIR || m->type == MEMBER_SYMLINK);
	FZ_ASSERT((m->mode & ~07777u) == 0);
	FZ_ASSERT(!m->link_in_data || m->type == MEMBER_SYMLINK);
	FZ_ASSERT(m->stream <= w->nstreams);
	FZ_ASSERT(!m->unreadable || m->why);
	FZ_ASSERT(m->unreadable == 0 || m->unreadable == -EOPNOTSUPP || m->unreadable == -EACCES ||
		  m->unreadable == -EIO);
	FZ_ASSERT(!m->unreadable || m->stream == 0);
	FZ_ASSERT(m->hdr_off <= w->size);
	if (m->type != MEMBER_REG && m->type != MEMBER_SYMLINK)
		FZ_ASSERT(m->size == 0 && m->stream == 0);
	if (m->stream && m->stream <= FZ_TRACKED)
		FZ_ASSERT(m->data_off <= w->usize[m->stream - 1] &&
			  m->stored <= w->usize[m->stream - 1] - m->data_off);
	/* bytes in the archive file itself (container.h): inside it */
	if (m->stream == 0 && !m->unreadable && m->stored)
		FZ_ASSERT(m->data_off <= w->size && m->stored <= w->size - m->data_off);
	if (m->stream == 0 && !m->unreadable &&
	    (m->type == MEMBER_REG || m->type == MEMBER_SYMLINK))
		FZ_ASSERT(m->size == 0 || m->stored == m->size);
	if (w->members < FZ_TRACKED)
		w->hdr_off[w->members] = m->hdr_off;
	w->members++;
	return 0;
}

struct fz_cks {
	struct codec_ckpt c[FZ_MAX_CKPTS];
	void *aux[FZ_MAX_CKPTS];
	size_t auxlen[FZ_MAX_CKPTS];
	size_t n;
	uint64_t returned;
};

static int on_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct fz_cks *k = opaque;

	FZ_ASSERT(k->n == 0 ? ck->uoff == 0
			    : ck->uoff > k->c[k->n - 1].uoff || k->n == FZ_MAX_CKPTS);
	FZ_ASSERT(ck->uoff >= k->returned);
	FZ_ASSERT(aux || auxlen == 0);
	if (k->n == FZ_MAX_CKPTS)
		return 0;
	k->c[k->n] = *ck;
	k->aux[k->n] = NULL;
	if (auxlen) {
		k->aux[k->n] = malloc(auxlen);
		if (!k->aux[k->n])
			return -ENOMEM;
		memcpy(k->aux[k->n], aux, auxlen);
	}
	k->auxlen[k->n] = auxlen;
	k->n++;
	return 0;
}

static uint8_t *out_buf;

static void fz_decode(const uint8_t *data, size_t size, const struct fz_stream *fs,
		      struct fz_rng *rng)
{
	const struct cont_stream *cs = &fs->s;
	const struct codec *c = fs->codec;
	/* the codecs that know the size: they may never return more */
	bool sized = strcmp(cs->codec, "stored") == 0 || strcmp(cs->codec, "lzma-zip") == 0 ||
		     strcmp(cs->codec, "ppmd-zip") == 0;
	struct fz_cks k = {0};
	struct codec_sink sink = {.checkpoint = on_ckpt, .opaque = &k};
	struct codec_opts opts = {.spacing = 1 + fz_rng_below(rng, 256 << 10), .threads = 1,
				  .params = cs->params, .params_len = cs->params_len};
	struct src *file = src_from_mem(data, size);
	struct src *win = NULL, *cipher = NULL;
	struct codec_scan *s = NULL;
	uint64_t pos = 0, verified, start = 0, limit;
	ssize_t n = 0;
	static uint8_t buf[64 << 10];

	if (!file || !c || cs->usize > FZ_MAX_OUT)
		goto out;
	/* the window the builder and the reader decode (build_cont.c stream_window) */
	if (zip_local_data(file, cs->coff, "fuzz", &start) != 0)
		goto out;
	if (start > size || cs->clen > size - start)
		goto out; /* "the archive ends inside a compressed entry": its reads fail */
	win = src_window(file, start, cs->clen);
	if (!win)
		goto out;
	if (cs->crypt) { /* the reader's way (index/streams.c): the plaintext under the window */
		struct zcr_rec r;
		struct src *plain = NULL;
		int err;
		FZ_ASSERT(zcr_parse(cs->crypt, ZCR_LEN, &r) == 0);
		err = zcr_open(win, &r, &plain);
		FZ_ASSERT(err == 0 || err == -EACCES || err == -EIO || err == -ENOMEM ||
			  err == -ENOTSUP);
		if (err)
			goto out;
		cipher = win;
		win = plain;
	}
	if (c->scan_new(win, &opts, &sink, &s))
		goto out;
	limit = cs->usize + 1; /* one byte past usize: what the reader refuses */
	for (;;) {
		size_t step = 1 + (size_t)fz_rng_below(rng, fz_rng_next(rng) & 1 ? 512 : 200000);
		if (pos + step > limit)
			step = (size_t)(limit - pos);
		if (step == 0)
			break;
		n = c->scan_read(s, out_buf + pos, step);
		if (n <= 0)
			break;
		FZ_ASSERT((size_t)n <= step);
		pos += (uint64_t)n;
		k.returned = pos;
		if (sized)
			FZ_ASSERT(pos <= cs->usize);
	}
	if (pos > cs->usize) /* a stream longer than its entry: what the reader refuses */
		goto out;
	FZ_ASSERT(n == 0 || n == -EIO || n == -ENOMEM || n == -ENOTSUP || n == -EINVAL);
	FZ_ASSERT(c->scan_read(s, buf, 1) == n);
	if (n == 0 && sized)
		FZ_ASSERT(pos == cs->usize);
	verified = c->scan_verified(s);
	FZ_ASSERT(verified <= pos);
	if (n == 0)
		FZ_ASSERT(verified == pos);
	c->scan_free(s);
	s = NULL;

	for (size_t j = 0; j < FZ_DECODERS && j < k.n; j++) {
		size_t i = k.n <= FZ_DECODERS ? j : (size_t)fz_rng_below(rng, k.n);
		struct codec_dec *d = NULL;
		uint64_t at = k.c[i].uoff;
		int err;

		if (at >= pos && n != 0)
			continue; /* past where a failed scan stopped: the index keeps none */
		k.c[i].ulen = (i + 1 < k.n ? k.c[i + 1].uoff : pos) - k.c[i].uoff;
		err = c->dec_new(win, &k.c[i], k.aux[i], k.auxlen[i], &d);
		FZ_ASSERT(err == 0 || err == -ENOMEM || (n != 0 && err == -EIO));
		if (err)
			continue;
		(void)c->dec_memory(d);
		while (at < pos) {
			size_t step = 1 + (size_t)fz_rng_below(rng, sizeof(buf));
			ssize_t r = c->dec_read(d, buf, step);
			FZ_ASSERT(r <= (ssize_t)step);
			if (r <= 0) {
				/* after a clean scan nothing may fail */
				FZ_ASSERT(n != 0 || r == -ENOMEM);
				break;
			}
			if (at < verified) {
				uint64_t m = verified - at;
				if (m > (uint64_t)r)
					m = (uint64_t)r;
				FZ_ASSERT(memcmp(buf, out_buf + at, (size_t)m) == 0);
			}
			at += (uint64_t)r;
		}
		c->dec_free(d);
	}
out:
	for (size_t i = 0; i < k.n; i++)
		free(k.aux[i]);
	if (c)
		c->scan_free(s);
	src_free(win);
	src_free(cipher); /* after the plaintext over it */
	src_free(file);
}

/* 5: the input as the parts of a split zip, joined. */
static void fz_split(const uint8_t *data, size_t size, struct fz_rng *rng)
{
	struct fz_walk w = {.size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
				 .name = "fuzz.zip"};
	struct src *parts[64], *in;
	struct cont_stats st;
	size_t part = size > (64 << 10) && (fz_rng_next(rng) & 1) ? 64 << 10
								   : 1 + (size_t)fz_rng_below(rng, size);
	size_t n = 0;
	int err;

	if (size < 4 || le32(data) != 0x08074b50u)
		return;
	if (part < size / 64 + 1)
		part = size / 64 + 1;
	for (size_t at = 0; at < size; at += part) {
		parts[n] = src_from_mem(data + at, size - at < part ? size - at : part);
		if (!parts[n]) {
			for (size_t i = 0; i < n; i++)
				src_free(parts[i]);
			return;
		}
		n++;
	}
	in = parts_join(parts, NULL, n);
	if (!in)
		return;
	w.in = in;
	err = cont_zip.parse(in, &sink, &st);
	FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOTSUP || err == -ENOMEM);
	FZ_ASSERT(st.members == w.members);
	for (uint64_t i = 0; i < w.members && i < FZ_TRACKED; i++)
		check_local(&w, w.hdr_off[i]);
	for (uint64_t i = 0; i < w.nstreams && i < FZ_STREAMS; i++)
		check_local(&w, w.st[i].s.coff);
	src_free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_walk w = {.size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
				 .name = "fuzz.zip"};
	struct cont_stats st;
	struct fz_rng rng;
	struct src *in;
	int err;

	fz_init_log();
	if (!kr_count() && kr_add("secret", 6)) /* the password the decrypt path is fuzzed with */
		abort();
	fz_rng_init(&rng, data, size);
	if (!out_buf)
		out_buf = malloc(FZ_MAX_OUT + 1); /* + 1: a stream one byte longer than its entry */
	in = src_from_mem(data, size);
	if (!in || !out_buf)
		goto out;
	w.in = in;
	(void)cont_zip.probe(in, data, size < 512 ? size : 512);
	err = cont_zip.parse(in, &sink, &st);
	FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOTSUP || err == -ENOMEM);
	FZ_ASSERT(st.members == w.members);
	for (uint64_t i = 0; i < w.members && i < FZ_TRACKED; i++)
		check_local(&w, w.hdr_off[i]);
	for (uint64_t i = 0; i < w.nstreams && i < FZ_STREAMS; i++) {
		check_local(&w, w.st[i].s.coff);
		fz_decode(data, size, &w.st[i], &rng);
	}
	fz_split(data, size, &rng);
out:
	src_free(in);
	return 0;
}
