import Crypto
import LMDBKit

/// What `verify` found of the fills (``FillFiles``), downloaded chunks not settled yet, and what `repair`
/// changes for them.
struct FillFindings {
    /// A fill by its manifest and chunk index.
    struct Place: Hashable, Comparable {
        let manifestID: UInt64
        let index: Int64

        static func < (a: Place, b: Place) -> Bool { (a.manifestID, a.index) < (b.manifestID, b.index) }
    }

    /// Fills whose bytes were read and checked.
    var checked = 0
    /// Each damaged fill, named, with what is wrong.
    var corrupt: [String] = []
    var inconsistencies: [String] = []
    var damagedRecords: [String] = []
    /// The damaged fills and the XXH3 their entries held when read: `repair` drops them to `absent`.
    var damaged: [(place: Place, checksum: UInt64)] = []
    /// Records in `fills` whose entries are no fills.
    var orphanRecords: [Place] = []
    /// Manifests that count bytes in a fill file but have no fill left.
    var orphanFileCounts: [UInt64] = []
    /// Fill files of manifests with no fill and no count.
    var orphanFiles: [UInt64] = []
    var counterIsWrong = false
    /// How reports name each manifest, found once (a scan of `versions`), since a lost file names every fill.
    var manifestNames: [UInt64: String] = [:]

    /// How reports name a fill, for example `fill 2 of the manifest of version "v" of item "a" in domain "d"`.
    mutating func name<T: TransactionReading & ~Copyable>(
        _ manifestID: UInt64, _ index: Int64, in txn: borrowing T, _ dbs: Databases
    ) -> String {
        let manifest = manifestNames[manifestID] ?? RecordNames.manifest(manifestID, in: txn, dbs)
        manifestNames[manifestID] = manifest
        return "fill \(index) of \(manifest)"
    }

    var needsRepair: Bool {
        !damaged.isEmpty || !orphanRecords.isEmpty || !orphanFileCounts.isEmpty || !orphanFiles.isEmpty
            || counterIsWrong
    }
}

/// The fills' side of `verify`: every `filled` manifest entry has its record in `fills` and every record its
/// `filled` entry; every fill's bytes pass their XXH3 and, where its record knows the SHA-256 the manifest
/// expected, hash to it; every fill file belongs to a manifest with fills; and the ``MetaKey/fillBytes``
/// counter equals the sum of the per-version byte counts.
extension Verifier {
    @available(*, noasync)
    static func checkFills(
        in txn: borrowing ReadTransaction, _ store: Store, cancellation: CancellationFlag, observer: Observer?
    ) throws -> FillFindings {
        let dbs = store.dbs
        var found = FillFindings()
        let entries = try filledEntries(in: txn, dbs, cancellation: cancellation)
        let files = Set(dbs.fillFiles.manifestIDs())
        var records: [FillFindings.Place: (length: Int, expected: ChunkDigest?)?] = [:]
        var fileBytes: [UInt64: Int64] = [:]
        try txn.scan(dbs.fills, prefix: []) { key, value in
            observer?("fills", key)
            try cancellation.check()
            if let manifestID = FillKeys.manifestID(ofFileKey: key) {
                guard let bytes = FillKeys.parseFileBytes(value) else {
                    found.damagedRecords.append(
                        "the byte count of the fill file of \(RecordNames.manifest(manifestID, in: txn, dbs))")
                    return true
                }
                fileBytes[manifestID] = bytes
            } else if let (manifestID, index) = FillKeys.parse(key) {
                let record = FillKeys.parseRecord(value)
                if record == nil {
                    found.damagedRecords.append("the record of \(found.name(manifestID, index, in: txn, dbs))")
                }
                records[FillFindings.Place(manifestID: manifestID, index: index)] = .some(record)
            } else {
                found.damagedRecords.append("the fill record under key \(hexString(key))")
            }
            return true
        }
        try checkBytes(
            of: entries, records: records, files: files, in: txn, store, cancellation: cancellation, into: &found)
        for place in records.keys.sorted() where entries[place] == nil {
            found.inconsistencies.append(
                "\(found.name(place.manifestID, place.index, in: txn, dbs)) has a record in `fills` but its entry is not a fill"
            )
            found.orphanRecords.append(place)
        }
        let filledManifests = Set(records.keys.map(\.manifestID))
        for (manifestID, bytes) in fileBytes.sorted(by: { $0.key < $1.key }) where !filledManifests.contains(manifestID)
        {
            found.inconsistencies.append(
                "\(RecordNames.manifest(manifestID, in: txn, dbs)) counts \(bytes) bytes in its fill file but has no fill"
            )
            found.orphanFileCounts.append(manifestID)
        }
        for manifestID in files.sorted()
        where !filledManifests.contains(manifestID) && fileBytes[manifestID] == nil {
            found.inconsistencies.append(
                "the fill file \(FillFiles.folder)/\(String(manifestID, radix: 16)) belongs to no manifest with fills")
            found.orphanFiles.append(manifestID)
        }
        let counted = Int64(bitPattern: try txn.counter(dbs, MetaKey.fillBytes))
        let recounted = fileBytes.values.reduce(0, +)
        if counted != recounted {
            found.inconsistencies.append(
                "the counter \(MetaKey.fillBytes) is \(counted) but a recount gives \(recounted)")
            found.counterIsWrong = true
        }
        return found
    }

    /// Every `filled` entry of every manifest page that passes its check, with its XXH3.
    private static func filledEntries(
        in txn: borrowing ReadTransaction, _ dbs: Databases, cancellation: CancellationFlag
    ) throws -> [FillFindings.Place: UInt64] {
        var filled: [FillFindings.Place: UInt64] = [:]
        try txn.scan(dbs.manifests, prefix: []) { key, value in
            try cancellation.check()
            // A page that fails its check is reported with the records.
            guard let (manifestID, page) = Keys.parseManifestPage(key), let body = ManifestPage.entries(ofStored: value)
            else { return true }
            for slot in 0..<(body.count / ManifestPage.entrySize) {
                guard case .filled(let checksum)? = try? ManifestPage.entry(in: body, at: slot) else { continue }
                let index = page * ManifestPage.entriesPerPage + Int64(slot)
                filled[FillFindings.Place(manifestID: manifestID, index: index)] = checksum
            }
            return true
        }
        return filled
    }

    /// Reads and checks the bytes of every fill in `entries`, adding those that cannot be served. `files` are the
    /// manifests whose fill file is on disk: a descriptor this process holds may still read a removed file,
    /// which no other process and no later open can.
    @available(*, noasync)
    private static func checkBytes(
        of entries: [FillFindings.Place: UInt64], records: [FillFindings.Place: (length: Int, expected: ChunkDigest?)?],
        files: Set<UInt64>, in txn: borrowing ReadTransaction, _ store: Store, cancellation: CancellationFlag,
        into found: inout FillFindings
    ) throws {
        let dbs = store.dbs
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: store.layout.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        for (place, checksum) in entries.sorted(by: { $0.key < $1.key }) {
            try cancellation.check()
            let problem: String?
            switch records[place] {
            case nil: problem = "it has no record in `fills`"
            case .some(nil): problem = "its record fails its check"
            case .some(let record?) where record.length > buffer.count || record.length <= 0:
                problem = "its record gives a length of \(record.length) bytes"
            case .some? where !files.contains(place.manifestID):
                problem = "its fill file \(FillFiles.folder)/\(String(place.manifestID, radix: 16)) is missing"
            case .some(let record?):
                found.checked += 1
                if let bytes = dbs.fillFiles.read(
                    manifestID: place.manifestID, at: place.index << store.layout.shift,
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<record.length]), checksum: checksum)
                {
                    problem =
                        record.expected.map { ChunkDigest(hashing: bytes) == $0 } == false
                        ? "its bytes do not hash to the SHA-256 its manifest knew" : nil
                } else {
                    problem = "its bytes are missing or fail their check"
                }
            }
            if let problem {
                found.corrupt.append("\(found.name(place.manifestID, place.index, in: txn, dbs)): \(problem)")
                found.damaged.append((place, checksum))
            }
        }
    }

    /// Drops what ``checkFills(in:_:cancellation:observer:)`` found wrong, in one write transaction, each only
    /// where it is still as found: a damaged fill's entry becomes `absent` with the hash its manifest knew (its
    /// record forgotten), an orphan record is deleted, an orphan file removed, and the counter set to its
    /// recount; the forgotten fills' bytes are punched out once this has committed. Nothing else changes.
    /// Returns how many fills were dropped.
    @available(*, noasync)
    static func repairFills(_ found: FillFindings, in store: Store) throws -> Int {
        let dbs = store.dbs
        return try store.writer.writeAndWait { txn in
            var dropped = 0
            var touched = Set(found.orphanFileCounts)
            for (place, checksum) in found.damaged {
                var cursor = ManifestCursor(manifestID: place.manifestID, dbs: dbs)
                guard case .filled(checksum)? = try? cursor.entry(place.index, in: txn) else { continue }
                let expected = try txn.forgetFill(place.manifestID, place.index, dbs)
                try txn.rewriteEntries(of: place.manifestID, at: [place.index], dbs) { _, _ in .absent(expected) }
                touched.insert(place.manifestID)
                dropped += 1
            }
            for place in found.orphanRecords {
                var cursor = ManifestCursor(manifestID: place.manifestID, dbs: dbs)
                if case .filled? = try? cursor.entry(place.index, in: txn) { continue }
                try txn.forgetFill(place.manifestID, place.index, dbs)
                touched.insert(place.manifestID)
            }
            for manifestID in touched.sorted() { try txn.forgetFillFileIfDone(manifestID, dbs) }
            for manifestID in found.orphanFiles where try !txn.hasFills(manifestID, dbs) {
                // Inside the transaction: fills are written only by the one that records them.
                dbs.fillFiles.remove(manifestID)
            }
            try txn.setCounter(dbs, MetaKey.fillBytes, UInt64(bitPattern: try txn.recountFillBytes(dbs)))
            return dropped
        }
    }
}
