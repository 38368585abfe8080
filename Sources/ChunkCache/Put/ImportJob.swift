import Foundation
import LMDBKit

extension WriteTransaction {
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
        try saveDomain(record, named: domain, dbs)
        let job = ImportJobRecord(
            writer: writer, epoch: 1, copy: staging == nil, phase: .importing,
            sources: [.init(root: staging ?? root, below: Item.rootContainer)], done: 0, startedAt: record.createdAt,
            original: staging == nil ? nil : root)
        try saveImportJob(job, of: domain, dbs)
        return job
    }

    /// Asks for `root` to be taken in again below `below`: joins the import under way, whose one
    /// `importDidFinish` then covers both (<doc:FileProviderRules#G4>), or starts a new epoch. Returns the job and
    /// whether it joined one under way.
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
        try saveDomain(record, named: domain, dbs)
        let job = ImportJobRecord(
            writer: writer, epoch: record.importEpoch, copy: true, phase: .importing, sources: [source],
            done: 0, startedAt: Date().timeIntervalSince1970)
        try saveImportJob(job, of: domain, dbs)
        return (job, false)
    }

    /// Records that the job's epoch finished, once (<doc:FileProviderRules#G4>): a second call for the same epoch
    /// changes nothing. Returns whether this call recorded it.
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
        try saveDomain(record, named: domain, dbs)
        return true
    }
}
