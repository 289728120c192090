/* libFuzzer harness: the ext2/3/4 container (containers/ext4/) on arbitrary bytes as an image.
 *
 * cont_ext4.probe and cont_ext4.parse over the input in memory, with a sink that checks what
 * container.h and member.h promise for ext4: no streams; NUL-terminated paths, never empty,
 * never starting or ending with '/', no empty component, no "." or ".."; a link target for
 * hard and symbolic links, NUL-terminated; permission bits only; xattrs named user.*, once
 * each, every byte of their values read; a regular file either read
 * in place (data inside the image) or through a sparse map in offset order, without empty or
 * overlapping extents, inside its size, each extent inside the image and below stored -- or
 * unreadable with a reason; the count in the stats; the parse returns 0 or a refusal (-EIO,
 * -ENOTSUP) or -ENOMEM.  Every byte a member's map names is read (ASan).
 *
 *   build-fuzz/tests/fuzz/fuzz_ext4 -max_len=131072 CORPUS_DIR
 */
#include "containers/container.h"
#include "fuzz_common.h"

#if HAVE_EXT2FS

struct fz_walk {
	const uint8_t *data;
	uint64_t size; /* of the image */
	uint64_t members;
	uint64_t sum;
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque;
	(void)s;
	(void)id;
	FZ_ASSERT(!"ext4 declares no stream");
	return -EINVAL;
}

static void check_path(const uint8_t *p, size_t n)
{
	size_t start = 0;

	FZ_ASSERT(n > 0 && p[n] == '\0' && strlen((const char *)p) == n);
	FZ_ASSERT(p[0] != '/' && p[n - 1] != '/');
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		FZ_ASSERT(i > start);
		FZ_ASSERT(!(i - start == 1 && p[start] == '.'));
		FZ_ASSERT(!(i - start == 2 && p[start] == '.' && p[start + 1] == '.'));
		start = i + 1;
	}
}

static void check_data(struct fz_walk *w, const struct arc_member *m)
{
	uint64_t last = 0;

	if (m->unreadable) {
		FZ_ASSERT(m->why && *m->why);
		FZ_ASSERT(m->unreadable == -EIO || m->unreadable == -EACCES ||
			  m->unreadable == -EOPNOTSUPP);
		return;
	}
	if (!m->sparse) {
		FZ_ASSERT(m->stored == m->size);
		FZ_ASSERT(m->data_off <= w->size && m->size <= w->size - m->data_off);
		for (uint64_t i = 0; i < m->size; i += 64)
			w->sum += w->data[m->data_off + i];
		return;
	}
	FZ_ASSERT(m->data_off == 0 && m->stored <= w->size);
	for (size_t i = 0; i < m->nsparse; i++) {
		const struct member_sparse *s = &m->sparse[i];

		FZ_ASSERT(s->len > 0 && s->off >= last && s->off <= m->size &&
			  s->len <= m->size - s->off);
		FZ_ASSERT(s->src <= m->stored && s->len <= m->stored - s->src);
		for (uint64_t k = 0; k < s->len; k += 64)
			w->sum += w->data[s->src + k];
		w->sum += w->data[s->src + s->len - 1];
		last = s->off + s->len;
	}
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;

	check_path(m->path, m->path_len);
	FZ_ASSERT(m->link && m->link[m->link_len] == '\0' && m->uname && m->gname);
	FZ_ASSERT(m->stream == 0 && (m->mode & ~07777u) == 0 && m->mtime_nsec < 1000000000u);
	FZ_ASSERT(m->nxattrs == 0 || m->xattrs);
	for (size_t i = 0; i < m->nxattrs; i++) { /* named user.*, once each, every byte read */
		FZ_ASSERT(!strncmp(m->xattrs[i].name, "user.", 5));
		for (size_t k = 0; k < i; k++)
			FZ_ASSERT(strcmp(m->xattrs[i].name, m->xattrs[k].name));
		for (size_t k = 0; k < m->xattrs[i].len; k++)
			w->sum += m->xattrs[i].value[k];
	}
	switch (m->type) {
	case MEMBER_REG:
		check_data(w, m);
		break;
	case MEMBER_HARDLINK:
		check_path(m->link, m->link_len);
		FZ_ASSERT(m->size == 0 && !m->sparse);
		break;
	case MEMBER_SYMLINK:
		FZ_ASSERT(m->link_len > 0 && strlen((const char *)m->link) == m->link_len);
		FZ_ASSERT(m->size == 0 && !m->sparse);
		break;
	case MEMBER_DIR:
	case MEMBER_CHR:
	case MEMBER_BLK:
	case MEMBER_FIFO:
		FZ_ASSERT(m->size == 0 && !m->sparse);
		break;
	default:
		FZ_ASSERT(!"a member type ext4 does not report");
	}
	w->members++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_walk w = {.data = data, .size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
				 .name = "fuzz.img"};
	struct cont_stats st;
	struct src *in;
	int err;

	fz_init_log();
	in = src_from_mem(data, size);
	if (!in)
		return 0;
	if (cont_ext4.probe(in, data, size < 512 ? size : 512)) {
		err = cont_ext4.parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -EIO || err == -ENOTSUP || err == -ENOMEM);
		FZ_ASSERT(st.members == w.members);
	}
	src_free(in);
	return 0;
}

#else
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	return 0;
}
#endif
