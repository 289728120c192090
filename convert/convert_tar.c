/* A container's members as a tar stream (convert_tar.h).
 *
 * The plan comes first (cv_tar_open).  The source is opened as a mount opens it; its tree is
 * walked with arch_readdir, so only what a mount shows is seen (the last version of each path,
 * no PATH.versions; the folders the index made up for their children are walked but not
 * written, as the source does not list them; sockets are left out, with a notice).  The order
 * is the place of each member's data in the source -- a stored member's file offset, else
 * the start of its stream and its offset in it; a member without data by its header -- so
 * that the reads go forward through the container (a 7z's solid folder is decoded once,
 * start to end).  A folder that holds something comes right after the last member in it:
 * GNU tar sets a folder's mtime once extraction has left it and never again, so a folder
 * written first keeps its time only if all it holds follows at once, which the data's order
 * does not promise (7-Zip sorts a solid folder's files by extension).  The first name of a
 * file with several carries its data, the others are hard links to that name.  Every header
 * is built once (tar_write.h), for its length: the member starts and the tar's length follow.
 *
 * Then cv_tar_read writes the same headers again, each member's bytes read with
 * arch_file_read in the pieces asked for (the engine's blocks), zeros to the next block, and
 * the end-of-archive marker.  A header that comes out another length the second time (the
 * index changed), a member that cannot be read (a damaged zip entry: -EIO) or ends early fails
 * the read, logged with the member's path; the engine then removes what it wrote.
 *
 * Attributes are the mount's (arch_getattr: a zip's DOS time as local time, a symlink's mode
 * 0777, the archive file's owner where the format stores none), owner names and the order
 * come from the index's entries table, which the mount does not show.
 */
#include "convert/convert_tar.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cache/cache.h"
#include "common/log.h"
#include "index/archive.h"
#include "index/db.h"
#include "convert/tar_write.h"

#define CT_CACHE ((uint64_t)64 << 20) /* the chunk cache the source is read through */
#define CT_NONE SIZE_MAX

/* An entry of the source's index, by id: where its data lies (the order) and what the mount
 * does not say. */
struct ct_ent {
	uint64_t k1, k2, hdr_off; /* the data's place: stored at k1, or at k2 in the stream at k1 */
	uint32_t mode, flags;	  /* as stored (a nested archive's mount shows a folder) */
	int unreadable;
	size_t first; /* the item that carries its data: CT_NONE until one is planned */
};

/* A name of the visible tree. */
struct ct_item {
	uint64_t id, ino; /* its row (readdir's cookie); the row of its data and attributes */
	size_t parent;	  /* its folder's item; CT_NONE: the top */
	uint8_t *name;
	size_t name_len;
	uint32_t mode; /* type and permission bits */
	uint64_t size;
	uint64_t hdr_off; /* where its headers start in the tar */
	size_t left;	  /* a folder: members in it not yet planned (ct_order) */
	bool planned;
};

/* Scratch space for one member's description (ct_member); its pointers point into it. */
struct ct_desc {
	struct tw_member m;
	struct tbuf path, link, xnames, xvals;
	struct member_xattr *xa;
	size_t xa_cap;
	char *uname, *gname;
	size_t *chain;
	size_t chain_cap;
};

struct cv_tar {
	const char *name; /* the source, for messages */
	struct cache *cache;
	struct arch *a;
	sqlite3 *db;
	sqlite3_stmt *owner;
	struct ct_ent *ent;
	uint64_t nent;
	struct ct_item *items;
	size_t nitems, cap;
	size_t *order; /* items in the tar's order */
	size_t norder;
	uint64_t usize;

	/* writing (cv_tar_read): */
	struct ct_desc d;
	struct tbuf hdr;
	size_t next;	      /* the next member of order to start */
	size_t hpos;	      /* bytes of hdr handed out */
	struct arch_file *f;  /* the member whose data is being read */
	uint64_t dpos, dsize; /* its bytes read so far, its size */
	size_t pad;	      /* zeros left after the data */
	uint64_t pos;	      /* bytes handed out */
};

static int ct_load_ents(struct cv_tar *t)
{
	sqlite3_stmt *st = NULL;
	int rc, err = db_prepare(t->db, "SELECT max(id) FROM entries", &st);

	if (err)
		return err;
	rc = sqlite3_step(st);
	t->nent = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) + 1 : 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW || t->nent < 2 || t->nent > SIZE_MAX / sizeof(*t->ent)) {
		tfs_log(TFS_LOG_ERR, "%s: its index has no entries", t->name);
		return -EIO;
	}
	t->ent = calloc((size_t)t->nent, sizeof(*t->ent));
	if (!t->ent)
		return -ENOMEM;
	err =
	    db_prepare(t->db,
		       "SELECT e.id, e.stream IS NOT NULL, s.coff, e.data_off, e.hdr_off, e.stored,"
		       " e.mode, e.flags, e.unreadable FROM entries e"
		       " LEFT JOIN streams s ON s.id = e.stream",
		       &st);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
		if (id >= t->nent)
			continue;
		struct ct_ent *e = &t->ent[id];
		uint64_t data = (uint64_t)sqlite3_column_int64(st, 3);
		e->hdr_off = (uint64_t)sqlite3_column_int64(st, 4);
		if (sqlite3_column_int(st, 1)) { /* in a stream: its start, then the offset in it */
			e->k1 = (uint64_t)sqlite3_column_int64(st, 2);
			e->k2 = data;
		} else {
			e->k1 = sqlite3_column_int64(st, 5) ? data : e->hdr_off;
		}
		e->mode = (uint32_t)sqlite3_column_int64(st, 6);
		e->flags = (uint32_t)sqlite3_column_int64(st, 7);
		e->unreadable = sqlite3_column_int(st, 8);
		e->first = CT_NONE;
	}
	if (!err && rc != SQLITE_DONE) {
		tfs_log(TFS_LOG_ERR, "%s: its index cannot be read: %s", t->name,
			sqlite3_errstr(rc));
		err = -EIO;
	}
	sqlite3_finalize(st);
	return err ? err
		   : db_prepare(t->db, "SELECT uname, gname FROM entries WHERE id = ?1", &t->owner);
}

static int ct_add(struct cv_tar *t, uint64_t id, uint64_t ino, size_t parent, const char *name,
		  size_t len, uint32_t mode, uint64_t size)
{
	struct ct_item *it;

	if (t->nitems == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		void *p = realloc(t->items, cap * sizeof(*t->items));
		if (!p)
			return -ENOMEM;
		t->items = p;
		t->cap = cap;
	}
	it = &t->items[t->nitems];
	*it = (struct ct_item){
	    .id = id, .ino = ino, .parent = parent, .name_len = len, .mode = mode, .size = size};
	it->name = malloc(len + 1);
	if (!it->name)
		return -ENOMEM;
	memcpy(it->name, name, len);
	t->nitems++;
	return 0;
}

struct ct_walk {
	struct cv_tar *t;
	size_t dir;
};

static int ct_dirent(void *opaque, const char *name, size_t len, const struct arch_attr *at,
		     uint64_t cookie)
{
	struct ct_walk *w = opaque;
	struct cv_tar *t = w->t;
	uint32_t mode = at->mode;

	if (at->ino >= t->nent || cookie >= t->nent) {
		tfs_log(TFS_LOG_ERR, "%s: its index lists entry %" PRIu64 " past its last", t->name,
			at->ino > cookie ? at->ino : cookie);
		return -EIO;
	}
	if (at->flags & ARCH_A_NESTED) /* an archive inside, shown as a folder: its bytes */
		mode = t->ent[at->ino].mode;
	if (S_ISSOCK(mode)) {
		tfs_log(TFS_LOG_NOTICE, "%s: '%.*s' is a socket; left out", t->name, (int)len,
			name);
		return 0;
	}
	return ct_add(t, cookie, at->ino, w->dir, name, len, mode, at->size);
}

/* The path of item i into b (not NUL-terminated): "." for the top folder. */
static int ct_path(struct cv_tar *t, struct ct_desc *d, size_t i, struct tbuf *b)
{
	size_t n = 0, len = 0;

	for (size_t k = i; k && k != CT_NONE; k = t->items[k].parent) {
		if (n == d->chain_cap) {
			size_t cap = n ? n * 2 : 64;
			void *p = realloc(d->chain, cap * sizeof(*d->chain));
			if (!p)
				return -ENOMEM;
			d->chain = p;
			d->chain_cap = cap;
		}
		d->chain[n++] = k;
		len += t->items[k].name_len + 1;
	}
	b->len = 0;
	if (!n)
		return tar_buf_put(b, ".", 1);
	if (tar_buf_reserve(b, len))
		return -ENOMEM;
	for (size_t k = n; k-- > 0;) {
		const struct ct_item *it = &t->items[d->chain[k]];
		int err = tar_buf_put(b, it->name, it->name_len);
		if (!err && k)
			err = tar_buf_put(b, "/", 1);
		if (err)
			return err;
	}
	return 0;
}

static int ct_owner(struct cv_tar *t, struct ct_desc *d, uint64_t ino)
{
	int rc;

	free(d->uname);
	free(d->gname);
	d->uname = d->gname = NULL;
	sqlite3_bind_int64(t->owner, 1, (sqlite3_int64)ino);
	rc = sqlite3_step(t->owner);
	if (rc == SQLITE_ROW) {
		const unsigned char *u = sqlite3_column_text(t->owner, 0);
		const unsigned char *g = sqlite3_column_text(t->owner, 1);
		d->uname = strdup(u ? (const char *)u : "");
		d->gname = strdup(g ? (const char *)g : "");
	}
	sqlite3_reset(t->owner);
	if (rc != SQLITE_ROW)
		return -EIO;
	return d->uname && d->gname ? 0 : -ENOMEM;
}

/* ino's extended attributes into d->xa. */
static int ct_xattrs(struct cv_tar *t, struct ct_desc *d, uint64_t ino)
{
	ssize_t n = arch_listxattr(t->a, ino, NULL, 0);
	size_t count = 0;
	int err;

	d->xnames.len = d->xvals.len = 0;
	if (n <= 0)
		return (int)n;
	err = tar_buf_reserve(&d->xnames, (size_t)n);
	n = err ? err : arch_listxattr(t->a, ino, (char *)d->xnames.p, (size_t)n);
	if (n < 0)
		return (int)n;
	d->xnames.len = (size_t)n;
	for (size_t off = 0; off < d->xnames.len; off += strlen((char *)d->xnames.p + off) + 1)
		count++;
	if (count > d->xa_cap) {
		void *p = realloc(d->xa, count * sizeof(*d->xa));
		if (!p)
			return -ENOMEM;
		d->xa = p;
		d->xa_cap = count;
	}
	size_t k = 0;
	for (size_t off = 0; off < d->xnames.len; k++) {
		const char *name = (const char *)d->xnames.p + off;
		ssize_t vl = arch_getxattr(t->a, ino, name, NULL, 0);
		err = vl < 0 ? (int)vl : tar_buf_reserve(&d->xvals, d->xvals.len + (size_t)vl);
		vl = err ? err
			 : arch_getxattr(t->a, ino, name, d->xvals.p + d->xvals.len, (size_t)vl);
		if (vl < 0)
			return (int)vl;
		d->xa[k] = (struct member_xattr){.name = name, .len = (size_t)vl};
		d->xvals.len += (size_t)vl;
		off += strlen(name) + 1;
	}
	/* the values' buffer has stopped moving: point into it */
	for (size_t i = 0, voff = 0; i < count; voff += d->xa[i++].len)
		d->xa[i].value = d->xvals.p + voff;
	d->m.xattrs = d->xa;
	d->m.nxattrs = count;
	return 0;
}

/* The member item i is in the tar, into d (valid until the next call). */
static int ct_member(struct cv_tar *t, struct ct_desc *d, size_t i)
{
	const struct ct_item *it = &t->items[i];
	const struct ct_ent *e = &t->ent[it->ino];
	struct arch_attr at;
	int err = arch_getattr(t->a, it->ino, &at);

	d->m = (struct tw_member){0};
	err = err ? err : ct_path(t, d, i, &d->path);
	err = err ? err : ct_owner(t, d, it->ino);
	if (!err && (e->flags & IDX_F_XATTRS))
		err = ct_xattrs(t, d, it->ino);
	if (err)
		return err;
	if (at.flags & ARCH_A_NESTED)
		at.mode = e->mode;
	d->m.path = d->path.p;
	d->m.path_len = d->path.len;
	d->m.mode = at.mode & 07777;
	d->m.uid = at.uid;
	d->m.gid = at.gid;
	d->m.uname = d->uname;
	d->m.gname = d->gname;
	d->m.mtime_sec = at.mtime;
	d->m.mtime_nsec = at.mtime_nsec;
	if (S_ISDIR(at.mode)) {
		d->m.type = MEMBER_DIR;
	} else if (e->first != i) { /* another name of a file planned before */
		d->m.type = MEMBER_HARDLINK;
		err = ct_path(t, d, e->first, &d->link);
		d->m.link = d->link.p;
		d->m.link_len = d->link.len;
	} else if (S_ISREG(at.mode)) {
		d->m.type = MEMBER_REG;
		d->m.size = at.size;
	} else if (S_ISLNK(at.mode)) {
		size_t len = 0;
		d->m.type = MEMBER_SYMLINK;
		d->link.len = 0;
		err = tar_buf_reserve(&d->link, (size_t)at.size + 1);
		err =
		    err ? err : arch_readlink(t->a, it->ino, (char *)d->link.p, d->link.cap, &len);
		d->m.link = d->link.p;
		d->m.link_len = len;
	} else if (S_ISCHR(at.mode) || S_ISBLK(at.mode)) {
		d->m.type = S_ISCHR(at.mode) ? MEMBER_CHR : MEMBER_BLK;
		d->m.dev_major = major(at.rdev);
		d->m.dev_minor = minor(at.rdev);
	} else {
		d->m.type = MEMBER_FIFO;
	}
	return err;
}

/* Its headers into t->hdr; a name tar cannot hold is logged. */
static int ct_header(struct cv_tar *t, size_t i)
{
	int err = ct_member(t, &t->d, i);

	err = err ? err : tw_header(&t->d.m, &t->hdr);
	if (err == -EINVAL)
		tfs_log(TFS_LOG_ERR,
			"%s: '%.*s' cannot be written in a tar (a NUL in its name or "
			"its link, or '=' in an extended attribute's name)",
			t->name, (int)t->d.path.len, (const char *)t->d.path.p);
	else if (err)
		tfs_log(TFS_LOG_ERR, "%s: cannot describe '%.*s': %s", t->name, (int)t->d.path.len,
			(const char *)t->d.path.p, strerror(-err));
	return err;
}

struct ct_key {
	uint64_t k1, k2, hdr_off, id;
	size_t item;
};

static int ct_key_cmp(const void *pa, const void *pb)
{
	const struct ct_key *a = pa, *b = pb;

	if (a->k1 != b->k1)
		return a->k1 < b->k1 ? -1 : 1;
	if (a->k2 != b->k2)
		return a->k2 < b->k2 ? -1 : 1;
	if (a->hdr_off != b->hdr_off)
		return a->hdr_off < b->hdr_off ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Appends item i to the order (a folder the index made up stays out). */
static void ct_plan_one(struct cv_tar *t, size_t i)
{
	struct ct_item *it = &t->items[i];
	struct ct_ent *e = &t->ent[it->ino];

	if (it->planned || (t->ent[it->id].flags & IDX_F_IMPLICIT))
		return;
	it->planned = true;
	t->order[t->norder++] = i;
	if (e->first == CT_NONE && !S_ISDIR(it->mode))
		e->first = i;
}

/* The order: every member but the folders that hold something, by the place of its data in
 * the source; each of those folders right after the last member in it (the deepest first, the
 * top last).  GNU tar sets a folder's mtime once it has left it, and never again: a folder
 * written before its members is restored only if they all follow it at once, which the
 * source's order does not promise (7-Zip sorts a solid folder's files by extension). */
static int ct_order(struct cv_tar *t)
{
	struct ct_key *keys = malloc(t->nitems * sizeof(*keys));
	size_t nkeys = 0;

	t->order = malloc(t->nitems * sizeof(*t->order));
	if (!keys || !t->order) {
		free(keys);
		return -ENOMEM;
	}
	for (size_t i = 1; i < t->nitems; i++)
		if (t->items[i].parent != CT_NONE)
			t->items[t->items[i].parent].left = 1; /* holds something */
	for (size_t i = 1; i < t->nitems; i++) {
		struct ct_item *it = &t->items[i];
		if (S_ISDIR(it->mode) && it->left)
			continue;
		const struct ct_ent *e = &t->ent[it->ino];
		keys[nkeys++] = (struct ct_key){.k1 = e->k1,
						.k2 = e->k2,
						.hdr_off = t->ent[it->id].hdr_off,
						.id = it->id,
						.item = i};
	}
	for (size_t i = 0; i < t->nitems; i++)
		t->items[i].left = 0;
	for (size_t k = 0; k < nkeys; k++) /* how many of them each folder holds */
		for (size_t d = t->items[keys[k].item].parent; d != CT_NONE; d = t->items[d].parent)
			t->items[d].left++;
	qsort(keys, nkeys, sizeof(*keys), ct_key_cmp);
	for (size_t k = 0; k < nkeys; k++) {
		ct_plan_one(t, keys[k].item);
		for (size_t d = t->items[keys[k].item].parent; d != CT_NONE; d = t->items[d].parent)
			if (--t->items[d].left == 0)
				ct_plan_one(t, d);
	}
	if (!nkeys && (t->ent[IDX_ROOT].flags & IDX_F_IMPLICIT) == 0)
		ct_plan_one(t, 0); /* an archive of its top folder alone */
	free(keys);
	return 0;
}

/* The walk, the order, the headers' places and the tar's length. */
static int ct_plan(struct cv_tar *t)
{
	uint64_t pos = 0;
	int err = ct_add(t, IDX_ROOT, IDX_ROOT, CT_NONE, "", 0, S_IFDIR | 0755, 0);

	for (size_t i = 0; !err && i < t->nitems; i++) {
		struct ct_walk w = {.t = t, .dir = i};
		if (!S_ISDIR(t->items[i].mode))
			continue;
		err = arch_readdir(t->a, t->items[i].id, 0, ct_dirent, &w);
	}
	err = err ? err : ct_order(t);
	for (size_t k = 0; !err && k < t->norder; k++) {
		struct ct_item *it = &t->items[t->order[k]];
		const struct ct_ent *e = &t->ent[it->ino];
		bool data = S_ISREG(it->mode) && e->first == t->order[k];
		err = ct_header(t, t->order[k]);
		if (!err && data && e->unreadable) { /* encrypted, or a method tarseek lacks */
			struct arch_file *f = NULL;
			err = arch_file_open(t->a, it->ino, &f); /* logs why */
			arch_file_close(f);
			err = err ? err : -EIO;
			tfs_log(TFS_LOG_ERR,
				"%s: '%.*s' cannot be read: a conversion would lose it", t->name,
				(int)t->d.path.len, (const char *)t->d.path.p);
		}
		it->hdr_off = pos;
		pos += t->hdr.len;
		if (!err && data)
			pos += t->d.m.size + tw_pad(t->d.m.size);
	}
	t->usize = pos + TW_END_LEN;
	t->hdr.len = 0; /* cv_tar_read starts with the first member's */
	return err;
}

/* The member starts, for the engine's cuts. */
static int ct_cuts(struct cv_tar *t, uint64_t **cuts, size_t *ncuts)
{
	*cuts = malloc((t->norder ? t->norder : 1) * sizeof(**cuts));
	if (!*cuts)
		return -ENOMEM;
	for (size_t k = 0; k < t->norder; k++)
		(*cuts)[k] = t->items[t->order[k]].hdr_off;
	*ncuts = t->norder;
	return 0;
}

void cv_tar_free(struct cv_tar *t)
{
	if (!t)
		return;
	arch_file_close(t->f);
	arch_close(t->a);
	cache_free(t->cache);
	sqlite3_finalize(t->owner);
	sqlite3_close(t->db);
	for (size_t i = 0; i < t->nitems; i++)
		free(t->items[i].name);
	free(t->items);
	free(t->order);
	free(t->ent);
	tar_buf_free(&t->hdr);
	tar_buf_free(&t->d.path);
	tar_buf_free(&t->d.link);
	tar_buf_free(&t->d.xnames);
	tar_buf_free(&t->d.xvals);
	free(t->d.xa);
	free(t->d.uname);
	free(t->d.gname);
	free(t->d.chain);
	free(t);
}

int cv_tar_open(const char *index, struct src *file, const char *name, struct cv_tar **out,
		uint64_t **cuts, size_t *ncuts, uint64_t *usize)
{
	struct cv_tar *t = calloc(1, sizeof(*t));
	struct arch_env env = {0};
	struct src *data;
	int err;

	*out = NULL;
	*cuts = NULL;
	if (!t)
		return -ENOMEM;
	t->name = name;
	t->cache = env.cache = cache_new(CT_CACHE);
	data = t->cache ? src_window(file, 0, src_size(file)) : NULL;
	err = data ? arch_open_index(index, NULL, data, name, &env, &t->a) : -ENOMEM;
	err = err ? err : db_open_ro(index, &t->db);
	err = err ? err : ct_load_ents(t);
	err = err ? err : ct_plan(t);
	if (!err)
		err = ct_cuts(t, cuts, ncuts);
	if (err) {
		cv_tar_free(t);
		return err;
	}
	*usize = t->usize;
	*out = t;
	return 0;
}

ssize_t cv_tar_read(struct cv_tar *t, uint8_t *buf, size_t len, uint64_t off)
{
	size_t have = 0;

	if (off != t->pos) {
		tfs_log(TFS_LOG_ERR, "%s: the tar made of it is read at %" PRIu64 ", not %" PRIu64,
			t->name, off, t->pos);
		return -EIO;
	}
	while (have < len) {
		size_t want = len - have, n;
		if (t->hpos < t->hdr.len) {
			n = t->hdr.len - t->hpos < want ? t->hdr.len - t->hpos : want;
			memcpy(buf + have, t->hdr.p + t->hpos, n);
			t->hpos += n;
		} else if (t->dpos < t->dsize) {
			if (want > t->dsize - t->dpos)
				want = (size_t)(t->dsize - t->dpos);
			ssize_t r = arch_file_read(t->f, buf + have, want, t->dpos);
			if (r <= 0) {
				int err = r < 0 ? (int)r : -EIO;
				tfs_log(TFS_LOG_ERR,
					"%s: '%.*s' cannot be read at offset %" PRIu64 ": %s",
					t->name, (int)t->d.path.len, (const char *)t->d.path.p,
					t->dpos, r < 0 ? strerror(-err) : "it ends there");
				return err;
			}
			n = (size_t)r;
			t->dpos += n;
		} else if (t->pad) {
			n = t->pad < want ? t->pad : want;
			memset(buf + have, 0, n);
			t->pad -= n;
		} else if (t->next < t->norder) {
			size_t i = t->order[t->next];
			uint64_t end = t->next + 1 < t->norder
					   ? t->items[t->order[t->next + 1]].hdr_off
					   : t->usize - TW_END_LEN;
			int err = ct_header(t, i);
			arch_file_close(t->f);
			t->f = NULL;
			t->dpos = t->dsize = 0;
			if (!err && t->d.m.type == MEMBER_REG) {
				t->dsize = t->d.m.size;
				t->pad = tw_pad(t->dsize);
				if (t->dsize)
					err = arch_file_open(t->a, t->items[i].ino, &t->f);
			}
			if (!err && t->items[i].hdr_off + t->hdr.len + t->dsize + t->pad != end) {
				tfs_log(TFS_LOG_ERR, "%s: '%.*s' changed while it was converted",
					t->name, (int)t->d.path.len, (const char *)t->d.path.p);
				err = -EIO;
			}
			if (err)
				return err;
			t->hpos = 0;
			t->next++;
			continue;
		} else if (t->pos + have < t->usize) { /* the end-of-archive marker */
			uint64_t left = t->usize - t->pos - have;
			n = left < want ? (size_t)left : want;
			memset(buf + have, 0, n);
		} else {
			break;
		}
		have += n;
	}
	t->pos += have;
	return (ssize_t)have;
}
