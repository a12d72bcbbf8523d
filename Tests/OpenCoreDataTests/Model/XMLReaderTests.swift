import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import OpenCoreData

@Suite("XMLReader: the XML of model and mapping files")
struct XMLReaderTests {
    static func read(_ xml: String) throws(XMLReader.Failure) -> XMLElementNode {
        var reader = try XMLReader(Data(xml.utf8))
        return try reader.document()
    }

    @Test("Elements, attributes, text, references, CDATA; the declaration, comments, instructions and the document type are dropped")
    func wellFormed() throws {
        let xml = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <!-- a comment -->
        <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd" [
          <!ELEMENT database (object*)>
          <!ATTLIST object id ID #REQUIRED note CDATA "a > b">
        ]>
        <?app-instruction with data?>
        <database a='1' b = "x &amp; y &lt;&gt;&quot;&apos; &#65;&#x42;&#x1F600;">
            <object id="o1" text="line&#10;break"/><?m?>
            <value>a<![CDATA[<not markup> & ]]>b &#233;té<!-- c --></value>
        </database>
        <!-- after -->
        """
        let root = try Self.read(xml)
        #expect(root.name == "database")
        #expect(root.attributes == ["a": "1", "b": "x & y <>\"' AB😀"])
        #expect(root.children.map(\.name) == ["object", "value"])
        #expect(root.line == 8)
        #expect(root.children[0].line == 9)
        #expect(root.children[0]["text"] == "line\nbreak")
        #expect(root.child(named: "value")?.text == "a<not markup> & b été")
    }

    @Test("Line ends become line feeds in text, and whitespace becomes spaces in attribute values")
    func normalization() throws {
        let root = try Self.read("<a v=\"1\r\n2\t3\n4\r5\">x\r\ny\rz</a>")
        #expect(root["v"] == "1 2 3 4 5")
        #expect(root.text == "x\ny\nz")
    }

    @Test("A byte order mark, and ISO-8859-1 when the declaration names it")
    func encodings() throws {
        var reader = try XMLReader(Data([0xEF, 0xBB, 0xBF] + Array("<a>é</a>".utf8)))
        #expect(try reader.document().text == "é")
        reader = try XMLReader(Data(Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a n=\"".utf8) + [0xE9] + Array("\"/>".utf8)))
        #expect(try reader.document()["n"] == "é")
        let failure = try #require(throws: XMLReader.Failure.self) { try XMLReader(Data("<?xml version=\"1.0\" encoding=\"UTF-16\"?><a/>".utf8)) }
        #expect(failure.reason.contains("UTF-16"))
    }

    @Test("What is not well-formed is refused with its line and column", arguments: [
        ("<a>\n  <b></a>", 2, 6, "does not match <b>"),
        ("<a x=\"1\" x=\"2\"/>", 1, 10, "given twice"),
        ("<a>&nbsp;</a>", 1, 4, "&nbsp; is not declared"),
        ("<a>&#0;</a>", 1, 4, "not a character"),
        ("<a>&#xD800;</a>", 1, 4, "not a character"),
        ("<a>AT&T</a>", 1, 6, "does not start a reference"),
        ("<a>\u{1}</a>", 1, 4, "control character"),
        ("<a><!-- never ends</a>", 1, 4, "comment that does not end"),
        ("<a/>text", 1, 5, "content after the root element"),
        ("<a/><b/>", 1, 5, "content after the root element"),
        ("<a v=\"<\"/>", 1, 7, "'<' inside an attribute value"),
        ("<a v=1/>", 1, 6, "quoted attribute value"),
        ("<a\n  v=\"1\"", 2, 8, "does not end"),
        ("<a>", 1, 4, "<a> is not closed"),
        ("", 1, 1, "root element"),
        ("just text", 1, 1, "root element"),
        ("<a><?xml version=\"1.0\"?></a>", 1, 4, "XML declaration that is not at the start"),
        ("<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>", 1, 14, "entity declaration 'e'"),
        ("<!DOCTYPE a [<!ENTITY % p SYSTEM \"file:///etc/passwd\"> %p;]><a/>", 1, 14, "entity declaration 'p'"),
        ("<!DOCTYPE a [ %p; ]><a/>", 1, 15, "parameter entity"),
        ("<a></a></a>", 1, 8, "content after the root element"),
        ("<1a/>", 1, 2, "expected a name"),
    ] as [(String, Int, Int, String)])
    func malformed(xml: String, line: Int, column: Int, reason: String) throws {
        let failure = try #require(throws: XMLReader.Failure.self) { try Self.read(xml) }
        #expect(failure.reason.contains(reason), "\(failure)")
        #expect((failure.line, failure.column) == (line, column), "\(failure)")
    }

    @Test("Bytes that are not UTF-8 are refused at the first of them")
    func notUTF8() throws {
        let failure = try #require(throws: XMLReader.Failure.self) { try XMLReader(Data(Array("<a>\n<b>".utf8) + [0xC3, 0x28] + Array("</b></a>".utf8))) }
        #expect(failure == XMLReader.Failure(line: 2, column: 4, reason: "not UTF-8"))
        #expect(XMLReader.firstInvalidUTF8(Array("é ok".utf8)) == nil)
        #expect(XMLReader.firstInvalidUTF8([0x61, 0xC3]) == 1)
    }

    @Test("Depth is bounded, and deep documents are read without recursion")
    func depth() throws {
        let deep = String(repeating: "<m>", count: 64) + String(repeating: "</m>", count: 64)
        #expect(throws: Never.self) { try Self.read(deep) }
        let deeper = String(repeating: "<m>", count: 65) + String(repeating: "</m>", count: 65)
        let failure = try #require(throws: XMLReader.Failure.self) { try Self.read(deeper) }
        #expect(failure.reason.contains("nested deeper than 64"))
        let hostile = String(repeating: "<m>", count: 100_000)
        #expect(throws: XMLReader.Failure.self) { try Self.read(hostile) }
    }

    /// Every model and mapping file among the fixtures (the repository's, and
    /// ../shared's when it is there) reads to the same tree as Foundation's
    /// `XMLParser` builds: names, attributes, lines, and text.
    @Test("Every fixture XML file reads as Foundation's XMLParser reads it")
    func sameTreeAsXMLParser() throws {
        var roots = [Fixtures.root]
        let shared = Fixtures.root.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/fixtures/coredata")
        if FileManager.default.fileExists(atPath: shared.path) { roots.append(shared) }
        var files: [URL] = []
        for root in roots {
            let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
            while let url = enumerator?.nextObject() as? URL {
                let path = url.path
                if (url.lastPathComponent == "contents" && path.contains(".xcdatamodel/")) || url.lastPathComponent == "xcmapping.xml" {
                    files.append(url)
                }
            }
        }
        #expect(files.count >= 10)
        for file in files {
            let data = try Data(contentsOf: file)
            var reader = try XMLReader(data)
            let ours = try reader.document()
            let theirs = try #require(FoundationTree.parse(data), "XMLParser reads \(file.path)")
            #expect(Shape(ours) == Shape(theirs), "\(file.path)")
        }
    }
}

/// A comparable form of a tree: text with surrounding whitespace trimmed.
private struct Shape: Equatable, CustomStringConvertible {
    var name: String
    var attributes: [String: String]
    var text: String
    var line: Int
    var children: [Shape]

    init(_ node: XMLElementNode) {
        name = node.name
        attributes = node.attributes
        text = node.text.trimmingCharacters(in: .whitespacesAndNewlines)
        line = node.line
        children = node.children.map(Shape.init)
    }

    var description: String { "<\(name) \(attributes) line \(line)>\(text)\(children)" }
}

/// The tree Foundation's `XMLParser` builds, as the oracle for the fixtures.
private final class FoundationTree: NSObject, XMLParserDelegate {
    var stack: [XMLElementNode] = []
    var root: XMLElementNode?

    static func parse(_ data: Data) -> XMLElementNode? {
        let builder = FoundationTree()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        return parser.parse() ? builder.root : nil
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
        stack.append(XMLElementNode(name: elementName, attributes: attributeDict, children: [], line: parser.lineNumber))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard let node = stack.popLast() else { return }
        if stack.isEmpty { root = node } else { stack[stack.count - 1].children.append(node) }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if !stack.isEmpty { stack[stack.count - 1].text += string }
    }
}
