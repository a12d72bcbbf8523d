import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

struct ValueTransformerZZTempDump {
    @Test func corelibsArchiveDecodes() throws {
        let uuid = NSUUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!
        let root = NSMutableArray(array: [NSString(string: "Hello"), NSNumber(value: 42), NSNumber(value: 2.5), NSNumber(value: true),
                                          NSDate(timeIntervalSinceReferenceDate: 100), NSData(bytes: [1, 2, 3] as [UInt8], length: 3), uuid,
                                          NSURL(string: "https://example.com/x")!,
                                          NSDictionary(dictionary: ["k": NSString(string: "v")]), NSNull()])
        let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)
        try data.write(to: URL(fileURLWithPath: "/tmp/vt/corelibs.bplist"))
        let value = try AttributeValueArchiver.unarchivedValue(from: data)
        print("CORELIBS→OCD", value)
    }
    @Test func ourArchiveDecodesInCorelibs() throws {
        guard case .dictionary(var d) = VTSupport.everyShape else { return }
        for k in ["decimal", "negativeDecimal", "bigDecimal"] { d[k] = nil }
        let data = try AttributeValueArchiver.archivedData(withRootValue: .dictionary(d))
        _ = data
        let key = ProcessInfo.processInfo.environment["VT_KEY"] ?? "yes"
        let one = try AttributeValueArchiver.archivedData(withRootValue: d[key] ?? .null)
        let object = try NSKeyedUnarchiver.unarchiveTopLevelObjectWithData(one)
        print("OCD→CORELIBS", key, object as Any)
    }
}
