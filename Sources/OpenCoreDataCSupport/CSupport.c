// The C helpers of OpenCoreData are inline functions in the header
// (include/OpenCoreDataCSupport.h); SwiftPM needs one source file per C target.
#include "OpenCoreDataCSupport.h"
