/// A buffer read the store could not serve, and the plan it made: handed to ``ChunkCache/read(_:)``, in a
/// task, so a cold read plans once. It holds the caller's buffer, which must stay valid until that read
/// returns.
public struct ReadMiss: Sendable {
    let job: BufferReadJob
    let absence: Absence
}
