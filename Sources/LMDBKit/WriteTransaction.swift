import CLMDB

/// A write transaction. Only lives inside ``Environment/write(durability:_:)``, on the thread that began it.
public struct WriteTransaction: ~Copyable, TransactionReading {
    public let handle: OpaquePointer
    /// What ``Environment/write(durability:_:)`` runs once this has committed, in the order it was added.
    var afterCommitWork: [any AfterCommit] = []

    /// The work of type `Work` this transaction runs after it commits, added from `make` the first time it is
    /// asked for: a transaction that leaves many pieces of one kind of work gathers them in one object, run once.
    public mutating func afterCommit<Work: AfterCommit>(_ make: () -> Work) -> Work {
        if let work = afterCommitWork.lazy.compactMap({ $0 as? Work }).first { return work }
        let work = make()
        afterCommitWork.append(work)
        return work
    }

    /// Opens or creates a named database. The corresponding C function is `mdb_dbi_open`.
    @available(*, noasync)
    public mutating func openDatabase(_ name: String, create: Bool) throws -> Database {
        var dbi: MDB_dbi = 0
        try check(mdb_dbi_open(handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi))
        return Database(dbi: dbi)
    }

    /// Stores `value` under `key`, replacing any value. The corresponding C function is `mdb_put`.
    @available(*, noasync)
    public mutating func put(_ db: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_put(handle, db.dbi, &k, &v, 0))
    }

    /// Stores `value` under `key` when both are byte arrays.
    @available(*, noasync)
    public mutating func put(_ db: Database, key: [UInt8], value: [UInt8]) throws {
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try put(db, key: k, value: v) } }
    }

    /// Reserves `count` bytes under `key` and lets `fill` write them in place, straight into the map.
    /// The corresponding C function is `mdb_put` with `MDB_RESERVE`.
    @available(*, noasync)
    public mutating func reserve<R>(
        _ db: Database, key: UnsafeRawBufferPointer, count: Int,
        _ fill: (UnsafeMutableRawBufferPointer) throws -> R
    ) throws -> R {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: count, mv_data: nil)
        try check(mdb_put(handle, db.dbi, &k, &v, UInt32(MDB_RESERVE)))
        return try fill(UnsafeMutableRawBufferPointer(start: v.mv_data, count: count))
    }

    /// Deletes the pair under `key`, returning whether there was one. The corresponding C function is `mdb_del`.
    @available(*, noasync)
    @discardableResult
    public mutating func delete(_ db: Database, key: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc = mdb_del(handle, db.dbi, &k, nil)
        if rc == MDB_NOTFOUND { return false }
        try check(rc)
        return true
    }

    /// Deletes the pair under `key` given as bytes.
    @available(*, noasync)
    @discardableResult
    public mutating func delete(_ db: Database, key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { try delete(db, key: $0) }
    }
}
