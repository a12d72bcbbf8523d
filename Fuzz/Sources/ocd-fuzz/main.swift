import Foundation
import FuzzerDriver
import Logging

// The parsers log what they skip in a file they accept (a default value of the
// wrong type…): with thousands of inputs a second, that is noise.
LoggingSystem.bootstrap { _ in SwiftLogNoOpLogHandler() }

// Hands the arguments to libFuzzer, which calls `fuzzOneInput` with each input
// until its time is up or an input crashes (it then writes the input to a file
// and exits non-zero).
var arguments = CommandLine.argc
var argumentValues: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
let status = LLVMFuzzerRunDriver(&arguments, &argumentValues) { fuzzOneInput($0, $1) }
exit(status)
