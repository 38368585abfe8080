import FileIO
import Foundation
import LMDBKit

extension ChunkCache {

    /// One content version of an item, as `versions` lists it.
    public struct VersionInfo: Sendable, Hashable {
        public var contentVersion: String
        public var size: Int64
        public var createdAt: Date
        /// Bytes of this version the cache holds (zero chunks count as held).
        public var cachedBytes: Int64
    }

    /// The item (at its newest version) and all its versions, newest first. An item of an origin domain that
    /// the store does not hold yet is asked of the origin (`HEAD`, <doc:Contract#10-Origins-the-cold-path>) and
    /// recorded, none of its bytes downloaded.
    /// - Throws: `noSuchItem` for an unknown domain or item (of an origin domain: only on the origin's 404
    ///   or 410), the origin's errors as a fetch maps them.
    public func versions(of item: ItemIdentifier) async throws -> (item: Item, versions: [VersionInfo]) {
        try Records.validate(domain: item.domain, item: item.rawValue)
        try await discoverByHead(item)
        let store = self.store
        return try await runBlocking(doing: "listing the versions of \(item)", store: store.path) { _ in
            try store.environment.read { txn in
                _ = try Records.domain(item.domain, in: txn, store.dbs)
                let record = try Records.item(item.rawValue, domain: item.domain, in: txn, store.dbs)
                let versions = try Records.versions(ofItem: item.rawValue, domain: item.domain, in: txn, store.dbs)
                let infos = try versions.map { version in
                    VersionInfo(
                        contentVersion: String(decoding: version.contentVersion, as: UTF8.self), size: version.size,
                        createdAt: Date(timeIntervalSince1970: version.createdAt),
                        cachedBytes: try cachedBytes(of: version, in: txn, store.dbs))
                }
                return (Records.publicItem(record, domain: item.domain, version: versions.first), infos)
            }
        }
    }

    /// Says which processes may not materialize the domain's files (exact, case-sensitive names); their
    /// fetches get `noPermission` and download nothing. Bumps the domain version (<doc:FileProviderRules#E3>), which
    /// wakes the waiters of ``waitForDomainVersion(of:after:timeout:)`` (<doc:FileProviderRules#E2>).
    public func setNonMaterializingProcesses(_ names: [String], forDomain domain: String) async throws -> DomainVersion
    {
        try Records.validate(domain: domain, item: nil)
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in
                var record = try txn.domainForChange(domain, create: false, dbs)
                record.nonMaterializingProcesses = names
                return try txn.bump(&record, named: domain, dbs)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "updating domain \"\(domain)\"")
        }
    }

    /// The domain's current version.
    /// - Throws: `noSuchItem` for an unknown domain.
    public func domainVersion(of domain: String) throws -> DomainVersion {
        do {
            return try store.environment.read { txn in
                DomainVersion(rawValue: try Records.domain(domain, in: txn, store.dbs).version)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "reading domain \"\(domain)\"")
        }
    }

    /// Waits until `domain`'s version passes `version`, or `timeout` passes: the working-set signal of
    /// <doc:FileProviderRules#E2> (the seed's `signalEnumerator(for: .workingSet)` after each bump). Every bump wakes
    /// it, from any process: a change to the domain's items and a change of its settings
    /// (``setDomain(_:origin:headers:pipelineDepth:readAhead:readTimeout:changeHistory:)``,
    /// ``setNonMaterializingProcesses(_:forDomain:)``) alike. The wait holds no thread.
    ///
    /// ```swift
    /// var seen = try cache.domainVersion(of: "docs")
    /// while let next = try await cache.waitForDomainVersion(of: "docs", after: seen, timeout: .seconds(60)) {
    ///     // … read the changes, or the settings, again …
    ///     seen = next
    /// }
    /// ```
    /// - Returns: The domain's version, greater than `version`; nil once `timeout` has passed without a bump.
    /// - Throws: `noSuchItem` for an unknown domain, or one removed while waiting; `userCancelled`.
    public func waitForDomainVersion(of domain: String, after version: DomainVersion, timeout: Duration)
        async throws -> DomainVersion?
    {
        try Records.validate(domain: domain, item: nil)
        let store = self.store
        return try await engine.changes.wait(for: "a new version of domain \"\(domain)\"", until: .now + timeout) {
            let current = try await runBlocking(doing: "reading domain \"\(domain)\"", store: store.path) {
                try store.environment.read { txn in try Records.domain(domain, in: txn, store.dbs).version }
            }
            return current > version.rawValue ? DomainVersion(rawValue: current) : nil
        }
    }
}

/// Bytes of `version` the store holds: all but its absent chunks.
func cachedBytes<T: TransactionReading & ~Copyable>(of version: VersionRecord, in txn: borrowing T, _ dbs: Databases)
    throws -> Int64
{
    let layout = version.layout
    let chunks = layout.chunkCount(forLength: version.size)
    guard chunks > 0 else { return 0 }
    var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
    // Every chunk is whole but the last: count the others' tags, then look at the last one's entry.
    let missing = try cursor.absentCount(0..<(chunks - 1), in: txn) * Int64(layout.chunkSize)
    let last: Int64
    if case .absent = try cursor.entry(chunks - 1, in: txn) {
        last = layout.range(ofChunk: chunks - 1, length: version.size).length
    } else {
        last = 0
    }
    return version.size - missing - last
}
