#ifndef OCD_FUZZER_DRIVER_H
#define OCD_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver, for programs with a `main` of their own: it runs the
/// fuzzer with the program's arguments (`-max_total_time=60 corpus/`), calling
/// `callback` with each input. Linked from the toolchain's
/// `libclang_rt.fuzzer_no_main` (Fuzz/run passes it to the linker).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
