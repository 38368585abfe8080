import Benchmark
import ChunkCache
import ChunkCacheBench
import Dispatch
import FileIO
import Foundation
import Synchronization
import ZstdKit

// The floors: what the same work costs with nothing but the system calls and zstd, measured in the same run
// as the engine so the ratios hold even on a noisy machine. Each floor makes its temp file in the store's
// own temp directory (the same filesystem and directory as the engine's hand-off files), with the same
// `O_CREAT | O_EXCL`, and unlinks it inside the measurement, as the engine benchmarks do.
//
// The full-fetch and ingest floors live here; the partial-fetch floors are ChunkCacheBench's `RawCopyFloor`
// and `DecodeFloor` (the ones `chunkcache-bench read-latency` measures), wrapped in PartialFetch.swift.

/// 64 KiB: the chunk size of every store and floor here (`StoreSettings.standard`).
let chunkShift = 16
let chunkSize = 1 << chunkShift

// MARK: - Partial fetch

/// The seed of a data set's range sequence: the engine and both floors draw the same ranges.
func partialSeed(_ dataset: Dataset) -> UInt64 {
    dataset.rawValue.utf8.reduce(0x5EED) { $0 &* 31 &+ UInt64($1) }
}

// MARK: - Full fetch floors

/// The large data set's chunks as concatenated zstd level-3 frames (with checksums) in one file, plus an
/// index of (offset, length) pairs; length 0 marks an all-zero chunk, which the engine does not store either.
/// Built once beside the data file; decoding reads it chunk by chunk, so memory stays at two buffers.
struct FramesFile {
    let path: String
    let offsets: [Int64]
    let lengths: [Int]
    let size: Int64

    var chunkCount: Int { lengths.count }

    func rawLength(ofChunk index: Int) -> Int { Int(min(Int64(chunkSize), size - (Int64(index) << chunkShift))) }

    static func prepare(_ dataset: Dataset) throws -> FramesFile {
        let source = try dataset.prepare()
        let path = dataset.path + ".zst3-64k"
        let indexPath = path + ".index"
        let count = Int((dataset.size + Int64(chunkSize) - 1) >> chunkShift)
        if let index = FileManager.default.contents(atPath: indexPath), index.count == count * 16,
            FileManager.default.fileExists(atPath: path)
        {
            var offsets: [Int64] = []
            var lengths: [Int] = []
            index.withUnsafeBytes { raw in
                for i in 0..<count {
                    offsets.append(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: i * 16, as: Int64.self)))
                    lengths.append(
                        Int(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: i * 16 + 8, as: Int64.self))))
                }
            }
            return FramesFile(path: path, offsets: offsets, lengths: lengths, size: dataset.size)
        }
        return try build(from: source, size: dataset.size, to: path, indexPath: indexPath)
    }

    /// Compresses batches of 256 chunks on every core and appends them in order.
    private static func build(from source: String, size: Int64, to path: String, indexPath: String) throws -> FramesFile
    {
        let count = Int((size + Int64(chunkSize) - 1) >> chunkShift)
        let batch = 256
        let bound = Compressor.bound(for: chunkSize)
        let slots = BatchSlots(count: batch, rawSize: chunkSize, encodedSize: bound)
        let input = try FileDescriptor.open(source, O_RDONLY)
        defer { try? input.close() }
        let partial = path + ".partial"
        let output = try FileDescriptor.open(partial, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        defer { try? output.close() }
        var offsets: [Int64] = []
        var lengths: [Int] = []
        var written: Int64 = 0
        for first in stride(from: 0, to: count, by: batch) {
            let n = min(batch, count - first)
            let firstChunk = first
            let workers = ProcessInfo.processInfo.activeProcessorCount
            let failure = Mutex<(any Error)?>(nil)
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                let compressor = Compressor(level: 3)
                for i in stride(from: worker, to: n, by: workers) {
                    do {
                        let raw = slots.raw(i)
                        let got = try input.readAll(fromAbsoluteOffset: Int64(firstChunk + i) << chunkShift, into: raw)
                        let bytes = UnsafeRawBufferPointer(rebasing: raw[..<got])
                        slots.lengths[i] =
                            allZero(bytes) ? 0 : (try compressor.compress(bytes, into: slots.encoded(i)) ?? 0)
                    } catch {
                        failure.withLock { $0 = error }
                    }
                }
            }
            if let error = failure.withLock({ $0 }) { throw error }
            for i in 0..<n {
                offsets.append(written)
                lengths.append(slots.lengths[i])
                try output.writeAll(
                    toAbsoluteOffset: written, UnsafeRawBufferPointer(rebasing: slots.encoded(i)[..<slots.lengths[i]]))
                written += Int64(slots.lengths[i])
            }
        }
        var index = Data(capacity: count * 16)
        for i in 0..<count {
            withUnsafeBytes(of: offsets[i].littleEndian) { index.append(contentsOf: $0) }
            withUnsafeBytes(of: Int64(lengths[i]).littleEndian) { index.append(contentsOf: $0) }
        }
        guard rename(partial, path) == 0 else {
            throw BenchmarkSetupError("cannot rename \(partial): \(Errno.current)")
        }
        try index.write(to: URL(fileURLWithPath: indexPath))
        return FramesFile(path: path, offsets: offsets, lengths: lengths, size: size)
    }
}

/// Per-chunk buffers that `concurrentPerform` workers fill, each slot by exactly one worker
/// (`@unchecked Sendable` for that reason).
final class BatchSlots: @unchecked Sendable {
    let rawSize: Int
    let encodedSize: Int
    let rawBuffer: UnsafeMutableRawBufferPointer
    let encodedBuffer: UnsafeMutableRawBufferPointer
    let lengthBuffer: UnsafeMutableBufferPointer<Int>
    var lengths: UnsafeMutableBufferPointer<Int> { lengthBuffer }

    init(count: Int, rawSize: Int, encodedSize: Int) {
        self.rawSize = rawSize
        self.encodedSize = encodedSize
        rawBuffer = touchedBuffer(count * rawSize)
        encodedBuffer = touchedBuffer(count * encodedSize)
        lengthBuffer = .allocate(capacity: count)
        lengthBuffer.initialize(repeating: 0)
    }

    deinit {
        rawBuffer.deallocate()
        encodedBuffer.deallocate()
        lengthBuffer.deallocate()
    }

    func raw(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: rawBuffer[(i * rawSize)..<((i + 1) * rawSize)])
    }

    func encoded(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: encodedBuffer[(i * encodedSize)..<((i + 1) * encodedSize)])
    }
}

/// Whether every byte is zero, a word at a time (the engine's test for chunks it does not store).
func allZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset + 8 <= bytes.count {
        if bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self) != 0 { return false }
        offset += 8
    }
    while offset < bytes.count {
        if bytes[offset] != 0 { return false }
        offset += 1
    }
    return true
}

/// Copy floor: temp file, `copy_file_range(2)` of the whole raw data file into it (FileIO's `FileCloner`
/// restricted to that strategy: it sizes the file and copies the data ranges), `close`, `unlink`.
final class CopyRangeFloor: @unchecked Sendable {  // used by one iteration at a time
    let source: FileDescriptor
    let size: Int64
    let tempPath: String

    init(store: PreparedStore) throws {
        source = try FileDescriptor.open(store.dataset.path, O_RDONLY)
        size = store.dataset.size
        tempPath = floorTemporaryPath(in: store.temporaryDirectory, kind: "copy")
        try PageCache.warm(fileAt: store.dataset.path)
    }

    deinit { try? source.close() }

    func iterate(_ benchmark: Benchmark) throws {
        var strategy: FileIO.CloneStrategy?
        try benchmark.measureBulk(bytes: size) {
            try withFloorFile(at: tempPath, size: size) { file in
                strategy = try FileCloner.clone(from: source, to: file, length: size, allowed: [.copyRange])
            }
        }
        guard strategy == .copyRange else {
            throw BenchmarkSetupError("copy_file_range was not used (\(String(describing: strategy)))")
        }
    }
}

/// Decode floor for the whole file, on one thread: `pread` each chunk's frame from the frames file, decode
/// it into a reused buffer (reused context) and, when `writing`, `pwrite` it into a temp file sized to the
/// item (zero chunks stay holes, as in the engine's whole-file fetch).
final class WholeFileDecodeFloor: @unchecked Sendable {  // used by one iteration at a time
    let frames: FramesFile
    let file: FileDescriptor
    let writing: Bool
    let tempPath: String
    let decompressor = Decompressor()
    let encoded = touchedBuffer(Compressor.bound(for: chunkSize))
    let decoded = touchedBuffer(chunkSize)

    init(store: PreparedStore, writing: Bool) throws {
        frames = try FramesFile.prepare(store.dataset)
        file = try FileDescriptor.open(frames.path, O_RDONLY)
        self.writing = writing
        tempPath = floorTemporaryPath(in: store.temporaryDirectory, kind: "whole-decode")
        try PageCache.warm(fileAt: frames.path)
    }

    deinit {
        try? file.close()
        encoded.deallocate()
        decoded.deallocate()
    }

    func iterate(_ benchmark: Benchmark) throws {
        try benchmark.measureBulk(bytes: frames.size) {
            if writing {
                try withFloorFile(at: tempPath, size: frames.size) { try decodeAll(writingTo: $0) }
            } else {
                try decodeAll(writingTo: nil)
            }
        }
    }

    private func decodeAll(writingTo output: FileDescriptor?) throws {
        for index in 0..<frames.chunkCount where frames.lengths[index] > 0 {
            let frame = UnsafeMutableRawBufferPointer(rebasing: encoded[..<frames.lengths[index]])
            guard try file.readAll(fromAbsoluteOffset: frames.offsets[index], into: frame) == frame.count else {
                throw BenchmarkSetupError("the frames file \(frames.path) is short")
            }
            let destination = UnsafeMutableRawBufferPointer(rebasing: decoded[..<frames.rawLength(ofChunk: index)])
            _ = try decompressor.decompress(UnsafeRawBufferPointer(frame), into: destination)
            try output?.writeAll(toAbsoluteOffset: Int64(index) << chunkShift, UnsafeRawBufferPointer(destination))
        }
    }
}

// MARK: - Ingest floors

/// Ingest floor without LMDB: every 64 KiB chunk read with `pread` from the page-cached file, hashed with
/// SHA-256 (the engine's `ChunkDigest`) and compressed with zstd level 3 (checksums on, reused contexts), on
/// all cores (`concurrentPerform`, chunks handed out by an atomic counter). All-zero chunks are skipped, as
/// the engine skips them; duplicates are not (the engine skips those too).
final class HashCompressFloor: @unchecked Sendable {  // each worker touches only its own `Worker`
    final class Worker {
        let compressor = Compressor(level: 3)
        let raw = touchedBuffer(chunkSize)
        let encoded = touchedBuffer(Compressor.bound(for: chunkSize))
        var storedBytes: Int64 = 0
        deinit {
            raw.deallocate()
            encoded.deallocate()
        }
    }

    let source: FileDescriptor
    let size: Int64
    let workers = (0..<ProcessInfo.processInfo.activeProcessorCount).map { _ in Worker() }

    init(dataset: Dataset) throws {
        source = try FileDescriptor.open(try dataset.prepare(), O_RDONLY)
        size = dataset.size
        try PageCache.warm(fileAt: dataset.path)
    }

    deinit { try? source.close() }

    func iterate(_ benchmark: Benchmark) throws {
        let count = Int((size + Int64(chunkSize) - 1) >> chunkShift)
        let next = Atomic<Int>(0)
        let failure = Mutex<(any Error)?>(nil)
        for worker in workers { worker.storedBytes = 0 }
        benchmark.measureBulk(bytes: size) {
            DispatchQueue.concurrentPerform(iterations: workers.count) { w in
                let worker = workers[w]
                while true {
                    let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < count else { break }
                    do {
                        let n = try source.readAll(fromAbsoluteOffset: Int64(index) << chunkShift, into: worker.raw)
                        let bytes = UnsafeRawBufferPointer(rebasing: worker.raw[..<n])
                        if allZero(bytes) { continue }
                        blackHole(ChunkDigest(hashing: bytes))
                        worker.storedBytes += Int64(try worker.compressor.compress(bytes, into: worker.encoded) ?? n)
                    } catch {
                        failure.withLock { $0 = error }
                        break
                    }
                }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        benchmark.measurement(.storedMegabytes, Int(workers.reduce(0) { $0 + $1.storedBytes } / 1_000_000))
    }
}

/// Ingest reference: the `zstd` command line, `zstd -3 -T0 -c FILE > /dev/null` (one stream with zstd's own
/// window, not 64 KiB frames; -T0 gives it every core), timed from spawn to exit.
final class ZstdCommandFloor: @unchecked Sendable {  // used by one iteration at a time
    static let executable = "/usr/bin/zstd"
    let path: String
    let size: Int64

    init(dataset: Dataset) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw BenchmarkSetupError("\(Self.executable) is missing: apt-get install zstd")
        }
        path = try dataset.prepare()
        size = dataset.size
        try PageCache.warm(fileAt: path)
    }

    func iterate(_ benchmark: Benchmark) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["-3", "-T0", "-q", "-c", path]
        let null = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = null
        process.standardError = null
        try benchmark.measureBulk(bytes: size) {
            try process.run()
            process.waitUntilExit()
        }
        try? null?.close()
        guard process.terminationStatus == 0 else {
            throw BenchmarkSetupError("zstd exited with \(process.terminationStatus)")
        }
    }
}
