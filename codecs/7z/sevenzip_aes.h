/* 7-Zip's AES-256 coder (method 06 F1 07 01, "7zAES"): its properties, its key, its blocks.
 * A leaf: the folder graph (sevenzip_graph.c) decrypts with it, the folder codec
 * (sevenzip_folder.c) picks the password with it.  Nothing here logs.
 *
 * Properties (the coder's property bytes in the folder record):
 *   byte 0   bits 0-5: the number of cycles as a power of two (NumCyclesPower); bit 7: a salt
 *            follows, bit 6: an IV follows.  With neither bit, byte 0 is all there is.
 *   byte 1   high nibble: salt bytes - bit 7; low nibble: IV bytes - bit 6
 *   then     the salt (0..16 bytes), then the IV (0..16 bytes; zero-padded to 16)
 *
 * The key: SHA-256 over 2^NumCyclesPower rounds of (salt, the password as UTF-16LE, a 64-bit
 * little-endian round counter), all fed to one digest.  NumCyclesPower 0x3F is 7-Zip's
 * "no hashing": the key is salt then password, cut or zero-padded to 32 bytes.  7-Zip writes
 * 19 (about 0.2 s of SHA-256 here) and reads at most 24; a larger power is refused (-ENOTSUP),
 * it would only let a hostile archive spend minutes per password.
 *
 * The data: AES-256 in CBC mode from the IV, the plaintext zero-padded to whole blocks; the
 * coder's unpack size says where the plaintext ends.  There is no password check of any kind:
 * a wrong password is seen only by what decodes the plaintext (the next coder fails, or a CRC).
 *
 * The password's bytes are taken as UTF-8 (the locale's, as argv has them) and turned into
 * UTF-16LE as 7-Zip does with its UTF-16 strings; a byte that is not valid UTF-8 is taken as
 * the code point of the same value (Latin-1), so that any password gives some key.
 *
 * Threads: everything is safe from any thread (the key cache is the keyring's, under its lock).
 */
#ifndef TARSEEK_SEVENZIP_AES_H
#define TARSEEK_SEVENZIP_AES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/source.h"

#define SZ_AES_KEY 32
#define SZ_AES_BLOCK 16
#define SZ_AES_CYCLES_MAX 24
#define SZ_AES_NO_HASH 0x3F
#define SZ_AES_ID_MAX (1 + 16 + 16) /* cycles, salt, IV */

struct sz_aes_props {
	unsigned cycles; /* NumCyclesPower */
	uint8_t salt[16];
	size_t saltlen;
	uint8_t iv[SZ_AES_BLOCK]; /* zero-padded */
	size_t ivlen;		  /* as the archive gives it */
};

/* Parses a coder's properties: 0, -EIO (not 7zAES properties: damaged), -ENOTSUP (more
 * cycles than SZ_AES_CYCLES_MAX). */
int sz_aes_props(const uint8_t *p, size_t n, struct sz_aes_props *out);

/* What names the coder's encryption, for the keyring's verdicts (with_iv: cycles, salt and
 * IV) or its key cache (cycles and salt): written to id (SZ_AES_ID_MAX bytes), its length
 * returned.  Nothing secret is in it. */
size_t sz_aes_id(const struct sz_aes_props *p, bool with_iv, uint8_t *id);

/* The key of password i (< kr_count()) for p: from the keyring's cache, else derived and
 * cached.  0, -ENOMEM, or cipher.h's -errno (-ENOTSUP: no libcrypto). */
int sz_aes_key(const struct sz_aes_props *p, size_t i, uint8_t key[SZ_AES_KEY]);

/* Decrypts len bytes (a multiple of 16) in place; iv is the previous ciphertext block and
 * becomes the last one of these.  0 or cipher.h's -errno. */
int sz_aes_cbc(const uint8_t key[SZ_AES_KEY], uint8_t iv[SZ_AES_BLOCK], uint8_t *p, size_t len);

/* A decryptor reading forward from a block boundary of the ciphertext: key, the previous
 * ciphertext block (the IV at the start), and the block decrypted last with the bytes of it
 * not yet handed out.  It holds the key: wipe it (cr_wipe) when done. */
struct sz_aes_dec {
	uint8_t key[SZ_AES_KEY];
	uint8_t iv[SZ_AES_BLOCK];
	uint8_t rest[SZ_AES_BLOCK];
	unsigned rest_pos, rest_len;
};

/* Where the ciphertext comes from: up to len bytes (a multiple of 16) into buf, as many as
 * asked unless it ends; 0 at its end, or -errno. */
typedef ssize_t (*sz_aes_pull)(void *opaque, uint8_t *buf, size_t len);

/* Up to len bytes of plaintext into buf (len > 0): whole blocks decrypted in place into buf, a
 * read of less than a block through rest; skip bytes of the first block are dropped (a start
 * inside a block).  > 0, or -errno: the pull's, -EIO when the ciphertext ends inside a block or
 * before any byte, cipher.h's. */
ssize_t sz_aes_dec_read(struct sz_aes_dec *d, uint8_t *buf, size_t len, unsigned *skip,
			sz_aes_pull pull, void *opaque);

/* Plaintext bytes [off, off + len) of the ciphertext in (size bytes from its offset 0) under key
 * and iv0 (CBC needs only the block before: any byte can be read alone).  The bytes read
 * (short at the end), or -errno: the source's, cipher.h's. */
ssize_t sz_aes_pread(const uint8_t key[SZ_AES_KEY], const uint8_t iv0[SZ_AES_BLOCK],
		     struct src *in, uint64_t size, uint8_t *buf, size_t len, uint64_t off);

/* pw (len bytes, UTF-8 as above) as UTF-16LE into out (cap bytes; 2 per input byte always
 * suffice): the bytes written. */
size_t sz_aes_utf16(const uint8_t *pw, size_t len, uint8_t *out, size_t cap);

#endif
