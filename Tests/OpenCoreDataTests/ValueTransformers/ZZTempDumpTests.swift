import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

struct ValueTransformerZZTempDump {
    @Test func dump() throws {
        try AttributeValueArchiver.archivedData(withRootValue: VTSupport.everyShape).write(to: URL(fileURLWithPath: "/tmp/vt/every.bplist"))
        try AttributeValueArchiver.archivedData(withRootValue: ["Hello", "World"]).write(to: URL(fileURLWithPath: "/tmp/vt/hello.bplist"))
        var value: AttributeValue = .string("core")
        for level in 0..<AttributeValueArchiver.maximumDepth { value = level.isMultiple(of: 2) ? .array([value]) : .dictionary(["k": value]) }
        let deep = value
        let size = Int(ProcessInfo.processInfo.environment["VT_STACK"] ?? "256")!
        let mode = ProcessInfo.processInfo.environment["VT_MODE"] ?? "both"
        let archived = try AttributeValueArchiver.archivedData(withRootValue: deep)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var ok = false
        let thread = Thread {
            if mode == "write" { ok = (try? AttributeValueArchiver.archivedData(withRootValue: deep)) == archived }
            else { ok = (try? AttributeValueArchiver.unarchivedValue(from: archived)) == deep }
            done.signal()
        }
        thread.stackSize = size * 1024
        thread.start()
        done.wait()
        #expect(ok)
    }
}
