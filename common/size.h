/* Sizes on the command line: "256", "256M", "2G", "512K", "1.5G", "64KiB".  A bare number
 * means MiB (the unit of tarseek's size options).  And sizes in messages. */
#ifndef TARSEEK_SIZE_H
#define TARSEEK_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool parse_size(const char *s, uint64_t *out);

/* bytes as "1.23 MB" (powers of 1000), "512 B" below 1000. */
void format_size(char *buf, size_t size, double bytes);

#endif
