/* libFuzzer harness: the tar parser (containers/tar/) on arbitrary bytes.
 *
 * The input is parsed twice: from a source of known size (a plain .tar file) and from a
 * forward-only source of unknown size (what a decompressed stream looks like), which aborts
 * if the parser ever reads backwards.  The callback touches every field of every entry, so
 * ASan sees any pointer the parser hands out that is too short or dangling, and checks what
 * tar.h promises about an entry.  tar_probe and tar_header_valid run on the same bytes.
 *
 *   build-fuzz/tests/fuzz/fuzz_tar -max_len=65536 CORPUS_DIR
 */
#include "fuzz_common.h"
#include "containers/tar/tar.h"

struct walk {
	uint64_t size; /* the source's size, or SRC_SIZE_UNKNOWN */
	uint64_t members;
	uint64_t sum; /* so that the reads of every byte are not optimised away */
};

static uint64_t touch(const uint8_t *p, size_t len)
{
	uint64_t s = 0;

	for (size_t i = 0; i < len; i++)
		s = s * 31 + p[i];
	return s;
}

static int on_entry(void *opaque, const struct arc_member *e)
{
	struct walk *w = opaque;

	FZ_ASSERT(e->path && e->path[e->path_len] == 0);
	FZ_ASSERT(e->link && e->link[e->link_len] == 0);
	w->sum += touch(e->path, e->path_len) + touch(e->link, e->link_len);
	FZ_ASSERT(e->uname && e->gname);
	w->sum += strlen(e->uname) + strlen(e->gname);
	FZ_ASSERT(e->type == MEMBER_REG || e->type == MEMBER_HARDLINK || e->type == MEMBER_SYMLINK ||
		  e->type == MEMBER_CHR || e->type == MEMBER_BLK || e->type == MEMBER_DIR ||
		  e->type == MEMBER_FIFO);
	FZ_ASSERT((e->mode & ~07777u) == 0);
	FZ_ASSERT(e->type == MEMBER_REG || e->size == 0);
	FZ_ASSERT(e->hdr_off <= e->data_off);
	FZ_ASSERT(e->hdr_off % TAR_BLOCK == 0);
	FZ_ASSERT(e->mtime_nsec < 1000000000u);
	/* a member whose data runs past the end of the source is not reported */
	if (w->size != SRC_SIZE_UNKNOWN)
		FZ_ASSERT(e->data_off <= w->size && e->stored <= w->size - e->data_off);
	FZ_ASSERT(e->nsparse == 0 || e->sparse);
	if (e->sparse) { /* in order, not overlapping, inside the size and the stored data */
		uint64_t end = 0;
		for (size_t i = 0; i < e->nsparse; i++) {
			const struct member_sparse *x = &e->sparse[i];

			FZ_ASSERT(x->len > 0); /* no empty extents */
			FZ_ASSERT(x->off >= end);
			end = x->off + x->len;
			FZ_ASSERT(end > x->off);
			FZ_ASSERT(x->src <= e->stored && x->len <= e->stored - x->src);
		}
		FZ_ASSERT(end <= e->size);
	}
	FZ_ASSERT(e->nxattrs == 0 || e->xattrs);
	for (size_t i = 0; i < e->nxattrs; i++) {
		FZ_ASSERT(e->xattrs[i].name);
		w->sum += strlen(e->xattrs[i].name);
		FZ_ASSERT(e->xattrs[i].len == 0 || e->xattrs[i].value);
		w->sum += touch(e->xattrs[i].value, e->xattrs[i].len);
		for (size_t j = 0; j < i; j++) /* one per name */
			FZ_ASSERT(strcmp(e->xattrs[i].name, e->xattrs[j].name) != 0);
	}
	w->sum += e->uid + e->gid + (uint64_t)e->mtime_sec + e->dev_major + e->dev_minor;
	w->members++;
	return 0;
}

/* The members reported (the same bytes must give the same members as a file and as a
 * stream: a .tar and its .tar.gz index alike). */
static uint64_t parse(struct src *s, uint64_t size)
{
	struct walk w = {.size = size};
	struct tar_callbacks cb = {.entry = on_entry, .opaque = &w};
	struct tar_stats st;
	int err = tar_parse(s, &cb, &st);

	FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOMEM);
	FZ_ASSERT(st.members == w.members);
	return w.members;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_fwd f;
	struct src *s;
	uint64_t members;

	fz_init_log();
	if (size >= TAR_BLOCK)
		(void)tar_header_valid(data);

	s = src_from_mem(data, size);
	if (!s)
		return 0;
	(void)tar_probe(s);
	members = parse(s, size);
	src_free(s);

	/* the probe and the parse each start again at 0, as the builder does on its stream */
	s = fz_fwd_src(&f, data, size, 1);
	if (!s)
		return 0;
	(void)tar_probe(s);
	src_free(s);
	s = fz_fwd_src(&f, data, size, 1);
	if (!s)
		return 0;
	FZ_ASSERT(parse(s, SRC_SIZE_UNKNOWN) == members);
	src_free(s);
	return 0;
}
