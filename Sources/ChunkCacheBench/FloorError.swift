import ChunkCache
import FileIO
import ZstdKit

/// A floor could not do its work for a reason that is not a system call's or zstd's error.
public struct FloorError: Error, Sendable, CustomStringConvertible {
    /// What went wrong and what to do about it.
    public let message: String

    /// An error saying `message`.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
