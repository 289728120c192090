/* libFuzzer harness: SquashFS images -- the squashfs container (containers/squashfs/, which
 * hands the superblock, the id, fragment and xattr tables and the directory tree to
 * libsquashfs, loaded with dlopen, through a compressor of ours: codecs/squashfs/sqfs_block.c)
 * and the codec "squashfs" of its files' streams (codecs/squashfs/sqfs_codec.c over
 * codecs/pieces.c), on arbitrary bytes.  The checks are fuzz_image.h's.
 *
 * libsquashfs is built without the fuzzer's coverage, so the mutations are guided by what our
 * side sees (the compressor's calls, the tree, the pieces); ASan sees its memory errors only
 * through the calls it intercepts, its allocations through the RSS and malloc limits.
 *
 *   build-fuzz/tests/fuzz/fuzz_squashfs -max_len=65536 CORPUS_DIR
 */
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#if HAVE_SQUASHFS
	fzi_one(&cont_squashfs, "squashfs", data, size);
#endif
	return 0;
}
