import FileIO
import LMDBKit

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
