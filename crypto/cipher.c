/* AES, SHA-1, SHA-256, HMAC-SHA1 and PBKDF2 over libcrypto (see cipher.h).
 *
 * libcrypto is reached only through crypto_dl.h's pointers.  AES runs through EVP (AES-NI
 * where the CPU has it): a context is made per call, since one call decrypts a whole read's
 * worth of blocks (the key schedule costs less than a microsecond) and no context is then
 * shared between threads.  HMAC is written here over two EVP digests, as RFC 2104 says, so
 * that no deprecated HMAC_* function is needed; PBKDF2 is libcrypto's.
 */
#include "crypto/cipher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto_dl.h"

void cr_wipe(void *p, size_t len)
{
	if (p && len)
		explicit_bzero(p, len);
}

static int aes_run(const EVP_CIPHER *c, const uint8_t *key, const uint8_t *iv, bool enc,
		   const uint8_t *in, uint8_t *out, size_t len)
{
	EVP_CIPHER_CTX *ctx;
	int n = 0, err = 0;

	if (len % CR_AES_BLOCK || len > (size_t)1 << 30)
		return -EINVAL;
	if (len == 0)
		return 0;
	ctx = sym_EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if (sym_EVP_CipherInit_ex(ctx, c, NULL, key, iv, enc ? 1 : 0) != 1 ||
	    sym_EVP_CIPHER_CTX_set_padding(ctx, 0) != 1 ||
	    sym_EVP_CipherUpdate(ctx, out, &n, in, (int)len) != 1 || (size_t)n != len)
		err = -EIO;
	sym_EVP_CIPHER_CTX_free(ctx); /* wipes the key schedule */
	return err;
}

int cr_aes_ecb_encrypt(const uint8_t *key, size_t keylen, const uint8_t *in, uint8_t *out,
		       size_t len)
{
	int err = cr_load();

	if (err)
		return err;
	switch (keylen) {
	case 16:
		return aes_run(sym_EVP_aes_128_ecb(), key, NULL, true, in, out, len);
	case 24:
		return aes_run(sym_EVP_aes_192_ecb(), key, NULL, true, in, out, len);
	case 32:
		return aes_run(sym_EVP_aes_256_ecb(), key, NULL, true, in, out, len);
	default:
		return -EINVAL;
	}
}

int cr_aes256_cbc_decrypt(const uint8_t key[32], const uint8_t iv[16], const uint8_t *in,
			  uint8_t *out, size_t len)
{
	int err = cr_load();

	return err ? err : aes_run(sym_EVP_aes_256_cbc(), key, iv, false, in, out, len);
}

/* ---- digests ------------------------------------------------------------------------------ */

struct cr_md {
	EVP_MD_CTX *ctx;
	size_t len;
};

int cr_md_new(bool sha256, struct cr_md **out)
{
	struct cr_md *m;
	int err = cr_load();

	*out = NULL;
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ctx = sym_EVP_MD_CTX_new();
	m->len = sha256 ? CR_SHA256_LEN : CR_SHA1_LEN;
	if (!m->ctx ||
	    sym_EVP_DigestInit_ex(m->ctx, sha256 ? sym_EVP_sha256() : sym_EVP_sha1(), NULL) != 1) {
		cr_md_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

int cr_md_update(struct cr_md *m, const void *p, size_t len)
{
	return len && sym_EVP_DigestUpdate(m->ctx, p, len) != 1 ? -EIO : 0;
}

int cr_md_final(struct cr_md *m, uint8_t *digest)
{
	unsigned n = 0;

	return sym_EVP_DigestFinal_ex(m->ctx, digest, &n) != 1 || n != m->len ? -EIO : 0;
}

void cr_md_free(struct cr_md *m)
{
	if (!m)
		return;
	if (m->ctx)
		sym_EVP_MD_CTX_free(m->ctx); /* cleans its state */
	free(m);
}

/* ---- HMAC-SHA1 ------------------------------------------------------------------------------ */

#define SHA1_BLOCK 64

struct cr_hmac {
	struct cr_md *inner, *outer; /* started with K ^ ipad, K ^ opad */
};

int cr_hmac_sha1_new(const uint8_t *key, size_t keylen, struct cr_hmac **out)
{
	uint8_t k[SHA1_BLOCK] = {0}, pad[SHA1_BLOCK];
	struct cr_hmac *h;
	int err;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	err = cr_md_new(false, &h->inner);
	if (!err)
		err = cr_md_new(false, &h->outer);
	if (!err && keylen > SHA1_BLOCK) { /* a long key is hashed first */
		struct cr_md *m;
		err = cr_md_new(false, &m);
		if (!err)
			err = cr_md_update(m, key, keylen);
		if (!err)
			err = cr_md_final(m, k);
		cr_md_free(m);
	} else if (!err) {
		memcpy(k, key, keylen);
	}
	for (size_t i = 0; !err && i < SHA1_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	if (!err)
		err = cr_md_update(h->inner, pad, SHA1_BLOCK);
	for (size_t i = 0; !err && i < SHA1_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	if (!err)
		err = cr_md_update(h->outer, pad, SHA1_BLOCK);
	cr_wipe(k, sizeof(k));
	cr_wipe(pad, sizeof(pad));
	if (err) {
		cr_hmac_free(h);
		return err;
	}
	*out = h;
	return 0;
}

int cr_hmac_update(struct cr_hmac *h, const void *p, size_t len)
{
	return cr_md_update(h->inner, p, len);
}

int cr_hmac_final(struct cr_hmac *h, uint8_t mac[CR_SHA1_LEN])
{
	uint8_t in[CR_SHA1_LEN];
	int err = cr_md_final(h->inner, in);

	if (!err)
		err = cr_md_update(h->outer, in, sizeof(in));
	if (!err)
		err = cr_md_final(h->outer, mac);
	cr_wipe(in, sizeof(in));
	return err;
}

void cr_hmac_free(struct cr_hmac *h)
{
	if (!h)
		return;
	cr_md_free(h->inner);
	cr_md_free(h->outer);
	free(h);
}

/* ---- PBKDF2 --------------------------------------------------------------------------------- */

int cr_pbkdf2_sha1(const uint8_t *pw, size_t pwlen, const uint8_t *salt, size_t saltlen,
		   unsigned iterations, uint8_t *out, size_t outlen)
{
	int err = cr_load();

	if (err)
		return err;
	if (pwlen > INT32_MAX || saltlen > INT32_MAX || outlen > INT32_MAX || !iterations ||
	    iterations > INT32_MAX)
		return -EINVAL;
	/* an empty password is a valid one: libcrypto wants a non-NULL pointer for it */
	if (sym_PKCS5_PBKDF2_HMAC_SHA1(pwlen ? (const char *)pw : "", (int)pwlen,
				       saltlen ? salt : (const uint8_t *)"", (int)saltlen,
				       (int)iterations, (int)outlen, out) != 1)
		return -EIO;
	return 0;
}
