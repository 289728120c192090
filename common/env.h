/* Numbers from the environment: the TARSEEK_* knobs that tests and benchmarks turn
 * (TARSEEK_LA_WATCHDOG, TARSEEK_WARMUP_QUIET_MS, TARSEEK_SHADOW_LATER_MIN, ...). */
#ifndef TARSEEK_ENV_H
#define TARSEEK_ENV_H

#include <stdbool.h>
#include <stdint.h>

/* The variable name as a whole decimal number in [min, max]; dflt when it is unset, empty,
 * not such a number, or out of range (a typo never turns a limit off). */
uint64_t env_number(const char *name, uint64_t dflt, uint64_t min, uint64_t max);

/* Whether fresh memory may be advised into transparent huge pages (the cache's segment
 * regions, large index images): TARSEEK_THP=0 says no (cache/cache_mem.c says why one would). */
bool env_thp(void);

#endif
