/* MD5 for the benchmark's integrity check, computed by OpenSSL's libcrypto (EVP interface).
 *
 * The bench only needs to tell whether two reads of the same member gave the same bytes, and
 * to print a digest a person can compare with md5sum's; MD5 is what the published workload
 * uses, so we keep it rather than something faster.  Not for anything security-related.
 *
 * This is a thin layer, not an implementation: it keeps OpenSSL's types and error stack out of
 * the bench, and maps libcrypto's failures to -errno in one place.  libcrypto rather than
 * libmd, the other library Debian has for it: hashing 1 GiB from memory in 128 KiB calls
 * (CPU time, median of runs taken in turn), libcrypto's MD5 was about 5% faster than the
 * hand-written one it replaces and libmd's 2% slower.  (libmd's header is also called md5.h,
 * which this header would hide.)
 *
 * Usage: bench_md5_init(), bench_md5_update() any number of times with any lengths,
 * bench_md5_final().  bench_md5_init() allocates libcrypto's context and bench_md5_final()
 * frees it, also when it fails; after a failed bench_md5_init() there is nothing to free and
 * bench_md5_update()/bench_md5_final() must not be called.  A context belongs to one thread at
 * a time; different contexts are independent.
 */
#ifndef TARSEEK_MD5_H
#define TARSEEK_MD5_H

#include <stddef.h>
#include <stdint.h>

#define MD5_DIGEST_LEN 16
#define MD5_HEX_LEN 33 /* 32 hex digits and a NUL */

struct evp_md_ctx_st; /* libcrypto's EVP_MD_CTX */

struct bench_md5_ctx {
	struct evp_md_ctx_st *evp;
	int failed; /* an update failed: bench_md5_final() reports it */
};

/* 0, -ENOMEM (no memory for libcrypto's context) or -ENOSYS (this libcrypto offers no MD5,
 * e.g. when it is configured for FIPS only). */
int bench_md5_init(struct bench_md5_ctx *ctx);
void bench_md5_update(struct bench_md5_ctx *ctx, const void *data, size_t len);
/* Writes the digest and frees the context; 0, or -EIO if libcrypto failed (then digest is
 * all zero). */
int bench_md5_final(struct bench_md5_ctx *ctx, uint8_t digest[MD5_DIGEST_LEN]);

/* One-shot digest of a buffer: bench_md5_init(), bench_md5_update(), bench_md5_final(); their
 * errors. */
int bench_md5_buffer(const void *data, size_t len, uint8_t digest[MD5_DIGEST_LEN]);

/* Lower-case hex of len bytes into hex (2 * len + 1 bytes, NUL-terminated). */
void bench_md5_hex(const uint8_t *digest, size_t len, char *hex);

#endif
