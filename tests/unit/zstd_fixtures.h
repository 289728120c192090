/* What the zstd codec's unit tests share (test_zstd.c: good files; test_zstd_damage.c: damaged,
 * truncated and hostile ones): the log capture, a scan with checks of the sink contract,
 * index_blocks, the data and the files the tests build (frames, skippable frames, seek tables,
 * written here from zstd's specification), and check_good, which reads a good file every way
 * the codec allows.
 */
#ifndef TARSEEK_ZSTD_FIXTURES_H
#define TARSEEK_ZSTD_FIXTURES_H

#include "codecs/codec.h"
#include "common/log.h"
#include "testutil.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MIB ((size_t)1 << 20)
#define CHUNK_MIN ((size_t)64 << 10) /* zstd_int.h's ZS_CHUNK_MIN */
#define CK_TABLE 1u		     /* checkpoint bits: aux holds seek table entries */
#define SEEK_ENTRY 12

/* A checkpoint the scan gave, with its aux bytes. */
struct ck {
	struct codec_ckpt c;
	uint8_t *aux;
	size_t auxlen;
};

/* A scan's result: its bytes, its checkpoints, what broke the sink contract. */
struct scan_res {
	uint8_t *out;
	size_t len;
	ssize_t rc; /* the final scan_read result: 0 or -errno */
	uint64_t verified;
	struct ck *cks;
	size_t ncks;
	pthread_t reader;
	size_t returned;
	int contract_errors;
	int fail_at; /* the sink fails with -ENOSPC at this checkpoint (0: never) */
};

/* index_blocks' result. */
struct ib_res {
	struct ck *cks;
	size_t ncks;
	uint64_t usize;
	int rc;
};

/* A file being built, and the frames in it. */
struct tframe {
	uint64_t coff, clen, dsize;
	bool zstd;
	uint32_t sum; /* XXH64 low 32 bits of the content */
};

struct zfile {
	uint8_t *p;
	size_t len, cap;
	struct tframe fr[4096];
	size_t nfr;
};

/* log messages counted by level (quiet: not printed) */
extern unsigned long nlog[8];
extern char last_err[1024];
extern bool quiet;
void log_sink(int level, const char *msg, void *opaque);
void log_reset(void);
void free_cks(struct ck *cks, size_t n);
int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen);
void res_free(struct scan_res *r);
ssize_t scan_src(struct src *in, unsigned threads, size_t step, int fail_at, struct scan_res *r);
ssize_t scan(const uint8_t *z, size_t len, unsigned threads, size_t step, struct scan_res *r);
bool same_ck(const struct ck *a, const struct ck *b);
void check_same_cks(const struct ck *a, size_t na, const struct ck *b, size_t nb);
ssize_t decode_chunk(const uint8_t *z, size_t zlen, const struct ck *cks, size_t ncks, size_t i,
		     uint64_t end, const uint8_t *want);
int index_blocks(const uint8_t *z, size_t zlen, struct ib_res *r);
uint8_t *make_data(size_t len, uint32_t seed);
uint8_t *run(const char *cmd, const void *in, size_t len, size_t *outlen);
uint8_t *dup_buf(const uint8_t *b, size_t len, size_t extra);
void put_le32(uint8_t *p, uint32_t v);
uint8_t *lz_frame(const uint8_t *in, size_t len, int level, bool csize, bool sum, size_t *outlen);
void zf_put(struct zfile *f, const void *b, size_t n);
void zf_frame(struct zfile *f, const uint8_t *data, size_t n, bool csize, bool own);
void zf_skippable(struct zfile *f, unsigned variant, uint32_t size);
size_t check_good(const char *what, const uint8_t *z, size_t zlen, const uint8_t *want,
		  size_t wantlen, const struct zfile *f, int ib);
void make_seekable(struct zfile *f, const uint8_t *data, size_t len, const size_t *fsizes,
		   size_t nsizes, bool own, bool sums, size_t skip);

#endif
