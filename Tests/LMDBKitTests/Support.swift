import LMDBKit
import TestSupport

/// Opens a fresh environment of `mapSize` bytes with one database named "main" and runs `body` with both.
@discardableResult
func withDatabase<R>(mapSize: Int = 4 << 20, _ body: (Environment, Database) throws -> R) throws -> R {
    try withTemporaryDirectory { dir in
        let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: mapSize)
        return try body(env, try env.openDatabase("main"))
    }
}

/// Bytes of a string, for keys and values.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

extension TransactionReading where Self: ~Copyable {
    /// The value under `key`, copied out of the map, or `nil`.
    func value(_ db: Database, _ key: String) throws -> [UInt8]? {
        try withValue(db, key: bytes(key)) { Array($0) }
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
