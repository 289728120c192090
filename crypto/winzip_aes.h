/* WinZip's AES encryption of zip entries (AE-1 and AE-2, https://www.winzip.com/en/support/
 * aes-encryption/): method 99, with an extra field 0x9901 that gives the version (AE-1 keeps
 * the CRC-32, AE-2 writes 0 in its place), the strength (1: AES-128, 2: AES-192, 3: AES-256)
 * and the real compression method.
 *
 * The entry's data: a salt (8, 12 or 16 bytes by strength), a 2-byte password verification
 * value, the compressed bytes encrypted with AES in counter mode, and a 10-byte
 * authentication code.  PBKDF2-HMAC-SHA1 of the password and the salt, 1000 rounds, gives the
 * AES key, the HMAC key and the verification value, in that order.  The counter is a 64-bit
 * little-endian number in the block's first 8 bytes (the other 8 are 0), 1 for the first
 * block -- not OpenSSL's big-endian CTR, so the keystream is made here from AES-ECB.  The
 * code is the first 10 bytes of HMAC-SHA1 of the encrypted bytes.
 *
 * Counter mode decrypts any byte without those before it: the decrypting source is
 * stateless, its reads safe from any thread.  The verification value rejects a wrong
 * password but once in 65,536 times; the authentication code covers every byte, and AE-2's is
 * the only check of them there is (wz_check_mac reads them all: the index builder calls it
 * before it trusts what it decodes).
 */
#ifndef TARSEEK_WINZIP_AES_H
#define TARSEEK_WINZIP_AES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

#define WZ_PV 2
#define WZ_MAC 10
#define WZ_ROUNDS 1000

/* The salt's length for strength 1..3, or 0 for another. */
size_t wz_salt_len(unsigned strength);

/* The keys of strength (1..3) from password pw and salt (wz_salt_len bytes): 0 with the AES
 * key (16, 24 or 32 bytes), the HMAC key (as long) and the
 * verification value written, or cipher.h's -errno. */
int wz_derive(unsigned strength, const uint8_t *pw, size_t pwlen, const uint8_t *salt,
	      uint8_t *aes_key, uint8_t *mac_key, uint8_t pv[WZ_PV]);

/* Decrypts (or encrypts: it is its own inverse) n bytes at p that stand at offset off of the
 * encrypted bytes.  0 or cipher.h's -errno. */
int wz_ctr(const uint8_t *key, size_t keylen, uint64_t off, uint8_t *p, size_t n);

/* A source of the plaintext of the entry data in win (salt, value, encrypted bytes, code)
 * under keys made by wz_derive.  win is borrowed: it must outlive the source.  0 and *out,
 * -EINVAL (win too short for a salt, a value and a code), -ENOMEM. */
int wz_src_new(struct src *win, unsigned strength, const uint8_t *aes_key,
	       const uint8_t *mac_key, struct src **out);

/* Reads every encrypted byte under s (made by wz_src_new) and checks the authentication
 * code: 0, -EBADMSG when it does not match, the source's -errno, or cipher.h's. */
int wz_check_mac(struct src *s);

/* True if s was made by wz_src_new. */
bool wz_is_src(const struct src *s);

#endif
