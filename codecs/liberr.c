/* The compression libraries' return codes as -errno (see liberr.h). */
#include "codecs/liberr.h"

#include <bzlib.h>
#include <errno.h>
#include <zlib.h>

#include "config.h"
#if HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif
#if HAVE_LZO
#include <lzo/lzoconf.h>
#endif

int liberr_zlib(int zret)
{
	switch (zret) {
	case Z_OK:
	case Z_STREAM_END:
		return 0;
	case Z_MEM_ERROR:
		return -ENOMEM;
	case Z_DATA_ERROR:
	case Z_NEED_DICT:
	case Z_BUF_ERROR:
		return -EIO;
	default: /* Z_STREAM_ERROR, Z_VERSION_ERROR: misuse, not bad data */
		return -EINVAL;
	}
}

int liberr_lzma(lzma_ret ret)
{
	switch (ret) {
	case LZMA_OK:
	case LZMA_STREAM_END:
		return 0;
	case LZMA_MEM_ERROR:
	case LZMA_MEMLIMIT_ERROR:
		return -ENOMEM;
	case LZMA_PROG_ERROR:
		return -EINVAL;
	default: /* FORMAT, OPTIONS, DATA, BUF, UNSUPPORTED_CHECK, ...: the data is not right */
		return -EIO;
	}
}

int liberr_bz2(int bzret)
{
	switch (bzret) {
	case BZ_OK:
	case BZ_RUN_OK:
	case BZ_FLUSH_OK:
	case BZ_FINISH_OK:
	case BZ_STREAM_END:
		return 0;
	case BZ_MEM_ERROR:
		return -ENOMEM;
	case BZ_DATA_ERROR:
	case BZ_DATA_ERROR_MAGIC:
	case BZ_UNEXPECTED_EOF:
	case BZ_IO_ERROR:
		return -EIO;
	default: /* BZ_PARAM_ERROR, BZ_SEQUENCE_ERROR, BZ_CONFIG_ERROR: misuse */
		return -EINVAL;
	}
}

#if HAVE_ZSTD
int liberr_zstd(size_t zret)
{
	if (!ZSTD_isError(zret))
		return 0;
	switch (ZSTD_getErrorCode(zret)) {
	case ZSTD_error_memory_allocation:
		return -ENOMEM;
	case ZSTD_error_parameter_unsupported:
	case ZSTD_error_parameter_combination_unsupported:
	case ZSTD_error_parameter_outOfBound:
	case ZSTD_error_stage_wrong:
	case ZSTD_error_init_missing:
	case ZSTD_error_dstBuffer_null:
		return -EINVAL; /* misuse, not bad data */
	default: /* corruption, checksum, window too large, truncated, ...: the file is not right */
		return -EIO;
	}
}
#endif

#if HAVE_LZO
int liberr_lzo(int lzoret)
{
	switch (lzoret) {
	case LZO_E_OK:
		return 0;
	case LZO_E_OUT_OF_MEMORY:
		return -ENOMEM;
	case LZO_E_INVALID_ARGUMENT:
	case LZO_E_INVALID_ALIGNMENT:
	case LZO_E_INTERNAL_ERROR:
		return -EINVAL;
	default: /* INPUT_OVERRUN, OUTPUT_OVERRUN, LOOKBEHIND_OVERRUN, INPUT_NOT_CONSUMED, ...: */
		return -EIO; /* the data is not right */
	}
}
#endif
