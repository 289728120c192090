/* PAX extended headers and GNU long names (see tar_int.h): the x, g, L and K headers read and
 * kept until their member's header arrives, then the records replayed (global ones first)
 * into what overrides the header's fields; odd values are read as GNU tar reads them. */
#include "containers/tar/tar_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* ---- PAX records ------------------------------------------------------------------------ */

static bool key_is(const uint8_t *k, size_t kl, const char *s)
{
	size_t n = strlen(s);

	return kl == n && !memcmp(k, s, n);
}

static bool key_prefix(const uint8_t *k, size_t kl, const char *s)
{
	size_t n = strlen(s);

	return kl > n && !memcmp(k, s, n);
}

/* Splits the records in ps->data from byte start on ("LEN KEY=VALUE\n", LEN counting the
 * whole record) into ps->rec.  Returns 0, -EINVAL at the first malformed record (*bad = its
 * offset in data; the records before it are kept), or -ENOMEM. */
static int pax_split(struct pax_set *ps, size_t start, size_t *bad)
{
	const uint8_t *d = ps->data.p;
	size_t pos = start, end = ps->data.len;

	while (pos < end) {
		size_t len = 0, i = pos, k;
		const uint8_t *eq;

		if (d[pos] == 0 && is_zero(d + pos, end - pos))
			break; /* NUL padding after the last record */
		for (; i < end && d[i] >= '0' && d[i] <= '9'; i++) {
			len = len * 10 + (size_t)(d[i] - '0');
			if (len > end - pos)
				goto bad;
		}
		if (i == pos || i >= end || d[i] != ' ' || len < i - pos + 4)
			goto bad;
		if (d[pos + len - 1] != '\n')
			goto bad;
		k = i + 1;
		eq = memchr(d + k, '=', pos + len - 1 - k);
		if (!eq || eq == d + k)
			goto bad;
		if (tar_grow((void **)&ps->rec, &ps->cap, ps->n + 1, sizeof(*ps->rec)))
			return -ENOMEM;
		ps->rec[ps->n].koff = k;
		ps->rec[ps->n].klen = (size_t)(eq - (d + k));
		ps->rec[ps->n].voff = (size_t)(eq + 1 - d);
		ps->rec[ps->n].vlen = pos + len - 1 - ps->rec[ps->n].voff;
		ps->n++;
		pos += len;
	}
	return 0;
bad:
	*bad = pos;
	return -EINVAL;
}

/* A PAX time: [-]SECONDS[.FRACTION].  Negative times with a fraction are floored, so
 * "-1.25" is sec -2, nsec 750000000.  What follows the number is ignored, as by GNU tar and
 * bsdtar ("1748089464.951928467a" is that time).  0, or -EINVAL (no number, or out of
 * range). */
static int pax_time(const uint8_t *v, size_t n, int64_t *sec, uint32_t *nsec)
{
	size_t i = 0, start;
	uint64_t s = 0;
	uint32_t ns = 0;
	bool neg = false;

	if (n && v[0] == '-') {
		neg = true;
		i = 1;
	}
	for (start = i; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
		if (s > (uint64_t)(INT64_MAX - 10) / 10)
			return -EINVAL;
		s = s * 10 + (uint64_t)(v[i] - '0');
	}
	if (i == start)
		return -EINVAL;
	if (i < n && v[i] == '.') {
		unsigned digits = 0;

		for (i++; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
			if (digits < 9) {
				ns = ns * 10 + (uint32_t)(v[i] - '0');
				digits++;
			}
		}
		for (; digits < 9; digits++)
			ns *= 10;
	}
	if (neg && ns) {
		*sec = -(int64_t)s - 1;
		*nsec = 1000000000u - ns;
	} else {
		*sec = neg ? -(int64_t)s : (int64_t)s;
		*nsec = ns;
	}
	return 0;
}

/* Records a string attribute; an empty value deletes it (the header field is used). */
static void set_str(struct pax_attrs *a, unsigned bit, const uint8_t **dst, size_t *dlen,
		    const uint8_t *v, size_t vl)
{
	if (!vl) {
		a->has &= ~bit;
		return;
	}
	a->has |= bit;
	*dst = v;
	*dlen = vl;
}

/* Records a numeric attribute; an empty value deletes it, a malformed one is ignored with a
 * warning. */
static void set_num(struct parser *p, struct pax_attrs *a, unsigned bit, uint64_t *dst,
		    const char *key, const uint8_t *v, size_t vl)
{
	char buf[64];

	if (!vl) {
		a->has &= ~bit;
		return;
	}
	if (tar_dec_u64(v, vl, UINT64_MAX, dst)) {
		tfs_log(TFS_LOG_WARNING,
			"tar: member at offset %" PRIu64 ": bad %s value '%s', ignored", p->m_off,
			key, tar_printable(v, vl, buf, sizeof(buf)));
		return;
	}
	a->has |= bit;
}

/* GNU.sparse.* keywords.  Returns 0, -EINVAL (damaged) or -ENOMEM. */
static int pax_sparse(struct parser *p, struct pax_attrs *a, const uint8_t *k, size_t kl,
		      const uint8_t *v, size_t vl)
{
	uint64_t u;
	int err;

	k += 11;
	kl -= 11;
	if (key_is(k, kl, "name")) {
		set_str(a, A_SPNAME, &a->spname, &a->spname_len, v, vl);
		return 0;
	}
	if (key_is(k, kl, "map")) {
		a->sp_old = true;
		return tar_sparse_map01(p, v, vl);
	}
	if (tar_dec_u64(v, vl, UINT64_MAX, &u))
		return tar_damage(p, "bad number in a GNU.sparse keyword");
	if (key_is(k, kl, "major")) {
		a->sp_major = u;
		a->has |= A_SPMAJOR;
	} else if (key_is(k, kl, "minor")) {
		a->sp_minor = u;
		a->has |= A_SPMINOR;
	} else if (key_is(k, kl, "size") || key_is(k, kl, "realsize")) {
		if (u > INT64_MAX)
			return tar_damage(p, "sparse file size out of range");
		a->sp_real = u;
		a->has |= A_SPREAL;
		if (kl == 4)
			a->sp_old = true;
	} else if (key_is(k, kl, "numblocks")) {
		a->sp_nblocks = u;
		a->has |= A_SPNBLOCKS;
		a->sp_old = true;
	} else if (key_is(k, kl, "offset")) {
		if (a->sp_want_bytes)
			return tar_damage(p, "GNU.sparse.offset without its numbytes");
		err = tar_sparse_push(p, u, 0);
		if (err == -E2BIG)
			return tar_damage(p, "too many sparse extents");
		if (err)
			return err;
		a->sp_want_bytes = true;
		a->sp_old = true;
	} else if (key_is(k, kl, "numbytes")) {
		if (!a->sp_want_bytes)
			return tar_damage(p, "GNU.sparse.numbytes without an offset");
		p->sp[p->nsp - 1].len = u;
		a->sp_want_bytes = false;
	}
	return 0;
}

/* Applies one record.  Returns 0, -EINVAL if the member is damaged (logged), -ENOMEM. */
static int pax_apply(struct parser *p, struct pax_attrs *a, const uint8_t *k, size_t kl,
		     const uint8_t *v, size_t vl, bool global)
{
	char buf[64];

	if (key_is(k, kl, "path")) {
		set_str(a, A_PATH, &a->path, &a->path_len, v, vl);
	} else if (key_is(k, kl, "linkpath")) {
		set_str(a, A_LINK, &a->link, &a->link_len, v, vl);
	} else if (key_is(k, kl, "uname")) {
		set_str(a, A_UNAME, &a->uname, &a->uname_len, v, vl);
	} else if (key_is(k, kl, "gname")) {
		set_str(a, A_GNAME, &a->gname, &a->gname_len, v, vl);
	} else if (key_is(k, kl, "size")) {
		/* a bad value is ignored, the header's size used (GNU tar and bsdtar) */
		set_num(p, a, A_SIZE, &a->size, "size", v, vl);
		if ((a->has & A_SIZE) && a->size > INT64_MAX) {
			a->has &= ~A_SIZE;
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64 ": size out of range, ignored",
				p->m_off);
		}
	} else if (key_is(k, kl, "uid")) {
		set_num(p, a, A_UID, &a->uid, "uid", v, vl);
	} else if (key_is(k, kl, "gid")) {
		set_num(p, a, A_GID, &a->gid, "gid", v, vl);
	} else if (key_is(k, kl, "SCHILY.devmajor")) {
		set_num(p, a, A_DEVMAJOR, &a->devmajor, "devmajor", v, vl);
	} else if (key_is(k, kl, "SCHILY.devminor")) {
		set_num(p, a, A_DEVMINOR, &a->devminor, "devminor", v, vl);
	} else if (key_is(k, kl, "mtime")) {
		if (!vl)
			a->has &= ~A_MTIME;
		else if (pax_time(v, vl, &a->mtime_sec, &a->mtime_nsec))
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64 ": bad mtime '%s', ignored",
				p->m_off, tar_printable(v, vl, buf, sizeof(buf)));
		else
			a->has |= A_MTIME;
	} else if (key_prefix(k, kl, "GNU.sparse.")) {
		if (!global)
			return pax_sparse(p, a, k, kl, v, vl);
	} else if (key_prefix(k, kl, "SCHILY.xattr.") || key_prefix(k, kl, "LIBARCHIVE.xattr.")) {
		bool enc = k[0] == 'L';
		size_t skip = enc ? 17 : 13;

		if (p->nxr >= TAR_MAX_XATTRS) {
			if (!p->xr_warned)
				tfs_log(TFS_LOG_WARNING,
					"tar: member at offset %" PRIu64
					": more than %u xattrs, the rest ignored",
					p->m_off, TAR_MAX_XATTRS);
			p->xr_warned = true;
			return 0;
		}
		if (tar_grow((void **)&p->xr, &p->capxr, p->nxr + 1, sizeof(*p->xr)))
			return -ENOMEM;
		p->xr[p->nxr].name = k + skip;
		p->xr[p->nxr].nlen = kl - skip;
		p->xr[p->nxr].val = v;
		p->xr[p->nxr].vlen = vl;
		p->xr[p->nxr].encoded = enc;
		p->nxr++;
	}
	/* Anything else (atime, ctime, comment, charset, ...) is not indexed. */
	return 0;
}

/* Replays the global records, then the member's own.  0, -EINVAL (damaged), -ENOMEM. */
int tar_pax_replay(struct parser *p, struct pax_attrs *a)
{
	const struct pax_set *sets[2] = {&p->global, &p->local};

	for (int i = 0; i < 2; i++) {
		const struct pax_set *ps = sets[i];

		for (size_t r = 0; r < ps->n; r++) {
			const struct pax_rec *rec = &ps->rec[r];
			int err = pax_apply(p, a, ps->data.p + rec->koff, rec->klen,
					    ps->data.p + rec->voff, rec->vlen, i == 0);

			if (err)
				return err;
		}
	}
	if (a->sp_want_bytes)
		return tar_damage(p, "GNU.sparse.offset without its numbytes");
	return 0;
}

static bool rec_key_eq(const struct pax_set *a, const struct pax_rec *ra, const struct pax_set *b,
		       const struct pax_rec *rb)
{
	return ra->klen == rb->klen &&
	       !memcmp(a->data.p + ra->koff, b->data.p + rb->koff, ra->klen);
}

static int pax_copy_rec(struct pax_set *dst, const struct pax_set *src, const struct pax_rec *r)
{
	struct pax_rec *n;

	if (tar_grow((void **)&dst->rec, &dst->cap, dst->n + 1, sizeof(*dst->rec)))
		return -ENOMEM;
	n = &dst->rec[dst->n];
	n->koff = dst->data.len;
	n->klen = r->klen;
	if (tar_buf_put(&dst->data, src->data.p + r->koff, r->klen))
		return -ENOMEM;
	n->voff = dst->data.len;
	n->vlen = r->vlen;
	if (tar_buf_put(&dst->data, src->data.p + r->voff, r->vlen))
		return -ENOMEM;
	dst->n++;
	return 0;
}

/* False if a global record has a value that every member would trip over (a malformed
 * number): such a record is dropped once, with a warning, instead of damaging every member
 * that follows. */
static bool global_value_ok(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	uint64_t u;
	int64_t sec;
	uint32_t nsec;

	if (!vl)
		return true;
	if (key_is(k, kl, "size"))
		return tar_dec_u64(v, vl, INT64_MAX, &u) == 0;
	if (key_is(k, kl, "uid") || key_is(k, kl, "gid") || key_is(k, kl, "SCHILY.devmajor") ||
	    key_is(k, kl, "SCHILY.devminor"))
		return tar_dec_u64(v, vl, UINT64_MAX, &u) == 0;
	if (key_is(k, kl, "mtime"))
		return pax_time(v, vl, &sec, &nsec) == 0;
	return true;
}

/* Merges the records of a g header (in p->gnew) into p->global: a keyword replaces its
 * previous value, an empty value deletes it. */
static int global_merge(struct parser *p, uint64_t hoff)
{
	struct pax_set merged = {0};
	size_t nnew = p->gnew.n;
	int err = 0;

	if (nnew > TAR_MAX_GLOBAL) {
		tfs_log(TFS_LOG_WARNING,
			"tar: global header at offset %" PRIu64 " has %zu records, only %u kept",
			hoff, nnew, TAR_MAX_GLOBAL);
		nnew = TAR_MAX_GLOBAL;
	}
	for (size_t i = 0; i < p->global.n && !err; i++) {
		const struct pax_rec *r = &p->global.rec[i];
		bool replaced = false;

		for (size_t j = 0; j < nnew && !replaced; j++)
			replaced = rec_key_eq(&p->global, r, &p->gnew, &p->gnew.rec[j]);
		if (!replaced)
			err = pax_copy_rec(&merged, &p->global, r);
	}
	for (size_t j = 0; j < nnew && !err; j++) {
		const struct pax_rec *r = &p->gnew.rec[j];
		bool later = false;

		for (size_t l = j + 1; l < nnew && !later; l++)
			later = rec_key_eq(&p->gnew, r, &p->gnew, &p->gnew.rec[l]);
		if (later || !r->vlen)
			continue;
		if (!global_value_ok(p->gnew.data.p + r->koff, r->klen, p->gnew.data.p + r->voff,
				     r->vlen)) {
			char key[64];

			tfs_log(TFS_LOG_WARNING,
				"tar: global header at offset %" PRIu64
				": bad value for %s, ignored",
				hoff,
				tar_printable(p->gnew.data.p + r->koff, r->klen, key, sizeof(key)));
			continue;
		}
		if (merged.n >= TAR_MAX_GLOBAL) {
			tfs_log(TFS_LOG_WARNING,
				"tar: global header at offset %" PRIu64
				": too many keywords, some ignored",
				hoff);
			break;
		}
		err = pax_copy_rec(&merged, &p->gnew, r);
	}
	if (err) {
		tar_buf_free(&merged.data);
		free(merged.rec);
		return err;
	}
	tar_buf_free(&p->global.data);
	free(p->global.rec);
	p->global = merged;
	return 0;
}

/* ---- metadata headers: L, K, x, g ------------------------------------------------------- */

/* A metadata header at hoff with a payload of size bytes.  Returns 1 to go on, 0 to stop
 * (truncated), or -errno. */
int tar_meta(struct parser *p, uint64_t hoff, uint64_t size, enum meta_kind kind)
{
	static const char *const what[] = {"long name", "long link name", "extended header",
					   "global extended header"};
	uint64_t start = hoff + TAR_BLOCK;
	struct tbuf *dst = NULL;
	size_t old = 0, bad;
	ssize_t n;
	int err;

	if (kind != META_GLOBAL)
		tar_member_start(p, hoff);
	if (tar_past_end(p, start, size))
		return tar_truncated(p, hoff, start + size);
	p->off = start + pad_block(size);
	p->st.end_off = p->off;
	if (kind != META_GLOBAL && p->damaged)
		return 1; /* the member is skipped anyway */
	switch (kind) {
	case META_LONGNAME:
		dst = &p->longname;
		break;
	case META_LONGLINK:
		dst = &p->longlink;
		break;
	case META_PAX:
		dst = &p->local.data;
		old = dst->len;
		break;
	case META_GLOBAL:
		dst = &p->gnew.data;
		p->gnew.n = 0;
		break;
	}
	if (size > TAR_MAX_META - old) {
		char msg[128];

		if (kind == META_GLOBAL) {
			tfs_log(TFS_LOG_WARNING,
				"tar: global extended header at offset %" PRIu64 " is %" PRIu64
				" bytes long, ignored",
				hoff, size);
			return 1;
		}
		snprintf(msg, sizeof(msg),
			 "%s of %" PRIu64 " bytes is over tarseek's limit of %u MiB", what[kind],
			 size, TAR_MAX_META >> 20);
		tar_damage(p, msg);
		return 1;
	}
	if (kind != META_PAX)
		dst->len = 0;
	err = tar_buf_reserve(dst, old + (size_t)size + 1);
	if (err)
		return err;
	n = tar_read(p, dst->p + old, (size_t)size, start);
	if (n < 0)
		return (int)n;
	if ((uint64_t)n < size)
		return tar_truncated(p, hoff, start + size);
	dst->len = old + (size_t)size;
	switch (kind) {
	case META_LONGNAME:
	case META_LONGLINK:
		/* The payload is the name and a NUL; the name ends at the first NUL. */
		dst->p[dst->len] = 0;
		dst->len = strlen((const char *)dst->p);
		if (kind == META_LONGNAME)
			p->has_longname = true;
		else
			p->has_longlink = true;
		return 1;
	case META_PAX:
		/* the records before a malformed one apply, the member is kept (GNU tar and
		 * bsdtar both go on with a warning) */
		err = pax_split(&p->local, old, &bad);
		if (err == -EINVAL)
			tfs_log(TFS_LOG_WARNING,
				"tar: malformed extended header record at offset %" PRIu64
				", the rest of that header ignored",
				start + (bad - old));
		else if (err)
			return err;
		return 1;
	case META_GLOBAL:
		err = pax_split(&p->gnew, 0, &bad);
		if (err == -EINVAL)
			tfs_log(TFS_LOG_WARNING,
				"tar: malformed global extended header record at offset %" PRIu64
				", the rest of that header ignored",
				start + bad);
		else if (err)
			return err;
		err = global_merge(p, hoff);
		return err ? err : 1;
	}
	return 1;
}

void tar_pax_set_free(struct pax_set *ps)
{
	tar_buf_free(&ps->data);
	free(ps->rec);
}
