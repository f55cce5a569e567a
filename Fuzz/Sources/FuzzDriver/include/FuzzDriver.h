#ifndef FUZZ_DRIVER_H
#define FUZZ_DRIVER_H
#include <stddef.h>
#include <stdint.h>

/* libFuzzer's driver (compiler-rt, linked by -sanitize=fuzzer). The fuzz targets call it from
 * their own entry point: SwiftPM links an executable with `main` aliased to `<Target>_main`,
 * a symbol that -parse-as-library never emits, so libFuzzer's own main cannot be used. */
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
