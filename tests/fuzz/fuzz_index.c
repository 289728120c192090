/* libFuzzer harness: the whole index builder (idx_build_from) on an archive, then the archive
 * opened from that index (arch_open_index) and used as the mount would use it.
 *
 * Input: one byte of options, then the archive.
 *   bits 0-2  the archive's compression, done here in-process with the real library so that
 *             the fuzzer's mutations of the tar reach the parser through every codec:
 *             0 none (the bytes as they are: a plain tar, or a compressed file such as the
 *             seeds make with the real tools), 1 gzip, 2 bzip2, 3 xz, 4 zstd, 5 lzop,
 *             6-7 as 0;
 *   bits 3-4  the compressor's variant (levels, block sizes, several members or frames,
 *             checksums, a zstd seek table, ...);
 *   bit 5     -r: archives inside the archive indexed too (one level), --strip-extension;
 *   bit 6     two decoder threads while indexing;
 *   bit 7     the index opened from memory, as the daemon opens one of up to 32 MiB
 *             (db_file_to_mem, common/memvfs.c), not from its file.
 * Then: the index is built into a file under /dev/shm (or $TMPDIR), the archive opened on it,
 * and the tree walked: every directory listed (also resumed from a cookie), every name looked
 * up again, attributes, symlinks, xattrs, versions, descriptions, random ranges of every
 * regular file read, archives inside opened and walked.  Nothing is compared with an expected
 * content: the harness wants no crash, hang, leak or undefined behaviour, and checks only what
 * the headers promise (a listed name can be looked up, reads are never longer than asked).
 *
 * Sizes are bounded so that an execution stays fast: an input whose archive decodes to more
 * than FZ_MAX_DECODED bytes (checked first with the codec's own scan) is dropped, and with -r so
 * is one holding an archive-named member larger than that or decoding to more.
 *
 *   build-fuzz/tests/fuzz/fuzz_index -max_len=262144 CORPUS_DIR
 */
#include "index/archive.h"
#include "index/open.h"
#include "index/db.h"
#include "fuzz_common.h"
#include "containers/tar/tar.h"

#include <bzlib.h>
#include <lzma.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#if HAVE_ZSTD
#include <zstd.h>
#endif
#if HAVE_LZO
#include <lzo/lzo1x.h>
#endif

#define FZ_MAX_DECODED (4u << 20) /* decoded bytes an input may expand to */
#define FZ_MAX_ENTRIES 400	   /* entries visited per archive */
#define FZ_MAX_DEPTH 12		   /* folder depth walked */
#define FZ_READS 3		   /* random reads per regular file */
#define FZ_MAX_READ (128u << 10)  /* longest read */

/* ---- a growing output buffer ---- */

struct obuf {
	uint8_t *p;
	size_t len, cap;
	bool fail;
};

static uint8_t *ob_room(struct obuf *o, size_t n)
{
	if (o->fail)
		return NULL;
	if (o->len + n > o->cap) {
		size_t cap = (o->len + n) * 2 + 4096;
		uint8_t *p = realloc(o->p, cap);
		if (!p) {
			o->fail = true;
			return NULL;
		}
		o->p = p;
		o->cap = cap;
	}
	return o->p + o->len;
}

static void ob_put(struct obuf *o, const void *b, size_t n)
{
	uint8_t *d = ob_room(o, n);

	if (d) {
		memcpy(d, b, n);
		o->len += n;
	}
}

static void ob_be32(struct obuf *o, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};

	ob_put(o, b, 4);
}

static void ob_le32(struct obuf *o, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};

	ob_put(o, b, 4);
}

/* ---- compressors (the real libraries, in-process) ---- */

/* gzip: variant 0 one member, 1 two members, 2 full flushes every 8 KiB, 3 stored (level 0). */
static void gz_member(struct obuf *o, const uint8_t *d, size_t n, int level, size_t flush_every)
{
	z_stream z = {0};

	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		o->fail = true;
		return;
	}
	size_t done = 0;
	for (;;) {
		size_t piece = flush_every && n - done > flush_every ? flush_every : n - done;
		int flush = done + piece == n ? Z_FINISH : Z_FULL_FLUSH;
		z.next_in = (Bytef *)(d + done);
		z.avail_in = (uInt)piece;
		int rc;
		do {
			uint8_t *dst = ob_room(o, 65536);
			if (!dst)
				goto out;
			z.next_out = dst;
			z.avail_out = 65536;
			rc = deflate(&z, flush);
			o->len += 65536 - z.avail_out;
		} while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
		done += piece;
		if (flush == Z_FINISH)
			break;
	}
out:
	deflateEnd(&z);
}

static void gz(struct obuf *o, const uint8_t *d, size_t n, unsigned v)
{
	if (v == 1) {
		gz_member(o, d, n / 2, 6, 0);
		gz_member(o, d + n / 2, n - n / 2, 1, 0);
	} else {
		gz_member(o, d, n, v == 3 ? 0 : 6, v == 2 ? 8192 : 0);
	}
}

/* bzip2: 100k blocks; variant 1 and 3: two streams one after the other. */
static void bz_one(struct obuf *o, const uint8_t *d, size_t n)
{
	unsigned dlen = (unsigned)(n + n / 100 + 600);
	uint8_t *dst = ob_room(o, dlen);

	if (!dst)
		return;
	if (BZ2_bzBuffToBuffCompress((char *)dst, &dlen, (char *)d, (unsigned)n, 1, 0, 30) != BZ_OK) {
		o->fail = true;
		return;
	}
	o->len += dlen;
}

static void bz(struct obuf *o, const uint8_t *d, size_t n, unsigned v)
{
	if (v & 1) {
		bz_one(o, d, n / 2);
		bz_one(o, d + n / 2, n - n / 2);
	} else {
		bz_one(o, d, n);
	}
}

/* xz: variant 0 one block (xz's default, no sizes in the block header), 1-3 blocks of 16, 32 or
 * 64 KiB made by the multi-threaded encoder (sizes in the headers, like xz -T / pixz), with the
 * CRC32, CRC64, SHA-256 or no check. */
static void xzc(struct obuf *o, const uint8_t *d, size_t n, unsigned v, unsigned check_sel)
{
	static const lzma_check checks[4] = {LZMA_CHECK_CRC64, LZMA_CHECK_CRC32, LZMA_CHECK_SHA256,
					     LZMA_CHECK_NONE};
	lzma_stream z = LZMA_STREAM_INIT;
	lzma_ret rc;

	if (v == 0) {
		rc = lzma_easy_encoder(&z, 0, checks[check_sel & 3]);
	} else {
		lzma_mt mt = {.threads = 1, .block_size = (uint64_t)(8192u << v), .preset = 0,
			      .check = checks[check_sel & 3]};
		rc = lzma_stream_encoder_mt(&z, &mt);
	}
	if (rc != LZMA_OK) {
		o->fail = true;
		return;
	}
	z.next_in = d;
	z.avail_in = n;
	do {
		uint8_t *dst = ob_room(o, 65536);
		if (!dst)
			break;
		z.next_out = dst;
		z.avail_out = 65536;
		rc = lzma_code(&z, LZMA_FINISH);
		o->len += 65536 - z.avail_out;
	} while (rc == LZMA_OK);
	if (rc != LZMA_STREAM_END)
		o->fail = true;
	lzma_end(&z);
}

#if HAVE_ZSTD
/* zstd: frames of 24 KiB << (v & 1); checksums and content sizes when v & 2; a seek table
 * (the seekable format's skippable frame, without checksums) after the frames when the
 * payload's size is even. */
static void zs(struct obuf *o, const uint8_t *d, size_t n, unsigned v)
{
	size_t frame = (size_t)24576 << (v & 1), nframes = 0;
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct obuf tab = {0};
	bool seek = n % 2 == 0;

	if (!cc) {
		o->fail = true;
		return;
	}
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, (v & 2) != 0);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, (v & 2) != 0);
	for (size_t done = 0; done < n || nframes == 0;) {
		size_t piece = n - done < frame ? n - done : frame;
		size_t bound = ZSTD_compressBound(piece);
		uint8_t *dst = ob_room(o, bound);
		if (!dst)
			break;
		size_t c = ZSTD_compress2(cc, dst, bound, d + done, piece);
		if (ZSTD_isError(c)) {
			o->fail = true;
			break;
		}
		o->len += c;
		if (seek) {
			ob_le32(&tab, (uint32_t)c);
			ob_le32(&tab, (uint32_t)piece);
		}
		done += piece;
		nframes++;
	}
	if (seek && !tab.fail) {
		ob_le32(o, 0x184D2A5E);		     /* skippable frame */
		ob_le32(o, (uint32_t)(tab.len + 9)); /* entries + footer */
		ob_put(o, tab.p, tab.len);
		ob_le32(o, (uint32_t)nframes);
		uint8_t desc = 0; /* no checksums in the table (the frames may have theirs) */
		ob_put(o, &desc, 1);
		ob_le32(o, 0x8F92EAB1);
	}
	free(tab.p);
	ZSTD_freeCCtx(cc);
}
#endif

#if HAVE_LZO
/* lzop: a file header as lzop 1.04 writes it, blocks of 16 KiB << v (lzop's own are 256 KiB),
 * with the Adler-32 of the decompressed data and, for odd variants, of the compressed data
 * too; for variants 2-3 CRC-32s instead. */
static void lz(struct obuf *o, const uint8_t *d, size_t n, unsigned v)
{
	static uint8_t wrk[LZO1X_1_MEM_COMPRESS];
	uint32_t flags = 0x03000000u | ((v & 2) ? 0x100u : 0x1u) | ((v & 1) ? ((v & 2) ? 0x200u : 0x2u) : 0);
	size_t bs = (size_t)16384 << v, start;
	uint8_t h[64];
	size_t i = 0;

	if (lzo_init() != LZO_E_OK) {
		o->fail = true;
		return;
	}
	ob_put(o, "\x89LZO\0\r\n\x1a\n", 9);
	start = o->len;
	h[i++] = 0x10; h[i++] = 0x40; /* version */
	h[i++] = 0x20; h[i++] = 0xa0; /* library version */
	h[i++] = 0x09; h[i++] = 0x40; /* version needed */
	h[i++] = 1;		      /* LZO1X-1 */
	h[i++] = 5;		      /* level */
	ob_put(o, h, i);
	ob_be32(o, flags);
	ob_be32(o, 0100644);
	ob_be32(o, 1700000000);
	ob_be32(o, 0);
	ob_put(o, "\x07" "fuzztar", 8);
	if (o->fail)
		return;
	ob_be32(o, (v & 2) ? (uint32_t)crc32(0, o->p + start, (uInt)(o->len - start))
			   : (uint32_t)adler32(1, o->p + start, (uInt)(o->len - start)));
	for (size_t done = 0; done < n && !o->fail;) {
		size_t piece = n - done < bs ? n - done : bs;
		uint8_t *tmp = malloc(piece + piece / 16 + 64 + 3);
		lzo_uint clen = 0;
		if (!tmp || lzo1x_1_compress(d + done, piece, tmp, &clen, wrk) != LZO_E_OK) {
			free(tmp);
			o->fail = true;
			break;
		}
		bool stored = clen >= piece;
		ob_be32(o, (uint32_t)piece);
		ob_be32(o, (uint32_t)(stored ? piece : clen));
		ob_be32(o, (v & 2) ? (uint32_t)crc32(0, d + done, (uInt)piece)
				   : (uint32_t)adler32(1, d + done, (uInt)piece));
		if (!stored && (v & 1))
			ob_be32(o, (v & 2) ? (uint32_t)crc32(0, tmp, (uInt)clen)
					   : (uint32_t)adler32(1, tmp, (uInt)clen));
		ob_put(o, stored ? d + done : tmp, stored ? piece : clen);
		free(tmp);
		done += piece;
	}
	ob_be32(o, 0); /* end marker */
}
#endif

/* ---- bounding the work of an input ---- */

struct nest_check {
	const uint8_t *tar;
	size_t len;
	bool too_big;
};

/* With -r, a member named like an archive is indexed in turn: keep it small. */
static int check_member(void *opaque, const struct arc_member *e)
{
	struct nest_check *nc = opaque;

	if (e->type != MEMBER_REG || !codec_archive_name((const char *)e->path, e->path_len))
		return 0;
	if (e->size > FZ_MAX_DECODED) {
		nc->too_big = true;
		return -ECANCELED;
	}
	/* its first bytes as the mount shows them (a sparse member may start with a hole) */
	uint8_t head[512] = {0};
	size_t hl = e->size < sizeof(head) ? (size_t)e->size : sizeof(head);
	if (!e->sparse) {
		if (e->data_off < nc->len)
			memcpy(head, nc->tar + e->data_off,
			       nc->len - e->data_off < hl ? nc->len - e->data_off : hl);
	} else if (e->nsparse && e->sparse[0].off == 0 && e->data_off < nc->len &&
		   e->sparse[0].src < nc->len - e->data_off) {
		uint64_t at = e->data_off + e->sparse[0].src;
		size_t k = e->sparse[0].len < hl ? (size_t)e->sparse[0].len : hl;
		memcpy(head, nc->tar + at, nc->len - at < k ? nc->len - at : k);
	}
	const struct codec *c = codec_probe(head, hl);
	if (!c)
		return 0;
	if (e->sparse || e->data_off >= nc->len || e->size > nc->len - e->data_off) {
		nc->too_big = true; /* rare; not worth rebuilding the logical content here */
		return -ECANCELED;
	}
	size_t dlen;
	if (fz_prescan(c, nc->tar + e->data_off, (size_t)e->size, FZ_MAX_DECODED, 1, NULL,
		       &dlen) != 1) {
		nc->too_big = true;
		return -ECANCELED;
	}
	return 0;
}

/* ---- walking the archive ---- */

struct ent {
	char name[256];
	size_t len;
	struct arch_attr at;
	uint64_t cookie;
};

struct list {
	struct ent *e;
	size_t n, max;
};

static int collect(void *opaque, const char *name, size_t len, const struct arch_attr *attr,
		   uint64_t cookie)
{
	struct list *l = opaque;

	if (l->n == l->max)
		return 1;
	if (len > sizeof(l->e[0].name))
		len = sizeof(l->e[0].name); /* a long name is still visited, by a prefix */
	memcpy(l->e[l->n].name, name, len);
	l->e[l->n].len = len;
	l->e[l->n].at = *attr;
	l->e[l->n].cookie = cookie;
	l->n++;
	return 0;
}

static int count_versions(void *opaque, const struct arch_attr *attr)
{
	(*(unsigned *)opaque)++;
	return 0;
}

struct walker {
	struct fz_rng *rng;
	unsigned visited;
	uint8_t *buf; /* FZ_MAX_READ */
};

static void read_file(struct walker *w, struct arch *a, uint64_t ino)
{
	struct arch_file *f = NULL;

	if (arch_file_open(a, ino, &f) != 0)
		return;
	uint64_t size = arch_file_size(f), span = size < FZ_MAX_DECODED ? size : FZ_MAX_DECODED;
	for (int k = 0; k < FZ_READS; k++) {
		uint64_t off = k == 0 ? 0 : fz_rng_below(w->rng, span + 1);
		size_t len = 1 + (size_t)fz_rng_below(w->rng, FZ_MAX_READ);
		ssize_t n = arch_file_read(f, w->buf, len, off);
		FZ_ASSERT(n <= (ssize_t)len);
		if (n >= 0) /* short only at the end of the file */
			FZ_ASSERT((uint64_t)n == (off >= size ? 0 : (size - off < len ? size - off : len)));
		int fd;
		uint64_t fd_off;
		size_t dn = arch_file_direct(f, off, len, &fd, &fd_off);
		FZ_ASSERT(dn <= len);
	}
	arch_file_close(f);
}

static void walk(struct walker *w, struct arch *a, uint64_t dir, unsigned depth);

static void visit(struct walker *w, struct arch *a, uint64_t dir, const struct ent *e,
		  unsigned depth)
{
	struct arch_attr at;
	char buf[4096];
	size_t len;
	int err;

	if (w->visited++ >= FZ_MAX_ENTRIES)
		return;
	if (e->len < sizeof(e->name)) { /* a name readdir gave must be found again */
		err = arch_lookup(a, dir, e->name, e->len, &at);
		FZ_ASSERT(err == 0 || err == -ENOMEM || err == -EIO);
		if (err == 0)
			FZ_ASSERT(at.ino == e->at.ino);
		unsigned nv = 0;
		(void)arch_versions(a, dir, e->name, e->len, count_versions, &nv);
	}
	err = arch_getattr(a, e->at.ino, &at);
	FZ_ASSERT(err == 0 || err == -ENOMEM || err == -EIO);
	(void)arch_describe(a, e->at.ino, buf, sizeof(buf));

	ssize_t xl = arch_listxattr(a, e->at.ino, NULL, 0);
	if (xl > 0 && (size_t)xl <= sizeof(buf)) {
		ssize_t got = arch_listxattr(a, e->at.ino, buf, sizeof(buf));
		FZ_ASSERT(got <= (ssize_t)sizeof(buf));
		for (ssize_t i = 0; got > 0 && i < got;) {
			const char *name = buf + i;
			size_t nl = strnlen(name, (size_t)(got - i));
			char val[512];
			FZ_ASSERT(i + (ssize_t)nl < got); /* NUL-terminated names */
			ssize_t vl = arch_getxattr(a, e->at.ino, name, NULL, 0);
			if (vl >= 0)
				(void)arch_getxattr(a, e->at.ino, name, val, sizeof(val));
			i += (ssize_t)nl + 1;
		}
	}
	(void)arch_getxattr(a, e->at.ino, "user.tarseek.info", buf, sizeof(buf));

	switch (e->at.mode & S_IFMT) {
	case S_IFDIR:
		if (e->at.flags & ARCH_A_NESTED)
			break;
		if (depth < FZ_MAX_DEPTH)
			walk(w, a, e->at.ino, depth + 1);
		break;
	case S_IFLNK:
		if (arch_readlink(a, e->at.ino, buf, sizeof(buf), &len) == 0)
			FZ_ASSERT(len <= sizeof(buf));
		(void)arch_readlink(a, e->at.ino, buf, 1, &len);
		break;
	case S_IFREG:
		read_file(w, a, e->at.ino);
		break;
	}
	if (e->at.flags & ARCH_A_NESTED && depth < FZ_MAX_DEPTH) {
		struct arch *in = NULL;
		if (arch_nested(a, e->at.ino, &in) == 0) {
			walk(w, in, IDX_ROOT, depth + 1);
			arch_close(in);
		}
	}
}

static void walk(struct walker *w, struct arch *a, uint64_t dir, unsigned depth)
{
	struct ent *ents = malloc(64 * sizeof(*ents));
	struct list l = {.e = ents, .max = 64};
	int err;

	if (!ents)
		return;
	err = arch_readdir(a, dir, 0, collect, &l);
	FZ_ASSERT(err == 0 || err == -ENOMEM || err == -EIO);
	if (l.n > 1) { /* resumed after an entry: the rest, in the same order */
		size_t k = (size_t)fz_rng_below(w->rng, l.n - 1);
		struct ent *rest = malloc(64 * sizeof(*rest));
		struct list l2 = {.e = rest, .max = 64};
		if (rest && arch_readdir(a, dir, ents[k].cookie, collect, &l2) == 0) {
			FZ_ASSERT(l2.n >= 1);
			FZ_ASSERT(l2.e[0].at.ino == ents[k + 1].at.ino);
		}
		free(rest);
	}
	for (size_t i = 0; i < l.n; i++)
		visit(w, a, dir, &ents[i], depth);
	free(ents);
}

/* ---- the harness ---- */

static char idx_path[256];

static void init_paths(void)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");

	if (idx_path[0])
		return;
	snprintf(idx_path, sizeof(idx_path), "%s/tarseek-fuzz-%d.index.sqlite", dir ? dir : "/tmp",
		 (int)getpid());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct obuf o = {0};
	const uint8_t *arch_bytes, *tar;
	size_t arch_len, tar_len;
	struct fz_rng rng;
	struct arch *a = NULL;
	int ret = 0;

	fz_init_log();
	init_paths();
	if (size < 1)
		return 0;
	fz_rng_init(&rng, data, size);
	unsigned mode = data[0] & 7, var = (data[0] >> 3) & 3;
	bool recurse = data[0] & 0x20, two = data[0] & 0x40, in_memory = data[0] & 0x80;
	const uint8_t *payload = data + 1;
	size_t plen = size - 1;

	switch (mode) {
	case 1:
		gz(&o, payload, plen, var);
		break;
	case 2:
		bz(&o, payload, plen, var);
		break;
	case 3:
		xzc(&o, payload, plen, var, (unsigned)(rng.s >> 7));
		break;
#if HAVE_ZSTD
	case 4:
		zs(&o, payload, plen, var);
		break;
#endif
#if HAVE_LZO
	case 5:
		lz(&o, payload, plen, var);
		break;
#endif
	default:
		mode = 0;
		break;
	}
	if (o.fail)
		goto out;
	if (mode) {
		arch_bytes = o.p;
		arch_len = o.len;
		tar = payload; /* the archive decodes to the payload */
		tar_len = plen;
	} else {
		arch_bytes = payload;
		arch_len = plen;
		const struct codec *c = codec_probe(payload, plen < 512 ? plen : 512);
		tar = payload;
		tar_len = plen;
		if (c) {
			int r = fz_prescan(c, payload, plen, FZ_MAX_DECODED, 0, &tar, &tar_len);
			if (r != 1) {
				ret = -1; /* a bomb: not worth keeping */
				goto out;
			}
		}
	}
	if (recurse) {
		struct nest_check nc = {.tar = tar, .len = tar_len};
		struct tar_callbacks cb = {.entry = check_member, .opaque = &nc};
		struct src *ts = src_from_mem(tar, tar_len);
		if (!ts)
			goto out;
		(void)tar_parse(ts, &cb, NULL);
		src_free(ts);
		if (nc.too_big) {
			ret = -1;
			goto out;
		}
	}

	struct idx_build_opts bo = {.gzip_spacing = 32u << 10, .threads = two ? 2 : 1,
				    .recursion = recurse ? 1 : 0, .strip_ext = recurse};
	struct idx_input in = {.src = src_from_mem(arch_bytes, arch_len), .name = "fuzz.tar",
			       .mode = 0100644, .uid = 1000, .gid = 1000, .mtime = 1700000000};
	struct idx_build_stats st;
	if (!in.src)
		goto out;
	int err = idx_build_from(&in, idx_path, &bo, &st);
	src_free(in.src);
	FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOMEM || err == -ENOTSUP);
	if (err)
		goto out;

	struct cache *cache = cache_new(8u << 20);
	struct src *data_src = src_from_mem(arch_bytes, arch_len);
	if (!cache || !data_src) {
		src_free(data_src);
		cache_free(cache);
		goto out;
	}
	char *mem = NULL;
	sqlite3 *keeper = NULL;
	if (in_memory) {
		err = db_file_to_mem(idx_path, 64u << 20, &mem, &keeper);
		FZ_ASSERT(err == 0 || err == -ENOMEM);
	}
	err = arch_open_index(mem ? mem : idx_path, NULL, data_src, "fuzz.tar",
			      &(struct arch_env){cache, NULL}, &a);
	free(mem);
	if (err == 0)
		arch_keep(a, keeper);
	else
		sqlite3_close(keeper);
	/* the index the builder just made must open */
	FZ_ASSERT(err == 0 || err == -ENOMEM);
	if (err == 0) {
		struct walker w = {.rng = &rng, .buf = malloc(FZ_MAX_READ)};
		const struct arch_info *info = arch_get_info(a);
		/* an archive behind a codec opens as the inner archive (nested.h's
		 * idx_wrap), whose size is its own */
		FZ_ASSERT(st.wrapped || info->usize == st.usize);
		if (w.buf) {
			struct arch_attr at;
			walk(&w, a, IDX_ROOT, 0);
			(void)arch_lookup(a, IDX_ROOT, "..", 2, &at);
			(void)arch_lookup(a, IDX_ROOT, "", 0, &at);
			(void)arch_getattr(a, info->entries + 1, &at);
		}
		free(w.buf);
		struct creader_stats rs;
		arch_get_reader_stats(a, &rs);
		arch_close(a);
	}
	cache_free(cache);
out:
	unlink(idx_path);
	free(o.p);
	return ret;
}
