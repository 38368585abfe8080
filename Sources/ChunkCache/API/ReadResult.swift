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
