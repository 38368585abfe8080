import CLMDB

/// What read and write transactions share: lookups and ordered scans.
///
/// Values are borrowed from LMDB's map, never copied: valid only while the transaction lasts and, in a write
/// transaction, until the next write to the same database. So they are lent to a closure
/// (`withValue(_:key:_:)`, ``scan(_:prefix:from:_:)``) and valid inside it; only
/// ``unsafeValue(_:key:)`` hands one out, for the fetch path that reads chunks straight from the map.
public protocol TransactionReading: ~Copyable {
    var handle: OpaquePointer { get }
}

extension TransactionReading where Self: ~Copyable {
    /// The transaction's id. For a read transaction, the id of the last commit it sees: two read transactions
    /// with one id see the same snapshot. The corresponding C function is `mdb_txn_id`.
    public var id: Int { Int(mdb_txn_id(handle)) }

    /// Calls `body` with the value stored under `key`, borrowed from the map, and returns what it returns;
    /// `nil`, without calling `body`, when there is none. The buffer is valid inside `body` only: copy or
    /// decode what you keep. The corresponding C function is `mdb_get`.
    @inlinable
    public func withValue<R>(_ db: Database, key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R)
        throws -> R?
    {
        guard let value = try unsafeValue(db, key: key) else { return nil }
        return try body(value)
    }

    /// Calls `body` with the value stored under `key` given as bytes; `nil` when there is none.
    @inlinable
    public func withValue<R>(_ db: Database, key: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try key.withUnsafeBytes { key in try withValue(db, key: key, body) }
    }

    /// Whether a value is stored under `key`. The corresponding C function is `mdb_get`.
    @inlinable
    public func contains(_ db: Database, key: UnsafeRawBufferPointer) throws -> Bool {
        try unsafeValue(db, key: key) != nil
    }

    /// Whether a value is stored under `key` given as bytes.
    @inlinable
    public func contains(_ db: Database, key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { try contains(db, key: $0) }
    }

    /// The value stored under `key`, borrowed from the map, or `nil` when there is none: valid until the
    /// transaction ends, or in a write transaction until the next write to `db`, which nothing here checks.
    /// For readers that keep map bytes for the transaction's life (a manifest cursor's page, chunks queued
    /// for one vectored write); everything else uses `withValue(_:key:_:)`.
    /// The corresponding C function is `mdb_get`.
    public func unsafeValue(_ db: Database, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_get(handle, db.dbi, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc)
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    /// ``unsafeValue(_:key:)`` for a key given as bytes; the value's life is the transaction's, not the key's.
    public func unsafeValue(_ db: Database, key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { try unsafeValue(db, key: $0) }
    }

    /// Calls `body` for each pair whose key starts with `prefix`, in key order, from `start` (or the prefix).
    /// `body` returns `false` to stop. The corresponding C functions are `mdb_cursor_get` with
    /// `MDB_SET_RANGE` and `MDB_NEXT`.
    public func scan(
        _ db: Database, prefix: [UInt8], from start: [UInt8]? = nil,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, db.dbi, &cursor))
        defer { mdb_cursor_close(cursor) }
        // A start before the prefix would land on a key outside it and end the scan at once.
        var begin = start.map { $0.lexicographicallyPrecedes(prefix) ? prefix : $0 } ?? prefix
        var k = MDB_val()
        var v = MDB_val()
        let op = begin.isEmpty ? MDB_FIRST : MDB_SET_RANGE
        var rc: Int32 = begin.withUnsafeMutableBytes { raw in
            k = MDB_val(mv_size: raw.count, mv_data: raw.baseAddress)
            return mdb_cursor_get(cursor, &k, &v, op)
        }
        while rc == 0 {
            let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            guard key.starts(with: prefix) else { return }
            guard try body(key, UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)) else { return }
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try check(rc) }
    }

    /// The number of entries in `db`. The corresponding C function is `mdb_stat`.
    public func count(_ db: Database) throws -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(handle, db.dbi, &stat))
        return stat.ms_entries
    }
}
