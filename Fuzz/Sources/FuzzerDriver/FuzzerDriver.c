// The declaration is all: the definition is libFuzzer's (see FuzzerDriver.h).
#include "FuzzerDriver.h"
