import Foundation

extension AttributeValue {
    /// Reads a value from JSON: `null`, Booleans, integers (`.int`), other numbers
    /// (`.double`), strings, arrays and objects (`.dictionary`), with these objects
    /// standing for the values JSON has no literal for:
    ///
    /// | JSON                                  | value              |
    /// |---------------------------------------|--------------------|
    /// | `{"$date": "2024-01-01T00:00:00Z"}`   | `.date` (ISO 8601, or seconds since 1970) |
    /// | `{"$null": true}`                     | `.null` (`NSNull`) |
    /// | `{"$decimal": "1.50"}`                | `.decimal`         |
    /// | `{"$data": "AAEC"}`                   | `.data` (base64)   |
    /// | `{"$uuid": "…"}`                      | `.uuid`            |
    /// | `{"$url": "https://…"}`               | `.uri`             |
    ///
    /// ```swift
    /// let v = try AttributeValue(json: #"{"name": "Ada", "born": {"$date": "1815-12-10T00:00:00Z"}}"#)
    /// ```
    public init(json: String) throws {
        try self.init(jsonData: Data(json.utf8))
    }

    /// Reads a value from JSON data. See ``init(json:)``.
    public init(jsonData: Data) throws {
        let node = try JSONDecoder().decode(JSONNode.self, from: jsonData)
        self = try node.attributeValue()
    }
}

/// A JSON value that keeps integers apart from other numbers.
enum JSONNode: Decodable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONNode])
    case object([String: JSONNode])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONNode].self) {
            self = .array(a)
        } else {
            self = .object(try container.decode([String: JSONNode].self))
        }
    }

    struct InvalidValue: Error, CustomStringConvertible {
        var description: String
    }

    func attributeValue() throws -> AttributeValue {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let values): return .array(try values.map { try $0.attributeValue() })
        case .object(let object):
            if object.count == 1, let (key, value) = object.first, key.hasPrefix("$") {
                switch (key, value) {
                case ("$null", _):
                    return .null
                case ("$date", .string(let text)):
                    let formatter = ISO8601DateFormatter()
                    if let date = formatter.date(from: text) { return .date(date) }
                    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                    if let date = formatter.date(from: text) { return .date(date) }
                    throw InvalidValue(description: "invalid $date \"\(text)\"")
                case ("$date", .int(let seconds)):
                    return .date(Date(timeIntervalSince1970: Double(seconds)))
                case ("$date", .double(let seconds)):
                    return .date(Date(timeIntervalSince1970: seconds))
                case ("$decimal", .string(let text)):
                    guard let decimal = Decimal(string: text) else {
                        throw InvalidValue(description: "invalid $decimal \"\(text)\"")
                    }
                    return .decimal(decimal)
                case ("$data", .string(let text)):
                    guard let data = Data(base64Encoded: text) else {
                        throw InvalidValue(description: "invalid base64 $data")
                    }
                    return .data(data)
                case ("$uuid", .string(let text)):
                    guard let uuid = UUID(uuidString: text) else {
                        throw InvalidValue(description: "invalid $uuid \"\(text)\"")
                    }
                    return .uuid(uuid)
                case ("$url", .string(let text)), ("$uri", .string(let text)):
                    guard let url = URL(string: text) else {
                        throw InvalidValue(description: "invalid $url \"\(text)\"")
                    }
                    return .uri(url)
                default:
                    break
                }
            }
            return .dictionary(try object.mapValues { try $0.attributeValue() })
        }
    }
}
