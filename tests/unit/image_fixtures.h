/* What test_sqlar.c and test_squashfs.c share: an image made by the real tool in a temporary
 * folder and loaded into memory, a container's parse of it collected (streams with copies of
 * their params, members), every stream decoded with its codec -- the scan, and decoders
 * started at each of its checkpoints, which must give the scan's bytes -- and each regular
 * member's bytes compared with the file it was made from.
 */
#ifndef TARSEEK_IMAGE_FIXTURES_H
#define TARSEEK_IMAGE_FIXTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/container.h"

struct img_member {
	char *path, *link;
	enum member_type type;
	uint64_t size, stream, data_off, uid, gid;
	uint32_t mode, dev_major, dev_minor;
	int64_t mtime;
	int unreadable;
	size_t nxattrs;
};

struct img_stream {
	char codec[32];
	uint64_t coff, clen, usize;
	uint8_t *params;
	size_t params_len;
};

struct img_parse {
	struct img_member *m;
	size_t nm;
	struct img_stream *s;
	size_t ns;
	struct cont_stats st;
	int err; /* what parse returned */
};

/* Set while the inputs are damaged: a decoder may then fail where the scan did not (never
 * give other bytes). */
extern bool img_damaged;

/* A temporary folder (mkdtemp), its path in a static buffer; NULL on failure. */
const char *img_tmpdir(void);

/* Runs the shell command cmd (printf format); 0 if it exited with 0. */
int img_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes len bytes to dir/name (folders made as needed). */
void img_write(const char *dir, const char *name, const void *p, size_t len);

/* Parses buf[0, len) with c (its probe must say yes when probe is set). */
void img_parse(const struct container *c, const uint8_t *buf, size_t len, bool probe,
	       struct img_parse *out);
void img_parse_free(struct img_parse *p);

/* The member named path, or NULL. */
const struct img_member *img_find(const struct img_parse *p, const char *path);

/* Decodes stream id of p over buf: 0 and its bytes (malloc'd, *out, *got == usize), or the
 * -errno the scan met (*out its bytes before).  Decoders at each checkpoint are checked
 * against the scan's bytes (they must give them, up to where the scan failed). */
int img_decode(const struct img_parse *p, uint64_t id, const uint8_t *buf, size_t len,
	       uint8_t **out, size_t *got);

/* Every regular member of p with bytes: decoded through its stream and compared with
 * dir/path.  Counts those that read whole and equal (*ok), those whose stream failed or that
 * are unreadable (*failed), and those that gave other bytes (*wrong). */
void img_check_files(const struct img_parse *p, const uint8_t *buf, size_t len, const char *dir,
		     size_t *ok, size_t *failed, size_t *wrong);

#endif
