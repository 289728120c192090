/* "sqlar": the data of the files of an SQLite archive (sqlite3 -A; containers/sqlar.c), one
 * after the other, as one stream of pieces (codecs/pieces.h).  A codec of container streams
 * only (its probe never says yes).
 *
 * The format: a table sqlar(name, mode, mtime, sz, data); a file's data is its bytes as they
 * are when length(data) == sz, else zlib's compress() of them (a zlib stream, Adler-32 at its
 * end).  A blob lies in the database's pages wherever SQLite put it, so a piece is read
 * through SQLite itself (sqlite_src.h: the database read through the stream's window, the
 * whole archive), by sqlite3_blob_read.
 *
 * No header.  A record (32 bytes): le64 decoded size, le64 rowid, le64 offset of the piece in
 * the blob (a stored blob is cut into pieces of at most a MiB by the container, so that a
 * read in a large file starts near it; a compressed one is one piece, from 0), le32 kind (0
 * stored, 1 zlib), le32 0.
 *
 * Checks: zlib's (Adler-32, the stream's end exactly at the piece's end); a stored piece is
 * checked by the segment CRCs the index keeps (nothing in the format checks it).
 */
#include "codecs/pieces.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codecs/sqlar/sqlite_src.h"
#include "common/byteio.h"
#include "common/log.h"

#define SQ_REC 32
#define SQ_IN ((size_t)64 << 10)

struct sq_ctx {
	sqlite3 *db;
	sqlite3_blob *blob;
	int64_t rowid;	 /* the blob open, or -1 */
	int blob_len;
	bool zinit;
	z_stream z;
	int in_pos;	 /* compressed bytes of the blob given to zlib */
	uint8_t in[SQ_IN];
};

static int sq_open(struct src *in, const uint8_t *hdr, size_t hlen, void **out)
{
	struct sq_ctx *c = calloc(1, sizeof(*c));
	int err;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->rowid = -1;
	err = sqlsrc_open(in, &c->db);
	if (err) {
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

static void sq_close(void *ctx)
{
	struct sq_ctx *c = ctx;

	if (!c)
		return;
	if (c->zinit)
		inflateEnd(&c->z);
	sqlite3_blob_close(c->blob);
	sqlite3_close(c->db);
	free(c);
}

/* The blob of row rowid, opened once for every piece of it. */
static int sq_blob(struct sq_ctx *c, int64_t rowid)
{
	int rc;

	if (c->blob && c->rowid == rowid)
		return 0;
	c->rowid = -1;
	if (c->blob)
		rc = sqlite3_blob_reopen(c->blob, rowid);
	else
		rc = sqlite3_blob_open(c->db, "main", "sqlar", "data", rowid, 0, &c->blob);
	if (rc != SQLITE_OK) {
		tfs_log(TFS_LOG_ERR, "sqlar: row %" PRId64 ": cannot read its data: %s", rowid,
			sqlite3_errmsg(c->db));
		sqlite3_blob_close(c->blob);
		c->blob = NULL;
		return sqlsrc_err(rc) == -ENOMEM ? -ENOMEM : -EIO;
	}
	c->rowid = rowid;
	c->blob_len = sqlite3_blob_bytes(c->blob);
	return 0;
}

static ssize_t sq_stored(struct sq_ctx *c, uint64_t at, uint64_t size, void *buf, size_t len)
{
	if (at > (uint64_t)c->blob_len || size > (uint64_t)c->blob_len - at) {
		tfs_log(TFS_LOG_ERR, "sqlar: row %" PRId64 ": its data is shorter than its size",
			c->rowid);
		return -EIO;
	}
	int rc = sqlite3_blob_read(c->blob, buf, (int)len, (int)at);
	if (rc != SQLITE_OK)
		tfs_log(TFS_LOG_ERR, "sqlar: row %" PRId64 ": cannot read its data: %s", c->rowid,
			sqlite3_errmsg(c->db));
	return rc == SQLITE_OK ? (ssize_t)len : sqlsrc_err(rc);
}

static ssize_t sq_zfail(struct sq_ctx *c, const char *what)
{
	tfs_log(TFS_LOG_ERR, "sqlar: row %" PRId64 ": compressed data %s", c->rowid, what);
	return -EIO;
}

/* Inflates into buf[0, len) (len > 0 may be 1 for the end check); *got the bytes made. */
static int sq_inflate(struct sq_ctx *c, void *buf, size_t len, size_t *got, bool *end)
{
	c->z.next_out = buf;
	c->z.avail_out = (uInt)len;
	*end = false;
	while (c->z.avail_out) {
		if (!c->z.avail_in && c->in_pos < c->blob_len) {
			int n = c->blob_len - c->in_pos < (int)SQ_IN ? c->blob_len - c->in_pos
								      : (int)SQ_IN;
			int rc = sqlite3_blob_read(c->blob, c->in, n, c->in_pos);
			if (rc != SQLITE_OK) {
				tfs_log(TFS_LOG_ERR, "sqlar: row %" PRId64 ": cannot read its data: %s",
					c->rowid, sqlite3_errmsg(c->db));
				return sqlsrc_err(rc);
			}
			c->in_pos += n;
			c->z.next_in = c->in;
			c->z.avail_in = (uInt)n;
		}
		int zr = inflate(&c->z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END) {
			*end = true;
			break;
		}
		if (zr == Z_BUF_ERROR && !c->z.avail_in)
			return (int)sq_zfail(c, "end early (truncated)");
		if (zr != Z_OK)
			return zr == Z_MEM_ERROR ? -ENOMEM : (int)sq_zfail(c, "are damaged");
	}
	*got = len - c->z.avail_out;
	return 0;
}

static ssize_t sq_zlib(struct sq_ctx *c, uint64_t off, uint64_t size, void *buf, size_t len)
{
	size_t got = 0;
	bool end;
	int err;

	if (off == 0) { /* a new piece: a new stream */
		if (c->zinit)
			err = inflateReset(&c->z);
		else
			err = inflateInit(&c->z);
		if (err != Z_OK)
			return -ENOMEM;
		c->zinit = true;
		c->z.avail_in = 0;
		c->in_pos = 0;
	}
	err = sq_inflate(c, buf, len, &got, &end);
	if (err)
		return err;
	if (end && off + got < size)
		return (ssize_t)got; /* fewer bytes: pieces.c says so */
	if (off + got == size && !end) { /* the stream must end exactly here */
		uint8_t extra;
		size_t more = 0;
		err = sq_inflate(c, &extra, 1, &more, &end);
		if (err)
			return err;
		if (more || !end)
			return sq_zfail(c, "give more bytes than its size");
	}
	return (ssize_t)got;
}

static ssize_t sq_read(void *ctx, const uint8_t *rec, uint64_t off, void *buf, size_t len)
{
	struct sq_ctx *c = ctx;
	uint64_t size = le64(rec), at = le64(rec + 16);
	uint32_t kind = le32(rec + 24);
	int err = sq_blob(c, (int64_t)le64(rec + 8));

	if (err)
		return err;
	if (len > INT32_MAX / 2)
		len = INT32_MAX / 2;
	if (kind == 0)
		return sq_stored(c, at + off, size - off, buf, len);
	if (kind == 1 && at == 0)
		return sq_zlib(c, off, size, buf, len);
	return -EINVAL;
}

static const struct pcs_ops sq_ops = {
	.name = "sqlar",
	.rec_len = SQ_REC,
	.memory = sizeof(struct sq_ctx) + ((size_t)2 << 20), /* and SQLite's page cache */
	.open = sq_open,
	.read = sq_read,
	.close = sq_close,
};

static int sq_scan_new(struct src *in, const struct codec_opts *opts,
		       const struct codec_sink *sink, struct codec_scan **out)
{
	return pcs_scan_new(&sq_ops, in, opts, sink, out);
}

static int sq_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
		      size_t auxlen, struct codec_dec **out)
{
	return pcs_dec_new(&sq_ops, in, ck, aux, auxlen, out);
}

static bool sq_probe(const uint8_t *head, size_t len)
{
	return false; /* only the container names it */
}

const struct codec codec_sqlar = {
	.name = "sqlar",
	.probe = sq_probe,
	.scan_new = sq_scan_new,
	.scan_read = pcs_scan_read,
	.scan_verified = pcs_scan_verified,
	.scan_free = pcs_scan_free,
	.dec_new = sq_dec_new,
	.dec_read = pcs_dec_read,
	.dec_memory = pcs_dec_memory,
	.dec_free = pcs_dec_free,
};
