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
