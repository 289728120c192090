/* An opened archive (see archive.h): an index opened for reading, the archive's data, and
 * the decoded streams its members live in.
 *
 * Data: a member whose entry names no stream is read with pread at its data offset in the
 * archive file (a plain tar, a stored zip entry); one that names a stream is read through that
 * stream's reader (codecs/reader.c over the shared chunk cache).  A stream's reader is made on
 * the first read of a member in it -- a .tar.gz has one stream, a zip may have 100,000 -- from
 * its row in the streams table and its checkpoints; the aux blobs (gzip windows) are read from
 * SQLite only when a decoder starts there.
 *
 * The queries of the tree are in query.c; the locks in archive_int.h.
 */
#include "archive_int.h"
#include "tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codecs/codec.h"
#include "../codecs/prefetch.h"
#include "../codecs/segment.h"
#include "../common/byteio.h"
#include "../common/hash.h"
#include "../common/log.h"
#include "../common/size.h"
#include "db.h"
#include "zip.h"

#define PF_MAX_STREAMS 256 /* streams an archive may have to be prefetched stream by stream */
#define ARCH_STREAMS_MAX 1024 /* idle streams kept open (their readers, their cached data) */

/* ---- streams -------------------------------------------------------------------------------- */

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

/* The checkpoints of st (and their segment CRCs) into a new reader.  0 or -errno (logged). */
static int stream_reader(struct astream *st, struct conn *c)
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
	};
	struct codec_ckpt whole = {.uoff = 0, .ulen = st->usize};
	if (st->crcs == IDX_CRCS_MEMBERS) { /* decoded whole, checked against its members */
		err = stream_ranges(st, c, &ranges, &p.nranges);
		if (err)
			goto out;
		if (!p.nranges) {
			tfs_log(TFS_LOG_ERR, "%s: index damaged (stream %llu has nothing to check it "
				"with)", a->index_shown, (unsigned long long)st->id);
			err = -EIO;
			goto out;
		}
		p.ckpts = &whole;
		p.nckpts = 1;
		p.ranges = ranges;
		p.params = st->params;
		p.params_len = st->params_len;
	}
	err = creader_new(&p, &st->reader);
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
	creader_free(st->reader);
	src_free(st->in);
	free(st->params);
	free(st);
}

/* Makes stream id of a from its row (streams_lock held).  0 and *out, or -errno (logged). */
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
		err = st->in ? stream_reader(st, c) : -ENOMEM;
	}
	arch_conn_put(a, c);
	if (err) {
		stream_free(st);
		return err;
	}
	*out = st;
	return 0;
}

static void idle_unlink(struct arch *a, struct astream *st)
{
	if (st->lru_prev)
		st->lru_prev->lru_next = st->lru_next;
	else if (a->idle_head == st)
		a->idle_head = st->lru_next;
	if (st->lru_next)
		st->lru_next->lru_prev = st->lru_prev;
	else if (a->idle_tail == st)
		a->idle_tail = st->lru_prev;
	st->lru_prev = st->lru_next = NULL;
}

static size_t stream_bucket(const struct arch *a, uint64_t id)
{
	return (size_t)(hash_pair(id, 0) & (a->nbuckets - 1));
}

/* Doubles the hash table (streams_lock held); longer chains if out of memory. */
static void streams_grow(struct arch *a)
{
	size_t n = a->nbuckets * 2, old = a->nbuckets;
	struct astream **t = calloc(n, sizeof(*t));

	if (!t)
		return;
	a->nbuckets = n;
	for (size_t i = 0; i < old; i++)
		for (struct astream *st = a->streams[i], *next; st; st = next) {
			next = st->next;
			size_t b = stream_bucket(a, st->id);
			st->next = t[b];
			t[b] = st;
		}
	free(a->streams);
	a->streams = t;
}

/* Takes the least recently used idle streams out of the table while more than
 * ARCH_STREAMS_MAX are open (streams_lock held); returns them in a list to free. */
static struct astream *streams_trim(struct arch *a)
{
	struct astream *victims = NULL;

	while (a->nstreams_open > ARCH_STREAMS_MAX && a->idle_tail) {
		struct astream *st = a->idle_tail, **p = &a->streams[stream_bucket(a, st->id)];
		idle_unlink(a, st);
		while (*p != st)
			p = &(*p)->next;
		*p = st->next;
		a->nstreams_open--;
		st->next = victims;
		victims = st;
	}
	return victims;
}

/* The stream id of a, made on first use, with a reference (stream_put gives it back).  0 and
 * *out, or -errno. */
static int stream_get(struct arch *a, uint64_t id, struct astream **out)
{
	struct astream *st;
	int err = 0;

	pthread_mutex_lock(&a->streams_lock);
	if (!a->streams) {
		a->nbuckets = 64;
		a->streams = calloc(a->nbuckets, sizeof(*a->streams));
		if (!a->streams) {
			pthread_mutex_unlock(&a->streams_lock);
			return -ENOMEM;
		}
	}
	for (st = a->streams[stream_bucket(a, id)]; st && st->id != id; st = st->next)
		;
	if (!st) {
		err = stream_make(a, id, &st);
		if (!err) {
			if (a->nstreams_open >= a->nbuckets * 2)
				streams_grow(a);
			size_t b = stream_bucket(a, id);
			st->next = a->streams[b];
			a->streams[b] = st;
			a->nstreams_open++;
		}
	} else if (!st->refs) {
		idle_unlink(a, st);
	}
	if (st)
		st->refs++;
	pthread_mutex_unlock(&a->streams_lock);
	*out = st;
	return err;
}

/* Gives back a reference: a stream no file uses joins the idle list, and the oldest idle ones
 * beyond ARCH_STREAMS_MAX are freed (a zip of 70,000 entries read whole keeps memory
 * bounded).  NULL does nothing. */
static void stream_put(struct arch *a, struct astream *st)
{
	struct astream *victims = NULL;

	if (!st)
		return;
	pthread_mutex_lock(&a->streams_lock);
	if (--st->refs == 0) {
		st->lru_prev = NULL;
		st->lru_next = a->idle_head;
		if (a->idle_head)
			a->idle_head->lru_prev = st;
		a->idle_head = st;
		if (!a->idle_tail)
			a->idle_tail = st;
		victims = streams_trim(a);
	}
	pthread_mutex_unlock(&a->streams_lock);
	while (victims) { /* outside the lock: a reader waits for its decoding ahead */
		struct astream *next = victims->next;
		stream_free(victims);
		victims = next;
	}
}

int arch_prefetch(struct arch *a, struct prefetch *pf)
{
	uint64_t *ids = NULL, total = 0;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	struct conn *c;
	int err = arch_conn_get(a, &c), r;

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
	for (size_t i = 0; !err && i < n; i++) {
		struct astream *s;
		err = stream_get(a, ids[i], &s);
		/* a stream taken keeps its reference: the prefetch holds its reader until the end */
		if (!err && !(s->reader && pf_add(pf, s->reader)))
			stream_put(a, s);
	}
	free(ids);
	return err;
}

void arch_get_reader_stats(struct arch *a, struct creader_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->streams_lock);
	for (size_t b = 0; a->streams && b < a->nbuckets; b++)
		for (struct astream *st = a->streams[b]; st; st = st->next) {
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

/* ---- opening -------------------------------------------------------------------------------- */

static struct arch *arch_alloc(void)
{
	struct arch *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->fd = -1;
	pthread_mutex_init(&a->conns_lock, NULL);
	pthread_mutex_init(&a->streams_lock, NULL);
	return a;
}

/* Reads the index's meta; a->index, a->file, a->path are set. */
static int open_index(struct arch *a, const struct arch_env *env)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	uint64_t v = 0;
	char *s;
	int err = db_open_ro(a->index, &db);

	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot open index %s: %s", a->index_shown, strerror(-err));
		return err;
	}
	a->env = *env;
	a->codec_name = db_meta_get(db, "codec");
	s = db_meta_get(db, "kind");
	a->info.single_file = s && strcmp(s, "single") == 0;
	a->format = s;
	db_meta_get_u64(db, "damaged", &v);
	a->info.damaged = v != 0;
	db_meta_get_u64(db, "members", &a->info.members);
	db_meta_get_u64(db, "archive_size", &a->info.archive_size);
	db_meta_get_u64(db, "usize", &a->info.usize);
	if (db_prepare(db, "SELECT max(id) FROM entries", &st) == 0) {
		if (sqlite3_step(st) == SQLITE_ROW)
			a->info.entries = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (!a->codec_name) {
		tfs_log(TFS_LOG_ERR, "%s: index damaged (no codec)", a->index_shown);
		err = -EIO;
	}
	sqlite3_close(db);
	a->info.path = a->path;
	a->info.index = a->index_shown;
	a->info.codec = a->codec_name;
	return err;
}

int arch_open_index(const char *index, const char *shown, struct src *data, const char *name,
		    const struct arch_env *env, struct arch **out)
{
	struct arch *a = arch_alloc();
	int err;

	*out = NULL;
	if (!a) {
		src_free(data);
		return -ENOMEM;
	}
	a->file = data;
	a->fd = src_fd(data);
	a->path = strdup(name);
	a->index = strdup(index);
	a->index_shown = strdup(shown ? shown : index);
	if (!a->path || !a->index || !a->index_shown) {
		arch_close(a);
		return -ENOMEM;
	}
	err = open_index(a, env);
	if (err) {
		arch_close(a);
		return err;
	}
	*out = a;
	return 0;
}

void arch_keep(struct arch *a, sqlite3 *keeper)
{
	a->keeper = keeper;
}

void arch_set_built(struct arch *a, const struct idx_build_stats *stats)
{
	a->info.built = true;
	if (stats)
		a->info.build = *stats;
}

const struct arch_info *arch_get_info(const struct arch *a)
{
	return &a->info;
}

void arch_close(struct arch *a)
{
	if (!a)
		return;
	for (size_t b = 0; a->streams && b < a->nbuckets; b++)
		while (a->streams[b]) {
			struct astream *st = a->streams[b];
			a->streams[b] = st->next;
			stream_free(st);
		}
	free(a->streams);
	while (a->free_conns) {
		struct conn *c = a->free_conns;
		a->free_conns = c->next;
		arch_conn_free(c);
	}
	pthread_mutex_destroy(&a->conns_lock);
	pthread_mutex_destroy(&a->streams_lock);
	src_free(a->file);
	sqlite3_close(a->keeper);
	free(a->path);
	free(a->index);
	free(a->index_shown);
	free(a->codec_name);
	free(a->format);
	free(a);
}

/* ---- files ---------------------------------------------------------------------------------- */

/* The sparse map of f's entry, as the builder wrote it: in order, inside the size and the
 * stored data (an index that says otherwise is damaged).  0 or -errno. */
static int load_sparse(struct arch_file *f, struct conn *c, uint64_t ino)
{
	size_t n = 0, cap = 0;
	uint64_t end = 0;
	bool bad = false;
	int r;

	sqlite3_bind_int64(c->sparse, 1, (sqlite3_int64)ino);
	while ((r = arch_step(c->sparse)) > 0) {
		if (n + 1 >= cap) {
			cap = cap ? cap * 2 : 8;
			void *p = realloc(f->ext, cap * sizeof(*f->ext));
			if (!p) {
				r = -ENOMEM;
				break;
			}
			f->ext = p;
		}
		struct arch_file_ext *e = &f->ext[n];
		e->off = (uint64_t)sqlite3_column_int64(c->sparse, 0);
		e->len = (uint64_t)sqlite3_column_int64(c->sparse, 1);
		e->phys = (uint64_t)sqlite3_column_int64(c->sparse, 2);
		bad |= e->off < end || e->off > f->size || e->len > f->size - e->off ||
		       e->phys > f->stored || e->len > f->stored - e->phys;
		end = e->off + e->len;
		n++;
		if (bad)
			break;
	}
	sqlite3_reset(c->sparse);
	if (r < 0)
		return r;
	if (bad) {
		tfs_log(TFS_LOG_ERR, "inode %llu: sparse map does not fit its data",
			(unsigned long long)ino);
		return -EIO;
	}
	if (!f->ext) { /* sparse with no data at all: all holes */
		f->ext = calloc(1, sizeof(*f->ext));
		if (!f->ext)
			return -ENOMEM;
	} else {
		f->ext[n].off = UINT64_MAX; /* sentinel */
	}
	f->next = n;
	return 0;
}

int arch_file_open(struct arch *a, uint64_t ino, struct arch_file **out)
{
	struct arch_file *f = NULL;
	struct conn *c;
	uint64_t flags, stream = 0;
	uint32_t mode;
	int r, err = arch_conn_get(a, &c);

	*out = NULL;
	if (err)
		return err;
	sqlite3_bind_int64(c->file, 1, (sqlite3_int64)ino);
	r = arch_step(c->file);
	if (r <= 0) {
		err = r < 0 ? r : -ENOENT;
		goto out;
	}
	mode = (uint32_t)sqlite3_column_int64(c->file, 0);
	flags = (uint64_t)sqlite3_column_int64(c->file, 4);
	if (!S_ISREG(mode)) {
		err = S_ISDIR(mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	if (sqlite3_column_type(c->file, 6) != SQLITE_NULL) { /* listed, but not readable */
		err = (int)sqlite3_column_int64(c->file, 6);
		tfs_log(TFS_LOG_ERR, "%s: %.*s: %s", a->path, sqlite3_column_bytes(c->file, 8),
			(const char *)sqlite3_column_blob(c->file, 8),
			sqlite3_column_type(c->file, 7) == SQLITE_TEXT
			    ? (const char *)sqlite3_column_text(c->file, 7)
			    : strerror(-err));
		if (err >= 0)
			err = -EIO;
		goto out;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		err = -ENOMEM;
		goto out;
	}
	f->a = a;
	f->data_off = (uint64_t)sqlite3_column_int64(c->file, 1);
	f->size = (uint64_t)sqlite3_column_int64(c->file, 2);
	f->stored = (uint64_t)sqlite3_column_int64(c->file, 3);
	if (sqlite3_column_type(c->file, 5) != SQLITE_NULL)
		stream = (uint64_t)sqlite3_column_int64(c->file, 5);
	sqlite3_reset(c->file);
	if (flags & IDX_F_SPARSE)
		err = load_sparse(f, c, ino);
out:
	sqlite3_reset(c->file);
	arch_conn_put(a, c);
	if (!err && stream)
		err = stream_get(a, stream, &f->st);
	if (err) {
		arch_file_close(f);
		return err;
	}
	*out = f;
	return 0;
}

uint64_t arch_file_size(const struct arch_file *f)
{
	return f->size;
}

#define ADVISE_MAX ((uint64_t)8 << 20) /* of a plain member, announced at its first read */
#define SEQ_AHEAD ((uint64_t)8 << 20)	 /* of a compressed member read in order, decoded ahead */

/* Reads len bytes of the member's stored data at rel. */
static ssize_t read_stored(struct arch_file *f, void *buf, size_t len, uint64_t rel)
{
	struct arch *a = f->a;
	ssize_t n;

	if (rel + len > f->stored) {
		tfs_log(TFS_LOG_ERR, "read past the member's stored data (index inconsistent)");
		return -EIO;
	}
	if (!f->st && !f->advised) { /* a remote archive fetches the member in one request */
		uint64_t left = f->stored - rel;
		src_advise(a->file, f->data_off + rel, left < ADVISE_MAX ? left : ADVISE_MAX);
		f->advised = true;
	}
	if (!f->st)
		n = src_pread(a->file, buf, len, f->data_off + rel);
	else if (f->st->reader) {
		/* a read where the last one ended: the member is read in order (a large file
		 * copied or digested), so its next bytes are decoded ahead on another core */
		uint64_t was = atomic_exchange_explicit(&f->seq_next, rel + len,
							memory_order_relaxed);
		uint64_t to = 0; /* end of what to decode ahead, in the member's stored data */
		if (rel && rel == was)
			to = f->stored - rel - len < SEQ_AHEAD ? f->stored : rel + len + SEQ_AHEAD;
		n = creader_read_ahead(f->st->reader, buf, len, f->data_off + rel,
				       to ? f->data_off + to : 0);
	}
	else
		n = 0; /* a stream that decodes to nothing */
	if (n >= 0 && (size_t)n < len) {
		tfs_log(TFS_LOG_ERR,
			"%s: archive ends before the member's data at offset %llu "
			"(truncated or changed since it was indexed)",
			a->path, (unsigned long long)(f->data_off + rel + (uint64_t)n));
		return -EIO;
	}
	return n;
}

ssize_t arch_file_read(struct arch_file *f, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	if (!f->ext)
		return read_stored(f, buf, len, off);
	/* sparse: extents in order, holes read as zeros */
	while (done < len) {
		uint64_t pos = off + done;
		size_t lo = 0, hi = f->next; /* first extent ending after pos */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (f->ext[mid].off + f->ext[mid].len <= pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		size_t want = len - done;
		if (lo == f->next || f->ext[lo].off > pos) { /* a hole */
			uint64_t hole_end = lo == f->next ? f->size : f->ext[lo].off;
			size_t n = hole_end - pos < want ? (size_t)(hole_end - pos) : want;
			memset((uint8_t *)buf + done, 0, n);
			done += n;
			continue;
		}
		uint64_t in = pos - f->ext[lo].off, n = f->ext[lo].len - in;
		if (n > want)
			n = want;
		ssize_t r = read_stored(f, (uint8_t *)buf + done, (size_t)n, f->ext[lo].phys + in);
		if (r < 0)
			return r; /* all or nothing: a short read would look like the end */
		done += (size_t)n;
	}
	return (ssize_t)done;
}

size_t arch_file_direct(struct arch_file *f, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	struct stat st;

	if (f->st || f->ext || f->a->fd < 0 || off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	/* a zero-copy reply cannot report a short read as an error (the kernel would take it
	 * for the end of the file): only while the archive still holds the whole range */
	if (fstat(f->a->fd, &st) < 0 || (uint64_t)st.st_size < f->data_off + off + len)
		return 0;
	if (!f->advised && f->size - off > len) {
		/* more requests follow (the kernel's are 128 KiB): the disk reads the rest now, in
		 * large requests, instead of one small read per request as they come */
		uint64_t left = f->size - off;
		src_advise(f->a->file, f->data_off + off, left < ADVISE_MAX ? left : ADVISE_MAX);
		f->advised = true;
	}
	*fd = f->a->fd;
	*fd_off = f->data_off + off;
	return len;
}

void arch_file_close(struct arch_file *f)
{
	if (!f)
		return;
	if (f->st)
		stream_put(f->a, f->st);
	free(f->ext);
	free(f);
}

/* A member of an archive as a source (for the archive inside it). */
static ssize_t member_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	return arch_file_read(opaque, buf, len, off);
}

static void member_close(void *opaque)
{
	arch_file_close(opaque);
}

static const struct src_ops member_ops = {.pread = member_pread, .close = member_close};

int arch_file_src(struct arch *a, uint64_t ino, struct src **out)
{
	struct arch_file *f;
	int err = arch_file_open(a, ino, &f);

	*out = NULL;
	if (err)
		return err;
	*out = src_new(&member_ops, f, arch_file_size(f));
	if (!*out) {
		arch_file_close(f);
		return -ENOMEM;
	}
	return 0;
}

/* ---- archives inside -------------------------------------------------------------------------- */

int arch_nested(struct arch *a, uint64_t ino, struct arch **out)
{
	struct src *data = NULL;
	struct conn *c;
	char *name = NULL, *mem = NULL;
	sqlite3 *keeper = NULL;
	int r, err;

	*out = NULL;
	err = arch_conn_get(a, &c);
	if (err)
		return err;
	sqlite3_bind_int64(c->nested, 1, (sqlite3_int64)ino);
	r = arch_step(c->nested);
	if (r > 0)
		err = db_image_to_memdb(sqlite3_column_blob(c->nested, 0),
					(size_t)sqlite3_column_bytes(c->nested, 0), &mem, &keeper);
	else
		err = r < 0 ? r : -ENOENT;
	sqlite3_reset(c->nested);
	arch_conn_put(a, c);
	if (r > 0 && err) {
		tfs_log(TFS_LOG_ERR, "%s: the index of nested archive %llu is damaged",
			a->index_shown, (unsigned long long)ino);
		err = -EIO;
	}
	if (!err)
		err = arch_file_src(a, ino, &data);
	if (!err && asprintf(&name, "%s#%llu", a->path, (unsigned long long)ino) < 0) {
		name = NULL;
		src_free(data);
		err = -ENOMEM;
	}
	if (!err) {
		err = arch_open_index(mem, NULL, data, name, &a->env, out);
		if (!err) {
			arch_keep(*out, keeper);
			keeper = NULL;
		}
	}
	sqlite3_close(keeper);
	free(mem);
	free(name);
	return err;
}

/* ---- the tree interface (tree.h) over an archive ---------------------------------------------- */

static int t_lookup(void *t, uint64_t dir, const char *name, size_t len, struct arch_attr *out)
{
	return arch_lookup(t, dir, name, len, out);
}

static int t_getattr(void *t, uint64_t ino, struct arch_attr *out)
{
	return arch_getattr(t, ino, out);
}

static int t_readdir(void *t, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	return arch_readdir(t, dir, after, fn, opaque);
}

static int t_readlink(void *t, uint64_t ino, char *buf, size_t size, size_t *len)
{
	return arch_readlink(t, ino, buf, size, len);
}

static ssize_t t_listxattr(void *t, uint64_t ino, char *buf, size_t size)
{
	return arch_listxattr(t, ino, buf, size);
}

static ssize_t t_getxattr(void *t, uint64_t ino, const char *name, void *buf, size_t size)
{
	return arch_getxattr(t, ino, name, buf, size);
}

static int t_versions(void *t, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
		      void *opaque)
{
	return arch_versions(t, dir, name, len, fn, opaque);
}

static int t_describe(void *t, uint64_t ino, char *buf, size_t size)
{
	return arch_describe(t, ino, buf, size);
}

static int t_open(void *t, uint64_t ino, void **fh)
{
	return arch_file_open(t, ino, (struct arch_file **)fh);
}

static ssize_t t_read(void *fh, void *buf, size_t len, uint64_t off)
{
	return arch_file_read(fh, buf, len, off);
}

static size_t t_direct(void *fh, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	return arch_file_direct(fh, off, len, fd, fd_off);
}

static void t_close(void *fh)
{
	arch_file_close(fh);
}

static void t_totals(void *t, uint64_t *entries, uint64_t *bytes)
{
	const struct arch_info *i = arch_get_info(t);

	*entries = i->entries;
	*bytes = i->usize;
}

static void t_free(void *t)
{
	arch_close(t);
}

const struct tree_ops tree_archive_ops = {
	.kind = "archive",
	.root = IDX_ROOT,
	.lookup = t_lookup,
	.getattr = t_getattr,
	.readdir = t_readdir,
	.readlink = t_readlink,
	.listxattr = t_listxattr,
	.getxattr = t_getxattr,
	.versions = t_versions,
	.describe = t_describe,
	.open = t_open,
	.read = t_read,
	.direct = t_direct,
	.close = t_close,
	.totals = t_totals,
	.free = t_free,
};
