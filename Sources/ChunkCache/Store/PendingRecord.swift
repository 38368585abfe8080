/// A manifest written but not yet published, and the writer's lease (``WriterLease``) that says whether its
/// process still runs.
struct PendingRecord: StoreRecord {
    var writer: WriterToken
    var startedAt: Double

    static let remedy =
        "the store cannot tell whether the put that wrote it still runs: move the store aside and create a new one"

    func write(to w: inout ByteWriter) {
        w.append(raw: writer.bytes)
        w.append(startedAt)
    }
}

extension PendingRecord {
    init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let writer = WriterToken(bytes: try r.readBytes(WriterToken.byteCount)) else {
            throw RecordDamage(problem: "names no writer")
        }
        self.writer = writer
        startedAt = try r.readDouble()
    }
}
