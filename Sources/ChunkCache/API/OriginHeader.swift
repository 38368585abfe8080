import Foundation

/// A header sent with every request to a domain's origin, such as `Authorization: Bearer …`.
///
/// The value is a credential: it is stored in the store and sent to the origin, and nothing prints it.
/// `description` and `dump` show the name only.
public struct OriginHeader: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    public let name: String
    public let value: String

    /// Headers the cold path sets itself for each request; a configured one would contradict them.
    static let reserved: Set<String> = [
        "host", "range", "if-match", "content-length", "transfer-encoding", "connection",
    ]
    static let maxValueLength = 8192

    /// - Throws: `invalidArgument` naming `--header` and the header's name, never its value.
    public init(name: String, value: String) throws(CacheError) {
        guard (1...256).contains(name.utf8.count), name.unicodeScalars.allSatisfy(Self.isTokenCharacter) else {
            throw CacheError(
                .invalidArgument,
                "a --header name must be 1 to 256 letters, digits or !#$%&'*+-.^_`|~; give --header 'Name: value'")
        }
        guard !Self.reserved.contains(name.lowercased()) else {
            throw CacheError(.invalidArgument, "--header \(name) is set by chunkcache itself on each request; drop it")
        }
        // CR or LF would end the header and let the value inject others; other controls are not legal either.
        guard value.utf8.count <= Self.maxValueLength,
            value.unicodeScalars.allSatisfy({ $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7f) })
        else {
            throw CacheError(
                .invalidArgument,
                "the value of --header \(name) is longer than \(Self.maxValueLength) bytes or holds CR, LF or another control character; give it on one line"
            )
        }
        self.name = name
        self.value = value
    }

    /// Parses `Name: value` (spaces around the value are dropped).
    /// - Throws: `invalidArgument` naming `--header` (and the name, when there is one), never the value.
    public init(parsing line: String) throws(CacheError) {
        guard let colon = line.firstIndex(of: ":") else {
            throw CacheError(.invalidArgument, "a --header has no ':'; give --header 'Name: value'")
        }
        let value = line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        try self.init(name: String(line[..<colon]), value: value)
    }

    public var description: String { "\(name): <hidden>" }
    public var customMirror: Mirror { Mirror(self, children: ["name": name]) }

    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCIIAlphanumeric || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
    }
}
