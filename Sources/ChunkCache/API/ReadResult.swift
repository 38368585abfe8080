/// What ``ChunkCache/read(_:version:at:into:options:request:)-yqvn`` or its async form put in the caller's buffer.
public struct ReadResult: Sendable, Hashable {
    /// Bytes written at the start of the buffer: the buffer's length, or fewer when the item ends first
    /// (0 at or past EOF).
    public var bytesRead: Int
    /// The item at the version the bytes came from, with that version's size.
    public var item: Item
    /// The domain's version when the read's snapshot was taken.
    public var domainVersion: DomainVersion
}

/// What ``ChunkCache/readCached(_:version:at:into:options:request:)`` found in the store alone.
public enum CachedRead: Sendable {
    /// The bytes were in the store and are in the buffer.
    case served(ReadResult)
    /// The store lacks some of them: ``ChunkCache/read(_:)`` fetches them from the origin into the same
    /// buffer, from the plan this read made.
    case missing(ReadMiss)
}

/// A buffer read the store could not serve, and the plan it made: handed to ``ChunkCache/read(_:)``, in a
/// task, so a cold read plans once. It holds the caller's buffer, which must stay valid until that read
/// returns.
public struct ReadMiss: Sendable {
    let job: BufferReadJob
    let absence: Absence
}
