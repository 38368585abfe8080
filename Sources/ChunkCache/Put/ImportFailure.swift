import FileIO
import Foundation

/// An entry an import could not take in, or the error that stopped an import as a whole.
public struct ImportFailure: Sendable, Hashable, CustomStringConvertible {
    /// The domain imported into.
    public var domain: String
    /// The entry's path relative to the imported directory; nil when the import as a whole stopped (it
    /// resumes on the next open, or with ``ChunkCache/resumeImports()``).
    public var path: String?
    /// Why, naming the file.
    public var error: CacheError

    public static func == (a: ImportFailure, b: ImportFailure) -> Bool {
        a.domain == b.domain && a.path == b.path && a.error.code == b.error.code && a.error.message == b.error.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(domain)
        hasher.combine(path)
        hasher.combine(error.message)
    }

    public var description: String { "\(path ?? "the import of domain \"\(domain)\""): \(error)" }
}
