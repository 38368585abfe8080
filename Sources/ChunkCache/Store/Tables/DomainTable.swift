import Foundation
import LMDBKit

// The table of domains, `domains`: domain name → ``DomainRecord``; and what goes with a domain's records.

extension WriteTransaction {
    /// Loads a domain for a change, creating it (version 0, bumped to 1 by the change) when `create`.
    @available(*, noasync)
    mutating func domainForChange(_ name: String, create: Bool, _ dbs: Databases) throws -> DomainRecord {
        if let domain = try withValue(
            dbs.domains, key: Keys.domain(name), { try DomainRecord(decoding: $0, name: RecordNames.domain(name)) })
        {
            return domain
        }
        guard create else { return try Records.domain(name, in: self, dbs) }
        return DomainRecord(version: 0, createdAt: Date().timeIntervalSince1970)
    }

    /// Writes a domain's record.
    @available(*, noasync)
    mutating func saveDomain(_ record: DomainRecord, named name: String, _ dbs: Databases) throws {
        try put(dbs.domains, key: Keys.domain(name), value: record.encoded())
    }

    /// Bumps the domain's version and saves it, for a change to the domain's own record (its settings) that
    /// logs no item change; once the transaction commits, the waiters are woken (<doc:FileProviderRules#E2>,
    /// ``ChangeSignal``).
    @available(*, noasync)
    mutating func bump(_ domain: inout DomainRecord, named name: String, _ dbs: Databases) throws -> DomainVersion {
        dbs.changeMarks.mark()
        domain.version += 1
        try saveDomain(domain, named: name, dbs)
        return DomainVersion(rawValue: domain.version)
    }

    /// Deletes a domain's record, items, versions (releasing their chunks), change log and listing entries.
    @available(*, noasync)
    mutating func removeDomainRecords(_ name: String, _ dbs: Databases) throws {
        dbs.changeMarks.mark()  // its waiters of changes learn at once that it is gone
        let prefix = Keys.domain(name)
        try dropVersions(under: prefix, dbs)
        try deleteAll(under: prefix, in: dbs.items)
        try deleteAll(under: prefix, in: dbs.changes)
        try deleteAll(under: prefix, in: dbs.listing)
        try deleteAll(under: ReadPositions.keys(ofDomain: name), in: dbs.meta)
        _ = try delete(dbs.domains, key: prefix)
    }

    /// Deletes every record of `domainKey` in `db` (a domain's change log or listing entries).
    @available(*, noasync)
    mutating func deleteAll(under domainKey: [UInt8], in db: Database) throws {
        var keys: [[UInt8]] = []
        try scan(db, prefix: domainKey) { key, _ in
            keys.append(Array(key))
            return true
        }
        for key in keys { _ = try delete(db, key: key) }
    }
}
