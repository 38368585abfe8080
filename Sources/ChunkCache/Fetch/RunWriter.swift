import FileIO

/// Gathers chunks for a file and writes each run of consecutive ones with one `pwritev`, through the file's
/// ``HandOffWriter`` (which also decides whether a zero chunk is written or left a hole).
///
/// Writes to one file take its inode lock, and a second writer spins in the kernel until the first is done:
/// a third of the CPU time of a whole-file fetch went there when page-cache copies were slow. So workers that
/// share a file also share a ``WriteGate``: a worker finding it taken keeps its runs and decodes more
/// instead, and waits only when its staging buffer or vectors are full. Raw chunks are written straight from
/// where they lie (LMDB's map, the zero buffer); decoded ones wait in `staging` until they are written.
///
/// Everything queued must stay valid until it is written, so a fetch gets its writer only from
/// ``CodecPool/DecodeContext/withRunWriter(into:gate:_:)``, called inside the read transaction the chunks
/// come from: the writer cannot leave that call, and what it still holds is written when the call returns.
struct RunWriter: ~Copyable {
    /// Where a run of consecutive bytes starts: its file offset and its first vector.
    struct RunStart {
        var offset: Int64
        var firstVector: Int
    }

    private let file: HandOffWriter
    private let gate: WriteGate?
    private let staging: UnsafeMutableRawBufferPointer
    private let vectors: UnsafeMutableBufferPointer<IOVector>
    private let runStarts: UnsafeMutableBufferPointer<RunStart>
    private var queued = 0
    private var queuedBytes = 0
    private var runs = 0
    private var stagingUsed = 0
    private var runEnd: Int64 = 0

    /// - Parameters:
    ///   - gate: Shared by every worker writing `file`; nil when this is the only one.
    ///   - staging: Room for decoded chunks, at least one chunk long; reused, already touched.
    ///   - vectors: Room for the most chunks one write takes.
    ///   - runStarts: Room for the most separate runs held at once.
    init(
        file: HandOffWriter, gate: WriteGate?, staging: UnsafeMutableRawBufferPointer,
        vectors: UnsafeMutableBufferPointer<IOVector>, runStarts: UnsafeMutableBufferPointer<RunStart>
    ) {
        self.file = file
        self.gate = gate
        self.staging = staging
        self.vectors = vectors
        self.runStarts = runStarts
    }

    /// Room in `staging` to decode `length` bytes that go at `offset`, writing what is queued first when
    /// there is no room.
    mutating func space(_ length: Int, at offset: Int64) throws(Errno) -> UnsafeMutableRawBufferPointer {
        precondition(length <= staging.count, "a chunk is larger than the staging buffer")
        try makeRoom(at: offset)
        if stagingUsed + length > staging.count { try flush() }
        return UnsafeMutableRawBufferPointer(rebasing: staging[stagingUsed..<(stagingUsed + length)])
    }

    /// Queues `bytes` for `offset`. Bytes decoded into the latest ``space(_:at:)`` stay reserved until they
    /// are written; any other bytes must outlive the next ``flush()``.
    mutating func append(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) {
        guard bytes.count > 0 else { return }
        try makeRoom(at: offset)
        if bytes.baseAddress == UnsafeRawPointer(staging.baseAddress! + stagingUsed) { stagingUsed += bytes.count }
        if queued == 0 || offset != runEnd {
            runStarts[runs] = RunStart(offset: offset, firstVector: queued)
            runs += 1
        }
        vectors[queued] = IOVector(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        queued += 1
        queuedBytes += bytes.count
        runEnd = offset + Int64(bytes.count)
        // Raw chunks take no staging: bound them too, so one write stays short (cancellation waits for it).
        if queuedBytes >= FetchThresholds.mostQueuedBytes { try flush() }
    }

    /// Queues a zero chunk of `length` bytes for `offset`, or leaves it a hole, by the file's rule
    /// (``HandOffWriter/holesForZeros``): a hole breaks the run there.
    mutating func appendZero(_ length: Int, at offset: Int64) throws(Errno) {
        guard !file.holesForZeros else { return }
        try append(ZeroBytes.prefix(length), at: offset)
    }

    /// Writes what is queued if no other worker is writing the file; otherwise keeps it for later.
    mutating func writeIfFree() throws(Errno) {
        guard queued > 0 else { return }
        guard let gate else { return try writeQueued() }
        guard gate.enterIfFree() else { return }
        defer { gate.leave() }
        try writeQueued()
    }

    /// Writes what is queued, waiting for the file if another worker is writing it.
    mutating func flush() throws(Errno) {
        guard queued > 0 else { return }
        guard let gate else { return try writeQueued() }
        gate.enter()
        defer { gate.leave() }
        try writeQueued()
    }

    private mutating func writeQueued() throws(Errno) {
        let (count, runCount) = (queued, runs)
        queued = 0
        queuedBytes = 0
        runs = 0
        stagingUsed = 0
        for run in 0..<runCount {
            let start = runStarts[run]
            let end = run + 1 < runCount ? runStarts[run + 1].firstVector : count
            try file.write(
                vectors: UnsafeMutableBufferPointer(rebasing: vectors[start.firstVector..<end]), at: start.offset)
        }
    }

    /// Writes what is queued when bytes for `offset` would need a vector or a run that is not left.
    private mutating func makeRoom(at offset: Int64) throws(Errno) {
        let continuesRun = queued > 0 && offset == runEnd
        if queued == vectors.count || (!continuesRun && runs == runStarts.count) { try flush() }
    }
}

extension CodecPool.DecodeContext {
    /// Runs `body` with a writer of runs into `file` that uses this context's buffers, and writes what it
    /// still holds when `body` returns. Call it inside the read transaction the queued chunks come from.
    /// On a throw nothing more is written: the caller discards the file.
    ///
    /// - Parameter gate: Shared by every worker writing `file`; nil when this is the only one.
    func withRunWriter<R>(
        into file: HandOffWriter, gate: WriteGate? = nil, _ body: (inout RunWriter) throws -> R
    ) throws -> R {
        var run = RunWriter(file: file, gate: gate, staging: buffer, vectors: vectors, runStarts: runStarts)
        let result = try body(&run)
        try run.flush()
        return result
    }
}
