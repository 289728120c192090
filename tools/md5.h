/* MD5 (RFC 1321), small and dependency-free, for the benchmark's integrity check.
 *
 * The bench only needs to tell whether two reads of the same member gave the same bytes, and
 * to print a digest a person can compare with md5sum's; MD5 is what the published workload
 * uses, so we keep it rather than something faster.  Not for anything security-related.
 *
 * Usage: md5_init(), md5_update() any number of times with any lengths, md5_final().
 * A context is plain memory: no allocation, nothing to free; not thread-safe per context.
 */
#ifndef TARSEEK_MD5_H
#define TARSEEK_MD5_H

#include <stddef.h>
#include <stdint.h>

#define MD5_DIGEST_LEN 16
#define MD5_HEX_LEN 33 /* 32 hex digits and a NUL */

struct md5_ctx {
	uint32_t state[4];
	uint64_t nbytes;   /* total input so far */
	uint8_t block[64]; /* partial block: nbytes % 64 bytes are valid */
};

void md5_init(struct md5_ctx *ctx);
void md5_update(struct md5_ctx *ctx, const void *data, size_t len);
/* Writes the digest and leaves ctx unusable until the next md5_init(). */
void md5_final(struct md5_ctx *ctx, uint8_t digest[MD5_DIGEST_LEN]);

/* One-shot digest of a buffer. */
void md5_buffer(const void *data, size_t len, uint8_t digest[MD5_DIGEST_LEN]);

/* Lower-case hex of len bytes into hex (2 * len + 1 bytes, NUL-terminated). */
void md5_hex(const uint8_t *digest, size_t len, char *hex);

#endif
