/* 7-Zip's AES-256 coder: properties, key derivation, CBC blocks (sevenzip_aes.h).
 *
 * The derivation is 2^19 rounds of a few dozen bytes into one SHA-256: fed one round at a
 * time through libcrypto that is half a million calls through a pointer, so rounds are laid
 * out back to back in a buffer (the counter is the only part that changes) and the digest is
 * fed a buffer at a time.  The result goes into the keyring's cache under the coder's cycles
 * and salt, for the password's index: every folder of an archive (7-Zip gives them all the
 * same salt, or none) and every decoder started later gets it from there.
 */
#include "codecs/7z/sevenzip_aes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/source.h"
#include "crypto/cipher.h"
#include "crypto/keyring.h"

#define SZ_AES_FEED ((size_t)64 << 10) /* bytes of rounds given to the digest at once */

int sz_aes_props(const uint8_t *p, size_t n, struct sz_aes_props *out)
{
	size_t saltlen, ivlen;

	memset(out, 0, sizeof(*out));
	if (n < 1)
		return -EIO;
	out->cycles = p[0] & 0x3F;
	if ((p[0] & 0xC0) == 0) {
		if (n != 1)
			return -EIO;
	} else {
		if (n < 2)
			return -EIO;
		saltlen = ((p[0] >> 7) & 1u) + (p[1] >> 4);
		ivlen = ((p[0] >> 6) & 1u) + (p[1] & 0x0Fu);
		if (n != 2 + saltlen + ivlen)
			return -EIO;
		memcpy(out->salt, p + 2, saltlen);
		memcpy(out->iv, p + 2 + saltlen, ivlen);
		out->saltlen = saltlen;
		out->ivlen = ivlen;
	}
	if (out->cycles > SZ_AES_CYCLES_MAX && out->cycles != SZ_AES_NO_HASH)
		return -ENOTSUP;
	return 0;
}

size_t sz_aes_id(const struct sz_aes_props *p, bool with_iv, uint8_t *id)
{
	size_t n = 0;

	id[n++] = (uint8_t)p->cycles;
	memcpy(id + n, p->salt, p->saltlen);
	n += p->saltlen;
	if (with_iv) {
		memcpy(id + n, p->iv, SZ_AES_BLOCK);
		n += SZ_AES_BLOCK;
	}
	return n;
}

/* One code point of UTF-8 at p (n > 0 bytes): its value, *used the bytes taken; a byte that
 * does not start a valid sequence is its own value, one byte. */
static uint32_t sz_utf8_next(const uint8_t *p, size_t n, size_t *used)
{
	static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
	unsigned k;
	uint32_t c;

	*used = 1;
	if (p[0] < 0x80)
		return p[0];
	if ((p[0] & 0xE0) == 0xC0) {
		k = 1;
		c = p[0] & 0x1Fu;
	} else if ((p[0] & 0xF0) == 0xE0) {
		k = 2;
		c = p[0] & 0x0Fu;
	} else if ((p[0] & 0xF8) == 0xF0) {
		k = 3;
		c = p[0] & 0x07u;
	} else {
		return p[0];
	}
	if (n <= k)
		return p[0];
	for (unsigned i = 1; i <= k; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return p[0];
		c = c << 6 | (p[i] & 0x3Fu);
	}
	if (c < min[k] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return p[0];
	*used = k + 1;
	return c;
}

size_t sz_aes_utf16(const uint8_t *pw, size_t len, uint8_t *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		size_t used;
		uint32_t c = sz_utf8_next(pw + i, len - i, &used);

		i += used;
		if (c >= 0x10000) {
			uint32_t v = c - 0x10000;
			uint32_t hi = 0xD800 | (v >> 10), lo = 0xDC00 | (v & 0x3FF);

			if (o + 4 > cap)
				break;
			out[o++] = (uint8_t)hi;
			out[o++] = (uint8_t)(hi >> 8);
			out[o++] = (uint8_t)lo;
			out[o++] = (uint8_t)(lo >> 8);
		} else {
			if (o + 2 > cap)
				break;
			out[o++] = (uint8_t)c;
			out[o++] = (uint8_t)(c >> 8);
		}
	}
	return o;
}

/* SHA-256 of the rounds (see the header): buf (SZ_AES_FEED bytes) is scratch. */
static int sz_aes_derive(const struct sz_aes_props *p, const uint8_t *u16, size_t u16len,
			 uint8_t *buf, uint8_t key[SZ_AES_KEY])
{
	size_t unit = p->saltlen + u16len + 8, per = SZ_AES_FEED / unit, fill = 0;
	uint64_t rounds = (uint64_t)1 << p->cycles, done = 0;
	struct cr_md *md = NULL;
	int err;

	if (per == 0)
		return -EINVAL; /* never: a password is at most KR_PW_MAX bytes */
	err = cr_md_new(true, &md);
	while (!err && done < rounds) {
		uint8_t *r = buf + fill * unit;

		memcpy(r, p->salt, p->saltlen);
		memcpy(r + p->saltlen, u16, u16len);
		for (unsigned b = 0; b < 8; b++)
			r[p->saltlen + u16len + b] = (uint8_t)(done >> (8 * b));
		done++;
		if (++fill == per || done == rounds) {
			err = cr_md_update(md, buf, fill * unit);
			fill = 0;
		}
	}
	if (!err)
		err = cr_md_final(md, key);
	cr_md_free(md);
	return err;
}

int sz_aes_key(const struct sz_aes_props *p, size_t i, uint8_t key[SZ_AES_KEY])
{
	uint8_t id[SZ_AES_ID_MAX], *u16 = NULL, *buf = NULL;
	size_t idlen = sz_aes_id(p, false, id), pwlen, u16len;
	const uint8_t *pw;
	int err = 0;

	if (kr_key_get(id, idlen, i, key, SZ_AES_KEY))
		return 0;
	kr_get(i, &pw, &pwlen);
	u16 = malloc(2 * pwlen + 1);
	if (!u16)
		return -ENOMEM;
	u16len = sz_aes_utf16(pw, pwlen, u16, 2 * pwlen);
	if (p->cycles == SZ_AES_NO_HASH) {
		size_t n = p->saltlen;

		memset(key, 0, SZ_AES_KEY);
		memcpy(key, p->salt, n);
		memcpy(key + n, u16, u16len < SZ_AES_KEY - n ? u16len : SZ_AES_KEY - n);
	} else {
		buf = malloc(SZ_AES_FEED);
		err = buf ? sz_aes_derive(p, u16, u16len, buf, key) : -ENOMEM;
	}
	if (!err)
		kr_key_put(id, idlen, i, key, SZ_AES_KEY);
	cr_wipe(u16, 2 * pwlen + 1);
	free(u16);
	if (buf) {
		cr_wipe(buf, SZ_AES_FEED);
		free(buf);
	}
	return err;
}

int sz_aes_cbc(const uint8_t key[SZ_AES_KEY], uint8_t iv[SZ_AES_BLOCK], uint8_t *p, size_t len)
{
	uint8_t next[SZ_AES_BLOCK];
	int err;

	if (len == 0)
		return 0;
	if (len % SZ_AES_BLOCK)
		return -EINVAL;
	memcpy(next, p + len - SZ_AES_BLOCK, SZ_AES_BLOCK);
	err = cr_aes256_cbc_decrypt(key, iv, p, p, len);
	if (!err)
		memcpy(iv, next, SZ_AES_BLOCK);
	return err;
}

ssize_t sz_aes_dec_read(struct sz_aes_dec *d, uint8_t *buf, size_t len, unsigned *skip,
			sz_aes_pull pull, void *opaque)
{
	size_t full;
	ssize_t r;
	int err;

	if (d->rest_pos < d->rest_len) {
		size_t k = d->rest_len - d->rest_pos;

		k = k < len ? k : len;
		memcpy(buf, d->rest + d->rest_pos, k);
		d->rest_pos += (unsigned)k;
		return (ssize_t)k;
	}
	full = *skip ? 0 : len / SZ_AES_BLOCK * SZ_AES_BLOCK;
	if (full) {
		r = pull(opaque, buf, full);
		if (r < 0)
			return r;
		if (r == 0 || r % SZ_AES_BLOCK)
			return -EIO;
		err = sz_aes_cbc(d->key, d->iv, buf, (size_t)r);
		return err ? err : r;
	}
	r = pull(opaque, d->rest, SZ_AES_BLOCK);
	if (r < 0)
		return r;
	if (r != SZ_AES_BLOCK)
		return -EIO;
	err = sz_aes_cbc(d->key, d->iv, d->rest, SZ_AES_BLOCK);
	if (err)
		return err;
	d->rest_len = SZ_AES_BLOCK;
	d->rest_pos = *skip;
	*skip = 0;
	return sz_aes_dec_read(d, buf, len, skip, pull, opaque);
}

ssize_t sz_aes_pread(const uint8_t key[SZ_AES_KEY], const uint8_t iv0[SZ_AES_BLOCK],
		     struct src *in, uint64_t size, uint8_t *buf, size_t len, uint64_t off)
{
	uint8_t blk[64], iv[SZ_AES_BLOCK];
	uint64_t b = off / SZ_AES_BLOCK * SZ_AES_BLOCK, end;
	size_t done = 0;
	ssize_t r;
	int err = 0;

	if (off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (b == 0) {
		memcpy(iv, iv0, SZ_AES_BLOCK);
	} else if ((r = src_pread(in, iv, SZ_AES_BLOCK, b - SZ_AES_BLOCK)) != SZ_AES_BLOCK) {
		return r < 0 ? r : -EIO;
	}
	while (!err && done < len) { /* 64 bytes of ciphertext at a time */
		end = b + 64 < size ? b + 64 : size / SZ_AES_BLOCK * SZ_AES_BLOCK;
		if (end <= b)
			break; /* a partial block at the end: not ciphertext */
		r = src_pread(in, blk, (size_t)(end - b), b);
		if (r != (ssize_t)(end - b)) {
			err = r < 0 ? (int)r : -EIO;
			break;
		}
		err = sz_aes_cbc(key, iv, blk, (size_t)(end - b));
		for (uint64_t p = off + done; !err && p < end && done < len; p++)
			buf[done++] = blk[p - b];
		b = end;
	}
	cr_wipe(blk, sizeof(blk));
	return err ? err : (ssize_t)done;
}
