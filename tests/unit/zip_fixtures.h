/* What test_zip.c's tests share (zip_fixtures.c): the recording sink cont_zip.parse reports
 * into, the oracles (Python's zipfile, the tree the archives were made from, every member's
 * bytes fetched as the index does), the archives made by the real tools in a temporary
 * folder, and a builder of hand-made archives.
 */
#ifndef TARSEEK_TEST_ZIP_FIXTURES_H
#define TARSEEK_TEST_ZIP_FIXTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "codecs/codec.h"
#include "containers/container.h"

#define NTREE 13 /* files, folders and links of the tree (TREE in zip_fixtures.c) */
#define NZV 7	 /* archives of the tree made by Info-ZIP zip (ZV) */

struct rstream {
	char codec[16];
	uint64_t coff, clen, usize;
	uint8_t params[16];
	size_t params_len;
	bool zip_local;
	bool crypt;		  /* encrypted: its record (crypto/zip_crypt.h) */
	uint8_t crypt_rec[8];
};

struct rmember {
	uint8_t *path; /* a NUL-terminated copy */
	size_t path_len;
	enum member_type type;
	uint32_t mode;
	uint64_t uid, gid;
	bool no_owner;
	int64_t mtime;
	uint32_t nsec;
	bool dos_time;
	uint64_t size, stored, hdr_off, data_off, stream;
	bool has_crc;
	uint32_t crc;
	bool link_in_data;
	int unreadable;
	char why[128];
	bool link_empty;
};

struct rec {
	struct rstream *s;
	size_t ns, scap;
	struct rmember *m;
	size_t nm, mcap;
	uint64_t size;	    /* of the archive */
	int fail_at;	    /* member number whose callback fails with -ECANCELED (0: none) */
	unsigned bad;	    /* contract violations seen by the callbacks */
	bool stream_before; /* a stream was just declared: the next member must use it */
	uint64_t progress_calls;
};

/* What Python's zipfile reads from an archive: one line per entry in directory order. */
struct pyent {
	char name[512]; /* raw bytes, hex-decoded */
	size_t name_len;
	unsigned method, flags, system;
	uint64_t hdr_off, csize, usize;
	uint32_t crc, ext_attr;
};

/* The dumps of the archives made before the tests, read once (path -> entries). */
struct pydump {
	char path[512];
	struct pyent *v;
	size_t n;
};

struct tfile {
	const char *path; /* as zip -r stores it (folders with their '/') */
	char type;	  /* 'f', 'd', 'l' */
	mode_t mode;
	size_t size; /* 'f': gen(path, size) unless noise */
	bool noise;  /* incompressible: zip stores it */
	const char *target;
};

struct hent {
	const char *name;
	size_t name_len; /* 0: strlen */
	unsigned method, flags, made_by, dos_time, dos_date;
	uint32_t ext_attr;
	const uint8_t *data; /* the bytes stored (compressed already if method != 0) */
	size_t len;
	uint64_t usize; /* 0 with method 0: len */
	uint32_t crc;	/* 0: crc32 of data when method is 0 */
	const uint8_t *cextra, *lextra;
	size_t cextra_len, lextra_len;
	bool z64_usize, z64_csize, z64_lho; /* 0xffffffff and the zip64 extra field */
	uint64_t fake_lho; /* with z64_lho: the offset in the extra (0: the real one) */
};

struct hzip {
	uint8_t *p;
	size_t len, cap;
	uint64_t lho[16], cen[16], cd_off, cd_size, end_off;
};

enum { ZT_OWNERS = 1, ZT_DOSTIME = 2, ZT_SYMLINKS = 4, ZT_ENCRYPTED = 8 };

enum { HZ_ZIP64_END = 1 };

struct zv {
	const char *name, *args, *codec;
	unsigned how;
};

void rec_free(struct rec *r);
int parse(const uint8_t *buf, size_t len, struct rec *r, struct cont_stats *st);
struct rmember *find(struct rec *r, const char *path);
uint8_t *member_bytes(const uint8_t *zip, size_t ziplen, const struct rec *r,
		      const struct rmember *m, size_t *len);
int null_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen);
void check_all_bytes(const uint8_t *zip, size_t len, const struct rec *r);
int run(const char *fmt, ...);
uint8_t *read_tmp(const char *name, size_t *len);
uint8_t *gen(const char *name, size_t n);
void check_against_python(const char *zippath, const struct rec *r);
extern char tree[300];
int64_t tree_mtime(size_t i);
void check_tree(const uint8_t *zip, size_t len, struct rec *r, unsigned how, const char *codec);
uint8_t *py_make(const char *v, const char *name, size_t *len);
void set32(uint8_t *p, uint32_t v);
void set16(uint8_t *p, unsigned v);
struct hzip hz_build(const struct hent *e, size_t n, size_t prefix, unsigned flags);
uint8_t *deflate_raw(const uint8_t *buf, size_t len, size_t *out_len);
void check_streams_inside(const uint8_t *zip, size_t len, const struct rec *r);
void cleanup(void);
void prepare(void);
extern char tmpdir[256];
extern const struct zv ZV[NZV];

#endif
