/* tarseek-convert's engine: see convert.h.
 *
 * The pieces, in the order the bytes flow:
 *   the source    its index (idx_prepare: found, or built as a mount would) gives the member
 *                 boundaries and the decoded size; its codec's scan gives the decoded bytes,
 *                 read forward once (its checkpoints are dropped: the index has them); for a
 *                 container, convert_tar.h plans a tar of its members (the boundaries, the
 *                 size) and makes its bytes as they are read;
 *   the blocks    cut by next_end(), filled on the indexing thread, compressed by the workers
 *                 (jobs of the pool, common/pool.h; a ring of njobs jobs, at most njobs
 *                 ahead of the one being delivered);
 *   the builder   idx_build_base reads the decoded stream through a codec whose scan is ours
 *                 (cv_codec: the real codec's entry with scan_* replaced): before handing out a
 *                 block's first byte, the scan writes the block and passes the encoder's
 *                 checkpoint for it to the builder, as a codec's scan would.
 * A plain .tar output is written first and then indexed as any plain tar (headers only).
 */
#include "convert/convert.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/parts.h"
#include "common/pool.h"
#include "index/archive.h"
#include "net/net.h"
#include "index/build.h"
#include "index/db.h"
#include "convert/convert_tar.h"

#define CV_BLOCK_ZSTD ((uint64_t)256 << 10)
#define CV_BLOCK_XZ ((uint64_t)4 << 20)
#define CV_BLOCK_GZIP ((uint64_t)2 << 20)
#define CV_BLOCK_LZO ((uint64_t)1 << 20) /* lzo.c's group: whole_blocks */
#define CV_BLOCK_MIN ((uint64_t)64 << 10)
#define CV_BLOCK_MAX ((uint64_t)1 << 30)
#define CV_BLOCK_CAP(b) ((b) + (b) / 4) /* the largest block next_end makes */
#define CV_COPY ((size_t)4 << 20) /* bytes per read when writing a plain tar */
#define CV_VERIFY_BUF ((size_t)1 << 20)

static volatile sig_atomic_t interrupted;

void cv_interrupt(void)
{
	interrupted = 1;
}

uint64_t cv_default_block(const struct encoder *enc)
{
	if (!enc)
		return 0;
	if (strcmp(enc->codec, "xz") == 0)
		return CV_BLOCK_XZ;
	if (strcmp(enc->codec, "lzo") == 0)
		return CV_BLOCK_LZO;
	return strcmp(enc->codec, "gzip") == 0 ? CV_BLOCK_GZIP : CV_BLOCK_ZSTD;
}

/* ---- The source ---------------------------------------------------------------------------- */

struct cv_source {
	char *index;	/* its index file */
	char *codec;	/* "none", "gzip", ... */
	uint64_t usize; /* decoded bytes */
	uint64_t *cuts; /* member starts, increasing */
	size_t ncuts;
	struct stat st;
	struct src *file;
	const struct codec *c;	/* NULL: a plain tar, read from file */
	struct codec_scan *scan;
	bool container;	    /* zip, 7z, libarchive's: its members are made into a tar */
	struct cv_tar *tar; /* that tar, when container */
};

static int no_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	(void)opaque, (void)ck, (void)aux, (void)auxlen;
	return 0;
}

static const struct codec_sink no_sink = {.checkpoint = no_ckpt};

/* The next len decoded bytes of the source (at decoded offset off, for a plain one): len, fewer
 * at the end, or -errno (a decode error, logged by the codec). */
static ssize_t source_read(struct cv_source *s, uint8_t *buf, size_t len, uint64_t off)
{
	size_t have = 0;

	if (s->tar)
		return cv_tar_read(s->tar, buf, len, off);
	if (!s->c)
		return src_pread(s->file, buf, len, off);
	while (have < len) {
		ssize_t n = s->c->scan_read(s->scan, buf + have, len - have);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		have += (size_t)n;
	}
	return (ssize_t)have;
}

static int read_cuts(sqlite3 *db, struct cv_source *s)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc, err = db_prepare(db,
				 "SELECT DISTINCT hdr_off FROM entries WHERE id != 1 AND"
				 " (flags & ?1) = 0 ORDER BY hdr_off",
				 &st);

	if (err)
		return err;
	sqlite3_bind_int(st, 1, IDX_F_IMPLICIT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (s->ncuts == cap) {
			size_t n = cap ? cap * 2 : 1024;
			uint64_t *p = realloc(s->cuts, n * sizeof(*p));
			if (!p) {
				sqlite3_finalize(st);
				return -ENOMEM;
			}
			s->cuts = p;
			cap = n;
		}
		s->cuts[s->ncuts++] = (uint64_t)sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int source_facts(struct cv_source *s, const char *name)
{
	sqlite3 *db = NULL;
	char *kind = NULL;
	uint64_t damaged = 0;
	int err = db_open_ro(s->index, &db);

	if (err)
		return err;
	kind = db_meta_get(db, "kind");
	s->codec = db_meta_get(db, "codec");
	if (!kind || !s->codec || !db_meta_get_u64(db, "usize", &s->usize)) {
		tfs_log(TFS_LOG_ERR, "%s: its index %s lacks what a conversion needs", name,
			s->index);
		err = -EIO;
	} else if (db_meta_get_u64(db, "damaged", &damaged) && damaged) {
		tfs_log(TFS_LOG_ERR, "%s is damaged: a conversion would lose what cannot be read",
			name);
		err = -EIO;
	} else if (strcmp(kind, "tar") == 0) { /* a single file has no members to cut at */
		err = read_cuts(db, s);
	} else if (strcmp(kind, "single")) { /* a container's name: zip, 7z, libarchive */
		s->container = true;
	}
	free(kind);
	sqlite3_close(db);
	return err;
}

static void source_close(struct cv_source *s)
{
	cv_tar_free(s->tar);
	if (s->c)
		s->c->scan_free(s->scan);
	src_free(s->file);
	free(s->cuts);
	free(s->codec);
	free(s->index);
}

/* A URL source: its bytes through net.h, its index found or built as a mount does; the output
 * gets mode 0644, the object's Last-Modified (else now) and our owner.  *name: the shown URL
 * (never a password or a signature), valid while s->file is. */
static int source_open_url(struct cv_source *s, const char *url, const struct cv_opts *o,
			   bool *built, const char **name)
{
	struct http_obj *obj;
	int err;

	if (!o->net) {
		tfs_log(TFS_LOG_ERR, "remote sources are not available here");
		return -ENOTSUP;
	}
	err = net_open(url, o->net, &s->file, &obj);
	if (err)
		return err; /* logged */
	*name = http_name(obj);
	err = idx_prepare_remote(obj, s->file, &o->source, &s->index, built, NULL);
	if (err)
		return err;
	int64_t mtime = http_mtime(obj);
	s->st.st_mode = S_IFREG | 0644;
	s->st.st_size = (off_t)http_size(obj);
	s->st.st_uid = getuid();
	s->st.st_gid = getgid();
	s->st.st_mtim.tv_sec = mtime > 0 ? (time_t)mtime : time(NULL);
	s->st.st_atim = s->st.st_mtim;
	return 0;
}

static int source_open(struct cv_source *s, const char *path, const struct cv_opts *o,
		       struct cv_stats *st)
{
	bool built = false;
	int err;

	if (http_is_url(path)) {
		err = source_open_url(s, path, o, &built, &path);
	} else { /* a split archive: its parts joined (a missing or short one is said) */
		err = parts_open(path, &s->file);
		if (!err)
			err = parts_stat(path, &s->st);
		if (err)
			tfs_log(TFS_LOG_ERR, "cannot read %s: %s", path, strerror(-err));
		if (!err)
			err = idx_prepare(path, &o->source, &s->index, &built, NULL);
	}
	if (err)
		return err;
	st->built_source_index = built;
	err = source_facts(s, path);
	if (err)
		return err;
	if (s->container) /* its members are made into a tar */
		return cv_tar_open(s->index, s->file, path, &s->tar, &s->cuts, &s->ncuts,
				   &s->usize);
	if (strcmp(s->codec, "none") == 0)
		return 0;
	struct codec_opts co = {.spacing = idx_stream_spacing(&o->source.build, s->codec),
				.threads = o->threads ? o->threads : 1};
	s->c = codec_by_name(s->codec);
	if (!s->c) {
		tfs_log(TFS_LOG_ERR, "%s: codec %s is not built in", path, s->codec);
		return -ENOTSUP;
	}
	err = s->c->scan_new(s->file, &co, &no_sink, &s->scan);
	if (err)
		s->c = NULL;
	return err;
}

/* ---- Blocks and the workers that compress them -------------------------------------------- */

enum { JOB_QUEUED = 1, JOB_DONE };

struct cv_job {
	struct enc_block b;
	uint8_t *in;
	uint8_t dict[ENC_DICT_MAX];
	uint64_t uoff;
	int state, err;
};

struct cv {
	const struct cv_opts *o;
	const struct encoder *enc;
	struct enc *e;
	struct cv_source *s;
	uint64_t block;

	size_t ci;	   /* next cut to look at */
	uint64_t read_pos; /* decoded bytes read from the source */
	uint8_t hist[ENC_DICT_MAX];
	size_t hist_len;

	struct cv_job *jobs;
	unsigned njobs;
	uint64_t next_fill, next_compress, deliver; /* job numbers; job k is jobs[k % njobs] */
	bool filled_all;			    /* the last job is filled */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pool_job **workers; /* jobs of the pool */
	unsigned nworkers;
	bool stop;

	int fd;
	uint64_t out_pos;
	struct cv_job *cur; /* the job being handed out, or NULL */
	size_t cur_pos;
	uint64_t delivered, blocks;
	bool finished; /* the tail is written */
	int err;
	struct codec_sink sink;
	struct codec codec; /* the output's codec with our scan */

	const char *name;
	double t0, last; /* when the writing started, when progress was last told */
};

static void *worker(void *arg)
{
	struct cv *c = arg;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		if (c->next_compress < c->next_fill) {
			struct cv_job *j = &c->jobs[c->next_compress++ % c->njobs];
			pthread_mutex_unlock(&c->lock);
			int err = c->enc->compress(c->e, &j->b);
			pthread_mutex_lock(&c->lock);
			j->err = err;
			j->state = JOB_DONE;
			pthread_cond_broadcast(&c->cond);
			continue;
		}
		pthread_cond_wait(&c->cond, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Where the block starting at decoded offset s ends: at the first member start in
 * [s + block, s + 5/4 block] (a block holds at least `block` bytes when it can: zstd gives a
 * frame under 1 MiB no checkpoint of its own), else at the last in [s + block / 4, s + block),
 * else at s + block, inside a member then longer than a block.  For an encoder with
 * whole_blocks (lzo) only [s + block, s + 5/4 block) counts, then s + block. */
static uint64_t next_end(struct cv *c, uint64_t s)
{
	const struct cv_source *src = c->s;
	uint64_t t = s + c->block, end = 0;
	bool whole = c->enc && c->enc->whole_blocks; /* in [block, 5/4 block): no short block */

	while (c->ci < src->ncuts && src->cuts[c->ci] <= s)
		c->ci++;
	for (size_t i = c->ci; i < src->ncuts && src->cuts[i] <= t + c->block / 4; i++) {
		if (whole && src->cuts[i] == t + c->block / 4)
			break;
		if (src->cuts[i] >= t) {
			end = src->cuts[i];
			break;
		}
		if (src->cuts[i] >= s + c->block / 4 && !whole)
			end = src->cuts[i];
	}
	if (!end)
		end = t;
	return end < src->usize ? end : src->usize;
}

/* Reads the next block from the source into a free job and queues it. */
static int fill_one(struct cv *c)
{
	struct cv_job *j = &c->jobs[c->next_fill % c->njobs];
	uint64_t s = c->read_pos, end = next_end(c, s);
	size_t len = (size_t)(end - s);
	ssize_t n = len ? source_read(c->s, j->in, len, s) : 0;

	if (n < 0)
		return (int)n;
	if ((size_t)n < len) {
		tfs_log(TFS_LOG_ERR,
			"%s: the source ends at %" PRIu64 " bytes, its index says %" PRIu64,
			c->name, s + (uint64_t)n, c->s->usize);
		return -EIO;
	}
	memcpy(j->dict, c->hist, c->hist_len);
	j->b = (struct enc_block){.in = j->in,
				  .len = len,
				  .dict = j->dict,
				  .dict_len = c->hist_len,
				  .last = end == c->s->usize,
				  .out = j->b.out,
				  .out_cap = j->b.out_cap};
	j->uoff = s;
	if (len >= ENC_DICT_MAX) {
		memcpy(c->hist, j->in + len - ENC_DICT_MAX, ENC_DICT_MAX);
		c->hist_len = ENC_DICT_MAX;
	} else if (len) {
		size_t keep = c->hist_len + len > ENC_DICT_MAX ? ENC_DICT_MAX - len : c->hist_len;
		memmove(c->hist, c->hist + c->hist_len - keep, keep);
		memcpy(c->hist + keep, j->in, len);
		c->hist_len = keep + len;
	}
	c->read_pos = end;
	pthread_mutex_lock(&c->lock);
	j->state = JOB_QUEUED;
	if (j->b.last)
		c->filled_all = true;
	c->next_fill++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int write_all(struct cv *c, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = pwrite(c->fd, p, len, (off_t)c->out_pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? -errno : -EIO;
			tfs_log(TFS_LOG_ERR, "cannot write %s: %s", c->name, strerror(-err));
			return err;
		}
		p += n;
		len -= (size_t)n;
		c->out_pos += (uint64_t)n;
	}
	return 0;
}

static int write_piece(struct cv *c, int (*fn)(struct enc *, uint8_t **, size_t *))
{
	uint8_t *p = NULL;
	size_t len = 0;
	int err = fn(c->e, &p, &len);

	if (!err && len)
		err = write_all(c, p, len);
	free(p);
	return err;
}

/* Tells the caller how far the writing is (cv_opts.progress): at most once a second, unless
 * force or end. */
static void progress(struct cv *c, bool force, bool end)
{
	double t = mono_now();

	if (!c->o->progress || (!force && !end && t - c->last < 1.0))
		return;
	c->last = t;
	struct cv_progress p = {.output = c->name,
				.done = c->delivered,
				.total = c->s->usize,
				.written = c->out_pos,
				.seconds = t - c->t0,
				.end = end};
	c->o->progress(c->o->progress_opaque, &p);
}

/* The next block, compressed, written and its checkpoint passed on. */
static int next_block(struct cv *c)
{
	struct cv_job *j;
	struct codec_ckpt ck;
	uint8_t *aux = NULL;
	size_t auxlen = 0;
	int err, has;

	if (c->cur) { /* its slot is filled again below (fill_one) */
		c->cur = NULL;
		c->deliver++;
	}
	if (c->filled_all && c->deliver == c->next_fill) {
		if (!c->finished) {
			err = write_piece(c, c->enc->tail);
			if (err)
				return err;
			c->finished = true;
			progress(c, true, false);
		}
		return 0;
	}
	while (!c->filled_all && c->next_fill < c->deliver + c->njobs) {
		if (interrupted)
			return -EINTR;
		err = fill_one(c);
		if (err)
			return err;
	}
	j = &c->jobs[c->deliver % c->njobs];
	pthread_mutex_lock(&c->lock);
	while (j->state != JOB_DONE)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	if (j->err)
		return j->err;
	if (interrupted)
		return -EINTR;
	uint64_t coff = c->out_pos;
	err = write_all(c, j->b.out, j->b.out_len);
	has = err ? err : c->enc->commit(c->e, &j->b, j->uoff, coff, &ck, &aux, &auxlen);
	if (has == 1)
		has = c->sink.checkpoint(c->sink.opaque, &ck, aux, auxlen);
	free(aux);
	if (has < 0)
		return has;
	c->blocks++;
	c->cur = j;
	c->cur_pos = 0;
	progress(c, false, false);
	return 1;
}

/* ---- The scan the builder reads ------------------------------------------------------------- */

struct codec_scan {
	struct cv *c;
};

static ssize_t cv_src_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct cv *c = opaque;

	return src_pread(c->s->file, buf, len, off);
}

static const struct src_ops cv_src_ops = {.pread = cv_src_pread};

static int cv_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	struct cv *c = src_opaque_if(in, &cv_src_ops);
	struct codec_scan *s;

	(void)opts;
	*out = NULL;
	if (!c)
		return -EINVAL;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	c->sink = *sink;
	*out = s;
	return 0;
}

static ssize_t cv_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	struct cv *c = s->c;

	while (!c->err && (!c->cur || c->cur_pos == c->cur->b.len)) {
		int r = next_block(c);
		if (r < 0)
			c->err = r;
		if (r <= 0)
			break;
	}
	if (c->err)
		return c->err;
	if (!c->cur)
		return 0;
	size_t n = c->cur->b.len - c->cur_pos;
	n = n < len ? n : len;
	memcpy(buf, c->cur->in + c->cur_pos, n);
	c->cur_pos += n;
	c->delivered += n;
	return (ssize_t)n;
}

static uint64_t cv_scan_verified(struct codec_scan *s)
{
	return s->c->delivered;
}

static void cv_scan_free(struct codec_scan *s)
{
	free(s);
}

/* ---- Putting it together -------------------------------------------------------------------- */

static void cv_stop(struct cv *c)
{
	if (c->workers) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		for (unsigned i = 0; i < c->nworkers; i++)
			pool_join(c->workers[i]);
		free(c->workers);
		c->workers = NULL;
	}
	for (unsigned i = 0; c->jobs && i < c->njobs; i++) {
		free(c->jobs[i].in);
		free(c->jobs[i].b.out);
	}
	free(c->jobs);
	c->jobs = NULL;
	if (c->enc && c->e)
		c->enc->free(c->e);
	c->e = NULL;
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
}

static int cv_start(struct cv *c, unsigned threads)
{
	struct enc_opts eo = c->o->enc_opts;
	size_t bound;
	int err;

	eo.block = CV_BLOCK_CAP(c->block);
	err = c->enc->init(&eo, &c->e);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (err)
		return err;
	bound = c->enc->bound(c->e, (size_t)CV_BLOCK_CAP(c->block));
	c->njobs = threads + 2;
	c->jobs = calloc(c->njobs, sizeof(*c->jobs));
	c->workers = calloc(threads, sizeof(*c->workers));
	if (!c->jobs || !c->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < c->njobs; i++) {
		c->jobs[i].in = malloc((size_t)CV_BLOCK_CAP(c->block));
		c->jobs[i].b.out = malloc(bound);
		c->jobs[i].b.out_cap = bound;
		if (!c->jobs[i].in || !c->jobs[i].b.out)
			return -ENOMEM;
	}
	for (; c->nworkers < threads; c->nworkers++) {
		err = pool_start(worker, c, "tarseek-enc", 0, &c->workers[c->nworkers]);
		if (err)
			return err;
	}
	return 0;
}

/* The output and its index are written under these names, renamed at the end. */
struct cv_names {
	char *out_tmp, *idx, *idx_tmp;
};

static int make_tmp(const char *final, char **tmp, int *fd)
{
	if (asprintf(tmp, "%s.tsk-XXXXXX", final) < 0) {
		*tmp = NULL;
		return -ENOMEM;
	}
	*fd = mkstemp(*tmp);
	if (*fd < 0) {
		int err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot create %s: %s", *tmp, strerror(errno));
		free(*tmp);
		*tmp = NULL;
		return err;
	}
	return 0;
}

/* Writes the decoded stream as it is (a plain tar or file). */
static int copy_plain(struct cv *c)
{
	uint8_t *buf = malloc(CV_COPY);
	int err = buf ? 0 : -ENOMEM;

	while (!err && c->read_pos < c->s->usize) {
		size_t want = c->s->usize - c->read_pos < CV_COPY
				  ? (size_t)(c->s->usize - c->read_pos)
				  : CV_COPY;
		ssize_t n = source_read(c->s, buf, want, c->read_pos);
		if (interrupted)
			err = -EINTR;
		else if (n < 0)
			err = (int)n;
		else if ((size_t)n < want)
			err = -EIO;
		else
			err = write_all(c, buf, want);
		c->read_pos += want;
		c->delivered = c->read_pos;
		progress(c, false, false);
	}
	free(buf);
	return err;
}

static int finish_output(struct cv *c, const char *tmp, const struct stat *srcst)
{
	struct timespec ts[2] = {srcst->st_atim, srcst->st_mtim};

	if (fdatasync(c->fd) || futimens(c->fd, ts) || fchmod(c->fd, srcst->st_mode & 0777)) {
		int err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot finish %s: %s", tmp, strerror(errno));
		return err;
	}
	return 0;
}

static int write_output(struct cv *c, const char *output, struct cv_names *nm, struct cv_stats *st)
{
	const struct cv_opts *o = c->o;
	/* the options the source's index was found with are the mounts' */
	struct idx_build_opts bo = {.gzip_spacing = o->source.build.gzip_spacing,
				    .spacing_any = o->source.build.spacing_any,
				    .threads = o->threads ? o->threads : 1};
	struct idx_build_stats bs = {0};
	struct idx_input in = {.name = output,
			       .mode = c->s->st.st_mode,
			       .uid = c->s->st.st_uid,
			       .gid = c->s->st.st_gid,
			       .mtime = c->s->st.st_mtim.tv_sec,
			       .mtime_nsec = (uint32_t)c->s->st.st_mtim.tv_nsec};
	struct src *out_src = NULL, *cvsrc = NULL;
	int err, ifd = -1;

	err = make_tmp(nm->idx, &nm->idx_tmp, &ifd);
	if (err)
		return err;
	close(ifd);
	if (c->enc) {
		const struct codec *real = codec_by_name(c->enc->codec);
		if (!real)
			return -ENOTSUP;
		c->codec = *real;
		c->codec.scan_new = cv_scan_new;
		c->codec.scan_read = cv_scan_read;
		c->codec.scan_verified = cv_scan_verified;
		c->codec.scan_name = NULL;
		c->codec.scan_free = cv_scan_free;
		c->codec.index_blocks = NULL;
		err = cv_start(c, o->threads ? o->threads : 1);
		err = err ? err : write_piece(c, c->enc->head);
		cvsrc = err ? NULL : src_new(&cv_src_ops, c, src_size(c->s->file));
		if (!err && !cvsrc)
			err = -ENOMEM;
		in.src = cvsrc;
		in.codec = &c->codec;
		err = err ? err : idx_build_base(&in, nm->idx_tmp, &bo, &bs);
		if (!err && !c->finished) {
			tfs_log(TFS_LOG_ERR, "%s: the index was built before the end of the data",
				output);
			err = -EIO;
		}
		cv_stop(c);
		src_free(cvsrc);
	} else {
		err = copy_plain(c);
	}
	err = err ? err : finish_output(c, nm->out_tmp, &c->s->st);
	err = err ? err : src_open_file(nm->out_tmp, &out_src);
	in.src = out_src;
	if (!err && !c->enc)
		err = idx_build_base(&in, nm->idx_tmp, &bo, &bs);
	err = err ? err : idx_build_finish(nm->idx_tmp, &in, &bo);
	src_free(out_src);
	st->members = bs.members;
	st->blocks = c->blocks;
	st->output_size = c->out_pos;
	return err;
}

static int check_paths(const char *source, const char *output, const struct cv_opts *o)
{
	struct stat a, b;

	if (stat(output, &b) == 0) {
		if (stat(source, &a) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			tfs_log(TFS_LOG_ERR, "%s is the source itself", output);
			return -EINVAL;
		}
		if (!o->force) {
			tfs_log(TFS_LOG_ERR, "%s exists (--force replaces it)", output);
			return -EEXIST;
		}
		if (!S_ISREG(b.st_mode)) {
			tfs_log(TFS_LOG_ERR, "%s is not a regular file", output);
			return -EINVAL;
		}
	}
	return 0;
}

int cv_convert(const char *source, const char *output, const struct cv_opts *o, struct cv_stats *st)
{
	struct cv_source s = {0};
	struct cv c = {.o = o, .enc = o->enc, .s = &s, .fd = -1, .name = output};
	struct cv_names nm = {0};
	int err;

	memset(st, 0, sizeof(*st));
	c.block = o->block_size ? o->block_size : cv_default_block(o->enc);
	if (o->enc && (c.block < CV_BLOCK_MIN || c.block > CV_BLOCK_MAX)) {
		tfs_log(TFS_LOG_ERR, "--block-size must be within 64K..1G");
		return -EINVAL;
	}
	if (o->enc && o->enc->whole_blocks && c.block != cv_default_block(o->enc)) {
		tfs_log(TFS_LOG_ERR, "%s: the block size is %" PRIu64 "K, not set by --block-size",
			o->enc->ext, cv_default_block(o->enc) >> 10);
		return -EINVAL;
	}
	err = check_paths(source, output, o);
	err = err ? err : source_open(&s, source, o, st);
	if (err)
		goto out;
	st->source_size = (uint64_t)s.st.st_size;
	st->usize = s.usize;
	if (o->index_file)
		nm.idx = strdup(o->index_file);
	else if (asprintf(&nm.idx, "%s.index.sqlite", output) < 0)
		nm.idx = NULL;
	err = nm.idx ? make_tmp(output, &nm.out_tmp, &c.fd) : -ENOMEM;
	if (err)
		goto out;
	c.t0 = c.last = mono_now();
	err = write_output(&c, output, &nm, st);
	progress(&c, true, true);
	st->seconds = mono_now() - c.t0;
	if (!err && o->verify) {
		double t = mono_now();
		struct cv_opts vo = *o;
		vo.index_file = nm.idx_tmp;
		err = cv_check(source, nm.out_tmp, &vo);
		st->verify_seconds = mono_now() - t;
	}
	/* the index first: an index without its archive is harmless, the reverse costs a scan */
	if (!err && rename(nm.idx_tmp, nm.idx)) {
		err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot rename %s to %s: %s", nm.idx_tmp, nm.idx,
			strerror(errno));
	} else if (!err && rename(nm.out_tmp, output)) {
		err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot rename %s to %s: %s", nm.out_tmp, output,
			strerror(errno));
		unlink(nm.idx);
	}
out:
	if (c.fd >= 0)
		close(c.fd);
	if (err == -EINTR)
		tfs_log(TFS_LOG_ERR, "interrupted: %s is not written", output);
	if (err && nm.out_tmp)
		unlink(nm.out_tmp);
	if (err && nm.idx_tmp)
		unlink(nm.idx_tmp);
	free(nm.out_tmp);
	free(nm.idx_tmp);
	free(nm.idx);
	source_close(&s);
	return err;
}
