/* libFuzzer harness: the virtual-disk containers (containers/vdisk/: qcow2, VHD, VHDX, VMDK)
 * on arbitrary images.
 *
 * The input is the image as it is, or -- since a VHDX is at least a few MiB, mostly zeros,
 * and libFuzzer's inputs are small -- a sparse description of one: "VDFZ", the image's size
 * (u32 little-endian, folded to at most 16 MiB), then records {u32 offset, u16 length, the
 * bytes} laid over zeros (later records over earlier ones; make-seeds.sh writes qemu-img's
 * images this way, leaving out their zero blocks).  The image is read through a source that
 * serves those records, so nothing of its size is allocated.
 *
 * Every container whose probe says yes parses it, with a sink that checks what vdisk.h and
 * member.h promise: no streams; one member, a regular file read in place (stream 0, data_off
 * 0) named *.img; unreadable with a reason and no map, or a sparse map whose extents are in
 * order, not empty, not overlapping, inside the virtual size, inside the image and inside
 * stored, no two sharing bytes of the image; and the map's bytes are read as the mount would
 * (up to 1 MiB of them).  parse returns 0, -EINVAL (not this format after all) or -ENOMEM.
 *
 *   build-fuzz/tests/fuzz/fuzz_vdisk -max_len=131072 CORPUS_DIR
 */
#include "containers/vdisk/vdisk.h"
#include "fuzz_common.h"

#include "common/byteio.h"

#define FZ_SPARSE_MAX ((uint32_t)16 << 20)
#define FZ_READ_MAX ((uint64_t)1 << 20)

struct rec {
	uint32_t off;
	uint16_t len;
	const uint8_t *p;
};

struct img {
	struct rec r[4096];
	size_t n;
	uint32_t size;
};

static ssize_t img_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	const struct img *im = opaque;

	if (off >= im->size)
		return 0;
	if (len > im->size - off)
		len = (size_t)(im->size - off);
	memset(buf, 0, len);
	for (size_t i = 0; i < im->n; i++) {
		const struct rec *r = &im->r[i];
		uint64_t a = r->off > off ? r->off : off;
		uint64_t b = (uint64_t)r->off + r->len < off + len ? (uint64_t)r->off + r->len
								   : off + len;
		if (a < b)
			memcpy((uint8_t *)buf + (a - off), r->p + (a - r->off), (size_t)(b - a));
	}
	return (ssize_t)len;
}

static const struct src_ops img_ops = {.pread = img_pread};

struct fz_walk {
	struct src *in;
	uint64_t members, sum;
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque;
	(void)s;
	(void)id;
	FZ_ASSERT(!"a virtual disk declares no stream");
	return -EINVAL;
}

static int by_src(const void *x, const void *y)
{
	const struct member_sparse *a = x, *b = y;

	return a->src < b->src ? -1 : a->src > b->src;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;
	uint64_t fsize = src_size(w->in), end = 0, budget = FZ_READ_MAX;
	static uint8_t buf[65536];

	FZ_ASSERT(w->members++ == 0);
	FZ_ASSERT(m->path && m->path[m->path_len] == '\0' && m->path_len >= 5 &&
		  !memcmp(m->path + m->path_len - 4, ".img", 4));
	FZ_ASSERT(m->type == MEMBER_REG && m->stream == 0 && m->data_off == 0);
	FZ_ASSERT(m->link && m->uname && m->gname && (m->mode & ~07777u) == 0);
	if (m->unreadable) {
		FZ_ASSERT(m->why && !m->sparse && !m->nsparse && !m->stored);
		FZ_ASSERT(m->unreadable == -EIO || m->unreadable == -EOPNOTSUPP ||
			  m->unreadable == -EACCES);
		return 0;
	}
	FZ_ASSERT(m->sparse && m->stored <= fsize);
	for (size_t i = 0; i < m->nsparse; i++) {
		const struct member_sparse *e = &m->sparse[i];
		FZ_ASSERT(e->len && e->off >= end && e->off <= m->size && e->len <= m->size - e->off);
		FZ_ASSERT(e->src <= m->stored && e->len <= m->stored - e->src);
		end = e->off + e->len;
		for (uint64_t o = 0; o < e->len && budget; ) {
			size_t n = e->len - o < sizeof(buf) ? (size_t)(e->len - o) : sizeof(buf);
			n = n < budget ? n : (size_t)budget;
			FZ_ASSERT(src_pread_full(w->in, buf, n, e->src + o) == 0);
			w->sum += buf[0] + buf[n - 1];
			o += n;
			budget -= n;
		}
	}
	if (m->nsparse > 1) {
		struct member_sparse *s = malloc(m->nsparse * sizeof(*s));
		if (s) {
			memcpy(s, m->sparse, m->nsparse * sizeof(*s));
			qsort(s, m->nsparse, sizeof(*s), by_src);
			for (size_t i = 1; i < m->nsparse; i++)
				FZ_ASSERT(s[i].src >= s[i - 1].src + s[i - 1].len);
			free(s);
		}
	}
	return 0;
}

/* The image the input describes (see above): a source, or NULL. */
static struct src *fz_image(const uint8_t *data, size_t size, struct img *im)
{
	size_t at = 8;

	if (size < 8 || memcmp(data, "VDFZ", 4))
		return src_from_mem(data, size);
	im->size = le32(data + 4) % (FZ_SPARSE_MAX + 1);
	im->n = 0;
	while (at + 6 <= size && im->n < sizeof(im->r) / sizeof(im->r[0])) {
		struct rec *r = &im->r[im->n];
		r->off = le32(data + at);
		r->len = le16(data + at + 4);
		at += 6;
		if (r->len > size - at)
			r->len = (uint16_t)(size - at);
		r->p = data + at;
		at += r->len;
		im->n++;
	}
	return src_new(&img_ops, im, im->size);
}

static const struct container *const fz_all[] = {&cont_qcow2, &cont_vhdx, &cont_vmdk, &cont_vhd};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct img im;
	uint8_t head[512];
	struct src *in;
	ssize_t hn;

	fz_init_log();
	in = fz_image(data, size, &im);
	if (!in)
		return 0;
	hn = src_pread(in, head, sizeof(head), 0);
	for (size_t i = 0; hn >= 0 && i < sizeof(fz_all) / sizeof(fz_all[0]); i++) {
		struct fz_walk w = {.in = in};
		struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
					 .name = i & 1 ? NULL : "dir/fuzz.qcow2.gz"};
		struct cont_stats st = {0};
		int err;

		if (!fz_all[i]->probe(in, head, (size_t)hn))
			continue;
		err = fz_all[i]->parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -EINVAL || err == -ENOMEM);
		FZ_ASSERT(err || (w.members == 1 && st.members == 1));
	}
	src_free(in);
	return 0;
}
