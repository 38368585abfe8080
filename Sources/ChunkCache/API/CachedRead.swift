/// What ``ChunkCache/readCached(_:version:at:into:options:request:)`` found in the store alone.
public enum CachedRead: Sendable {
    /// The bytes were in the store and are in the buffer.
    case served(ReadResult)
    /// The store lacks some of them: ``ChunkCache/read(_:)`` fetches them from the origin into the same
    /// buffer, from the plan this read made.
    case missing(ReadMiss)
}
