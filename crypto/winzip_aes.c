/* WinZip AES (see winzip_aes.h). */
#include "crypto/winzip_aes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/cipher.h"

#define WZ_KEY_MAX 32
#define WZ_BUF ((size_t)64 << 10)

size_t wz_salt_len(unsigned strength)
{
	return strength >= 1 && strength <= 3 ? 4 * ((size_t)strength + 1) : 0;
}

static size_t wz_key_len(unsigned strength)
{
	return 2 * wz_salt_len(strength);
}

int wz_derive(unsigned strength, const uint8_t *pw, size_t pwlen, const uint8_t *salt,
	      uint8_t *aes_key, uint8_t *mac_key, uint8_t pv[WZ_PV])
{
	uint8_t out[2 * WZ_KEY_MAX + WZ_PV];
	size_t kl = wz_key_len(strength);
	int err;

	if (!kl)
		return -EINVAL;
	err = cr_pbkdf2_sha1(pw, pwlen, salt, wz_salt_len(strength), WZ_ROUNDS, out,
			     2 * kl + WZ_PV);
	if (!err) {
		memcpy(aes_key, out, kl);
		memcpy(mac_key, out + kl, kl);
		memcpy(pv, out + 2 * kl, WZ_PV);
	}
	cr_wipe(out, sizeof(out));
	return err;
}

int wz_ctr(const uint8_t *key, size_t keylen, uint64_t off, uint8_t *p, size_t n)
{
	uint8_t ks[4096];
	uint64_t block = off / 16;
	size_t skip = (size_t)(off % 16), done = 0;
	int err = 0;

	while (done < n) {
		/* keystream for the blocks that cover the next bytes, at most sizeof(ks) */
		size_t want = skip + (n - done), nb = (want + 15) / 16;
		if (nb > sizeof(ks) / 16)
			nb = sizeof(ks) / 16;
		memset(ks, 0, nb * 16);
		for (size_t i = 0; i < nb; i++) {
			uint64_t c = block + i + 1; /* the first block's counter is 1 */
			for (int b = 0; b < 8; b++)
				ks[16 * i + (size_t)b] = (uint8_t)(c >> (8 * b));
		}
		err = cr_aes_ecb_encrypt(key, keylen, ks, ks, nb * 16);
		if (err)
			break;
		size_t take = nb * 16 - skip;
		if (take > n - done)
			take = n - done;
		for (size_t i = 0; i < take; i++)
			p[done + i] ^= ks[skip + i];
		done += take;
		block += nb;
		skip = 0;
	}
	cr_wipe(ks, sizeof(ks));
	return err;
}

/* ---- the decrypting source ----------------------------------------------------------------- */

struct wz_src {
	struct src *in; /* salt, value, encrypted bytes, code */
	size_t head;	/* bytes before the encrypted ones */
	uint64_t size;	/* of the encrypted bytes */
	size_t keylen;
	uint8_t key[WZ_KEY_MAX], mac[WZ_KEY_MAX];
};

static ssize_t wz_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct wz_src *s = opaque;
	int err;

	if (off >= s->size)
		return 0;
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	err = src_pread_full(s->in, buf, len, s->head + off);
	if (!err)
		err = wz_ctr(s->key, s->keylen, off, buf, len);
	return err ? err : (ssize_t)len;
}

static void wz_close(void *opaque)
{
	struct wz_src *s = opaque;

	cr_wipe(s, sizeof(*s));
	free(s);
}

static void wz_advise(void *opaque, uint64_t off, uint64_t len)
{
	struct wz_src *s = opaque;

	src_advise(s->in, s->head + off, len);
}

static const struct src_ops wz_ops = {.pread = wz_pread, .close = wz_close, .advise = wz_advise};

int wz_src_new(struct src *win, unsigned strength, const uint8_t *aes_key,
	       const uint8_t *mac_key, struct src **out)
{
	uint64_t size = src_size(win);
	size_t head = wz_salt_len(strength) + WZ_PV;
	struct wz_src *s;

	*out = NULL;
	if (!wz_salt_len(strength) || size == SRC_SIZE_UNKNOWN || size < head + WZ_MAC) {
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	s->in = win;
	s->head = head;
	s->size = size - head - WZ_MAC;
	s->keylen = wz_key_len(strength);
	memcpy(s->key, aes_key, s->keylen);
	memcpy(s->mac, mac_key, s->keylen);
	*out = src_new(&wz_ops, s, s->size);
	if (!*out) {
		wz_close(s);
		return -ENOMEM;
	}
	return 0;
}

bool wz_is_src(const struct src *s)
{
	return src_opaque_if(s, &wz_ops) != NULL;
}

int wz_check_mac(struct src *src)
{
	struct wz_src *s = src_opaque_if(src, &wz_ops);
	struct cr_hmac *h = NULL;
	uint8_t *buf, mac[CR_SHA1_LEN], want[WZ_MAC];
	int err;

	if (!s)
		return -EINVAL;
	buf = malloc(WZ_BUF);
	if (!buf)
		return -ENOMEM;
	err = cr_hmac_sha1_new(s->mac, s->keylen, &h);
	for (uint64_t at = 0; !err && at < s->size;) {
		size_t n = s->size - at < WZ_BUF ? (size_t)(s->size - at) : WZ_BUF;
		err = src_pread_full(s->in, buf, n, s->head + at);
		if (!err)
			err = cr_hmac_update(h, buf, n);
		at += n;
	}
	if (!err)
		err = cr_hmac_final(h, mac);
	if (!err)
		err = src_pread_full(s->in, want, sizeof(want), s->head + s->size);
	if (!err && memcmp(mac, want, WZ_MAC) != 0)
		err = -EBADMSG;
	cr_hmac_free(h);
	cr_wipe(mac, sizeof(mac));
	free(buf);
	return err;
}
