import FileIO
import Foundation
import LMDBKit

extension ChunkCache {
    /// Creates a domain, with an origin or without (then the store is its only copy).
    ///
    /// - Parameters:
    ///   - name: The domain's name, 1 to 255 bytes without NUL.
    ///   - origin: The authoritative remote copy of its items (<doc:Contract#10-Origins-the-cold-path>); `nil` for a
    ///     domain the store alone holds.
    ///   - headers: Sent with every origin request; their values are stored and never printed.
    ///   - pipelineDepth: Origin requests in flight per process, 1…128.
    ///   - readAhead: The largest sequential read-ahead window, 0…1 GiB.
    ///   - readTimeout: How long an origin request may send nothing before it fails (0.1 s…1 h); nil:
    ///     ``DomainInfo/defaultReadTimeout``.
    /// - Returns: The new domain, at domain version 1.
    /// - Throws: `fileExists` when the domain exists; `invalidArgument` for a setting out of range.
    public func addDomain(
        _ name: String, origin: Origin? = nil, headers: [OriginHeader] = [],
        pipelineDepth: Int = DomainInfo.defaultPipelineDepth, readAhead: Int64 = DomainInfo.defaultReadAhead,
        readTimeout: Duration? = nil
    ) async throws -> DomainInfo {
        try Records.validate(domain: name, item: nil)
        try DomainInfo.validate(
            pipelineDepth: pipelineDepth, readAhead: readAhead, readTimeout: readTimeout, headerCount: headers.count)
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in
                guard try !txn.contains(dbs.domains, key: Keys.domain(name)) else {
                    throw CacheError(
                        .fileExists,
                        "domain \"\(name)\" already exists; change it with `chunkcache domain set \(name) …` or pick another name"
                    )
                }
                var record = DomainRecord(version: 0, createdAt: Date().timeIntervalSince1970)
                record.origin = origin
                record.headers = headers
                record.pipelineDepth = pipelineDepth
                record.readAhead = readAhead
                record.readTimeout = readTimeout?.seconds
                _ = try txn.bump(&record, named: name, dbs)
                return try Self.info(name, record, in: txn, dbs)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "adding domain \"\(name)\"")
        }
    }

    /// Changes the settings given (a nil one stays as it is). Bumps the domain version when anything changed,
    /// which wakes the waiters of ``waitForDomainVersion(of:after:timeout:)`` (<doc:FileProviderRules#E2>).
    ///
    /// - Parameters:
    ///   - name: The domain.
    ///   - origin: A new origin.
    ///   - headers: Replaces all the headers; `[]` removes them.
    ///   - pipelineDepth: Origin requests in flight per process, 1…128.
    ///   - readAhead: The largest sequential read-ahead window, 0…1 GiB.
    ///   - readTimeout: How long an origin request may send nothing before it fails (0.1 s…1 h).
    ///   - changeHistory: How much of the change log to keep; what it no longer keeps is compacted with the
    ///     next change, and anchors before it expire.
    /// - Throws: `noSuchItem` for an unknown domain; `invalidArgument` for a setting out of range.
    public func setDomain(
        _ name: String, origin: Origin? = nil, headers: [OriginHeader]? = nil, pipelineDepth: Int? = nil,
        readAhead: Int64? = nil, readTimeout: Duration? = nil,
        changeHistory: ChangeHistory? = nil
    ) async throws -> DomainInfo {
        try Records.validate(domain: name, item: nil)
        try DomainInfo.validate(
            pipelineDepth: pipelineDepth, readAhead: readAhead, readTimeout: readTimeout,
            headerCount: headers?.count ?? 0)
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in
                let before = try txn.domainForChange(name, create: false, dbs)
                var record = before
                if let origin { record.origin = origin }
                if let headers { record.headers = headers }
                if let pipelineDepth { record.pipelineDepth = pipelineDepth }
                if let readAhead { record.readAhead = readAhead }
                if let readTimeout { record.readTimeout = readTimeout.seconds }
                if let changeHistory {
                    guard changeHistory.changes >= 1, changeHistory.seconds > 0 else {
                        throw CacheError(
                            .invalidArgument,
                            "a change history must keep at least 1 change for more than 0 seconds; give larger --keep-changes and --keep-for"
                        )
                    }
                    record.history = changeHistory
                }
                if !record.hasSameSettings(as: before) { _ = try txn.bump(&record, named: name, dbs) }
                return try Self.info(name, record, in: txn, dbs)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "changing domain \"\(name)\"")
        }
    }

    /// Every domain, sorted by name.
    public func domains() async throws -> [DomainInfo] {
        let store = self.store
        return try await runBlocking(doing: "listing the domains", store: store.path) { _ in
            try store.environment.read { txn in
                var records: [(String, DomainRecord)] = []
                try txn.scan(store.dbs.domains, prefix: []) { key, value in
                    var reader = ByteReader(key)
                    let name = (try? reader.readPrefixedString()) ?? ""
                    records.append((name, try DomainRecord(decoding: value, name: RecordNames.domain(name))))
                    return true
                }
                return try records.sorted { $0.0 < $1.0 }.map { try Self.info($0.0, $0.1, in: txn, store.dbs) }
            }
        }
    }

    /// Sets up now what the first download from `domain`'s origin would otherwise set up on its way: the
    /// origin session, and with it the HTTP client and the event-loop threads it runs on (about 10 ms, once
    /// per process), then one request to the origin (the first byte of a file the catalogue knows, whatever
    /// the origin answers), which opens the connection the first read will use and runs the client's code
    /// once (its first request costs milliseconds of one-time setup). Waits for that answer at most
    /// ``originWarmUpWait``; the request goes on behind. A mount calls it before it serves, so its first cold
    /// read costs its own request alone. Nothing happens for a local or unknown domain; an origin that cannot
    /// be set up or reached now (S3 credentials missing, say) is left for the first read to report.
    public func prepareOrigin(of domain: String) async {
        let engine = self.engine
        let store = engine.store
        let prepared = try? await runBlocking(doing: "preparing the origin of \(domain)", store: store.path) { _ in
            try store.environment.read { txn in
                let record = try Records.domain(domain, in: txn, store.dbs)
                return (
                    try engine.origins.session(for: domain, record), try Self.anyFile(of: domain, in: txn, store.dbs)
                )
            }
        }
        guard let (session, probe) = prepared, let session else { return }
        let warmUp = Task { await session.origin.warmUp(probing: probe) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await warmUp.value }
            group.addTask { try? await Task.sleep(for: Self.originWarmUpWait) }
            await group.next()
            group.cancelAll()
        }
    }

    /// The identifier of the first file of `domain` in key order, if it has one.
    private static func anyFile(of domain: String, in txn: borrowing ReadTransaction, _ dbs: Databases) throws
        -> String?
    {
        var found: String?
        try txn.scan(dbs.items, prefix: Keys.domain(domain)) { _, value in
            let item = try ItemRecord(decoding: value, name: RecordNames.domain(domain))
            if item.kind == .file { found = item.identifier }
            return found == nil
        }
        return found
    }

    /// How long ``prepareOrigin(of:)`` waits for its request: a round trip to any usable origin, not an
    /// unreachable one's connect timeout.
    public static let originWarmUpWait: Duration = .milliseconds(500)

    /// Removes a domain with its items, versions and manifests, releasing their chunks (a chunk another
    /// domain shares stays), in one transaction. The directory of a moving import still under way goes back
    /// to where the user had it: the store never held all of it.
    /// - Throws: `noSuchItem` for an unknown domain.
    public func removeDomain(_ name: String) async throws {
        try Records.validate(domain: name, item: nil)
        let dbs = store.dbs
        let job: ImportJobRecord?
        do {
            job = try await store.writer.write { txn in
                _ = try txn.domainForChange(name, create: false, dbs)
                let job = try txn.importJob(name, dbs)
                try txn.removeDomainRecords(name, dbs)
                try txn.deleteImportJob(of: name, dbs)
                _ = try txn.deleteTraces(of: name, dbs)
                try txn.setTracesEnabled(true, for: name, dbs)
                return job
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "removing domain \"\(name)\"")
        }
        if let job, let original = job.original, FileIdentity(ofPath: job.sources[0].root) != nil {
            store.diagnostics.attempt(
                "move \(job.sources[0].root) back to \(original), the directory domain \"\(name)\" was importing"
            ) { try FileSystem.rename(job.sources[0].root, to: original, options: .noReplace) }
        }
    }

    /// The public form of a domain, with what the store holds of it.
    private static func info<T: TransactionReading & ~Copyable>(
        _ name: String, _ record: DomainRecord, in txn: borrowing T, _ dbs: Databases
    ) throws -> DomainInfo {
        let prefix = Keys.domain(name)
        var items = 0
        try txn.scan(dbs.items, prefix: prefix) { _, _ in
            items += 1
            return true
        }
        var cached: Int64 = 0
        try txn.scan(dbs.versions, prefix: prefix) { key, value in
            let version = try VersionRecord(decoding: value, name: RecordNames.version(key: key, in: txn, dbs))
            cached += try cachedBytes(of: version, in: txn, dbs)
            return true
        }
        return DomainInfo(
            name: name, origin: record.origin, headerNames: record.headers.map(\.name),
            pipelineDepth: record.pipelineDepth,
            readAhead: record.readAhead,
            readTimeout: record.readTimeout.map { .seconds($0) } ?? DomainInfo.defaultReadTimeout,
            domainVersion: DomainVersion(rawValue: record.version), items: items,
            cachedBytes: cached, importFinished: record.importFinishedEpoch == record.importEpoch,
            changeHistory: record.history,
            importsFinished: Int(record.importsFinished))
    }
}

extension DomainRecord {
    /// True when the origin settings are the same: changing them to what they are is not a change.
    func hasSameSettings(as other: DomainRecord) -> Bool {
        origin == other.origin && headers == other.headers && pipelineDepth == other.pipelineDepth
            && readAhead == other.readAhead && readTimeout == other.readTimeout
            && history == other.history
    }
}
