import Foundation
import LMDBKit

/// An import or reimport under way, persisted so a crash at any point resumes where it was (CONTRACT §8):
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

    /// Starts importing `root` into the new domain `domain`: creates the domain (its import unfinished)
    /// and the job, in one transaction. With a `staging` path the job walks the tree there, once it is
    /// moved (a moving import); without one it reads `root` in place and leaves it (`--copy`).
    /// - Throws: `fileExists` when the domain exists.
    @available(*, noasync)
    mutating func beginImport(
        _ domain: String, from root: String, staging: String?, writer: WriterToken, _ dbs: Databases
    ) throws -> ImportJobRecord {
        guard try !contains(dbs.domains, key: Keys.domain(domain)) else {
            throw CacheError(.fileExists, "domain \"\(domain)\" already exists; import into a new domain name")
        }
        // Version 0 until the first batch publishes (version 1, the whole of a small tree) or the import ends.
        var record = DomainRecord(version: 0, createdAt: Date().timeIntervalSince1970)
        record.importEpoch = 1
        try put(dbs.domains, key: Keys.domain(domain), value: record.encoded())
        let job = ImportJobRecord(
            writer: writer, epoch: 1, copy: staging == nil, phase: .importing,
            sources: [.init(root: staging ?? root, below: Item.rootContainer)], done: 0, startedAt: record.createdAt,
            original: staging == nil ? nil : root)
        try saveImportJob(job, of: domain, dbs)
        return job
    }

    /// Asks for `root` to be taken in again below `below`: joins the import under way, whose one
    /// `importDidFinish` then covers both (G4), or starts a new epoch. Returns the job and whether it joined
    /// one under way.
    @available(*, noasync)
    mutating func beginReimport(
        _ domain: String, from root: String, below: String, writer: WriterToken, _ dbs: Databases
    ) throws -> (ImportJobRecord, Bool) {
        var record = try Records.domain(domain, in: self, dbs)
        let source = ImportJobRecord.Source(root: root, below: below)
        if var job = try importJob(domain, dbs), job.phase == .importing {
            if !job.sources[job.done...].contains(source) { job.sources.append(source) }
            try saveImportJob(job, of: domain, dbs)
            return (job, true)
        }
        record.importEpoch += 1
        try put(dbs.domains, key: Keys.domain(domain), value: record.encoded())
        let job = ImportJobRecord(
            writer: writer, epoch: record.importEpoch, copy: true, phase: .importing, sources: [source],
            done: 0, startedAt: Date().timeIntervalSince1970)
        try saveImportJob(job, of: domain, dbs)
        return (job, false)
    }

    /// Records that the job's epoch finished, once (G4): a second call for the same epoch changes nothing.
    /// Returns whether this call recorded it.
    @available(*, noasync)
    mutating func finishImport(_ domain: String, epoch: UInt64, _ dbs: Databases) throws -> Bool {
        var record = try Records.domain(domain, in: self, dbs)
        guard record.importFinishedEpoch < epoch else { return false }
        record.importFinishedEpoch = epoch
        record.importsFinished += 1
        if record.version == 0 {  // an empty tree: the domain's first version, signalled as any bump (E2)
            record.version = DomainVersion.initial.rawValue
            dbs.changeMarks.mark()
        }
        try put(dbs.domains, key: Keys.domain(domain), value: record.encoded())
        return true
    }
}
