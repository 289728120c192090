/* Sizes on the command line: "256", "256M", "2G", "512K", "1.5G", "64KiB".  A bare number
 * means MiB (the unit of tarseek's size options). */
#ifndef TARSEEK_SIZE_H
#define TARSEEK_SIZE_H

#include <stdbool.h>
#include <stdint.h>

bool parse_size(const char *s, uint64_t *out);

#endif
