/* libFuzzer harness: the NTFS container (containers/ntfs/: libfsntfs over our libbfio handle,
 * the walk, the maps of the data, resident values in MFT records) on arbitrary bytes.
 *
 * The input is an image of FZ_NTFS_SIZE (2 MiB: the smallest mkntfs makes with 512-byte
 * clusters) packed by tests/fuzz/ntfs_pack.py: a bitmap of 512 bytes, one bit per 512-byte
 * block (least significant first), then the blocks whose bit is set, in order; the others
 * read as zeros.  So a seed keeps only the blocks where a real image has something (no
 * $LogFile, no $UpCase) and stays small, and a mutation of the bitmap moves blocks around.
 *
 * cont_ntfs.probe and cont_ntfs.parse with a sink that checks what container.h and member.h
 * promise: no streams; NUL-terminated paths and link targets, every byte read (ASan);
 * permission bits only; a sparse map in offset order, not overlapping, inside the size, no
 * empty extent, every extent inside the image and inside the stored data (data_off 0,
 * stream 0); an unreadable member has a reason and no map.  Every byte the maps read is
 * read from the source, as the mount would.
 *
 *   build-fuzz/tests/fuzz/fuzz_ntfs -max_len=262144 CORPUS_DIR
 */
#include "containers/container.h"
#include "fuzz_common.h"

#include <stdbool.h>

#define FZ_NTFS_SIZE (2u << 20)
#define FZ_BLOCK 512
#define FZ_BLOCKS (FZ_NTFS_SIZE / FZ_BLOCK)

/* The image an input stands for, in img (FZ_NTFS_SIZE bytes). */
static void unpack(const uint8_t *data, size_t size, uint8_t *img)
{
	size_t at = FZ_BLOCKS / 8;

	memset(img, 0, FZ_NTFS_SIZE);
	for (size_t i = 0; i < FZ_BLOCKS && i / 8 < size && at < size; i++) {
		size_t n;

		if (!(data[i / 8] >> (i % 8) & 1))
			continue;
		n = size - at < FZ_BLOCK ? size - at : FZ_BLOCK;
		memcpy(img + i * FZ_BLOCK, data + at, n);
		at += n;
	}
}

struct fz_walk {
	struct src *in;
	uint64_t size;
	uint64_t members;
	uint64_t sum;
	uint8_t buf[4096];
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque, (void)s, (void)id;
	FZ_ASSERT(!"ntfs declares no stream");
	return -EINVAL;
}

static void touch(struct fz_walk *w, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		w->sum += p[i];
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;
	uint64_t end = 0;

	FZ_ASSERT(m->path && m->path[m->path_len] == '\0' && m->path_len > 0);
	touch(w, m->path, m->path_len);
	FZ_ASSERT(m->link && m->link[m->link_len] == '\0' && m->uname && m->gname);
	touch(w, m->link, m->link_len);
	FZ_ASSERT(m->stream == 0 && (m->mode & ~07777u) == 0);
	FZ_ASSERT(m->type == MEMBER_REG || m->type == MEMBER_DIR || m->type == MEMBER_SYMLINK ||
		  m->type == MEMBER_HARDLINK);
	FZ_ASSERT((m->type == MEMBER_SYMLINK || m->type == MEMBER_HARDLINK) == (m->link_len > 0));
	FZ_ASSERT(m->type == MEMBER_REG || (!m->sparse && m->size == 0));
	if (m->unreadable) {
		FZ_ASSERT(m->why && m->why[0] && !m->sparse && m->nsparse == 0);
		FZ_ASSERT(m->unreadable == -EIO || m->unreadable == -EOPNOTSUPP ||
			  m->unreadable == -EACCES);
	}
	if (m->type == MEMBER_REG && !m->unreadable && m->size)
		FZ_ASSERT(m->sparse);
	FZ_ASSERT(m->data_off == 0);
	for (size_t i = 0; i < m->nsparse; i++) {
		const struct member_sparse *x = &m->sparse[i];

		FZ_ASSERT(x->len > 0 && x->off >= end && x->off + x->len <= m->size);
		FZ_ASSERT(x->src <= w->size && x->len <= w->size - x->src);
		FZ_ASSERT(x->src + x->len <= m->stored);
		end = x->off + x->len;
		for (uint64_t at = 0; at < x->len;) { /* the bytes the mount would read */
			size_t n = x->len - at < sizeof(w->buf) ? (size_t)(x->len - at) : sizeof(w->buf);

			FZ_ASSERT(src_pread_full(w->in, w->buf, n, x->src + at) == 0);
			touch(w, w->buf, n);
			at += n;
		}
	}
	w->members++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *img;
	struct fz_walk w = { .size = FZ_NTFS_SIZE };
	struct cont_sink sink = { .stream = on_stream, .member = on_member, .opaque = &w,
				  .name = "fuzz.img" };
	struct cont_stats st = { 0 };
	struct src *in;
	int err;

	fz_init_log();
	if (!img && !(img = malloc(FZ_NTFS_SIZE)))
		return 0;
	unpack(data, size, img);
	in = src_from_mem(img, FZ_NTFS_SIZE);
	if (!in)
		return 0;
	w.in = in;
	if (cont_ntfs.probe(in, img, 512)) {
		err = cont_ntfs.parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -ENOMEM || err == -EIO || err == -EINVAL);
		if (!err)
			FZ_ASSERT(st.members <= w.members);
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "fuzz_ntfs: parse %d, %llu members\n", err,
				(unsigned long long)w.members);
	}
	src_free(in);
	return 0;
}
