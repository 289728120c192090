/* lzo codec: not written yet (issue 7).  Probing fails, so lzo files are not recognised. */
#include "codec.h"

const struct codec codec_lzo = {
	.name = "lzo",
};
