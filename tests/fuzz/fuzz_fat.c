/* libFuzzer harness: the FAT container (containers/fat/) on arbitrary bytes.
 *
 * cont_fat.probe and .parse over the input in memory, with a sink that checks what
 * container.h and member.h promise for it: no streams; members are folders and regular files
 * with NUL-terminated relative paths (no empty, "." or ".." component); a folder has no data;
 * a readable file either lies in one piece inside the input (size == stored) or has a sparse
 * map whose extents follow each other from 0 to its size (a FAT file has no holes), each
 * non-empty and inside its stored bytes, which lie inside the input; an unreadable file is
 * -EIO with a reason and nothing stored; DOS times; the count in the stats.  Every file's
 * bytes are read as the mount would.  The parse returns 0, -EINVAL, -ENOTSUP or -ENOMEM.
 *
 *   build-fuzz/tests/fuzz/fuzz_fat -max_len=131072 CORPUS_DIR
 */
#include "containers/container.h"
#include "fuzz_common.h"

struct fz_walk {
	const uint8_t *data;
	uint64_t size;
	uint64_t members;
	uint64_t sum;
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque;
	(void)s;
	(void)id;
	FZ_ASSERT(!"FAT declares no stream");
	return -EINVAL;
}

static void check_path(const uint8_t *p, size_t n)
{
	size_t start = 0;

	FZ_ASSERT(n > 0 && p[n] == '\0' && strlen((const char *)p) == n);
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		size_t len = i - start;
		FZ_ASSERT(len > 0);
		FZ_ASSERT(!(len == 1 && p[start] == '.') && !(len == 2 && !memcmp(p + start, "..", 2)));
		start = i + 1;
	}
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;

	check_path(m->path, m->path_len);
	FZ_ASSERT(m->link && m->link[0] == '\0' && m->uname && m->gname && m->dos_time);
	FZ_ASSERT(m->stream == 0 && (m->mode & ~07777u) == 0);
	FZ_ASSERT(m->type == MEMBER_REG || m->type == MEMBER_DIR);
	if (m->type == MEMBER_DIR) {
		FZ_ASSERT(m->size == 0 && m->stored == 0 && !m->sparse && !m->unreadable);
	} else if (m->unreadable) {
		FZ_ASSERT(m->unreadable == -EIO && m->why && m->stored == 0 && !m->sparse);
	} else if (!m->sparse) {
		FZ_ASSERT(m->size == m->stored);
		FZ_ASSERT(m->data_off <= w->size && m->stored <= w->size - m->data_off);
		for (uint64_t i = 0; i < m->stored; i++)
			w->sum += w->data[m->data_off + i];
	} else {
		uint64_t end = 0;
		FZ_ASSERT(m->nsparse >= 2);
		FZ_ASSERT(m->data_off <= w->size && m->stored <= w->size - m->data_off);
		for (size_t k = 0; k < m->nsparse; k++) {
			const struct member_sparse *e = &m->sparse[k];
			FZ_ASSERT(e->off == end && e->len > 0);
			FZ_ASSERT(e->src <= m->stored && e->len <= m->stored - e->src);
			for (uint64_t i = 0; i < e->len; i++)
				w->sum += w->data[m->data_off + e->src + i];
			end = e->off + e->len;
		}
		FZ_ASSERT(end == m->size);
	}
	w->members++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_walk w = {.data = data, .size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
				 .name = "fuzz.vfat"};
	struct cont_stats st = {0};
	struct src *in;
	int err;

	fz_init_log();
	in = src_from_mem(data, size);
	if (!in)
		return 0;
	if (cont_fat.probe(in, data, size < 512 ? size : 512)) {
		err = cont_fat.parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -EINVAL || err == -ENOTSUP || err == -ENOMEM);
		if (!err)
			FZ_ASSERT(st.members == w.members);
	}
	src_free(in);
	return 0;
}
