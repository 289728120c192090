/* Numbers from the environment (see env.h). */
#include "common/env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t env_number(const char *name, uint64_t dflt, uint64_t min, uint64_t max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || *v < '0' || *v > '9')
		return dflt;
	errno = 0;
	n = strtoull(v, &end, 10);
	return *end || errno || n < min || n > max ? dflt : (uint64_t)n;
}

bool env_thp(void)
{
	const char *e = getenv("TARSEEK_THP");

	return !(e && strcmp(e, "0") == 0);
}
