import CLMDB
import FileIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An LMDB environment: one memory-mapped `data.mdb` with its `lock.mdb`, opened once per path per process.
///
/// The rule: one `MDB_env` per directory per process. `lmdb.h`: "A process should only open an environment
/// once (…) Do not have open an LMDB database twice in the same process at the same time. Not even from a
/// plain open() call - close()ing it breaks flock() advisory locking." So each value this type hands out is
/// one holder of its directory's single handle, kept in ``SharedHandles``, which closes the handle when the
/// last holder goes.
///
/// `@unchecked Sendable`: `MDB_env` is thread-safe; transactions are not, and the transaction types here
/// are neither `Sendable` nor copyable.
public final class Environment: @unchecked Sendable {
    let handle: OpaquePointer
    /// The canonical directory the environment lives in.
    public let directory: String
    /// The read transactions open on this handle now, shared by its holders (``liveReadTransactions(under:)``).
    private let readers: ReaderCount

    /// The open handle of each directory, held by the `Environment` values of that directory.
    private static let handles = SharedHandles<String, Handle>()
    /// Counts handles apart from the registry's books, for tests.
    static let census = HandleCensus()

    /// `@unchecked Sendable`: `MDB_env` is thread-safe.
    private struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
        let readers: ReaderCount
    }

    private init(_ open: Handle, directory: String) {
        self.handle = open.pointer
        self.readers = open.readers
        self.directory = directory
    }

    deinit {
        let (handle, directory) = (handle, directory)
        // Closed under the registry's lock, so no `open` of this directory runs between the count and the close.
        Self.handles.release(directory, held: { $0.pointer == handle }) { _ in
            mdb_env_close(handle)
            Self.census.closed(directory)
        }
    }

    /// Opens the environment in `directory`, creating its files when missing, or joins the one this process
    /// already has open there. Each call returns a new holder; the environment closes when the last one goes.
    ///
    /// Transactions are `MDB_NOTLS`: a read transaction may be used on any thread, and one thread may hold
    /// several. A new environment is created with the given map size; an existing one keeps the size
    /// recorded in its file unless `mapSize` is larger.
    ///
    /// - Parameters:
    ///   - directory: An existing directory, canonical (the registry is keyed by it).
    ///   - maxDatabases: The number of named databases.
    ///   - mapSize: The map size for a new environment, in bytes; `nil` keeps the file's.
    /// - Throws: ``LMDBError``. The corresponding C functions are `mdb_env_create` and `mdb_env_open`.
    public static func open(directory: String, maxDatabases: Int, mapSize: Int?) throws(LMDBError) -> Environment {
        let handle = try handles.acquire(directory) { () throws(LMDBError) -> Handle in
            try makeHandle(directory: directory, maxDatabases: maxDatabases, mapSize: mapSize)
        }
        return Environment(handle, directory: directory)
    }

    /// A new `MDB_env` open on `directory`; only ``open(directory:maxDatabases:mapSize:)`` makes one.
    private static func makeHandle(directory: String, maxDatabases: Int, mapSize: Int?) throws(LMDBError) -> Handle {
        var raw: OpaquePointer?
        try check(mdb_env_create(&raw))
        guard let env = raw else { throw LMDBError.outOfMemory }
        do throws(LMDBError) {
            try check(mdb_env_set_maxdbs(env, MDB_dbi(maxDatabases)))
            try check(mdb_env_set_maxreaders(env, 1022))
            if let mapSize { try check(mdb_env_set_mapsize(env, mapSize)) }
            try check(mdb_env_open(env, directory, UInt32(MDB_NOTLS | MDB_NORDAHEAD), 0o600))
            try checkFileCoversPages(env, directory: directory)
        } catch {
            mdb_env_close(env)
            throw error
        }
        census.opened(directory)
        return Handle(pointer: env, readers: ReaderCount())
    }

    /// LMDB trusts its file: reading a page past the end of a truncated `data.mdb` through the map is a
    /// SIGBUS. Refuse a file shorter than the pages its meta page says are in use.
    private static func checkFileCoversPages(_ env: OpaquePointer, directory: String) throws(LMDBError) {
        var info = MDB_envinfo()
        var pages = MDB_stat()
        try check(mdb_env_info(env, &info))
        try check(mdb_env_stat(env, &pages))
        var file = stat()
        guard lstat(directory + "/data.mdb", &file) == 0 else { return }
        if Int(file.st_size) < (info.me_last_pgno + 1) * Int(pages.ms_psize) { throw LMDBError.corrupted }
    }

    /// The current map size in bytes: the most the data file can grow to.
    public var mapSize: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_mapsize
    }

    /// The bytes used by the pages in use, the last page number times the page size.
    public var usedBytes: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        return (info.me_last_pgno + 1) * Int(stat.ms_psize)
    }

    /// The bytes of the data file's pages that hold data: the pages in use (``usedBytes``) less those on
    /// LMDB's free list, which later writes reuse before they grow the file. What a size bound compares with.
    /// Reads the free list (LMDB's database 0, each value a page list whose first word is its length).
    public func liveBytes() throws(LMDBError) -> Int {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        try check(mdb_env_info(handle, &info))
        try check(mdb_env_stat(handle, &stat))
        var raw: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &raw))
        defer { mdb_txn_abort(raw) }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(raw, 0, &cursor))
        defer { mdb_cursor_close(cursor) }
        var free = 0
        var k = MDB_val()
        var v = MDB_val()
        var rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        while rc == 0 {
            if v.mv_size >= MemoryLayout<Int>.size, let data = v.mv_data {
                free += data.loadUnaligned(as: Int.self)
            }
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try check(rc) }
        return max(0, info.me_last_pgno + 1 - free) * Int(stat.ms_psize)
    }

    /// Drops this process's mappings of the data file's pages in use (`madvise(MADV_DONTNEED)`), so a long
    /// ingest or a large fetch does not keep the whole file resident. The pages stay in the page cache and
    /// fault back in on the next access; pointers into the map stay valid (it is a shared file mapping).
    public func releaseMappedPages() {
        // `mdb_env_info` reports the map's address only with `MDB_FIXEDMAP`: FileIO finds it in /proc/self/maps.
        guard let base = MappedPages.start(ofMappingOf: directory + "/data.mdb") else { return }
        MappedPages.drop(base, count: min(usedBytes, mapSize))
    }

    /// Sets a new map size.
    ///
    /// `lmdb.h`: "This function may only be called (…) if no transactions are active in this process." This
    /// holder cannot see other holders' transactions, so it may resize only while it is the only holder (and
    /// has none of its own active).
    ///
    /// - Throws: ``LMDBError/busy`` while another holder in this process has the environment open.
    /// The corresponding C function is `mdb_env_set_mapsize`.
    public func setMapSize(_ bytes: Int) throws(LMDBError) {
        try Self.handles.withHolderCount(of: directory) { (holders) throws(LMDBError) in
            guard holders == 1 else { throw LMDBError.busy }
            try check(mdb_env_set_mapsize(handle, bytes))
        }
    }

    /// Removes reader slots left by dead processes, returning how many. The C function is `mdb_reader_check`.
    @discardableResult
    public func clearStaleReaders() -> Int {
        var dead: Int32 = 0
        mdb_reader_check(handle, &dead)
        return Int(dead)
    }

    /// The number of reader slots held by live read transactions, of any process, for leak checks in tests.
    ///
    /// Not `MDB_envinfo.me_numreaders`: `lmdb.h` calls that the "max number of readers slots used in the
    /// environment", a high-water mark that never goes down when a read transaction ends.
    /// The corresponding C function is `mdb_reader_list`.
    public var activeReaders: Int {
        var count = 0
        _ = withUnsafeMutablePointer(to: &count) { counter in
            mdb_reader_list(
                handle,
                { line, context in
                    // `mdb_reader_list` sends a header ("    pid     thread     txnid") or "(no active readers)",
                    // then one line per slot in use, which starts with the holder's pid.
                    guard let line, let context else { return 0 }
                    let isReader = String(cString: line).drop(while: { $0 == " " }).first?.isNumber ?? false
                    if isReader { context.assumingMemoryBound(to: Int.self).pointee += 1 }
                    return 0
                }, counter)
        }
        return count
    }

    /// Opens (creating when asked) the named database. Names are opened once, in a write transaction.
    public func openDatabase(_ name: String, create: Bool = true) throws -> Database {
        try write { txn in try txn.openDatabase(name, create: create) }
    }

    /// Runs `body` in a read-only snapshot. The snapshot and every buffer it lends end with `body`.
    ///
    /// Never `await` inside: `body` is synchronous and the transaction is not `Sendable`.
    /// The corresponding C functions are `mdb_txn_begin` (`MDB_RDONLY`) and `mdb_txn_abort`.
    public func read<R>(_ body: (borrowing ReadTransaction) throws -> R) throws -> R {
        var raw: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &raw))
        let txn = ReadTransaction(handle: raw!)
        readers.count.add(1, ordering: .relaxed)
        defer {
            readers.count.subtract(1, ordering: .relaxed)
            mdb_txn_abort(raw)
        }
        return try body(txn)
    }

    /// The read transactions open now on the environments this process has open in `directory` or below it:
    /// what a test's leak check expects to be 0 once the test is done with its stores.
    public static func liveReadTransactions(under directory: String) -> Int {
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        return handles.values { $0 == directory || $0.hasPrefix(prefix) }
            .reduce(0) { $0 + $1.readers.count.load(ordering: .relaxed) }
    }

    /// Runs `body` in a write transaction that commits when `body` returns and aborts when it throws.
    ///
    /// LMDB binds a write transaction to the thread that began it, so `body` is synchronous and this
    /// function is unavailable from async code: call it from the one writer thread.
    /// The corresponding C functions are `mdb_txn_begin`, `mdb_txn_commit` and `mdb_txn_abort`.
    ///
    /// What `body` left for after the commit (``WriteTransaction/afterCommit(_:)``) runs once the commit
    /// succeeded, on this thread, before this returns; an abort or a failed commit drops it.
    ///
    /// - Parameter durability: `.full` (the default) flushes data and metadata at commit. `.deferMeta`
    ///   (`MDB_NOMETASYNC` for this commit) flushes the data only: the database stays intact whatever happens,
    ///   but a system crash may undo this transaction. For writes that can be made again (a cache's
    ///   downloads). Only one thread of the process may write, so changing the flag around one commit is safe.
    @available(*, noasync, message: "a write transaction must begin and commit on one thread")
    public func write<R>(durability: Durability = .full, _ body: (inout WriteTransaction) throws -> R) throws -> R {
        let (result, work) = try commit(durability: durability, body)
        for piece in work { piece.run(self) }
        return result
    }

    /// ``write(durability:_:)`` up to its commit: the result, and the work left for after it.
    @available(*, noasync)
    private func commit<R>(durability: Durability, _ body: (inout WriteTransaction) throws -> R) throws -> (
        R, [any AfterCommit]
    ) {
        if durability == .deferMeta { try check(mdb_env_set_flags(handle, UInt32(MDB_NOMETASYNC), 1)) }
        defer { if durability == .deferMeta { mdb_env_set_flags(handle, UInt32(MDB_NOMETASYNC), 0) } }
        var raw: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, 0, &raw))
        var txn = WriteTransaction(handle: raw!)
        let result: R
        do {
            result = try body(&txn)
        } catch {
            mdb_txn_abort(raw)
            throw error
        }
        try check(mdb_txn_commit(raw))
        return (result, txn.afterCommitWork)
    }

    /// What a commit flushes to disk.
    public enum Durability: Sendable {
        /// Data and metadata: a committed transaction survives a system crash.
        case full
        /// Data only (`MDB_NOMETASYNC`): intact after a crash, but the transaction may be undone.
        case deferMeta
    }

    /// Flushes the data file to disk. The corresponding C function is `mdb_env_sync`.
    public func sync() throws(LMDBError) { try check(mdb_env_sync(handle, 1)) }
}

/// How many `MDB_env` handles this process has open per directory, and the most it ever had at once: a test
/// hook that checks the registry's promise (one per directory) independently of the registry's own books.
final class HandleCensus: Sendable {
    private let counts = Mutex<[String: (live: Int, peak: Int)]>([:])

    func opened(_ directory: String) {
        counts.withLock { counts in
            let live = (counts[directory]?.live ?? 0) + 1
            counts[directory] = (live, max(live, counts[directory]?.peak ?? 0))
        }
    }

    func closed(_ directory: String) {
        counts.withLock { counts in counts[directory]?.live -= 1 }
    }

    /// The handles open on `directory` now and at most at once.
    func count(_ directory: String) -> (live: Int, peak: Int) {
        counts.withLock { $0[directory] ?? (0, 0) }
    }
}

/// The read transactions open on one environment handle, shared by all its holders.
private final class ReaderCount: Sendable {
    let count = Atomic<Int>(0)
}
