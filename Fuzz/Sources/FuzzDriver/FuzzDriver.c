/* Declarations only (include/FuzzDriver.h); the driver itself is libFuzzer's. */
#include "FuzzDriver.h"
