import Foundation
import SeededRandom
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

extension TestData {
    /// Mixed chunks: random, text, and all-zero, chunk by chunk, of `chunkSize` each.
    static func mixed(count: Int, chunkSize: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var bytes = [UInt8]()
        bytes.reserveCapacity(count)
        var part = 0
        while bytes.count < count {
            let n = min(chunkSize, count - bytes.count)
            switch rng.next() % 3 {
            case 0: bytes += [UInt8](repeating: 0, count: n)
            case 1: bytes += text(count: n, seed: rng.next())
            default: bytes += random(count: n, seed: rng.next())
            }
            part += 1
        }
        return bytes
    }
}

/// Reads `range` of the file at `path`.
func readRange(_ path: String, _ range: ByteRange) throws -> [UInt8] {
    try TestData.read(path, offset: range.location, count: Int(range.length))
}

/// The file's size and allocated bytes.
func fileSizes(_ path: String) throws -> (size: Int64, allocated: Int64) {
    let st = try TestData.status(path)
    return (Int64(st.st_size), Int64(st.st_blocks) * 512)
}

/// Opens a fresh store in `directory` with `chunkSize`, and with what the test injects (`probes`).
func makeCache(
    _ directory: String, chunkSize: Int = 65536, maxSize: Int64 = 1 << 34, grace: TimeInterval = 3600,
    probes: EngineProbes = .none
) async throws -> ChunkCache {
    try await ChunkCache.open(
        at: directory + "/store", chunkSize: try ChunkLayout(chunkSize: chunkSize), maxSize: maxSize,
        handOffGracePeriod: grace, probes: probes)
}

/// Opens the store at `path` as the product does, with what the test injects (`probes`).
func openCache(_ path: String, probes: EngineProbes) async throws -> ChunkCache {
    try await ChunkCache.open(at: path, chunkSize: nil, maxSize: nil, probes: probes)
}

/// Counts calls from any thread.
final class CommitCounter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// A probe a test passes when it opens a store and arms later (its hook needs the open store, or acts in one
/// step of the test only): ``run`` does what was last set, nothing while unset.
final class ArmedProbe: Sendable {
    private let body = Mutex<(@Sendable () throws -> Void)?>(nil)

    /// Does `body` from now on; nil disarms.
    func arm(_ body: (@Sendable () throws -> Void)?) { self.body.withLock { $0 = body } }

    /// What the store calls: the armed body, if any.
    func run() throws { try body.withLock { $0 }?() }

    /// ``run()`` for a probe that cannot throw: a throwing body is a test's mistake there, recorded as one.
    func runWithoutThrowing() {
        do { try run() } catch { Issue.record(error, "a probe that cannot throw threw") }
    }
}

/// Puts `bytes` as `item` through a file in `directory`.
@discardableResult
func put(_ cache: ChunkCache, _ bytes: [UInt8], as item: ItemIdentifier, version: String? = nil, in directory: String)
    async throws -> ChunkCache.PutResult
{
    let path = directory + "/input-" + UUID().uuidString
    try TestData.write(bytes, to: path)
    defer { unlink(path) }
    return try await cache.put(fileAt: path, as: item, contentVersion: version)
}

/// The error a throwing call raised, as a `CacheError` code.
func errorCode(_ body: () async throws -> Void) async -> CacheError.Code? {
    await errorOf(body)?.code
}

/// The `CacheError` a throwing call raised, nil when it did not throw (another error is recorded as an issue).
func errorOf(_ body: () async throws -> Void) async -> CacheError? {
    do {
        try await body()
        return nil
    } catch let error as CacheError {
        return error
    } catch {
        Issue.record("not a CacheError: \(error)")
        return nil
    }
}
