import FileIO

#if canImport(Glibc)
import Glibc
#endif

/// Gathers chunks that follow each other in a file and writes them with one `pwritev`.
///
/// Writes to one file take its inode lock, so two workers writing chunk by chunk wait on each other (and
/// spin while they wait) once per chunk; one call per run of chunks also saves the system calls. Raw chunks
/// are written straight from where they lie (LMDB's map, the zero buffer); decoded ones wait in `staging`
/// until the run is written. Everything queued must stay valid until ``flush()``: call it before the read
/// transaction the chunks came from ends.
struct RunWriter: ~Copyable {
    private let file: FileDescriptor
    private let staging: UnsafeMutableRawBufferPointer
    private let vectors: UnsafeMutableBufferPointer<iovec>
    private var queued = 0
    private var stagingUsed = 0
    private var runStart: Int64 = 0
    private var runEnd: Int64 = 0

    /// - Parameters:
    ///   - staging: Room for decoded chunks, at least one chunk long; reused, already touched.
    ///   - vectors: Room for the most chunks one write takes.
    init(file: FileDescriptor, staging: UnsafeMutableRawBufferPointer, vectors: UnsafeMutableBufferPointer<iovec>) {
        self.file = file
        self.staging = staging
        self.vectors = vectors
    }

    /// Room in `staging` to decode `length` bytes that go at `offset`; writes the run first when they
    /// cannot join it.
    mutating func space(_ length: Int, at offset: Int64) throws(Errno) -> UnsafeMutableRawBufferPointer {
        precondition(length <= staging.count, "a chunk is larger than the staging buffer")
        try makeRoom(at: offset)
        if stagingUsed + length > staging.count { try flush() }
        return UnsafeMutableRawBufferPointer(rebasing: staging[stagingUsed..<(stagingUsed + length)])
    }

    /// Queues `bytes` for `offset`. Bytes decoded into the latest ``space(_:at:)`` stay reserved until the
    /// run is written; any other bytes must outlive the next ``flush()``.
    mutating func append(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) {
        guard bytes.count > 0 else { return }
        try makeRoom(at: offset)
        if bytes.baseAddress == UnsafeRawPointer(staging.baseAddress! + stagingUsed) { stagingUsed += bytes.count }
        if queued == 0 { runStart = offset }
        vectors[queued] = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        queued += 1
        runEnd = offset + Int64(bytes.count)
    }

    /// Writes the queued run.
    mutating func flush() throws(Errno) {
        guard queued > 0 else { return }
        let count = queued
        queued = 0
        stagingUsed = 0
        try file.writeAll(toAbsoluteOffset: runStart, vectors: UnsafeMutableBufferPointer(rebasing: vectors[..<count]))
    }

    /// Writes the queued run when `offset` does not continue it or no vector is left.
    private mutating func makeRoom(at offset: Int64) throws(Errno) {
        if queued > 0 && (offset != runEnd || queued == vectors.count) { try flush() }
    }
}
