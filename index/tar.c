/* tar parser: being written (issue 2). */
#include "tar.h"
