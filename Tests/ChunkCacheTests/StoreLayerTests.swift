import Foundation
import Testing

/// Store is storage only: Sources/ChunkCache/Store/ keeps the environment, databases, writer, codecs and
/// layout, and names nothing of the folders above it. The services this process runs on a store live in its
/// `Engine`; a Store/ file that needs one is code in the wrong room.
@Suite struct StoreLayerTests {
    /// Sources/ChunkCache, found from this file's path.
    static let library = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/ChunkCache").path

    /// The folders above Store/: every folder of the library but Store/ itself and Concurrency/ (the waiting
    /// types below every room), so a new room is checked as soon as it exists.
    static let above = ((try? FileManager.default.contentsOfDirectory(atPath: library)) ?? []).filter {
        !["Store", "Concurrency", "ChunkCache.docc"].contains($0)
            && (try? FileManager.default.contentsOfDirectory(atPath: library + "/" + $0)) != nil
    }.sorted()

    /// Types of the folders above that Store/ may name, each with why.
    static let allowed: [String: String] = [
        // The values the records hold, or are decoded into and checked against.
        "ChunkDigest": "a chunk's name, the key of `chunks` and of every manifest entry",
        "ChunkLayout": "the chunk size `meta` records and every version record holds",
        "ByteRange": "the range of a version a stored-chunk read covers",
        "DomainVersion": "the version `domains` records hold",
        "ItemVersion": "the content and metadata versions `items` and `versions` records hold",
        "ItemKind": "the kind an item record holds",
        "Item":
            "the public form of an item record (`Records.publicItem`), and the special containers' identifiers the listing index and a placement hold",
        "Origin": "the origin a domain record holds",
        "OriginHeader": "the headers a domain record holds for its origin",
        "DomainInfo":
            "the bounds of the pipeline depth, read-ahead and timeout a domain record holds, checked on decoding",
        "ChangeHistory": "how much change log a domain record keeps",
        // The one error type every layer throws: a leaf value, naming nothing itself.
        "CacheError": "the library's one error, which the store's reads and writes throw",
        // Leaves that name nothing of the engine, kept until they have a lower room.
        "Diagnostics": "where the store reports a failure no caller can receive, as the test that opened it chose",
        "FetchThresholds": "the sizes of the fetch's scratch the codec pool hands out with each decompression context",
        "RunWriter": "the run starts of that scratch (`RunWriter.RunStart`)",
    ]

    /// The top-level types each file of `folder` declares.
    static func declaredTypes(in folder: String) throws -> Set<String> {
        let declaration = try Regex(
            #"^(?:public |package |internal |fileprivate |private )?(?:final )?(?:struct|class|enum|actor|protocol|typealias) ([A-Z][A-Za-z0-9_]*)"#
        )
        var names: Set<String> = []
        for file in try swiftFiles(in: folder) {
            for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") {
                if let match = line.firstMatch(of: declaration), let name = match.output[1].substring {
                    names.insert(String(name))
                }
            }
        }
        return names
    }

    /// The Swift files of `folder` and the folders inside it, by path.
    static func swiftFiles(in folder: String) throws -> [String] {
        let walker = try #require(FileManager.default.enumerator(atPath: library + "/" + folder))
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted()
            .map { library + "/" + folder + "/" + $0 }
    }

    /// A line's code: without its comment and its string literals, where a type's name is only a word.
    static func code(of line: Substring) -> String {
        let withoutStrings = line.replacing(#/"(?:[^"\\]|\\.)*"/#, with: "\"\"")
        guard let comment = withoutStrings.firstRange(of: "//") else { return String(withoutStrings) }
        return String(withoutStrings[..<comment.lowerBound])
    }

    @Test(
        "Store is storage only: no file of Store/ names a type of the folders above it (every folder of the library but Concurrency/) beyond the values its records hold"
    )
    func storeNamesNothingAbove() throws {
        #expect(Self.above.contains("Origin") && Self.above.contains("Trace"), "the rooms above, found: \(Self.above)")
        var owner: [String: String] = [:]
        for folder in Self.above {
            let types = try Self.declaredTypes(in: folder)
            #expect(!types.isEmpty, "found the types of \(folder)/ at \(Self.library)")
            for name in types { owner[name] = folder }
        }
        for name in Self.allowed.keys {
            #expect(owner[name] != nil, "\(name), allowed in Store/, is still a type of a folder above it")
        }
        let files = try Self.swiftFiles(in: "Store")
        #expect(files.count > 20, "found the files of Store/ at \(Self.library)")
        // Simple word boundaries: by Unicode's default, `Type.member` is one word and `Type` would go unseen.
        let word = try Regex(#"\b[A-Z][A-Za-z0-9_]*\b"#).wordBoundaryKind(.simple)
        var found: [String] = []
        var named: Set<String> = []
        for file in files {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                for match in Self.code(of: line).matches(of: word) {
                    let name = String(match.output[0].substring ?? "")
                    named.insert(name)
                    guard let folder = owner[name], Self.allowed[name] == nil else { continue }
                    found.append("\(file.dropFirst(Self.library.count + 1)):\(number + 1): \(name) of \(folder)/")
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
        let unneeded = Self.allowed.keys.filter { !named.contains($0) }.sorted()
        #expect(
            unneeded.isEmpty, "allowed in Store/ but named by no file there, so no longer an exception: \(unneeded)")
    }

    @Test(
        "Store is storage only: every record a database holds (each StoreRecord) is declared in Store/, beside its table, never in the folder of the service that writes it"
    )
    func recordsLiveInStore() throws {
        let record = try Regex(
            #"^(?:package |internal )?(?:struct|enum|final class|extension) ([A-Z][A-Za-z0-9_]*)[^{]*:[^{]*\bStoreRecord\b"#
        )
        var inStore: [String] = []
        for file in try Self.swiftFiles(in: "Store") {
            for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") {
                if let match = line.firstMatch(of: record), let name = match.output[1].substring {
                    inStore.append(String(name))
                }
            }
        }
        #expect(inStore.contains("DomainRecord") && inStore.contains("ImportJobRecord"), "found the records of Store/")
        var above: [String] = []
        for folder in Self.above {
            for file in try Self.swiftFiles(in: folder) {
                for (number, line) in try String(contentsOfFile: file, encoding: .utf8).split(
                    separator: "\n", omittingEmptySubsequences: false
                ).enumerated() where line.firstMatch(of: record) != nil {
                    above.append("\(file.dropFirst(Self.library.count + 1)):\(number + 1)")
                }
            }
        }
        #expect(above.isEmpty, "records declared above Store/: \(above.joined(separator: ", "))")
    }
}
