import FileIO
import Foundation

/// The bytes of a cold fetch's whole range, served from the download as they arrive, before they are stored
/// (<doc:Contract#10-Origins-the-cold-path>, "store behind"): the fetch is answered from them while the chunks are
/// compressed and committed behind it.
///
/// Two places take the bytes: memory, for a small range (a hand-off or a buffer read of at most
/// ``FetchThresholds/inlineBytes``), handed over whole when the last chunk is in, whichever download brings
/// each chunk, with the chunks the store already holds read from it; or, when the fetch's own downloads
/// bring every chunk of its range it does not have yet, the fetch's own file
/// (``StreamedFile``), written chunk by chunk at the chunks' offsets, for a large one (a whole-file fetch,
/// `fetch --out`): nothing the fetch downloaded is read back from the store.
///
/// The sink (``ChunkSink``) hands over each chunk after checking it against the hash its manifest knows, on
/// the blocking pool, in the same hop that stores it: no wrong byte reaches the caller, and no chunk is
/// hashed twice.
///
/// A domain type whose state waits in a ``WaitQueue``; what it guarantees:
/// - Each chunk of the range is taken once, from whichever download brings it first; later copies are
///   dropped. ``take(_:_:isZero:)`` may run on several pool threads at once, for different chunks.
/// - ``wait()`` returns once, when the last chunk is in, or throws the first ``fail(_:)``'s error; a
///   cancelled waiter stops waiting at once with `CancellationError` while the downloads go on storing.
/// - File mode: a write starts only while the fetch holds the file (``StreamedFile/Owner``); after
///   ``retire()`` none starts, and the file closes when the writes running then end, each holding it.
final class DirectBytes: Sendable {
    private struct Gathered: Sendable {
        var bytes: [UInt8]
        var missing: Set<Int64>
        var failure: (any Error)?
        /// A zero chunk was left a hole (file, whole range).
        var sparse = false
        /// The file, while the fetch holds it (file mode); nil once retired.
        var owner: StreamedFile.Owner?
    }

    /// The range, chunk-aligned at its start.
    let range: ByteRange
    /// The manifest the range's chunks belong to.
    let manifestID: UInt64
    private let shift: Int
    private let queue: WaitQueue<Gathered>
    /// What writes the chunks into the fetch's file, or nil: memory.
    private let file: HandOffWriter?

    /// Bytes gathered in memory.
    init(range: ByteRange, manifestID: UInt64, chunkShift: Int) {
        self.range = range
        self.manifestID = manifestID
        shift = chunkShift
        file = nil
        // Not zeroed first: every chunk of the range is copied in (zero chunks too) before the bytes are handed over.
        let count = Int(range.length)
        queue = WaitQueue(
            Gathered(
                bytes: [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count },
                missing: Set(Self.indices(of: range, shift: chunkShift))))
    }

    /// Bytes written into a file at their offsets in the item, by `file`'s rule for zero chunks; `owner` holds
    /// the file open until ``retire()``.
    init(range: ByteRange, manifestID: UInt64, chunkShift: Int, file: HandOffWriter, owner: StreamedFile.Owner) {
        self.range = range
        self.manifestID = manifestID
        shift = chunkShift
        self.file = file
        queue = WaitQueue(
            Gathered(bytes: [], missing: Set(Self.indices(of: range, shift: chunkShift)), owner: owner))
    }

    private static func indices(of range: ByteRange, shift: Int) -> ClosedRange<Int64> {
        (range.location >> shift)...((range.end - 1) >> shift)
    }

    /// Whether chunk `index` is one of the range's.
    func wants(_ index: Int64) -> Bool {
        let offset = index << shift
        return offset >= range.location && offset < range.end
    }

    /// Whether the caller waits for each chunk as it arrives (a small range in memory): the sink then hands
    /// a chunk over at once instead of with its batch.
    var isUrgent: Bool { file == nil }

    /// The chunks not taken yet.
    var missing: Set<Int64> { queue.withLock { gathered, _ in gathered.missing } }

    /// Whether a zero chunk was left a hole in the file.
    var leftHoles: Bool { queue.withLock { gathered, _ in gathered.sparse } }

    /// Takes a chunk's raw bytes, already checked against the hash its manifest knows. Blocking work (a
    /// `pwrite` into the file): on the blocking pool, in the sink's hop.
    func take(_ index: Int64, _ raw: UnsafeRawBufferPointer, isZero: Bool) throws {
        guard wants(index) else { return }
        if let file {
            let owner = queue.withLock { gathered, _ -> StreamedFile.Owner? in
                guard gathered.failure == nil, gathered.missing.contains(index) else { return nil }
                return gathered.owner
            }
            guard let owner else { return }
            // Held until the write ends: a retire meanwhile closes the file only after it.
            let leftHole = try withExtendedLifetime(owner) {
                try file.write(chunk: raw, at: index << shift, isZero: isZero)
            }
            if leftHole { queue.withLock { gathered, _ in gathered.sparse = true } }
        }
        let waiters = queue.withLock { gathered, waiters -> [WaitQueue<Gathered>.Waiter] in
            guard gathered.missing.remove(index) != nil else { return [] }
            if file == nil {
                let start = Int((index << shift) - range.location)
                gathered.bytes.withUnsafeMutableBytes {
                    UnsafeMutableRawBufferPointer(rebasing: $0[start..<(start + raw.count)]).copyMemory(from: raw)
                }
            }
            guard gathered.missing.isEmpty else { return [] }
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Lets the file go: no write into it starts after this, and it closes once the writes running now end
    /// (at once when none does, unless the fetch still holds it). Downloads go on storing behind the fetch.
    func retire() {
        let released = queue.withLock { gathered, _ in gathered.owner.take() }
        // Let go outside the lock: when this was the last hold, the file closes here.
        withExtendedLifetime(released) {}
    }

    /// Gives up: the fetch stops waiting here and waits for the store instead.
    func fail(_ error: any Error) {
        let waiters = queue.withLock { gathered, waiters -> [WaitQueue<Gathered>.Waiter] in
            guard gathered.failure == nil, !gathered.missing.isEmpty else { return [] }
            gathered.failure = error
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// The range's bytes once every chunk is in (empty for a file: they are in it).
    func wait() async throws -> [UInt8] {
        try await queue.wait { gathered, _ in
            if let failure = gathered.failure { return .failure(failure) }
            return gathered.missing.isEmpty ? .success(()) : nil
        }
        return queue.withLock { gathered, _ in gathered.bytes }
    }
}
