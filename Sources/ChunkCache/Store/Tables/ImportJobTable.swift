import LMDBKit

// The table of import jobs: records of `meta` under `import/`, one per domain being imported (CONTRACT §8).

/// An import or reimport under way, persisted so a crash at any point resumes where it was (<doc:Contract#8-Import>):
/// the trees still to walk, whether the first one's source is to be removed, and the writer running it.
///
/// A moving import (without `--copy`) walks its tree in the store's staging area (``Store/importsPath``):
/// ``sources``' first root is there, and ``original`` says where the user had it.
package struct ImportJobRecord: StoreRecord {
    enum Phase: UInt8 {
        case importing = 0
        /// Everything is imported and `importDidFinish` recorded: the source is being removed.
        case removingSource = 1
    }

    /// A tree to take in: its canonical path, and the item it becomes (``Item/rootContainer`` for an import).
    struct Source: Equatable {
        var root: String
        var below: String
    }

    var writer: WriterToken
    var epoch: UInt64
    /// Leave the first source in place (an import with `--copy`; a reimport always does).
    var copy: Bool
    var phase: Phase
    var sources: [Source]
    /// Sources fully taken in.
    var done: Int
    var startedAt: Double
    /// The directory a moving import took over, as the user had it (canonical): the tree is renamed from
    /// here into the staging area before anything is read, and what is not imported goes back here. nil
    /// for `--copy` and reimports, which read in place.
    var original: String? = nil

    package static let remedy = "remove the domain (`chunkcache domain rm`) and import it again"

    package func write(to w: inout ByteWriter) {
        w.append(raw: writer.bytes)
        w.append(epoch)
        w.append(UInt8(copy ? 1 : 0))
        w.append(phase.rawValue)
        w.append(UInt32(done))
        w.append(startedAt)
        w.append(UInt32(sources.count))
        for source in sources {
            w.appendPrefixed(source.root)
            w.appendPrefixed(source.below)
        }
        w.append(UInt8(original == nil ? 0 : 1))
        if let original { w.appendPrefixed(original) }
    }
}

extension ImportJobRecord {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let writer = WriterToken(bytes: try r.readBytes(WriterToken.byteCount)) else {
            throw RecordDamage(problem: "names no writer")
        }
        self.writer = writer
        epoch = try r.read()
        copy = try r.read(UInt8.self) == 1
        guard let phase = Phase(rawValue: try r.read()) else { throw RecordDamage(problem: "has an unknown phase") }
        self.phase = phase
        done = Int(try r.read(UInt32.self))
        startedAt = try r.readDouble()
        var sources: [Source] = []
        for _ in 0..<(try r.read(UInt32.self)) {
            sources.append(Source(root: try r.readPrefixedString(), below: try r.readPrefixedString()))
        }
        self.sources = sources
        guard done <= sources.count, !sources.isEmpty else {
            throw RecordDamage(problem: "counts more trees done than it has")
        }
        // Jobs written before imports moved their tree into the staging area end here.
        if r.offset < r.buffer.count, try r.read(UInt8.self) == 1 { original = try r.readPrefixedString() }
    }
}

extension Keys {
    /// The key in `meta` of a domain's import job.
    static func importJob(_ domain: String) -> [UInt8] { Array("import/".utf8) + Keys.domain(domain) }
    static let importJobPrefix = Array("import/".utf8)
}

extension TransactionReading where Self: ~Copyable {
    func importJob(_ domain: String, _ dbs: Databases) throws -> ImportJobRecord? {
        try withValue(dbs.meta, key: Keys.importJob(domain)) {
            try ImportJobRecord(decoding: $0, name: "the import of \(RecordNames.domain(domain))")
        }
    }

    /// Every domain with an import job, and the job.
    func importJobs(_ dbs: Databases) throws -> [(domain: String, job: ImportJobRecord)] {
        var jobs: [(String, ImportJobRecord)] = []
        try scan(dbs.meta, prefix: Keys.importJobPrefix) { key, value in
            var reader = ByteReader(UnsafeRawBufferPointer(rebasing: key[Keys.importJobPrefix.count...]))
            guard let domain = try? reader.readPrefixedString() else { return true }
            jobs.append(
                (domain, try ImportJobRecord(decoding: value, name: "the import of \(RecordNames.domain(domain))")))
            return true
        }
        return jobs
    }
}

extension WriteTransaction {
    @available(*, noasync)
    mutating func saveImportJob(_ job: ImportJobRecord, of domain: String, _ dbs: Databases) throws {
        try put(dbs.meta, key: Keys.importJob(domain), value: job.encoded())
    }

    @available(*, noasync)
    mutating func deleteImportJob(of domain: String, _ dbs: Databases) throws {
        _ = try delete(dbs.meta, key: Keys.importJob(domain))
    }
}
