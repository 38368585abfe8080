import Foundation
import LMDBKit
import Testing

/// Runs `body` with a new, empty, canonical directory under the temp directory, and deletes it afterwards.
///
/// The path is canonical (`realpath`) because ``Environment/open(directory:maxDatabases:mapSize:)`` keys its
/// registry by the path as given.
@discardableResult
func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    var template = Array((NSTemporaryDirectory() + "/LMDBKitTests.XXXXXX").utf8CString)
    let directory = try template.withUnsafeMutableBufferPointer { buffer in
        guard let made = mkdtemp(buffer.baseAddress!), let canonical = realpath(made, nil) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        defer { free(canonical) }
        return String(cString: canonical)
    }
    defer {
        do { try FileManager.default.removeItem(atPath: directory) } catch {
            Issue.record("could not remove \(directory): \(error)")
        }
    }
    return try body(directory)
}

/// Bytes of a string, for keys and values.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Deterministic pseudo-random bytes (SplitMix64), so a failure can be replayed.
func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    var result: [UInt8] = []
    result.reserveCapacity(count)
    while result.count < count {
        state &+= 0x9E37_79B9_7F4A_7C15
        var word = state
        word = (word ^ (word >> 30)) &* 0xBF58_476D_1CE4_E5B9
        word = (word ^ (word >> 27)) &* 0x94D0_49BB_1331_11EB
        word ^= word >> 31
        for _ in 0..<min(8, count - result.count) {
            result.append(UInt8(truncatingIfNeeded: word))
            word >>= 8
        }
    }
    return result
}

extension TransactionReading where Self: ~Copyable {
    /// The value under `key`, copied out of the map, or `nil`.
    func value(_ db: Database, _ key: String) throws -> [UInt8]? {
        try get(db, key: bytes(key)).map { Array($0) }
    }

    /// Every key with `prefix`, as strings, in the order `scan` visits them.
    func keys(_ db: Database, prefix: String, from start: String? = nil) throws -> [String] {
        var keys: [String] = []
        try scan(db, prefix: bytes(prefix), from: start.map(bytes)) { key, _ in
            keys.append(String(decoding: key, as: UTF8.self))
            return true
        }
        return keys
    }
}
