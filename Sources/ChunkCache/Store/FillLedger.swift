import FileIO
import LMDBKit

/// A downloaded chunk on its way into the store as a fill (``FillFiles``): its bytes are written into the fill
/// file by the transaction that records it.
struct FilledChunk: Sendable {
    let index: Int64
    /// Where its bytes start in the item (and in the fill file).
    let offset: Int64
    /// The XXH3 of its bytes; ignored for a zero chunk.
    let checksum: UInt64
    let length: Int
    /// All zeros: recorded as a zero entry, nothing written.
    let isZero: Bool
    /// The bytes, which the transaction that records them writes into the fill file.
    let bytes: [UInt8]
}

/// The keys of the `fills` database and what they hold.
enum FillKeys {
    /// The key of the fill of chunk `index` of `manifestID`.
    static func fill(_ manifestID: UInt64, _ index: Int64) -> [UInt8] { Keys.manifestPage(manifestID, page: index) }

    /// The key that holds the bytes the version's fill file takes: after every chunk index.
    static func file(_ manifestID: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.appendBigEndian(manifestID)
        w.appendBigEndian(UInt64.max)
        return w.bytes
    }

    /// A fill's record: its length (4 bytes, little-endian), then the hash its manifest knew, if any.
    static func record(length: Int, expected: ChunkDigest?) -> [UInt8] {
        var w = ByteWriter()
        w.append(UInt32(length))
        if let expected { w.append(raw: expected.bytes) }
        return w.bytes
    }

    /// The length and known hash of a fill's record; nil when it is neither 4 nor 36 bytes long.
    static func parseRecord(_ value: UnsafeRawBufferPointer) -> (length: Int, expected: ChunkDigest?)? {
        guard value.count == 4 || value.count == 36 else { return nil }
        let length = Int(UInt32(littleEndian: value.loadUnaligned(as: UInt32.self)))
        return (length, value.count == 36 ? ChunkDigest(raw: UnsafeRawBufferPointer(rebasing: value[4...])) : nil)
    }

    /// The manifest id and chunk index of a fill key; nil for a file key or a damaged key.
    static func parse(_ key: UnsafeRawBufferPointer) -> (manifestID: UInt64, index: Int64)? {
        guard let (manifest, index) = Keys.parseManifestPage(key) else { return nil }
        return (manifest, index)
    }

    /// The manifest id of a key that holds a fill file's byte count (``file(_:)``), else nil.
    static func manifestID(ofFileKey key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 16, key.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == UInt64.max else { return nil }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// The bytes a fill file takes, as its count (under ``file(_:)``) holds them; nil when it is not 8 bytes long.
    static func parseFileBytes(_ value: UnsafeRawBufferPointer) -> Int64? {
        value.count == 8 ? Int64(littleEndian: value.loadUnaligned(as: Int64.self)) : nil
    }
}

/// Fill bytes that a committed transaction stopped naming but left on disk, for
/// ``WriteTransaction/releaseUnnamedFills(_:_:)`` to free after the commit.
struct UnnamedFills: Sendable {
    /// Each forgotten fill's place and length.
    var places: [(manifestID: UInt64, index: Int64, length: Int64)] = []
    /// Versions whose last fill went: their files go too.
    var versions: Set<UInt64> = []

    var isEmpty: Bool { places.isEmpty && versions.isEmpty }
}

/// The fill bytes one write transaction forgot, freed by ``WriteTransaction/releaseUnnamedFills(_:_:)`` in a
/// transaction of their own once it has committed, however many it forgot.
final class FillRelease: AfterCommit {
    var unnamed = UnnamedFills()
    private let dbs: Databases

    init(_ dbs: Databases) { self.dbs = dbs }

    func run(_ environment: Environment) {
        guard !unnamed.isEmpty else { return }
        // Failing here leaves bytes no record names, as a kill here would; they go with their file. Reported to
        // standard error: an after-commit step is given the environment, not the store and its diagnostics.
        Diagnostics.standardError.attempt("free the disk of forgotten downloaded chunks") {
            try environment.write { txn in try txn.releaseUnnamedFills(unnamed, dbs) }
        }
    }
}

/// The fills' records, inside write transactions: what is recorded when downloads land, settle, are evicted or
/// go with their version. `meta`'s ``MetaKey/fillBytes`` counts the bytes every fill file takes, so the bound
/// (``SpaceBound``) counts them; a forgotten fill's bytes leave the count in the transaction that forgets it,
/// and the disk right after its commit (``releaseUnnamedFills(_:_:)``), never before: a kill before the commit
/// undoes the forgetting, and the fills it restores must find their bytes.
extension WriteTransaction {
    /// Records downloaded chunks of `manifestID` and writes their bytes into its fill file: each `absent` entry
    /// becomes `filled` (or `zero`), keeping the hash the manifest knew for the settler. With `refill`, a `filled`
    /// entry takes the new bytes' checksum too (its old bytes failed their check). Other entries (a chunk
    /// another process stored meanwhile) stay as they are. Returns the chunks recorded.
    @available(*, noasync)
    mutating func recordFills(_ chunks: [FilledChunk], manifestID: UInt64, refill: Bool, _ dbs: Databases) throws
        -> [FilledChunk]
    {
        var recorded: [FilledChunk] = []
        var records: [(index: Int64, value: [UInt8])] = []
        var forgotten: [Int64] = []
        var written: [FilledChunk] = []
        var addedBytes: Int64 = 0
        try rewriteEntries(of: manifestID, at: chunks.map(\.index), dbs) { position, current in
            let chunk = chunks[position]
            let expected: ChunkDigest?
            switch current {
            case .absent(let digest): expected = digest
            case .filled where refill: expected = nil
            default: return nil
            }
            recorded.append(chunk)
            if chunk.isZero {
                if case .filled = current { forgotten.append(chunk.index) }
                return .zero
            }
            if case .absent = current {
                records.append((chunk.index, FillKeys.record(length: chunk.length, expected: expected)))
                addedBytes += Int64(chunk.length)
            }
            written.append(chunk)
            return .filled(checksum: chunk.checksum)
        }
        // Written here, under the writer's lock, after the bound made room for them (CONTRACT §12): no other
        // process removes the file meanwhile, and the store's files never pass the bound, even for a moment.
        for chunk in written {
            let failure = chunk.bytes.withUnsafeBytes { bytes -> Errno? in
                do throws(Errno) {
                    try dbs.fillFiles.write(bytes, manifestID: manifestID, at: chunk.offset)
                    return nil
                } catch { return error }
            }
            if let failure {
                throw CacheError.file(
                    failure, path: dbs.fillFiles.path(of: manifestID), doing: "storing downloaded chunks")
            }
        }
        for index in forgotten { try forgetFill(manifestID, index, dbs) }
        for record in records { try put(dbs.fills, key: FillKeys.fill(manifestID, record.index), value: record.value) }
        if addedBytes > 0 { try addFileBytes(addedBytes, manifestID: manifestID, dbs) }
        return recorded
    }

    /// Forgets the fill of chunk `index` (evicted, dropped by a repair, or refilled as zeros): its record goes
    /// and its bytes leave the count, and the disk once this transaction has committed (``FillRelease``).
    /// Returns the hash the manifest knew for it.
    @available(*, noasync)
    @discardableResult
    mutating func forgetFill(_ manifestID: UInt64, _ index: Int64, _ dbs: Databases) throws -> ChunkDigest? {
        let key = FillKeys.fill(manifestID, index)
        guard let record = try withValue(dbs.fills, key: key, FillKeys.parseRecord) else { return nil }
        try delete(dbs.fills, key: key)
        guard let record else { return nil }
        try addFileBytes(-Int64(record.length), manifestID: manifestID, dbs)
        afterCommit { FillRelease(dbs) }.unnamed.places.append((manifestID, index, Int64(record.length)))
        return record.expected
    }

    /// Drops the count of the fill file of `manifestID` when no fill of it is left; the file goes once this
    /// transaction has committed (``FillRelease``).
    @available(*, noasync)
    mutating func forgetFillFileIfDone(_ manifestID: UInt64, _ dbs: Databases) throws {
        guard try !hasFillRecords(manifestID, dbs) else { return }
        try forgetFileBytes(manifestID, dbs)
        afterCommit { FillRelease(dbs) }.unnamed.versions.insert(manifestID)
    }

    /// Frees the disk of fills an earlier transaction forgot and left in their files (``UnnamedFills``), where
    /// nothing names them now: a place's bytes where no fill is recorded there (another process may have
    /// filled it again meanwhile), a version's file where nothing of it is recorded. Changes nothing in LMDB;
    /// it runs in a write transaction so that no writer records fills meanwhile, and only ever frees bytes no
    /// committed record names, so a kill at any point loses no fill (bytes it leaves behind are freed with
    /// their file: ``Settler/removeFilesWithoutFills(_:)``).
    @available(*, noasync)
    func releaseUnnamedFills(_ unnamed: UnnamedFills, _ dbs: Databases) throws {
        let done = try unnamed.versions.filter { try !hasFills($0, dbs) }
        let shift = Int64(try counter(dbs, MetaKey.chunkShift))
        for place in unnamed.places where !done.contains(place.manifestID) {
            guard try !contains(dbs.fills, key: FillKeys.fill(place.manifestID, place.index)) else { continue }
            dbs.fillFiles.punch(manifestID: place.manifestID, at: place.index << shift, length: place.length)
        }
        for manifestID in done.sorted() { dbs.fillFiles.remove(manifestID) }
    }

    /// Forgets every fill of `manifestID` (the version is dropped); its file goes once this transaction has
    /// committed (``FillRelease``).
    @available(*, noasync)
    mutating func removeFills(of manifestID: UInt64, _ dbs: Databases) throws {
        var keys: [[UInt8]] = []
        try scan(dbs.fills, prefix: Keys.manifest(manifestID)) { key, _ in
            keys.append(Array(key))
            return true
        }
        guard !keys.isEmpty else { return }
        for key in keys where FillKeys.parse(key.withUnsafeBytes { $0 }) != nil { try delete(dbs.fills, key: key) }
        try forgetFillFileIfDone(manifestID, dbs)
    }

    /// Drops the count of the bytes the fill file of `manifestID` takes.
    @available(*, noasync)
    private mutating func forgetFileBytes(_ manifestID: UInt64, _ dbs: Databases) throws {
        guard let bytes = try fileBytes(manifestID, dbs) else { return }
        try delete(dbs.fills, key: FillKeys.file(manifestID))
        try addToCounter(dbs, MetaKey.fillBytes, -bytes)
    }

    @available(*, noasync)
    private mutating func addFileBytes(_ bytes: Int64, manifestID: UInt64, _ dbs: Databases) throws {
        let key = FillKeys.file(manifestID)
        var w = ByteWriter()
        w.append(max(0, (try fileBytes(manifestID, dbs) ?? 0) + bytes))
        try put(dbs.fills, key: key, value: w.bytes)
        try addToCounter(dbs, MetaKey.fillBytes, bytes)
    }

    /// The bytes the fill file of `manifestID` takes, as recorded (0 when its count is damaged); nil when none is.
    func fileBytes(_ manifestID: UInt64, _ dbs: Databases) throws -> Int64? {
        try withValue(dbs.fills, key: FillKeys.file(manifestID)) { FillKeys.parseFileBytes($0) ?? 0 }
    }

}

extension TransactionReading where Self: ~Copyable {
    /// The fills recorded under `prefix` (a manifest's key, or empty for all) and their raw bytes.
    func fillRecords(under prefix: [UInt8], _ dbs: Databases) throws -> (count: Int64, bytes: Int64) {
        var total: (count: Int64, bytes: Int64) = (0, 0)
        try scan(dbs.fills, prefix: prefix) { key, value in
            if FillKeys.parse(key) != nil, let record = FillKeys.parseRecord(value) {
                total.count += 1
                total.bytes += Int64(record.length)
            }
            return true
        }
        return total
    }

    /// Whether anything of `manifestID` is recorded in `fills` (a fill or its file's byte count).
    func hasFills(_ manifestID: UInt64, _ dbs: Databases) throws -> Bool {
        var any = false
        try scan(dbs.fills, prefix: Keys.manifest(manifestID)) { _, _ in
            any = true
            return false
        }
        return any
    }

    /// The sum of the byte counts of every fill file, as `fills` records them.
    func recountFillBytes(_ dbs: Databases) throws -> Int64 {
        var total: Int64 = 0
        try scan(dbs.fills, prefix: []) { key, value in
            if FillKeys.manifestID(ofFileKey: key) != nil, let bytes = FillKeys.parseFileBytes(value) { total += bytes }
            return true
        }
        return total
    }

    /// Whether any fill of `manifestID` is recorded (its file's byte count aside).
    func hasFillRecords(_ manifestID: UInt64, _ dbs: Databases) throws -> Bool {
        var found = false
        try scan(dbs.fills, prefix: Keys.manifest(manifestID)) { key, _ in
            found = FillKeys.parse(key) != nil
            return !found
        }
        return found
    }
}
