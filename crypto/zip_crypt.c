/* Encrypted zip entries: the record the index keeps, and finding the password that opens one
 * (see zip_crypt.h). */
#include "crypto/zip_crypt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/byteio.h"
#include "crypto/cipher.h"
#include "crypto/keyring.h"
#include "crypto/winzip_aes.h"
#include "crypto/zipcrypto.h"

#define ZCR_TRIAL ((size_t)64 << 10) /* bytes of a deflated ZipCrypto entry inflated to judge */
#define ZCR_DEFLATE 8

void zcr_encode(const struct zcr_rec *r, uint8_t out[ZCR_LEN])
{
	out[0] = (uint8_t)r->kind;
	out[1] = r->kind == ZCR_AES ? (uint8_t)r->strength : r->check;
	out[2] = r->kind == ZCR_AES ? (uint8_t)r->version : 0;
	put_le16(out + 3, (uint16_t)r->method);
}

int zcr_parse(const uint8_t *p, size_t len, struct zcr_rec *r)
{
	memset(r, 0, sizeof(*r));
	if (!p || len != ZCR_LEN)
		return -EINVAL;
	r->kind = p[0];
	r->method = le16(p + 3);
	if (r->kind == ZCR_ZIPCRYPTO && p[2] == 0) {
		r->check = p[1];
		return 0;
	}
	if (r->kind == ZCR_AES && wz_salt_len(p[1]) && (p[2] == 1 || p[2] == 2)) {
		r->strength = p[1];
		r->version = p[2];
		return 0;
	}
	return -EINVAL;
}

int zcr_params_join(const struct zcr_rec *r, const void *cp, size_t cplen, uint8_t **out,
		    size_t *outlen)
{
	uint8_t *b = malloc(1 + ZCR_LEN + cplen);

	*out = NULL;
	*outlen = 0;
	if (!b)
		return -ENOMEM;
	b[0] = ZCR_LEN;
	zcr_encode(r, b + 1);
	if (cplen)
		memcpy(b + 1 + ZCR_LEN, cp, cplen);
	*out = b;
	*outlen = 1 + ZCR_LEN + cplen;
	return 0;
}

int zcr_params_split(const void *params, size_t len, struct zcr_rec *r, const void **cp,
		     size_t *cplen)
{
	const uint8_t *p = params;

	*cp = NULL;
	*cplen = 0;
	memset(r, 0, sizeof(*r));
	if (!p || len < 1 || p[0] != ZCR_LEN || len < 1 + (size_t)ZCR_LEN)
		return -EINVAL;
	if (zcr_parse(p + 1, ZCR_LEN, r))
		return -EINVAL;
	if (len > 1 + ZCR_LEN) {
		*cp = p + 1 + ZCR_LEN;
		*cplen = len - 1 - ZCR_LEN;
	}
	return 0;
}

const char *zcr_name(const struct zcr_rec *r)
{
	static const char *const aes[3][2] = {{"AES-128 (AE-1)", "AES-128 (AE-2)"},
					      {"AES-192 (AE-1)", "AES-192 (AE-2)"},
					      {"AES-256 (AE-1)", "AES-256 (AE-2)"}};

	if (r->kind == ZCR_AES && r->strength >= 1 && r->strength <= 3 && r->version >= 1 &&
	    r->version <= 2)
		return aes[r->strength - 1][r->version - 1];
	return r->kind == ZCR_ZIPCRYPTO ? "ZipCrypto" : "unknown encryption";
}

/* ---- ZipCrypto ------------------------------------------------------------------------------ */

/* Does plain (a deflated entry's bytes) inflate without an error for its first ZCR_TRIAL
 * bytes (or up to its end)?  0 yes, -EACCES no, -ENOMEM, or the source's -errno. */
static int zcr_inflates(struct src *plain)
{
	uint8_t *in = malloc(ZCR_TRIAL), *out = malloc(ZCR_TRIAL);
	z_stream z = {0};
	ssize_t n = 0;
	int err = 0, r;

	if (!in || !out || inflateInit2(&z, -15) != Z_OK) {
		free(in);
		free(out);
		return -ENOMEM;
	}
	n = src_pread(plain, in, ZCR_TRIAL, 0);
	if (n < 0)
		err = (int)n;
	z.next_in = in;
	z.avail_in = n > 0 ? (uInt)n : 0;
	while (!err && z.avail_in) {
		z.next_out = out;
		z.avail_out = (uInt)ZCR_TRIAL;
		r = inflate(&z, Z_NO_FLUSH);
		if (r == Z_STREAM_END || r == Z_BUF_ERROR || z.total_out >= ZCR_TRIAL)
			break; /* the end, all of the input taken, or enough of it */
		if (r == Z_MEM_ERROR)
			err = -ENOMEM;
		else if (r != Z_OK)
			err = -EACCES; /* Z_DATA_ERROR: not deflate, so not this password */
	}
	inflateEnd(&z);
	cr_wipe(out, ZCR_TRIAL);
	cr_wipe(in, ZCR_TRIAL);
	free(in);
	free(out);
	return err;
}

/* Password i opens the ZipCrypto entry in win (header h) as far as its check byte and the
 * trial inflate can tell: 0 and *out, -EACCES (not it), or -errno. */
static int zc_candidate(struct src *win, const struct zcr_rec *r, const uint8_t h[ZC_HEADER],
			size_t i, struct src **out)
{
	const uint8_t *pw;
	size_t len;
	struct zc_keys z;
	int err;

	*out = NULL;
	kr_get(i, &pw, &len);
	zc_init(&z, pw, len);
	err = zc_header(&z, h) == r->check ? zc_src_new(win, &z, out) : -EACCES;
	if (!err && r->method == ZCR_DEFLATE)
		err = zcr_inflates(*out);
	if (err) {
		src_free(*out);
		*out = NULL;
	}
	cr_wipe(&z, sizeof(z));
	return err;
}

/* Is plain (an entry's bytes: stored, or deflated) the entry whose CRC-32 is crc?  Read whole:
 * 0 yes, -EACCES no (or not deflate), -ENOMEM, or the source's -errno. */
static int zc_matches(struct src *plain, unsigned method, uint32_t crc)
{
	uint8_t *in = malloc(ZCR_TRIAL), *out = malloc(ZCR_TRIAL);
	z_stream z = {0};
	uLong c = crc32(0, NULL, 0);
	uint64_t at = 0;
	int err = !in || !out || inflateInit2(&z, -15) != Z_OK ? -ENOMEM : 0, r = Z_OK;

	while (!err && r != Z_STREAM_END) {
		ssize_t n = src_pread(plain, in, ZCR_TRIAL, at);
		if (n <= 0) {
			err = n < 0 ? (int)n : method == ZCR_DEFLATE ? -EACCES : 0;
			break;
		}
		at += (uint64_t)n;
		if (method != ZCR_DEFLATE) {
			c = crc32(c, in, (uInt)n);
			continue;
		}
		z.next_in = in;
		z.avail_in = (uInt)n;
		while (!err && z.avail_in && r != Z_STREAM_END) {
			z.next_out = out;
			z.avail_out = (uInt)ZCR_TRIAL;
			r = inflate(&z, Z_NO_FLUSH);
			if (r == Z_MEM_ERROR)
				err = -ENOMEM;
			else if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
				err = -EACCES;
			c = crc32(c, out, (uInt)(ZCR_TRIAL - z.avail_out));
		}
	}
	if (in)
		inflateEnd(&z);
	if (!err && (uint32_t)c != crc)
		err = -EACCES;
	if (out)
		cr_wipe(out, ZCR_TRIAL);
	if (in)
		cr_wipe(in, ZCR_TRIAL);
	free(in);
	free(out);
	return err;
}

/* The first password that passes the check byte and the trial opens the entry -- unless
 * another passes them too and the CRC is known (crc): then the first of them whose plaintext
 * has that CRC (stored and deflated entries; the first of them if none has it: the reader's
 * CRC check then fails the read). */
static int zcr_open_zipcrypto(struct src *win, const struct zcr_rec *r, const uint32_t *crc,
			      struct src **out)
{
	uint8_t h[ZC_HEADER];
	size_t cand[KR_MAX], n = 0;
	int err = src_pread_full(win, h, sizeof(h), 0);

	for (size_t i = 0; !err && i < kr_count() && n < KR_MAX; i++) {
		struct src *s = NULL;
		err = zc_candidate(win, r, h, i, &s);
		if (!err)
			cand[n++] = i;
		if (!err && !*out)
			*out = s; /* the first */
		else
			src_free(s);
		if (err == -EACCES)
			err = 0; /* the next password */
		if (*out && (!crc || (r->method != 0 && r->method != ZCR_DEFLATE)))
			break; /* no way to choose between two: the first wins */
	}
	for (size_t k = 0; !err && n > 1 && k < n; k++) { /* several pass: the CRC chooses */
		struct src *s = NULL;
		err = zc_candidate(win, r, h, cand[k], &s);
		if (!err && (err = zc_matches(s, r->method, *crc)) == 0) {
			src_free(*out);
			*out = s;
			break;
		}
		src_free(s);
		if (err == -EACCES)
			err = 0;
	}
	if (err) {
		src_free(*out);
		*out = NULL;
	}
	return err ? err : *out ? 0 : -EACCES;
}

/* ---- AES ------------------------------------------------------------------------------------ */

static int zcr_open_aes(struct src *win, const struct zcr_rec *r, struct src **out)
{
	uint8_t salt[16 + WZ_PV], key[32], mac[32], pv[WZ_PV];
	size_t sl = wz_salt_len(r->strength);
	int err = src_size(win) < sl + WZ_PV + WZ_MAC ? -EIO : src_pread_full(win, salt, sl + WZ_PV, 0);

	for (size_t i = 0; !err && !*out && i < kr_count(); i++) {
		const uint8_t *pw;
		size_t len;
		kr_get(i, &pw, &len);
		err = wz_derive(r->strength, pw, len, salt, key, mac, pv);
		if (err || memcmp(pv, salt + sl, WZ_PV) != 0)
			continue;
		/* the value passes a wrong password once in 65,536: the code, over every
		 * encrypted byte, decides (and is the only check an AE-2 entry has) */
		err = wz_src_new(win, r->strength, key, mac, out);
		if (!err && (err = wz_check_mac(*out)) != 0) {
			src_free(*out);
			*out = NULL;
			if (err == -EBADMSG)
				err = 0; /* not this password, or damaged: the next one */
		}
	}
	cr_wipe(key, sizeof(key));
	cr_wipe(mac, sizeof(mac));
	cr_wipe(pv, sizeof(pv));
	return err ? err : *out ? 0 : -EACCES;
}

int zcr_open(struct src *win, const struct zcr_rec *r, struct src **out)
{
	return zcr_open_crc(win, r, NULL, out);
}

int zcr_open_crc(struct src *win, const struct zcr_rec *r, const uint32_t *crc, struct src **out)
{
	*out = NULL;
	if (!kr_count())
		return -EACCES;
	if (r->kind == ZCR_ZIPCRYPTO)
		return zcr_open_zipcrypto(win, r, crc, out);
	if (r->kind == ZCR_AES)
		return zcr_open_aes(win, r, out);
	return -EINVAL;
}

int zcr_check(struct src *plain)
{
	return wz_is_src(plain) ? wz_check_mac(plain) : 0;
}
