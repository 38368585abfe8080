import Foundation

/// What `lseek(2)`'s `SEEK_DATA` and `SEEK_HOLE` look for in a file (``ChunkCache/seek(_:in:version:from:)``).
public enum SeekTarget: Sendable, Hashable {
    /// Bytes that may not be zeros: stored chunks, and chunks not downloaded yet, whose bytes are unknown.
    case data
    /// A run of zero chunks, or the end of the file.
    case hole
}
