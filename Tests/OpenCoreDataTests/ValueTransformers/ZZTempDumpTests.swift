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
                                          NSDictionary(dictionary: ["k": NSString(string: "v")]), NSNull(),
                                          NSDecimalNumber(string: "-12.345")])
        let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)
        try data.write(to: URL(fileURLWithPath: "/tmp/vt/corelibs.bplist"))
        let value = try AttributeValueArchiver.unarchivedValue(from: data)
        print("CORELIBS→OCD", value)
    }
    @Test func ourArchiveDecodesInCorelibs() throws {
        let data = try AttributeValueArchiver.archivedData(withRootValue: VTSupport.everyShape)
        let object = try NSKeyedUnarchiver.unarchiveTopLevelObjectWithData(data)
        print("OCD→CORELIBS", object as Any)
    }
}
