/* Which container an archive file is made with (see container.h). */
#include "container.h"

const struct container *cont_probe(struct src *in, const uint8_t *head, size_t len)
{
	static const struct container *const all[] = {&cont_zip, &cont_7z};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i]->probe(in, head, len))
			return all[i];
	return NULL;
}
