import Dispatch
import FileIO
import Foundation
import LMDBKit

/// A batch of consecutive chunks: the raw bytes, their digests (nil for all-zero chunks) and encodings.
/// Used by one thread at a time: the ingest thread fills it, then the writer commits it.
final class Batch: @unchecked Sendable {
    let layout: ChunkLayout
    let capacity: Int
    /// Batch buffers come straight from `mmap` and go back with `munmap`: from malloc, glibc keeps tens of
    /// megabytes per put in its heap once its mmap threshold has grown, and a long-lived process bloats.
    private let rawMapping: AnonymousMapping
    private let encodedMapping: AnonymousMapping
    let encodedStride: Int
    var firstChunk: Int64 = 0
    var count = 0
    var rawLengths: [Int]
    var digests: [ChunkDigest?]
    var known: [Bool]
    var encodedLengths: [Int]
    /// The delta layout of each chunk encoded as a delta, else nil.
    var deltaLayouts: [DeltaLayout?]

    /// - Throws: ``Errno`` `ENOMEM` when the address space has no room for the buffers.
    init(capacity: Int, layout: ChunkLayout) throws(Errno) {
        self.layout = layout
        self.capacity = capacity
        rawMapping = try AnonymousMapping(byteCount: capacity << layout.shift)
        encodedStride = ChunkCodec.encodedBound(rawCount: layout.chunkSize)
        encodedMapping = try AnonymousMapping(byteCount: capacity * encodedStride)
        rawLengths = Array(repeating: 0, count: capacity)
        digests = Array(repeating: nil, count: capacity)
        known = Array(repeating: false, count: capacity)
        encodedLengths = Array(repeating: 0, count: capacity)
        deltaLayouts = Array(repeating: nil, count: capacity)
    }

    /// The raw bytes of the batch's chunks, one chunk size apart.
    var raw: UnsafeMutableRawBufferPointer { rawMapping.buffer }
    /// The chunks' encodings, `encodedStride` bytes apart.
    var encoded: UnsafeMutableRawBufferPointer { encodedMapping.buffer }

    func rawChunk(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: raw[(i << layout.shift)..<((i << layout.shift) + rawLengths[i])])
    }

    func encodedChunk(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: encoded[(i * encodedStride)..<(i * encodedStride + encodedLengths[i])])
    }

    /// Reads the batch's bytes: data ranges by `pread`, holes as zeros without reading.
    func load(
        from file: FileDescriptor, firstChunk: Int64, count: Int, length: Int64, dataRanges: [Range<Int64>],
        path: String
    ) throws {
        self.firstChunk = firstChunk
        self.count = count
        let start = firstChunk << layout.shift
        let end = min(length, start + (Int64(count) << layout.shift))
        for i in 0..<count {
            rawLengths[i] = Int(min(Int64(layout.chunkSize), length - ((firstChunk + Int64(i)) << layout.shift)))
            encodedLengths[i] = 0
            deltaLayouts[i] = nil
            known[i] = false
        }
        var position = start
        for range in dataRanges where range.upperBound > start && range.lowerBound < end {
            let lower = max(range.lowerBound, start)
            let upper = min(range.upperBound, end)
            zero(from: position, to: lower, batchStart: start)
            let target = UnsafeMutableRawBufferPointer(rebasing: raw[Int(lower - start)..<Int(upper - start)])
            let n = try file.readAll(fromAbsoluteOffset: lower, into: target)
            guard n == target.count else {
                throw CacheError(.invalidArgument, "\(path) shrank while it was read; retry when it no longer changes")
            }
            position = upper
        }
        zero(from: position, to: end, batchStart: start)
    }

    private func zero(from lower: Int64, to upper: Int64, batchStart: Int64) {
        guard upper > lower else { return }
        UnsafeMutableRawBufferPointer(rebasing: raw[Int(lower - batchStart)..<Int(upper - batchStart)])
            .initializeMemory(as: UInt8.self, repeating: 0)
    }

    /// SHA-256 of each chunk on this thread and the blocking pool's free ones (``SharedWork``); all-zero
    /// chunks get no digest and are never stored.
    func hashChunks() {
        let results = ParallelSlots<ChunkDigest?>(count: count, initialValue: nil)
        defer { results.deallocate() }
        SharedWork.forEachIndex(below: count) { claim in
            while let i = claim() {
                let bytes = self.rawChunk(i)
                results[i] = isAllZero(bytes) ? nil : ChunkDigest(hashing: bytes)
            }
        }
        for i in 0..<count { digests[i] = results[i] }
    }

    /// Marks the chunks the store already has, so they are not compressed again.
    func markKnownChunks(in store: Store) throws {
        try store.environment.read { txn in
            for i in 0..<count {
                guard let digest = digests[i] else { continue }
                known[i] = try digest.withUnsafeBytes { try txn.contains(store.dbs.refs, key: $0) }
            }
        }
    }

    /// Whether the batch holds a chunk the store lacks.
    var hasNewChunks: Bool { (0..<count).contains { digests[$0] != nil && !known[$0] } }

    /// Compresses, on this thread and the blocking pool's free ones, the first occurrence of each chunk the
    /// store lacks; with `deltas`, each is also tried as a delta against the previous version and kept so when
    /// that beats its plain form (``DeltaEncoder``).
    func compressNewChunks(with codecs: CodecPool, deltas: DeltaSource?, store: Store) {
        var seen = Set<ChunkDigest>()
        let work = (0..<count).filter { i in
            guard let digest = digests[i], !known[i] else { return false }
            return seen.insert(digest).inserted
        }
        let lengths = ParallelSlots<Int>(count: work.count, initialValue: 0)
        let layouts = ParallelSlots<DeltaLayout?>(count: work.count, initialValue: nil)
        defer {
            lengths.deallocate()
            layouts.deallocate()
        }
        // Runs of consecutive chunks per claim: neighbours share bases, which a worker's encoder keeps decoded.
        let run = deltas == nil ? 1 : 8
        SharedWork.forEachIndex(below: (work.count + run - 1) / run) { claim in
            let encoder = deltas.map { DeltaEncoder(source: $0, store: store) }
            codecs.withCompressor { compressor in
                while let claimed = claim() {
                    for w in (claimed * run)..<min((claimed + 1) * run, work.count) {
                        let i = work[w]
                        let stride = self.encodedStride
                        let output = UnsafeMutableRawBufferPointer(
                            rebasing: self.encoded[(i * stride)..<((i + 1) * stride)])
                        // Compression of a valid buffer only fails for lack of memory; then store raw.
                        guard let encoder else {
                            lengths[w] =
                                (try? ChunkCodec.encode(self.rawChunk(i), compressor: compressor, into: output)) ?? 0
                            continue
                        }
                        switch try? encoder.encode(
                            self.rawChunk(i), at: (self.firstChunk + Int64(i)) << self.layout.shift,
                            compressor: compressor, into: output)
                        {
                        case .delta(let length, let layout)?:
                            lengths[w] = length
                            layouts[w] = layout
                        case .plain(let length)?: lengths[w] = length
                        case nil: lengths[w] = 0
                        }
                    }
                }
            }
        }
        for (w, i) in work.enumerated() {
            encodedLengths[i] = lengths[w]
            deltaLayouts[i] = layouts[w]
        }
    }
}

/// Slots that the threads of a ``SharedWork`` fill, each index by exactly one thread, so no two threads
/// touch one slot and the buffer may cross into the workers (`@unchecked Sendable`).
struct ParallelSlots<T>: @unchecked Sendable {
    private let base: UnsafeMutableBufferPointer<T>

    init(count: Int, initialValue: T) {
        base = .allocate(capacity: max(1, count))
        base.initialize(repeating: initialValue)
    }

    subscript(index: Int) -> T {
        get { base[index] }
        nonmutating set { base[index] = newValue }
    }

    func deallocate() {
        base.deinitialize()
        base.deallocate()
    }
}
