/* Indexing an archive made with a container (zip, 7z): see container.h and build_int.h.
 *
 * The container's parse reports streams and members; the members go into the entries at
 * once (bld_member, as tar members do), and each stream keeps the list of its members.
 * After the parse each stream is made readable one of two ways:
 *   - whole (IDX_CRCS_MEMBERS): it decodes to at most WHOLE_MAX and every member in it has a
 *     CRC-32: nothing is decoded now; the reader decodes it whole at its first read and
 *     checks the members (reader.h).  A zip of small files is indexed from its directory;
 *   - decoded now (IDX_CRCS_SEGMENTS): its codec's scan runs over it through a cstream
 *     (stream.h), which stores its checkpoints and segment CRCs; meanwhile the members' CRC-32s
 *     are checked.  Several streams decode at once, one per thread (--threads: the calling
 *     thread and pool jobs, common/pool.h, joined before the pass goes on), each with a
 *     single-threaded scan; the database is shared under b->db_lock.  A member whose bytes
 *     do not match its CRC, or lie past where a damaged stream stops decoding, is marked
 *     unreadable (-EIO): it stays listed and its reads fail, the rest of the archive works.
 *     An encrypted stream no password given opens has its members marked -EACCES, and the
 *     index is made again when a later mount gives passwords (locked_stream, validate.c).
 * Symbolic links whose target is their data (zip, 7z) get the target read now: from the
 * archive for a stored entry, from the decoded bytes otherwise.  A target not read now
 * (damaged, or encrypted) stays NULL in the index, never "": arch_readlink then reads it
 * through the entry's reader, so that it fails as the entry's reads do (EIO, EACCES).
 *
 * An encrypted zip entry (cont_stream.crypt) is always whole, whatever its size, flagged
 * IDX_S_CRYPT, its encryption record at the head of its params (crypto/zip_crypt.h): nothing
 * is decrypted while indexing, so indexing needs no password and the index holds nothing of
 * the plaintext (no gzip-like window, no segment CRC) nor of a password.  Its reader
 * (index/streams.c) decrypts it under the password that opens it.  An encrypted symlink
 * (a zip entry, or in a 7z folder with an AES coder, even one a password given opens now)
 * keeps its target out of the index as it keeps the rest of the plaintext: arch_readlink
 * reads it through the reader, under the passwords of the mount (EACCES without one).
 */
#include "index/build_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/crc32.h"
#include "common/log.h"
#include "common/pool.h"
#include "index/db.h"
#include "seek/segment.h"
#include "containers/zip.h"
#include "crypto/zip_crypt.h"

#define WHOLE_SPACINGS 4	   /* whole mode up to this many checkpoint spacings */
#define LINK_MAX_LEN 4096	   /* a longer "symlink target" is not one */
#define READ_STEP ((size_t)1 << 20) /* decoded bytes read at once while checking */

struct smember {
	uint64_t id, off, size;
	bool has_crc, link;
	uint32_t crc;
};

struct bstream {
	uint64_t id;
	const struct codec *codec;
	char *codec_name;
	uint64_t coff, clen, usize;
	void *params;
	size_t params_len;
	bool zip_local;
	bool encrypted; /* its plaintext is kept off the disk (cont_stream.encrypted) */
	bool crypt; /* an encrypted zip entry: params are zcr_params_join's */
	struct smember *m;
	size_t nm, cap;
	bool all_crc;
};

struct bld_streams {
	struct builder *b;
	const struct idx_input *in;
	const struct idx_build_opts *o;
	struct bstream *s;
	size_t n, cap;
	struct smember *links; /* stored symlinks (stream 0): off is the local header or data */
	size_t nlinks, links_cap;
	atomic_size_t next_job; /* decode jobs handed out */
	size_t *jobs, njobs;
	int err; /* the first job error (db_lock) */
	uint64_t decoded; /* bytes decoded (db_lock) */
	uint64_t total;	  /* bytes of the members */
};

static void bld_lock(struct builder *b)
{
	pthread_mutex_lock(&b->db_lock);
}

static void bld_unlock(struct builder *b)
{
	pthread_mutex_unlock(&b->db_lock);
}

/* Marks member id unreadable (db_lock held by the caller when jobs run). */
static int mark_unreadable(struct builder *b, uint64_t id, int err, const char *why)
{
	sqlite3_bind_int64(b->set_unreadable, 1, (sqlite3_int64)id);
	sqlite3_bind_int64(b->set_unreadable, 2, err);
	sqlite3_bind_text(b->set_unreadable, 3, why, -1, SQLITE_TRANSIENT);
	return bld_step_done(b->set_unreadable);
}

static int set_link(struct builder *b, uint64_t id, const uint8_t *target, size_t len)
{
	sqlite3_bind_int64(b->set_link, 1, (sqlite3_int64)id);
	sqlite3_bind_blob(b->set_link, 2, len ? (const void *)target : "", (int)len,
			  SQLITE_TRANSIENT);
	sqlite3_bind_int64(b->set_link, 3, (sqlite3_int64)len);
	return bld_step_done(b->set_link);
}

/* ---- the sink ---------------------------------------------------------------------------- */

static int on_stream(void *opaque, const struct cont_stream *cs, uint64_t *id)
{
	struct bld_streams *S = opaque;
	struct bstream *s;

	if (S->n == S->cap) {
		size_t cap = S->cap ? S->cap * 2 : 64;
		struct bstream *m = realloc(S->s, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		S->s = m;
		S->cap = cap;
	}
	s = &S->s[S->n];
	*s = (struct bstream){.id = IDX_STREAM + 1 + S->n, .codec = codec_by_name(cs->codec),
			      .codec_name = strdup(cs->codec), .coff = cs->coff, .clen = cs->clen,
			      .usize = cs->usize, .zip_local = cs->zip_local,
			      .encrypted = cs->encrypted, .all_crc = true};
	if (cs->crypt) {
		struct zcr_rec r;
		if (zcr_parse(cs->crypt, ZCR_LEN, &r)) {
			free(s->codec_name);
			return -EINVAL; /* the container made it: its bug */
		}
		s->crypt = true;
		if (zcr_params_join(&r, cs->params, cs->params_len, (uint8_t **)&s->params,
				    &s->params_len)) {
			free(s->codec_name);
			return -ENOMEM;
		}
	} else if (cs->params_len) {
		s->params = malloc(cs->params_len);
		if (s->params)
			memcpy(s->params, cs->params, cs->params_len);
		s->params_len = cs->params_len;
	}
	if (!s->codec_name || (cs->params_len && !s->params)) {
		free(s->codec_name);
		free(s->params);
		return -ENOMEM;
	}
	S->n++;
	*id = s->id;
	return 0;
}

static struct bstream *stream_of(struct bld_streams *S, uint64_t id)
{
	return id > IDX_STREAM && id - IDX_STREAM - 1 < S->n ? &S->s[id - IDX_STREAM - 1] : NULL;
}

static int push_member(struct smember **v, size_t *n, size_t *cap, const struct smember *m)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct smember *p = realloc(*v, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = *m;
	return 0;
}

/* A member without a name (7-Zip's -si archives): named after the archive, without its
 * extension, as a single compressed file is. */
static char *unnamed_name(const struct idx_input *in)
{
	const char *base = strrchr(in->name, '/') ? strrchr(in->name, '/') + 1 : in->name;
	char *stripped = codec_strip_archive_ext(base, strlen(base));

	return stripped ? stripped : strdup(base);
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct bld_streams *S = opaque;
	struct builder *b = S->b;
	struct arc_member mm = *m;
	struct bstream *s = NULL;
	char why[160], *name = NULL;
	int err;

	if (m->stream) {
		s = stream_of(S, m->stream);
		if (!s) {
			tfs_log(TFS_LOG_ERR, "%s: internal error: member in an unknown stream",
				S->in->name);
			return -EINVAL;
		}
		if (!s->codec && !mm.unreadable) {
			snprintf(why, sizeof(why), "codec %s not in this build", s->codec_name);
			mm.unreadable = -EOPNOTSUPP;
			mm.why = why;
		}
		if (m->data_off > s->usize || m->size > s->usize - m->data_off) {
			mm.unreadable = -EIO;
			mm.why = "its data lies outside its stream: damaged";
		}
	}
	if (!m->path_len && m->type == MEMBER_REG) {
		name = unnamed_name(S->in);
		if (!name)
			return -ENOMEM;
		mm.path = (const uint8_t *)name;
		mm.path_len = strlen(name);
	}
	err = bld_member(b, &mm);
	free(name);
	if (m->type == MEMBER_REG)
		S->total += m->size;
	if (err || !b->last_id)
		return err;
	struct smember sm = {.id = b->last_id, .off = m->data_off, .size = m->size,
			     .has_crc = m->has_crc, .crc = m->crc,
			     .link = m->type == MEMBER_SYMLINK && m->link_in_data};
	if (sm.link && sm.size > LINK_MAX_LEN) {
		sm.link = false;
		tfs_log(TFS_LOG_WARNING, "%s: %.*s: a symbolic link of %" PRIu64 " bytes: left "
			"without a target", S->in->name, (int)m->path_len, (const char *)m->path,
			m->size);
	}
	if (mm.unreadable)
		return 0;
	if (s) {
		if (!m->size && !sm.link)
			return 0;
		s->all_crc &= m->has_crc;
		return push_member(&s->m, &s->nm, &s->cap, &sm);
	}
	if (sm.link) { /* stored: read from the archive after the parse */
		sm.off = m->data_off;
		return push_member(&S->links, &S->nlinks, &S->links_cap, &sm);
	}
	return 0;
}

static void on_cont_progress(void *opaque, uint64_t off)
{
	struct bld_streams *S = opaque;

	bld_progress(S->b, false);
}

/* ---- decoding a stream now ---------------------------------------------------------------- */

struct job {
	struct bld_streams *S;
	struct bstream *s;
};

static int job_ckpt(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
		    size_t auxlen, const uint32_t *crcs, uint64_t ncrcs)
{
	struct job *j = opaque;
	struct builder *b = j->S->b;

	bld_lock(b);
	int err = bld_store_ckpt(b, j->s->id, idx, ck, aux, auxlen, true, crcs, ncrcs);
	bld_unlock(b);
	return err;
}

static int cmp_member(const void *x, const void *y)
{
	const struct smember *a = x, *b = y;

	return a->off < b->off ? -1 : a->off > b->off;
}

/* The window of the archive file holding s's compressed bytes. */
static int stream_window(struct bld_streams *S, const struct bstream *s, struct src **out)
{
	uint64_t start = s->coff, size = src_size(S->in->src);
	int err = 0;

	*out = NULL;
	if (s->zip_local)
		err = zip_local_data(S->in->src, s->coff, S->in->name, &start);
	if (!err && (start > size || s->clen > size - start)) {
		tfs_log(TFS_LOG_WARNING, "%s: the archive ends inside a compressed entry "
			"(truncated): its reads fail", S->in->name);
		err = -EIO;
	}
	if (!err && !(*out = src_window(S->in->src, start, s->clen)))
		err = -ENOMEM;
	return err;
}

/* Reads the decoded stream through cs, checking its members' CRC-32s and keeping the
 * targets of its symlinks.  *end: the decoded bytes read; a member found wrong is marked. */
static int job_read(struct job *j, struct cstream *cs, uint64_t *end)
{
	struct bstream *s = j->s;
	struct builder *b = j->S->b;
	uint8_t *buf = malloc(READ_STEP);
	uint32_t *crc = calloc(s->nm ? s->nm : 1, sizeof(*crc));
	uint8_t **link = calloc(s->nm ? s->nm : 1, sizeof(*link));
	size_t first = 0; /* members before it are done */
	uint64_t pos = 0;
	int err = 0;

	if (!buf || !crc || !link) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->nm && !s->encrypted; i++) /* encrypted: see the top */
		if (s->m[i].link && !(link[i] = malloc(s->m[i].size ? s->m[i].size : 1))) {
			err = -ENOMEM;
			goto out;
		}
	while (first < s->nm) {
		ssize_t n = src_pread(cstream_src(cs), buf, READ_STEP, pos);
		if (n <= 0) {
			err = n < 0 ? (int)n : 0;
			break;
		}
		for (size_t i = first; i < s->nm && s->m[i].off < pos + (uint64_t)n; i++) {
			struct smember *m = &s->m[i];
			uint64_t a = m->off > pos ? m->off : pos;
			uint64_t z = m->off + m->size < pos + (uint64_t)n ? m->off + m->size
									  : pos + (uint64_t)n;
			if (a >= z)
				continue;
			crc[i] = tfs_crc32(crc[i], buf + (a - pos), z - a);
			if (link[i])
				memcpy(link[i] + (a - m->off), buf + (a - pos), (size_t)(z - a));
		}
		pos += (uint64_t)n;
		/* members that end here are done: check them */
		bld_lock(b);
		while (first < s->nm && s->m[first].off + s->m[first].size <= pos) {
			struct smember *m = &s->m[first];
			if (m->has_crc && crc[first] != m->crc) {
				tfs_log(TFS_LOG_WARNING, "%s: a member's data does not match its CRC-32: "
					"its reads fail", j->S->in->name);
				err = mark_unreadable(b, m->id, -EIO,
						      "its data does not match its CRC-32: damaged");
			} else if (link[first]) {
				err = set_link(b, m->id, link[first], (size_t)m->size);
			}
			first++;
			if (err)
				break;
		}
		bld_unlock(b);
		if (err)
			break;
	}
out:
	*end = pos;
	for (size_t i = 0; link && i < s->nm; i++)
		free(link[i]);
	free(link);
	free(crc);
	free(buf);
	return err;
}

/* An encrypted stream that no password given opens (7z's AES folders are the codec's):
 * its members are marked unreadable with -EACCES, and meta 'locked' says that the index was
 * made without a password it needed -- validate.c then has it made again when passwords are
 * given (never which: nothing from a password is stored). */
static int locked_stream(struct bld_streams *S, struct bstream *s)
{
	struct builder *b = S->b;
	int err;

	bld_lock(b);
	err = db_meta_set(b->db, "locked", "1");
	for (size_t i = 0; !err && i < s->nm; i++)
		err = mark_unreadable(b, s->m[i].id, -EACCES,
				      "encrypted, and no password given opened it when the index "
				      "was made");
	bld_unlock(b);
	return err;
}

/* Decodes stream s now: checkpoints, segment CRCs, members checked, its row. */
static int job_run(struct job *j)
{
	struct bld_streams *S = j->S;
	struct bstream *s = j->s;
	struct builder *b = S->b;
	struct codec_opts co = {.spacing = S->o->gzip_spacing, .threads = 1,
				.params = s->params, .params_len = s->params_len};
	struct cstream_sink sink = {.checkpoint = job_ckpt, .opaque = j};
	struct cstream *cs = NULL;
	struct shadow_stream *sh = NULL;
	struct src *win = NULL;
	uint64_t usize = 0, read = 0, trusted;
	int err = stream_window(S, s, &win), derr = 0;

	if (!err) {
		bld_lock(b);
		if (!s->encrypted && bld_shadow_wants(b->shadow, s->codec, win)) /* 64 KiB segs */
			sh = bld_shadow_tap(b->shadow, s->id, &sink);
		bld_unlock(b);
		err = cstream_new(s->codec, win, &co, &sink, &cs);
	}
	if (err == -EACCES) { /* encrypted, and no password given opens it */
		bld_shadow_end(sh, false, 0);
		err = locked_stream(S, s);
		goto out;
	}
	if (!err) {
		derr = job_read(j, cs, &read);
		if (!derr || derr == -EIO)
			derr = derr ? derr : cstream_finish(cs, &usize);
	}
	trusted = 0;
	if (!err && !derr) {
		trusted = usize;
	} else if (!err && derr == -EIO) { /* damaged: keep what was verified */
		uint64_t limit = cstream_verified(cs);
		err = cstream_salvage(cs, limit, &usize);
		trusted = usize < limit ? usize : limit;
	} else if (!err) {
		err = derr;
	}
	if (err == -EIO) { /* nothing of it can be read */
		err = 0;
		usize = trusted = 0;
	}
	/* the shadow holds the stream if it decoded whole and undamaged */
	bld_shadow_end(sh, !err && !derr, usize);
	bld_lock(b);
	S->decoded += usize;
	for (size_t i = 0; !err && i < s->nm; i++) /* what lies past the damage */
		if (s->m[i].off + s->m[i].size > trusted) {
			if (i == 0 || s->m[i - 1].off + s->m[i - 1].size <= trusted)
				tfs_log(TFS_LOG_WARNING, "%s: a compressed stream is damaged at decoded "
					"offset %" PRIu64 ": the members past it cannot be read",
					S->in->name, trusted);
			err = mark_unreadable(b, s->m[i].id, -EIO, "damaged: its data cannot be "
					      "decoded");
		}
	if (!err) {
		struct db_stream ds = {.id = s->id, .codec = s->codec->name, .coff = s->coff,
				       .clen = s->clen, .usize = usize,
				       .crcs = sink.seg_shift == SEG_SHIFT_FINE
						   ? IDX_CRCS_SEGMENTS_FINE
						   : IDX_CRCS_SEGMENTS,
				       .flags = (s->zip_local ? IDX_S_ZIPLOCAL : 0) |
						(s->encrypted ? IDX_S_SECRET : 0),
				       .params = s->params, .params_len = s->params_len};
		err = db_insert_stream(b->db, &b->ins_stream, &ds);
	}
	bld_unlock(b);
out:
	cstream_free(cs);
	src_free(win);
	return err;
}

static void *job_thread(void *arg)
{
	struct bld_streams *S = arg;
	size_t k;

	while ((k = atomic_fetch_add(&S->next_job, 1)) < S->njobs) {
		struct job j = {S, &S->s[S->jobs[k]]};
		int err = job_run(&j);
		bld_lock(S->b);
		if (err && !S->err)
			S->err = err;
		bool stop = S->err != 0;
		bld_unlock(S->b);
		if (stop)
			break;
	}
	return NULL;
}

/* Runs the decode jobs on up to o->threads threads (the calling one among them, the others
 * pool jobs joined here). */
static int run_jobs(struct bld_streams *S)
{
	unsigned n = S->o->threads ? S->o->threads : 1;
	struct pool_job **t;
	unsigned started = 0;

	if (n > S->njobs)
		n = (unsigned)S->njobs;
	if (n == 0)
		return 0;
	t = calloc(n, sizeof(*t));
	for (; t && started + 1 < n; started++)
		if (pool_start(job_thread, S, "bld-stream", 0, &t[started]) < 0)
			break;
	job_thread(S);
	for (unsigned i = 0; i < started; i++)
		pool_join(t[i]);
	free(t);
	return S->err;
}

/* ---- after the parse ------------------------------------------------------------------------ */

static int drop_ckpt(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
		     size_t auxlen, const uint32_t *crcs, uint64_t ncrcs)
{
	return 0; /* a whole-mode stream keeps no checkpoint */
}

/* The small streams: their rows (decoded at their first read); their symlinks' targets now. */
static int whole_stream(struct bld_streams *S, struct bstream *s)
{
	struct builder *b = S->b;
	struct db_stream ds = {.id = s->id, .codec = s->codec->name, .coff = s->coff,
			       .clen = s->clen, .usize = s->usize, .crcs = IDX_CRCS_MEMBERS,
			       .flags = (s->zip_local ? IDX_S_ZIPLOCAL : 0) |
					(s->crypt ? IDX_S_CRYPT : 0) |
					(s->encrypted ? IDX_S_SECRET : 0),
			       .params = s->params, .params_len = s->params_len};
	bool links = false;
	int err = db_insert_stream(b->db, &b->ins_stream, &ds);

	for (size_t i = 0; i < s->nm; i++)
		links |= s->m[i].link;
	if (err || !links || s->crypt || s->encrypted)
		return err; /* an encrypted target is read at readlink (see the top) */
	/* a symlink's target is needed now: decode the (small) stream with its scan */
	struct job j = {S, s};
	struct src *win = NULL;
	struct codec_opts co = {.spacing = UINT64_MAX, .threads = 1, .params = s->params,
				.params_len = s->params_len};
	struct cstream_sink drop = {.checkpoint = drop_ckpt};
	struct cstream *cs = NULL;
	uint64_t read;

	err = stream_window(S, s, &win);
	if (!err)
		err = cstream_new(s->codec, win, &co, &drop, &cs);
	if (!err)
		err = job_read(&j, cs, &read);
	if (err == -EIO || err == -EACCES) { /* their reads fail: they stay without a target */
		tfs_log(TFS_LOG_WARNING, "%s: cannot decode the targets of its symbolic links: "
			"reading them fails as their reads do", S->in->name);
		err = 0;
	}
	cstream_free(cs);
	src_free(win);
	return err;
}

/* Stored symlinks: their targets from the archive. */
static int stored_links(struct bld_streams *S)
{
	uint8_t buf[LINK_MAX_LEN];
	int err = 0;

	for (size_t i = 0; !err && i < S->nlinks; i++) {
		struct smember *m = &S->links[i];
		if (src_pread(S->in->src, buf, (size_t)m->size, m->off) != (ssize_t)m->size)
			continue; /* cut short: left unread, its readlink fails (arch_readlink) */
		err = set_link(S->b, m->id, buf, (size_t)m->size);
	}
	return err;
}

static void streams_free(struct bld_streams *S)
{
	for (size_t i = 0; i < S->n; i++) {
		free(S->s[i].codec_name);
		free(S->s[i].params);
		free(S->s[i].m);
	}
	free(S->s);
	free(S->links);
	free(S->jobs);
}

int bld_container(struct builder *b, const struct idx_input *in, const struct container *ct,
		  const struct idx_build_opts *o, struct idx_build_stats *st)
{
	struct bld_streams S = {.b = b, .in = in, .o = o};
	struct cont_sink sink = {.stream = on_stream, .member = on_member,
				 .progress = on_cont_progress, .opaque = &S, .name = in->name};
	struct cont_stats cst = {0};
	uint64_t whole_max = (o->gzip_spacing ? o->gzip_spacing : (4u << 20)) * WHOLE_SPACINGS;
	int err;

	atomic_init(&S.next_job, 0);
	pthread_mutex_init(&b->db_lock, NULL);
	err = ct->parse(in->src, &sink, &cst);
	st->members = b->members;
	st->damaged = cst.damaged;
	st->container = ct->name;
	if (!err)
		err = stored_links(&S);
	S.jobs = calloc(S.n ? S.n : 1, sizeof(*S.jobs));
	if (!err && !S.jobs)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < S.n; i++) {
		struct bstream *s = &S.s[i];
		if (!s->codec || !s->nm)
			continue; /* nothing readable in it */
		qsort(s->m, s->nm, sizeof(*s->m), cmp_member);
		if (s->crypt || (s->usize <= whole_max && s->all_crc))
			err = whole_stream(&S, s);
		else
			S.jobs[S.njobs++] = i;
	}
	if (!err && S.njobs)
		err = run_jobs(&S);
	pthread_mutex_destroy(&b->db_lock);
	/* a stream's reader asks for its members (the CRCs of whole mode) */
	if (!err)
		err = db_exec(b->db, "CREATE INDEX entries_stream ON entries (stream, data_off)"
				     " WHERE stream IS NOT NULL");
	st->usize = S.total; /* what the members hold, whatever was decoded now */
	streams_free(&S);
	return err;
}
