#include "suc_raw_limit.h"
int suc_raw_limit_placeholder(void) { return 0; }
