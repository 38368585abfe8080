/// The sizes that shape the fetch path, in one place with the reason for each. They are tuning, not rules:
/// no result depends on them, only where the work runs and how it is batched. `Benchmarks/RESULTS.md`
/// keeps the measurements they were chosen by.
enum FetchThresholds {
    /// Hand-offs up to this long are planned and assembled on the caller's thread. The work is bounded and
    /// page-cache hot, and a hop to the blocking pool and back costs two thread wake-ups, as much as a warm
    /// fetch of a few chunks; past this size the hop is small beside the work and the caller's thread is
    /// better given back.
    static let inlineBytes: Int64 = 4 << 20

    /// Ranges at least this long, whose chunks are compressed, are shared with a helper thread: below it the
    /// helper's wake-up is longer than the decoding it could take over.
    static let parallelBytes: Int64 = 256 << 10

    /// Bytes a parallel worker claims at a time (at least one chunk): small enough that the caller, which
    /// starts at once, and a late helper end together; large enough that a claim is a run for one `pwritev`.
    static let claimBytes = 128 << 10

    /// Stored chunks looked at to decide whether a range is compressed. Only decoding is worth a second core:
    /// raw chunks are copies into the page cache, which one file takes one at a time. A file is usually one
    /// kind of data throughout, so a few chunks decide.
    static let compressionProbeChunks: Int64 = 4

    /// Every this many bytes written, the process's mappings of the store's file are dropped
    /// (`madvise(MADV_DONTNEED)`), so a large fetch does not keep the file resident; each drop flushes the TLB
    /// on every core, so it is done in strides, not per chunk.
    static let releaseStrideBytes: Int64 = 64 << 20

    /// Decoded bytes a worker stages before it writes them: one `pwritev` carries several chunks, and the
    /// buffer stays in the CPU's cache.
    static let stagingBytes = 256 << 10

    /// Chunks (and separate runs) a worker queues at most before it writes: bounds the vector list of one
    /// `pwritev`, well under `IOV_MAX`.
    static let runChunks = 64

    /// Bytes queued at most before they are written, whatever holds them (LMDB's map for raw chunks), so
    /// that one write stays short and another worker waiting for the file is not held up long.
    static let mostQueuedBytes = 8 << 20
}
