/* The row writer of the index builder (see build_int.h): a member into the entries table,
 * checkpoints into theirs.
 *
 * Each member path is normalised (path_split) and resolved component by component in the
 * in-memory path map (pathmap.h), which creates missing parents (mode 0555), turns a
 * repeated path into a new version (the old row marked), updates a repeated directory in
 * place (so the children of both occurrences stay together), and resolves hard links to the
 * row that holds the data at the time the link was written.  Sparse maps and xattrs go to
 * their tables beside the row.
 *
 * A leaf of the builder: build.c (tar members, a single file) and build_cont.c (zip, 7z and
 * libarchive members, their streams' checkpoints) both call it; it calls neither.
 */
#include "index/build_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/byteio.h"
#include "common/log.h"
#include "index/db.h"
#include "index/pathmap.h"

int bld_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		tfs_log(TFS_LOG_ERR, "index: %s", sqlite3_errstr(rc));
		return db_errno(rc) ? db_errno(rc) : -EIO;
	}
	return 0;
}


int bld_insert_row(struct builder *b, const struct row *r, uint64_t *id)
{
	sqlite3_stmt *st = b->ins_entry;

	*id = b->next_id++;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)*id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)r->parent);
	sqlite3_bind_blob(st, 3, r->name_len ? (const void *)r->name : "", (int)r->name_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, r->version);
	sqlite3_bind_int64(st, 5, r->mode);
	if (r->target)
		sqlite3_bind_int64(st, 6, (sqlite3_int64)r->target);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)r->size);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)r->stored);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)r->data_off);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)r->hdr_off);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)r->uid);
	sqlite3_bind_int64(st, 12, (sqlite3_int64)r->gid);
	sqlite3_bind_int64(st, 13, r->mtime);
	sqlite3_bind_int64(st, 14, (sqlite3_int64)r->rdev);
	if (r->link_len)
		sqlite3_bind_blob(st, 15, r->link, (int)r->link_len, SQLITE_STATIC);
	if (r->uname && *r->uname)
		sqlite3_bind_text(st, 16, r->uname, -1, SQLITE_STATIC);
	if (r->gname && *r->gname)
		sqlite3_bind_text(st, 17, r->gname, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 18, r->flags);
	sqlite3_bind_int64(st, 19, r->mtime_nsec);
	if (r->stream)
		sqlite3_bind_int64(st, 20, (sqlite3_int64)r->stream);
	if (r->has_crc)
		sqlite3_bind_int64(st, 21, r->crc);
	if (r->unreadable) {
		sqlite3_bind_int64(st, 22, r->unreadable);
		if (r->why)
			sqlite3_bind_text(st, 23, r->why, -1, SQLITE_TRANSIENT);
	}
	return bld_step_done(st);
}

/* Marks a row as no longer the latest version of its path. */
static int set_old(struct builder *b, uint64_t id)
{
	sqlite3_bind_int64(b->set_old, 1, (sqlite3_int64)id);
	return bld_step_done(b->set_old);
}

/* The directory (parent, name) for a member's path, created if missing. */
static int implicit_dir(struct builder *b, uint64_t parent, const uint8_t *name, size_t len,
			const struct arc_member *e, uint64_t *id)
{
	struct pm_node *n = pm_find(b->map, parent, name, len);
	struct row r = {
		.parent = parent, .name = name, .name_len = len, .version = 1,
		.mode = S_IFDIR | 0555, .uid = e ? e->uid : b->uid, .gid = e ? e->gid : b->gid,
		.mtime = e ? e->mtime_sec : b->mtime, .mtime_nsec = e ? e->mtime_nsec : b->mtime_nsec,
		.hdr_off = e ? e->hdr_off : 0, .flags = IDX_F_IMPLICIT,
	};
	int err;

	if (n && S_ISDIR(n->mode)) {
		*id = n->id;
		return 0;
	}
	if (n) { /* a file where a directory is needed: a new version, a directory */
		r.version = n->version + 1;
		err = set_old(b, n->id);
		if (err)
			return err;
	} else {
		n = pm_add(b->map, parent, name, len);
		if (!n)
			return -ENOMEM;
	}
	err = bld_insert_row(b, &r, id);
	if (err)
		return err;
	n->id = *id;
	n->version = r.version;
	n->mode = r.mode;
	n->target = 0;
	return 0;
}

/* Resolves an existing path (hard link targets), or NULL. */
static struct pm_node *resolve(struct builder *b, const uint8_t *path, size_t len)
{
	int max = (int)(len / 2 + 2);
	const uint8_t **comps = malloc(max * sizeof(*comps));
	size_t *lens = malloc(max * sizeof(*lens));
	struct pm_node *n = NULL;
	uint64_t parent = IDX_ROOT;
	int nc;

	if (!comps || !lens)
		goto out;
	nc = path_split(path, len, comps, lens, max);
	for (int i = 0; i < nc; i++) {
		n = pm_find(b->map, parent, comps[i], lens[i]);
		if (!n || (i + 1 < nc && !S_ISDIR(n->mode))) {
			n = NULL;
			break;
		}
		parent = n->id;
	}
out:
	free(comps);
	free(lens);
	return n;
}

static uint32_t type_bits(enum member_type t)
{
	switch (t) {
	case MEMBER_DIR:
		return S_IFDIR;
	case MEMBER_SYMLINK:
		return S_IFLNK;
	case MEMBER_CHR:
		return S_IFCHR;
	case MEMBER_BLK:
		return S_IFBLK;
	case MEMBER_FIFO:
		return S_IFIFO;
	default:
		return S_IFREG;
	}
}

static int add_extras(struct builder *b, uint64_t id, const struct arc_member *e)
{
	int err = 0;

	for (size_t i = 0; !err && i < e->nsparse; i++) {
		sqlite3_bind_int64(b->ins_sparse, 1, (sqlite3_int64)id);
		sqlite3_bind_int64(b->ins_sparse, 2, (sqlite3_int64)i);
		sqlite3_bind_int64(b->ins_sparse, 3, (sqlite3_int64)e->sparse[i].off);
		sqlite3_bind_int64(b->ins_sparse, 4, (sqlite3_int64)e->sparse[i].len);
		sqlite3_bind_int64(b->ins_sparse, 5, (sqlite3_int64)e->sparse[i].src);
		err = bld_step_done(b->ins_sparse);
	}
	for (size_t i = 0; !err && i < e->nxattrs; i++) {
		sqlite3_bind_int64(b->ins_xattr, 1, (sqlite3_int64)id);
		sqlite3_bind_blob(b->ins_xattr, 2, e->xattrs[i].name, (int)strlen(e->xattrs[i].name),
				  SQLITE_STATIC);
		sqlite3_bind_blob(b->ins_xattr, 3, e->xattrs[i].len ? (const void *)e->xattrs[i].value : "",
				  (int)e->xattrs[i].len, SQLITE_STATIC);
		err = bld_step_done(b->ins_xattr);
	}
	return err;
}

/* A directory seen again (or "./"): its newer metadata on the same inode, children kept. */
static int update_dir(struct builder *b, uint64_t id, const struct row *r, const struct arc_member *e)
{
	sqlite3_stmt *st = b->upd_dir;
	int err;

	sqlite3_bind_int64(st, 1, r->mode);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)r->uid);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)r->gid);
	sqlite3_bind_int64(st, 4, r->mtime);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)r->hdr_off);
	sqlite3_bind_int64(st, 6, r->flags);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)id);
	sqlite3_bind_int64(st, 8, r->mtime_nsec);
	err = bld_step_done(st);
	return err ? err : add_extras(b, id, e);
}

int bld_member(void *opaque, const struct arc_member *e)
{
	struct builder *b = opaque;
	int max = (int)(e->path_len / 2 + 2), nc, err = 0;
	const uint8_t **comps = malloc(max * sizeof(*comps));
	size_t *lens = malloc(max * sizeof(*lens));
	uint64_t parent = IDX_ROOT, id;
	struct pm_node *n;
	struct row r = {0};

	b->members++;
	b->last_id = 0;
	bld_progress(b, false);
	if (!comps || !lens) {
		err = -ENOMEM;
		goto out;
	}
	nc = path_split(e->path, e->path_len, comps, lens, max);
	r.mode = type_bits(e->type) | (e->mode & 07777);
	/* an owner id that does not fit a uid_t: GNU tar leaves the owner alone (the
	 * extracting user's); the mount shows root */
	r.uid = e->no_owner ? b->uid : e->uid <= UINT32_MAX ? e->uid : 0;
	r.gid = e->no_owner ? b->gid : e->gid <= UINT32_MAX ? e->gid : 0;
	r.mtime = e->no_mtime ? b->mtime : e->mtime_sec;
	r.mtime_nsec = e->no_mtime ? b->mtime_nsec : e->mtime_nsec;
	r.hdr_off = e->hdr_off;
	r.data_off = e->data_off;
	r.size = e->size;
	r.stored = e->stored;
	r.uname = e->uname;
	r.gname = e->gname;
	r.stream = e->stream ? e->stream : b->codec ? IDX_STREAM : 0;
	r.has_crc = e->has_crc;
	r.crc = e->crc;
	r.unreadable = e->unreadable;
	r.why = e->why;
	if (e->dos_time)
		r.flags |= IDX_F_DOSTIME;
	r.rdev = (e->type == MEMBER_CHR || e->type == MEMBER_BLK) ? makedev(e->dev_major, e->dev_minor) : 0;
	if (e->sparse) /* an all-hole file has a map with no extents */
		r.flags |= IDX_F_SPARSE;
	if (e->nxattrs)
		r.flags |= IDX_F_XATTRS;

	if (nc == 0) { /* "./" or "/": the root itself */
		if (e->type == MEMBER_DIR) {
			err = update_dir(b, IDX_ROOT, &r, e);
		} else {
			tfs_log(TFS_LOG_WARNING, "member at offset %" PRIu64 " has no usable name ('%s'): skipped",
				e->hdr_off, (const char *)e->path);
		}
		goto out;
	}
	if (nc < 0) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i + 1 < nc; i++) {
		err = implicit_dir(b, parent, comps[i], lens[i], e, &parent);
		if (err)
			goto out;
	}
	r.parent = parent;
	r.name = comps[nc - 1];
	r.name_len = lens[nc - 1];
	n = pm_find(b->map, parent, r.name, r.name_len);

	if (e->type == MEMBER_HARDLINK) {
		struct pm_node *t = resolve(b, e->link, e->link_len);
		if (!t || S_ISDIR(t->mode) || t == n) {
			tfs_log(TFS_LOG_WARNING, "hard link '%s' -> '%s' at offset %" PRIu64 ": %s; skipped",
				(const char *)e->path, (const char *)e->link, e->hdr_off,
				!t ? "target not in the archive before it"
				   : (t == n ? "links to itself" : "target is a directory"));
			goto out;
		}
		r.target = t->target ? t->target : t->id;
		r.mode = t->mode;
		r.link = e->link;
		r.link_len = e->link_len;
		r.size = 0;
	} else if (e->type == MEMBER_SYMLINK && !e->link_in_data) {
		r.link = e->link;
		r.link_len = e->link_len;
		r.size = e->link_len;
	}

	if (n && S_ISDIR(n->mode) && e->type == MEMBER_DIR) {
		err = update_dir(b, n->id, &r, e); /* the same directory again */
		goto out;
	}
	if (n) {
		r.version = n->version + 1;
		err = set_old(b, n->id);
		if (err)
			goto out;
	} else {
		r.version = 1;
		n = pm_add(b->map, parent, r.name, r.name_len);
		if (!n) {
			err = -ENOMEM;
			goto out;
		}
	}
	err = bld_insert_row(b, &r, &id);
	if (err)
		goto out;
	n->id = id;
	n->version = r.version;
	n->mode = r.mode;
	n->target = r.target;
	b->last_id = id;
	err = add_extras(b, id, e);
out:
	free(comps);
	free(lens);
	return err;
}

int bld_store_ckpt(struct builder *b, uint64_t stream, uint64_t idx, const struct codec_ckpt *ck,
		   const void *aux, size_t auxlen, bool with_crcs, const uint32_t *crcs,
		   uint64_t ncrcs)
{
	sqlite3_stmt *st = b->ins_ckpt;
	uint8_t *le = NULL;

	if (with_crcs) {
		le = malloc(ncrcs * 4 + 1);
		if (!le)
			return -ENOMEM;
		for (uint64_t i = 0; i < ncrcs; i++)
			put_le32(le + 4 * i, crcs[i]);
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)idx);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)ck->uoff);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)ck->ulen);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)ck->coff);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)ck->clen);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)ck->extra);
	sqlite3_bind_int64(st, 7, ck->bits);
	sqlite3_bind_int64(st, 8, ck->flags);
	if (le)
		sqlite3_bind_blob(st, 9, le, (int)(ncrcs * 4), SQLITE_TRANSIENT);
	if (auxlen)
		sqlite3_bind_blob(st, 10, aux, (int)auxlen, SQLITE_STATIC);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)stream);
	free(le);
	b->nckpt++;
	return bld_step_done(st);
}
