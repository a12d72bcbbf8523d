import Testing
@testable import OpenCoreDataPredicates

@Suite struct AttributeValueTests {
    @Test func literalsAndAccessors() {
        let v: AttributeValue = 42
        #expect(v.int64Value == 42)
        #expect(v.doubleValue == 42)
        #expect(AttributeValue.double(2.9).int64Value == 2)
        #expect(AttributeValue.null.isNull)
        #expect(("x" as AttributeValue).stringValue == "x")
    }
}
