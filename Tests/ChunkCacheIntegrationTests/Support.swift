import Foundation
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

/// Opens a fresh store in `directory` with `chunkSize`.
func makeCache(_ directory: String, chunkSize: Int = 65536, maxSize: Int64 = 1 << 34, grace: TimeInterval = 3600)
    async throws -> ChunkCache
{
    try await ChunkCache.open(
        at: directory + "/store",
        creatingWith: StoreSettings(layout: try ChunkLayout(chunkSize: chunkSize), maxSize: maxSize),
        handOffGracePeriod: grace)
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
