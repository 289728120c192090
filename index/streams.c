/* The decoded streams of an opened archive (the streams table of archive_int.h): a stream's
 * reader is made on the first read of a member in it -- a .tar.gz has one stream, a zip may
 * have 100,000 -- from its row in the index's streams table and its checkpoints; the aux
 * blobs (gzip windows) are read from SQLite only when a decoder starts there.
 *
 * The streams read so far are kept in a hash table by id (common/htable.h), each with a
 * count of the open files (and the prefetch) using it.  A stream no one uses joins the idle
 * list (common/list.h, most recent first) and stays open, its reader and cached data with
 * it, for the next file of the same stream; beyond ARCH_STREAMS_MAX open streams the least
 * recently used idle ones are freed, so a zip of 70,000 entries read whole keeps memory
 * bounded.  The prefetch of a whole archive (arch_prefetch) takes a reference on each
 * stream it decodes.  Locks: streams_lock (archive_int.h); a stream is freed outside it.
 *
 * An encrypted zip entry (IDX_S_CRYPT) is decrypted below its codec: its reader reads the
 * plaintext source zcr_open (crypto/zip_crypt.h) makes over its window under the first
 * password that opens it, decoded whole and checked against its CRC-32 -- or, AE-2 having
 * none, by the authentication code zcr_open checked -- before any byte is returned.  When no
 * password opens it, one line says so, naming the entry, and the stream stays in the table
 * as refused: every later read fails with EACCES at once, without a word.
 */
#include "index/archive_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "common/byteio.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/size.h"
#include "containers/zip.h"
#include "crypto/keyring.h"
#include "crypto/zip_crypt.h"
#include "index/db.h"
#include "index/shadow_make.h"
#include "shadow/shadow.h"
#include "seek/prefetch.h"
#include "seek/segment.h"

#define PF_MAX_STREAMS 256 /* streams an archive may have to be prefetched stream by stream */
#define ARCH_STREAMS_MAX 1024 /* idle streams kept open (their readers, their cached data) */

static int load_aux(void *opaque, size_t idx, void **aux, size_t *len)
{
	struct astream *st = opaque;
	struct conn *c;
	int r = arch_conn_get(st->a, &c);

	*aux = NULL;
	*len = 0;
	if (r)
		return r;
	sqlite3_bind_int64(c->aux, 1, (sqlite3_int64)st->id);
	sqlite3_bind_int64(c->aux, 2, (sqlite3_int64)idx);
	r = arch_step(c->aux);
	if (r > 0 && sqlite3_column_type(c->aux, 0) == SQLITE_BLOB) {
		size_t n = (size_t)sqlite3_column_bytes(c->aux, 0);
		*aux = malloc(n ? n : 1);
		if (*aux) {
			memcpy(*aux, sqlite3_column_blob(c->aux, 0), n);
			*len = n;
		} else {
			r = -ENOMEM;
		}
	}
	sqlite3_reset(c->aux);
	arch_conn_put(st->a, c);
	return r < 0 ? r : 0;
}

/* The members' CRC-32s of a whole-mode stream, in data order.  0 or -errno. */
static int stream_ranges(struct astream *st, struct conn *c, struct creader_range **out,
			 size_t *n)
{
	size_t cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	sqlite3_bind_int64(c->ranges, 1, (sqlite3_int64)st->id);
	while ((r = arch_step(c->ranges)) > 0) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			struct creader_range *m = realloc(*out, cap * sizeof(**out));
			if (!m) {
				r = -ENOMEM;
				break;
			}
			*out = m;
		}
		(*out)[(*n)++] = (struct creader_range){
		    .off = (uint64_t)sqlite3_column_int64(c->ranges, 0),
		    .len = (uint64_t)sqlite3_column_int64(c->ranges, 1),
		    .crc = (uint32_t)sqlite3_column_int64(c->ranges, 2)};
	}
	sqlite3_reset(c->ranges);
	return r < 0 ? r : 0;
}

/* The archive's shadow (shadow/shadow.h), opened at the first stream that can use it
 * (streams_lock held): NULL when there is none or it cannot be used, which is said once. */
static struct shadow *arch_shadow(struct arch *a, struct conn *c)
{
#if HAVE_SHADOW
	char *made = NULL, *fp = NULL, *path = NULL;
	uint64_t id;
	int err;

	if (a->shadow_state != ARCH_SH_UNTRIED)
		return a->shadow_state == ARCH_SH_OPEN ? a->shadow : NULL;
	a->shadow_state = ARCH_SH_NONE;
	if (a->env.shadow == SHADOW_NEVER)
		return NULL;
	made = db_meta_get(c->db, "shadow_id"); /* made with the index, or later (shadow_make.h) */
	id = idx_shadow_id(c->db, a->index_shown);
	fp = db_meta_get(c->db, "fingerprint");
	path = shadow_path(a->index_shown);
	if (!fp || !path || !id) {
		err = -ENOMEM;
	} else {
		err = shadow_open(path, id, fp, &a->shadow);
		if (!err)
			a->shadow_state = ARCH_SH_OPEN;
	}
	if (err == -ENOENT && made)
		tfs_log(TFS_LOG_INFO, "%s: its shadow %s is gone: reads decode the archive", a->path,
			path);
	else if (err && err != -ENOENT)
		tfs_log(TFS_LOG_WARNING, "%s: its shadow %s is not used (%s): reads decode the "
			"archive", a->path, path ? path : "",
			err == -ESTALE ? "it belongs to another index or archive"
			: err == -EIO  ? "damaged or cut short"
				       : strerror(-err));
	free(made);
	free(fp);
	free(path);
	return a->shadow;
#else
	(void)a, (void)c;
	return NULL;
#endif
}

/* The checkpoints of st (and their segment CRCs) into a new reader *out: over the shadow
 * when use_shadow and the shadow holds the stream (st->shadowed then set), else over the
 * archive.  0 or -errno (logged). */
static int stream_reader(struct astream *st, struct conn *c, bool use_shadow,
			 struct creader **out)
{
	static const uint32_t no_segments[1];
	struct arch *a = st->a;
	struct codec_ckpt *ck = NULL;
	uint32_t *crcs = NULL;
	struct creader_range *ranges = NULL;
	size_t n = 0, cap = 0, ncrc = 0, crc_cap = 0;
	sqlite3_stmt *q = c->ckpts;
	/* segments checked by CRC, of 1 << shift bytes; 0: none */
	unsigned shift = st->crcs == IDX_CRCS_SEGMENTS	     ? SEG_SHIFT
			 : st->crcs == IDX_CRCS_SEGMENTS_FINE ? SEG_SHIFT_FINE
							      : 0;
	int r, err = 0;

	sqlite3_bind_int64(q, 1, (sqlite3_int64)st->id);
	while ((r = arch_step(q)) > 0) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			void *p = realloc(ck, cap * sizeof(*ck));
			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			ck = p;
		}
		ck[n] = (struct codec_ckpt){
			.uoff = (uint64_t)sqlite3_column_int64(q, 0),
			.ulen = (uint64_t)sqlite3_column_int64(q, 1),
			.coff = (uint64_t)sqlite3_column_int64(q, 2),
			.clen = (uint64_t)sqlite3_column_int64(q, 3),
			.extra = (uint64_t)sqlite3_column_int64(q, 4),
			.bits = (uint32_t)sqlite3_column_int64(q, 5),
			.flags = (uint32_t)sqlite3_column_int64(q, 6),
		};
		size_t nb = (size_t)sqlite3_column_bytes(q, 7);
		const uint8_t *p = sqlite3_column_blob(q, 7);
		if (shift) {
			if (nb / 4 != seg_count(ck[n].ulen, shift) || nb % 4) {
				tfs_log(TFS_LOG_ERR, "%s: index damaged (checkpoint %zu of stream %llu)",
					a->index_shown, n, (unsigned long long)st->id);
				err = -EIO;
				goto out;
			}
			if (ncrc + nb / 4 > crc_cap) {
				crc_cap = (ncrc + nb / 4) * 2 + 64;
				void *q2 = realloc(crcs, crc_cap * sizeof(*crcs));
				if (!q2) {
					err = -ENOMEM;
					goto out;
				}
				crcs = q2;
			}
			for (size_t i = 0; i < nb / 4; i++)
				crcs[ncrc++] = le32(p + 4 * i);
		}
		n++;
	}
	if (r < 0) {
		err = r;
		goto out;
	}
	if (n == 0 && st->usize == 0)
		goto out; /* a stream that decodes to nothing: nothing to read */
	struct creader_params p = {
		.codec = st->codec,
		.in = st->in,
		.ckpts = ck,
		.nckpts = n,
		.crcs = shift ? (crcs ? crcs : no_segments) : NULL,
		.seg_shift = shift,
		.usize = st->usize,
		.load_aux = load_aux,
		.aux_opaque = st,
		.cache = a->env.cache,
		.workers = a->env.workers,
		.secret = (st->flags & (IDX_S_SECRET | IDX_S_CRYPT)) != 0,
	};
	struct codec_ckpt whole = {.uoff = 0, .ulen = st->usize};
	static const struct creader_range authenticated[1]; /* nothing more to check */
	if (st->crcs == IDX_CRCS_MEMBERS) { /* decoded whole, checked against its members */
		err = stream_ranges(st, c, &ranges, &p.nranges);
		if (err)
			goto out;
		p.ranges = ranges;
		if (!p.nranges && st->authenticated) { /* AE-2: its code was checked instead */
			p.ranges = authenticated;
			p.nranges = 1;
		}
		if (!p.nranges) {
			tfs_log(TFS_LOG_ERR, "%s: index damaged (stream %llu has nothing to check it "
				"with)", a->index_shown, (unsigned long long)st->id);
			err = -EIO;
			goto out;
		}
		p.ckpts = &whole;
		p.nckpts = 1;
		p.params = st->params;
		p.params_len = st->params_len;
	}
#if HAVE_SHADOW
	struct shadow *sh = shift && use_shadow ? arch_shadow(a, c) : NULL;
	struct codec_ckpt *sck = NULL;
	size_t sn = 0;
	if (sh && shadow_stream_ckpts(sh, st->id, st->usize, shift, &sck, &sn) == 0) {
		/* the same segments, their CRCs from the index: decoded from the shadow's frames */
		p.codec = &codec_zstd;
		p.in = shadow_src(sh);
		p.ckpts = sck;
		p.nckpts = sn;
		p.adopt_ckpts = true;
		p.load_aux = NULL;
		free(ck);
		ck = sck;
		st->shadowed = true;
	}
#else
	(void)use_shadow;
#endif
	err = creader_new(&p, out);
	if (!err && p.adopt_ckpts)
		ck = NULL; /* the reader's now */
	if (err == -EINVAL && st->shadowed) { /* the shadow's frames do not fit the index */
		tfs_log(TFS_LOG_WARNING, "%s: its shadow does not fit its index (stream %llu): "
			"reads decode the archive", a->path, (unsigned long long)st->id);
		st->shadowed = false;
		sqlite3_reset(q);
		free(ck);
		free(crcs);
		free(ranges);
		return stream_reader(st, c, false, out);
	}
	if (err == -EINVAL)
		tfs_log(TFS_LOG_ERR, "%s: index damaged (inconsistent checkpoints in stream %llu)",
			a->index_shown, (unsigned long long)st->id);
	if (err == -EINVAL)
		err = -EIO;
out:
	sqlite3_reset(q);
	free(ck);
	free(crcs);
	free(ranges);
	return err;
}

static void stream_free(struct astream *st)
{
	if (!st)
		return;
	creader_free(atomic_load(&st->fallback));
	creader_free(st->reader);
	src_free(st->in);
	src_free(st->cipher); /* after the plaintext over it */
	free(st->params);
	free(st);
}

/* Where stream id's first member is, for messages: its path in the archive, or "stream N". */
static void stream_who(struct conn *c, uint64_t id, char *buf, size_t len)
{
	static const char q[] =
	    "WITH RECURSIVE up(id, parent, path) AS ("
	    " SELECT id, parent, CAST(name AS TEXT) FROM entries WHERE id ="
	    "  (SELECT id FROM entries WHERE stream = ?1 ORDER BY data_off LIMIT 1)"
	    " UNION ALL SELECT e.id, e.parent, CAST(e.name AS TEXT) || '/' || up.path"
	    " FROM entries e JOIN up ON e.id = up.parent WHERE e.id != ?2)"
	    " SELECT path FROM up ORDER BY length(path) DESC LIMIT 1";
	sqlite3_stmt *st = NULL;

	snprintf(buf, len, "stream %llu", (unsigned long long)id);
	if (sqlite3_prepare_v2(c->db, q, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
	sqlite3_bind_int64(st, 2, IDX_ROOT);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		snprintf(buf, len, "%.*s", sqlite3_column_bytes(st, 0),
			 (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

/* An encrypted zip entry's plaintext (streams_lock held): st->in, its window, becomes
 * st->cipher, and st->in the plaintext over it; st->params the codec's own.  0; -EACCES
 * when no password opens it (st->denied set, said here); or -errno (logged). */
static int stream_decrypt(struct astream *st, struct conn *c)
{
	struct arch *a = st->a;
	struct zcr_rec r;
	struct src *plain = NULL;
	const void *cp;
	size_t cplen;
	void *own = NULL;
	char who[512];
	int err = zcr_params_split(st->params, st->params_len, &r, &cp, &cplen);

	if (err || st->crcs != IDX_CRCS_MEMBERS) { /* never decoded while indexing */
		tfs_log(TFS_LOG_ERR, "%s: index damaged (the encryption of stream %llu)",
			a->index_shown, (unsigned long long)st->id);
		return -EIO;
	}
	/* the entry's CRC-32, if it has one, to choose between passwords that pass the check */
	struct creader_range *ranges = NULL;
	size_t nr = 0;
	uint32_t crc = 0;
	bool has_crc = false;
	err = stream_ranges(st, c, &ranges, &nr);
	if (!err && nr == 1 && ranges[0].off == 0 && ranges[0].len == st->usize) {
		crc = ranges[0].crc;
		has_crc = true;
	}
	free(ranges);
	if (err)
		return err;
	if (cplen && !(own = malloc(cplen)))
		return -ENOMEM;
	if (cplen)
		memcpy(own, cp, cplen);
	err = zcr_open_crc(st->in, &r, has_crc ? &crc : NULL, &plain);
	if (err) {
		free(own);
		stream_who(c, st->id, who, sizeof(who));
		if (err == -EACCES && !kr_count())
			tfs_log(TFS_LOG_ERR, "%s: %s: encrypted (%s), and no password was given "
				"(--password): its reads fail", a->path, who, zcr_name(&r));
		else if (err == -EACCES && kr_count() == 1)
			tfs_log(TFS_LOG_ERR, "%s: %s: encrypted (%s), and the password given does "
				"not open it: its reads fail", a->path, who, zcr_name(&r));
		else if (err == -EACCES)
			tfs_log(TFS_LOG_ERR, "%s: %s: encrypted (%s), and none of the %zu passwords "
				"given opens it: its reads fail", a->path, who, zcr_name(&r),
				kr_count());
		else
			tfs_log(TFS_LOG_ERR, "%s: %s: encrypted (%s), cannot be decrypted: %s",
				a->path, who, zcr_name(&r),
				err == -EIO ? "shorter than its encryption's header (damaged)"
					    : strerror(-err));
		if (err == -EACCES)
			st->denied = err;
		return err;
	}
	st->cipher = st->in;
	st->in = plain;
	st->authenticated = r.kind == ZCR_AES;
	free(st->params);
	st->params = own;
	st->params_len = cplen;
	return 0;
}

/* Makes stream id of a from its row (streams_lock held).  0 and *out, or -errno (logged);
 * -EACCES with *out a refused stream (st->denied) to keep in the table. */
static int stream_make(struct arch *a, uint64_t id, struct astream **out)
{
	struct astream *st;
	struct conn *c;
	int r, err;

	*out = NULL;
	if (!a->env.cache) {
		tfs_log(TFS_LOG_ERR, "internal error: no chunk cache for a compressed archive");
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->a = a;
	st->id = id;
	list_init(&st->idle);
	err = arch_conn_get(a, &c);
	if (err) {
		free(st);
		return err;
	}
	sqlite3_bind_int64(c->stream, 1, (sqlite3_int64)id);
	r = arch_step(c->stream);
	if (r > 0) {
		const char *name = (const char *)sqlite3_column_text(c->stream, 0);
		st->codec = name ? codec_by_name(name) : NULL;
		st->coff = (uint64_t)sqlite3_column_int64(c->stream, 1);
		st->clen = (uint64_t)sqlite3_column_int64(c->stream, 2);
		st->usize = (uint64_t)sqlite3_column_int64(c->stream, 3);
		st->crcs = (int)sqlite3_column_int64(c->stream, 4);
		st->flags = (unsigned)sqlite3_column_int64(c->stream, 5);
		if (sqlite3_column_type(c->stream, 6) == SQLITE_BLOB) {
			st->params_len = (size_t)sqlite3_column_bytes(c->stream, 6);
			st->params = malloc(st->params_len ? st->params_len : 1);
			if (st->params)
				memcpy(st->params, sqlite3_column_blob(c->stream, 6), st->params_len);
			else
				r = -ENOMEM;
		}
		if (!st->codec)
			tfs_log(TFS_LOG_ERR, "%s: stream %llu is made with codec '%s', which this "
				"build lacks", a->path, (unsigned long long)id, name ? name : "?");
	} else if (r == 0) {
		tfs_log(TFS_LOG_ERR, "%s: index damaged (no stream %llu)", a->index_shown,
			(unsigned long long)id);
	}
	sqlite3_reset(c->stream);
	err = r < 0 ? r : (r == 0 ? -EIO : 0);
	if (!err && !st->codec)
		err = -ENOTSUP;
	if (!err && (st->crcs < IDX_CRCS_CODEC || st->crcs > IDX_CRCS_SEGMENTS_FINE ||
		     (st->crcs == IDX_CRCS_CODEC && !st->codec->index_blocks))) {
		/* only a codec that checks every block may do without CRCs */
		tfs_log(TFS_LOG_ERR, "%s: index damaged (no CRCs for %s stream %llu)",
			a->index_shown, st->codec->name, (unsigned long long)id);
		err = -EIO;
	}
	uint64_t start = st->coff;
	if (!err && (st->flags & IDX_S_ZIPLOCAL)) /* the bytes follow a zip local header */
		err = zip_local_data(a->file, st->coff, a->path, &start);
	if (!err && (start > src_size(a->file) || st->clen > src_size(a->file) - start)) {
		tfs_log(TFS_LOG_ERR, "%s: the archive ends inside stream %llu (truncated or changed "
			"since it was indexed)", a->path, (unsigned long long)id);
		err = -EIO;
	}
	if (!err) {
		st->in = src_window(a->file, start, st->clen);
		err = st->in ? 0 : -ENOMEM;
	}
	if (!err && (st->flags & IDX_S_CRYPT))
		err = stream_decrypt(st, c);
	if (!err)
		err = stream_reader(st, c, true, &st->reader);
	arch_conn_put(a, c);
	if (err && st->denied) { /* kept, refused, without its window */
		src_free(st->in);
		st->in = NULL;
		*out = st;
		return err;
	}
	if (err) {
		stream_free(st);
		return err;
	}
	*out = st;
	return 0;
}

/* The stream id of a, if it is in the table (streams_lock held). */
static struct astream *stream_find(struct arch *a, uint64_t id)
{
	struct htable_node *n;

	for (n = htable_first(&a->streams, hash_u64(id)); n; n = htable_next(n)) {
		struct astream *st = htable_entry(n, struct astream, hnode);
		if (st->id == id)
			return st;
	}
	return NULL;
}

/* Takes the least recently used idle streams out of the table while more than
 * ARCH_STREAMS_MAX are open (streams_lock held), onto victims (by their idle links), to be
 * freed once the lock is released. */
static void streams_trim(struct arch *a, struct list_node *victims)
{
	struct list_node *n;

	while (a->streams.count > ARCH_STREAMS_MAX && (n = list_last(&a->idle))) {
		struct astream *st = list_entry(n, struct astream, idle);
		list_del(&st->idle);
		htable_del(&a->streams, &st->hnode);
		list_add_head(victims, &st->idle);
	}
}

int arch_stream_get(struct arch *a, uint64_t id, struct astream **out)
{
	struct astream *st, *unused = NULL;
	int err = 0;

	pthread_mutex_lock(&a->streams_lock);
	st = stream_find(a, id);
	if (!st) {
		err = stream_make(a, id, &st);
		if (st && htable_add(&a->streams, &st->hnode, hash_u64(id)) < 0) {
			unused = st; /* the table has no buckets and none can be had */
			st = NULL;
			err = -ENOMEM;
		}
	} else if (!st->refs && !st->denied) {
		list_del(&st->idle);
	}
	if (st && st->denied) { /* no reference: it never joins the idle list */
		err = st->denied;
		st = NULL;
	}
	if (st)
		st->refs++;
	pthread_mutex_unlock(&a->streams_lock);
	stream_free(unused);
	*out = st;
	return err;
}

void arch_stream_put(struct arch *a, struct astream *st)
{
	struct list_node victims, *n, *tmp;

	if (!st)
		return;
	list_init(&victims);
	pthread_mutex_lock(&a->streams_lock);
	if (--st->refs == 0) {
		list_add_head(&a->idle, &st->idle);
		streams_trim(a, &victims);
	}
	pthread_mutex_unlock(&a->streams_lock);
	/* outside the lock: a reader waits for its decoding ahead */
	list_for_each_safe(n, tmp, &victims)
		stream_free(list_entry(n, struct astream, idle));
}

void arch_streams_free(struct arch *a)
{
	struct htable_node *n;

	while ((n = htable_pop(&a->streams)))
		stream_free(htable_entry(n, struct astream, hnode));
	htable_fini(&a->streams);
#if HAVE_SHADOW
	shadow_close(a->shadow);
	a->shadow = NULL;
#endif
}

/* The shadow file (when the streams just made read it) into the page cache, before its
 * frames are decoded: one sequential read of the whole file, instead of the requests'
 * random reads of frames not yet decoded meeting the disk one by one (a cold md5 pass of
 * 1000 files of a shadowed telemetry.tar.bz2: 0.15-0.33 s without it, 0.13-0.22 s with). */
static void prefetch_shadow_file(struct arch *a, struct prefetch *pf)
{
#if HAVE_SHADOW
	pthread_mutex_lock(&a->streams_lock);
	struct shadow *sh = a->shadow_state == ARCH_SH_OPEN ? a->shadow : NULL;
	int fd = sh ? src_fd(shadow_src(sh)) : -1;
	uint64_t size = sh ? shadow_size(sh) : 0;
	pthread_mutex_unlock(&a->streams_lock);
	if (fd >= 0 && size <= pf_room(pf))
		pf_add_file(pf, fd, size);
#else
	(void)a, (void)pf;
#endif
}

int arch_prefetch(struct arch *a, struct prefetch *pf)
{
	uint64_t *ids = NULL, total = 0;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	struct conn *c;
	int err = a->outer ? arch_prefetch(a->outer, pf) : 0, r; /* behind a codec: its stream */

	err = err ? err : arch_conn_get(a, &c);
	if (err)
		return err;
	err = db_prepare(c->db, "SELECT id, usize FROM streams ORDER BY id", &st);
	while (!err && (r = arch_step(st)) != 0) {
		if (r < 0) {
			err = r;
			break;
		}
		if (n == cap) {
			uint64_t *m = realloc(ids, (cap = cap ? cap * 2 : 16) * sizeof(*ids));
			if (!m) {
				err = -ENOMEM;
				break;
			}
			ids = m;
		}
		ids[n++] = (uint64_t)sqlite3_column_int64(st, 0);
		total += (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	arch_conn_put(a, c);
	/* a plain archive, or one of many small streams (a zip): its bytes into the page cache
	 * (a reader per stream for tens of thousands of them would cost more than it saves:
	 * each decodes at its first read, from memory then) */
	if (!err && (!n || n > PF_MAX_STREAMS) && a->fd >= 0) {
		uint64_t size = src_size(a->file);
		free(ids);
		if (size > pf_room(pf) || !pf_add_file(pf, a->fd, size)) {
			tfs_log(TFS_LOG_INFO, "%s: not read ahead: larger than the prefetch budget "
				"has left", a->path);
			pf_note_skipped(pf);
		}
		return 0;
	}
	if (!err && n && total > pf_room(pf)) {
		char sz[32];
		format_size(sz, sizeof(sz), (double)total);
		tfs_log(TFS_LOG_INFO, "%s: not prefetched: %s decoded, more than the prefetch "
			"budget has left", a->path, sz);
		pf_note_skipped(pf);
		n = 0;
	}
	struct astream **got = n ? calloc(n, sizeof(*got)) : NULL;
	size_t ngot = 0;
	if (n && !got)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < n; i++) {
		err = arch_stream_get(a, ids[i], &got[ngot]);
		if (err == -EACCES) { /* encrypted, no password opens it: said, skipped */
			err = 0;
			continue;
		}
		ngot += !err;
	}
	prefetch_shadow_file(a, pf);
	for (size_t i = 0; i < ngot; i++) {
		struct astream *s = got[i];
		/* a stream taken keeps its reference: the prefetch holds its reader until the end */
		if (err || !(s->reader && pf_add(pf, s->reader, s->shadowed)))
			arch_stream_put(a, s);
	}
	free(got);
	free(ids);
	return err;
}

void arch_get_reader_stats(struct arch *a, struct creader_stats *out)
{
	size_t pos = 0;

	memset(out, 0, sizeof(*out));
	if (a->outer) /* an archive behind a codec: the codec's stream is the outer one's */
		arch_get_reader_stats(a->outer, out);
	pthread_mutex_lock(&a->streams_lock);
	for (struct htable_node *n = htable_walk(&a->streams, &pos, NULL); n;
	     n = htable_walk(&a->streams, &pos, n)) {
		struct astream *st = htable_entry(n, struct astream, hnode);
		struct creader_stats s;

		if (!st->reader)
			continue;
		creader_get_stats(st->reader, &s);
		out->decoders_started += s.decoders_started;
		out->decoded_bytes += s.decoded_bytes;
		out->segments_filled += s.segments_filled;
		out->ahead_waits += s.ahead_waits;
		out->ahead_jobs += s.ahead_jobs;
	}
	pthread_mutex_unlock(&a->streams_lock);
}

/* A read through the shadow failed (damaged, cut short or replaced since it was opened): the
 * stream's reader over the archive, made once (streams_lock). */
static struct creader *stream_fallback(struct astream *st)
{
	struct arch *a = st->a;
	struct creader *r = NULL;
	struct conn *c;

	pthread_mutex_lock(&a->streams_lock);
	r = atomic_load(&st->fallback);
	if (!r && arch_conn_get(a, &c) == 0) {
		if (stream_reader(st, c, false, &r) == 0) {
			if (a->shadow_state == ARCH_SH_OPEN) /* no other stream starts on it */
				tfs_log(TFS_LOG_WARNING, "%s: a read of its shadow failed: reads "
					"decode the archive instead", a->path);
			a->shadow_state = ARCH_SH_NONE; /* closed with the streams */
			atomic_store(&st->fallback, r);
		}
		arch_conn_put(a, c);
	}
	pthread_mutex_unlock(&a->streams_lock);
	return r;
}

ssize_t arch_stream_read(struct astream *st, void *buf, size_t len, uint64_t off,
			 uint64_t ahead_to)
{
	struct creader *r = atomic_load(&st->fallback);
	ssize_t n;

	if (r)
		return creader_read_ahead(r, buf, len, off, ahead_to);
	n = creader_read_ahead(st->reader, buf, len, off, ahead_to);
	if (n == -EIO && st->shadowed && (r = stream_fallback(st)))
		n = creader_read_ahead(r, buf, len, off, ahead_to);
	return n;
}
