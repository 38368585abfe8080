import LMDBKit

// The table of pending manifests, `pending`: manifest id → ``PendingRecord``.

/// A manifest written but not yet published, and the writer's lease (``WriterLease``) that says whether its
/// process still runs.
package struct PendingRecord: StoreRecord {
    var writer: WriterToken
    var startedAt: Double

    package static let remedy =
        "the store cannot tell whether the put that wrote it still runs: move the store aside and create a new one"

    package func write(to w: inout ByteWriter) {
        w.append(raw: writer.bytes)
        w.append(startedAt)
    }
}

extension PendingRecord {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let writer = WriterToken(bytes: try r.readBytes(WriterToken.byteCount)) else {
            throw RecordDamage(problem: "names no writer")
        }
        self.writer = writer
        startedAt = try r.readDouble()
    }
}

extension WriteTransaction {
    /// Whether `manifestID` is pending now, written by `writer`: not published since, nor rolled back.
    @available(*, noasync)
    func isPending(_ manifestID: UInt64, of writer: WriterToken, _ dbs: Databases) throws -> Bool {
        let record = try withValue(dbs.pending, key: Keys.manifest(manifestID)) {
            try PendingRecord(decoding: $0, name: RecordNames.pending(manifestID))
        }
        return record?.writer == writer
    }

    /// Takes a fresh manifest id and records it as pending for `writer`.
    @available(*, noasync)
    mutating func beginManifest(_ dbs: Databases, writer: WriterToken, now: Double) throws -> UInt64 {
        let id = try takeManifestID(dbs)
        try put(dbs.pending, key: Keys.manifest(id), value: PendingRecord(writer: writer, startedAt: now).encoded())
        return id
    }
}
