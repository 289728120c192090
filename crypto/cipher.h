/* The primitives the encrypted formats are made of, over libcrypto (crypto_dl.h): AES blocks
 * (ECB encryption, CBC decryption), SHA-1 and SHA-256, HMAC-SHA1, PBKDF2-HMAC-SHA1.  The
 * formats themselves (zipcrypto.h, winzip_aes.h, codecs/7z/sevenzip_aes.h) build on these.
 *
 * Every function loads libcrypto at its first call (cr_load) and returns 0 or -errno:
 * -ENOTSUP when libcrypto cannot be loaded (logged once, by the loader), -ENOMEM, -EINVAL for
 * a length the primitive does not take (a key of another size, a partial block), -EIO when
 * libcrypto refuses (never seen; it would be a bug).  No state is shared: every call that
 * needs an EVP context makes its own, so the functions are safe from any thread.  Keys and
 * intermediate values on the stack or in contexts are wiped before returning
 * (cr_wipe: explicit_bzero, which the compiler cannot drop).
 */
#ifndef TARSEEK_CIPHER_H
#define TARSEEK_CIPHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CR_AES_BLOCK 16
#define CR_SHA1_LEN 20
#define CR_SHA256_LEN 32

/* Wipes len bytes at p in a way the compiler keeps (explicit_bzero). */
void cr_wipe(void *p, size_t len);

/* AES-ECB encryption of len bytes (a multiple of 16) with a key of 16, 24 or 32 bytes; in
 * and out may be the same. */
int cr_aes_ecb_encrypt(const uint8_t *key, size_t keylen, const uint8_t *in, uint8_t *out,
		       size_t len);

/* AES-256-CBC decryption of len bytes (a multiple of 16) whose previous ciphertext block (or
 * the IV, for the first) is iv; no padding is removed; in and out may be the same. */
int cr_aes256_cbc_decrypt(const uint8_t key[32], const uint8_t iv[16], const uint8_t *in,
			  uint8_t *out, size_t len);

/* A running digest (SHA-1 or SHA-256).  cr_md_free(NULL) does nothing. */
struct cr_md;
int cr_md_new(bool sha256, struct cr_md **out);
int cr_md_update(struct cr_md *m, const void *p, size_t len);
int cr_md_final(struct cr_md *m, uint8_t *digest); /* CR_SHA1_LEN or CR_SHA256_LEN bytes */
void cr_md_free(struct cr_md *m);

/* HMAC-SHA1 (RFC 2104) over a message given in pieces.  cr_hmac_free(NULL) does nothing. */
struct cr_hmac;
int cr_hmac_sha1_new(const uint8_t *key, size_t keylen, struct cr_hmac **out);
int cr_hmac_update(struct cr_hmac *h, const void *p, size_t len);
int cr_hmac_final(struct cr_hmac *h, uint8_t mac[CR_SHA1_LEN]);
void cr_hmac_free(struct cr_hmac *h);

/* PBKDF2 with HMAC-SHA1 (RFC 2898, 8018): outlen bytes of key from pw and salt. */
int cr_pbkdf2_sha1(const uint8_t *pw, size_t pwlen, const uint8_t *salt, size_t saltlen,
		   unsigned iterations, uint8_t *out, size_t outlen);

#endif
