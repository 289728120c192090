/* Extended attributes in PAX records: SCHILY.xattr.NAME (raw) and LIBARCHIVE.xattr.NAME
 * (name %-encoded, value base64), one per name, bsdtar's doubled records folded. */
#include "containers/tar/tar_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* ---- member headers --------------------------------------------------------------------- */

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes %XX escapes (LIBARCHIVE.xattr names); a '%' not followed by two hex digits is
 * kept as it is. */
static int url_decode_put(struct tbuf *b, const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];

		if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			c = (uint8_t)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
			i += 2;
		}
		if (tar_buf_put(b, &c, 1))
			return -ENOMEM;
	}
	return 0;
}

/* Decodes base64 (LIBARCHIVE.xattr values; '=' padding optional).  0, -EINVAL, -ENOMEM. */
static int base64_put(struct tbuf *b, const uint8_t *s, size_t n)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t i;

	if (tar_buf_reserve(b, b->len + n / 4 * 3 + 3))
		return -ENOMEM;
	for (i = 0; i < n && s[i] != '='; i++) {
		uint8_t c = s[i];
		uint32_t v;

		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+')
			v = 62;
		else if (c == '/')
			v = 63;
		else
			return -EINVAL;
		acc = (acc << 6 | v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			b->p[b->len++] = (uint8_t)(acc >> bits);
		}
	}
	for (; i < n; i++)
		if (s[i] != '=')
			return -EINVAL;
	return 0;
}

/* Decodes the xattr records found for this member into p->xa; a later record for the same
 * name replaces an earlier one.  bsdtar writes every xattr twice, as LIBARCHIVE.xattr.NAME
 * (NAME %-encoded, value base64) and as SCHILY.xattr.NAME with the same still-encoded NAME:
 * a SCHILY record whose raw name matches a LIBARCHIVE record's is that duplicate and is
 * skipped, so "user.café" does not also appear as "user.caf%C3%A9". */
static bool bsdtar_duplicate(const struct parser *p, const struct xref *r)
{
	/* without a '%' both forms decode to the same name and the later one wins anyway */
	if (r->encoded || !memchr(r->name, '%', r->nlen))
		return false;
	for (size_t i = 0; i < p->nxr; i++)
		if (p->xr[i].encoded && p->xr[i].nlen == r->nlen &&
		    memcmp(p->xr[i].name, r->name, r->nlen) == 0)
			return true;
	return false;
}

int tar_xattrs_build(struct parser *p, size_t *count)
{
	size_t n = 0;
	char buf[64];
	p->xdata.len = 0;
	for (size_t i = 0; i < p->nxr; i++) {
		const struct xref *r = &p->xr[i];
		size_t noff = p->xdata.len, nlen, voff, j;
		int err;

		if (bsdtar_duplicate(p, r))
			continue;

		err = r->encoded ? url_decode_put(&p->xdata, r->name, r->nlen)
				 : tar_buf_put(&p->xdata, r->name, r->nlen);
		if (err)
			return err;
		nlen = p->xdata.len - noff;
		if (memchr(p->xdata.p + noff, 0, nlen)) {
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64
				": xattr name with a NUL byte, ignored",
				p->m_off);
			p->xdata.len = noff;
			continue;
		}
		if (tar_buf_put(&p->xdata, "", 1))
			return -ENOMEM;
		voff = p->xdata.len;
		err = r->encoded ? base64_put(&p->xdata, r->val, r->vlen)
				 : tar_buf_put(&p->xdata, r->val, r->vlen);
		if (err == -EINVAL) {
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64
				": bad base64 value for xattr %s, ignored",
				p->m_off, tar_printable(p->xdata.p + noff, nlen, buf, sizeof(buf)));
			p->xdata.len = noff;
			continue;
		}
		if (err)
			return err;
		for (j = 0; j < n; j++) {
			const uint8_t *other = p->xdata.p + p->xt[j].noff;

			if (!memcmp(other, p->xdata.p + noff, nlen + 1))
				break;
		}
		if (j == n) {
			if (tar_grow((void **)&p->xt, &p->capxt, n + 1, sizeof(*p->xt)))
				return -ENOMEM;
			p->xt[n++].noff = noff;
		}
		p->xt[j].voff = voff;
		p->xt[j].vlen = p->xdata.len - voff;
	}
	if (n && tar_grow((void **)&p->xa, &p->capxa, n, sizeof(*p->xa)))
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		p->xa[j].name = (const char *)p->xdata.p + p->xt[j].noff;
		p->xa[j].value = p->xdata.p + p->xt[j].voff;
		p->xa[j].len = p->xt[j].vlen;
	}
	*count = n;
	return 0;
}
