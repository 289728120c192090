/* MD5 through libcrypto's EVP interface (see md5.h for why libcrypto).  EVP_md5() is
 * OpenSSL's own implementation, fetched from the default provider; the per-file cost of a
 * context (allocation, fetch) is a few hundred nanoseconds, far below what reading a file
 * through a mount costs.
 */
#include "tools/bench/md5.h"

#include <errno.h>
#include <string.h>

#include <openssl/evp.h>

int bench_md5_init(struct bench_md5_ctx *ctx)
{
	ctx->failed = 0;
	ctx->evp = EVP_MD_CTX_new();
	if (!ctx->evp)
		return -ENOMEM;
	if (!EVP_DigestInit_ex(ctx->evp, EVP_md5(), NULL)) {
		EVP_MD_CTX_free(ctx->evp);
		ctx->evp = NULL;
		return -ENOSYS;
	}
	return 0;
}

void bench_md5_update(struct bench_md5_ctx *ctx, const void *data, size_t len)
{
	if (!EVP_DigestUpdate(ctx->evp, data, len))
		ctx->failed = 1;
}

int bench_md5_final(struct bench_md5_ctx *ctx, uint8_t digest[MD5_DIGEST_LEN])
{
	unsigned int len = 0;
	int ok = EVP_DigestFinal_ex(ctx->evp, digest, &len) && len == MD5_DIGEST_LEN;

	EVP_MD_CTX_free(ctx->evp);
	ctx->evp = NULL;
	if (!ok || ctx->failed) {
		memset(digest, 0, MD5_DIGEST_LEN);
		return -EIO;
	}
	return 0;
}

int bench_md5_buffer(const void *data, size_t len, uint8_t digest[MD5_DIGEST_LEN])
{
	struct bench_md5_ctx ctx;
	int ret = bench_md5_init(&ctx);

	if (ret) {
		memset(digest, 0, MD5_DIGEST_LEN);
		return ret;
	}
	bench_md5_update(&ctx, data, len);
	return bench_md5_final(&ctx, digest);
}

void bench_md5_hex(const uint8_t *digest, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 15];
	}
	hex[2 * len] = '\0';
}
