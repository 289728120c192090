/* libFuzzer harness: the ar container (containers/ar.c) on arbitrary bytes.
 *
 * cont_ar.probe and cont_ar.parse over the input in memory, with a sink that checks what
 * container.h and member.h promise for ar: no streams (every member is read in place); each
 * member a regular file with a NUL-terminated path whose every byte is read (ASan), permission
 * bits only, size == stored, data inside the input -- or unreadable (-EIO, with a reason) and
 * nothing stored; members in file order (hdr_off increasing, data after the header); the
 * count in the stats.  Then every member's data is read from the input as the mount would.
 *
 *   build-fuzz/tests/fuzz/fuzz_ar -max_len=65536 CORPUS_DIR
 */
#include "containers/container.h"
#include "fuzz_common.h"

struct fz_walk {
	const uint8_t *data;
	uint64_t size; /* of the archive */
	uint64_t members;
	uint64_t last_hdr;
	uint64_t sum;
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque;
	(void)s;
	(void)id;
	FZ_ASSERT(!"ar declares no stream");
	return -EINVAL;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;

	FZ_ASSERT(m->path && m->path[m->path_len] == '\0');
	for (size_t i = 0; i < m->path_len; i++)
		w->sum += m->path[i];
	FZ_ASSERT(m->link && m->link[0] == '\0' && m->uname && m->gname);
	FZ_ASSERT(m->type == MEMBER_REG && m->stream == 0 && (m->mode & ~07777u) == 0);
	FZ_ASSERT(w->members == 0 || m->hdr_off > w->last_hdr);
	FZ_ASSERT(m->hdr_off >= 8 && m->data_off >= m->hdr_off + 60);
	w->last_hdr = m->hdr_off;
	if (m->unreadable) {
		FZ_ASSERT(m->unreadable == -EIO && m->why && m->stored == 0);
	} else {
		FZ_ASSERT(m->size == m->stored);
		FZ_ASSERT(m->data_off <= w->size && m->stored <= w->size - m->data_off);
		for (uint64_t i = 0; i < m->stored; i++) /* the bytes the mount would read */
			w->sum += w->data[m->data_off + i];
	}
	w->members++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_walk w = {.data = data, .size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
				 .name = "fuzz.a"};
	struct cont_stats st;
	struct src *in;
	int err;

	fz_init_log();
	in = src_from_mem(data, size);
	if (!in)
		return 0;
	if (cont_ar.probe(in, data, size < 512 ? size : 512)) {
		err = cont_ar.parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -ENOMEM);
		FZ_ASSERT(st.members == w.members);
	}
	src_free(in);
	return 0;
}
