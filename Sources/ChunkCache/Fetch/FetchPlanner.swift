import LMDBKit

/// What a fetch will serve: one version of one item, and the aligned range of it.
struct FetchPlan: Sendable {
    let item: ItemRecord
    let version: VersionRecord
    let retrieved: ByteRange
    /// The retrieved range is the whole file: zero chunks stay holes.
    var wholeFile: Bool { retrieved.location == 0 && retrieved.length == version.size }
    /// The retrieved range holds at least one zero chunk.
    let hasZeroChunks: Bool
    let domainVersion: DomainVersion
}


/// Chooses the version and range of a fetch (CONTRACT §3–§4), reading the catalog in one snapshot.
enum FetchPlanner {
    /// The range to retrieve for `minimal` in a file of `size` bytes (§3): both ends clamped to `[0, size]`,
    /// the start rounded down and the end rounded up to `max(alignment, chunkSize)`, the end capped at `size`.
    static func retrievedRange(for minimal: ByteRange, alignment: Int64, chunkSize: Int64, size: Int64) -> ByteRange {
        let start = min(max(minimal.location, 0), size)
        let (rawEnd, overflow) = minimal.location.addingReportingOverflow(minimal.length)
        let end = max(start, min(max(overflow ? Int64.max : rawEnd, 0), size))
        let unit = max(alignment, chunkSize)
        let lower = start / unit * unit
        let upper = min((end + unit - 1) / unit * unit, size)
        return ByteRange(location: lower, length: max(0, upper - lower))
    }

    /// Checks an alignment: a power of two from 1 to 2^30.
    static func validate(alignment: Int) throws(CacheError) {
        guard alignment > 0, alignment <= 1 << 30, alignment & (alignment - 1) == 0 else {
            throw CacheError(.invalidArgument, "alignment \(alignment) is not a power of two from 1 to 2^30; use e.g. 4096")
        }
    }

    /// Plans a fetch.
    ///
    /// - Parameters:
    ///   - minimal: The range asked for; `nil` for the whole file.
    ///   - requested: The content version asked for; `nil` for the newest.
    /// - Throws: `noSuchItem` for an unknown domain or item, `invalidArgument` for a folder or symlink,
    ///   `noPermission` for a non-materializing process, `versionNoLongerAvailable` when no version can serve.
    static func plan<T: TransactionReading & ~Copyable>(
        store: Store, domain: String, item id: String, requested: [UInt8]?, minimal: ByteRange?, alignment: Int,
        options: FetchOptions, request: FetchRequest, in txn: borrowing T
    ) throws -> FetchPlan {
        let dbs = store.dbs
        do {
            let domainRecord = try Catalog.domain(domain, in: txn, dbs)
            if let process = request.requestingProcess, domainRecord.nonMaterializingProcesses.contains(process) {
                throw CacheError(.noPermission, "process \"\(process)\" may not materialize files of domain \"\(domain)\"; nothing was downloaded")
            }
            let itemKey = Keys.item(domain: domain, id: id)
            let item = try Catalog.item(id, domain: domain, key: itemKey, in: txn, dbs)
            guard item.kind == .file else {
                throw CacheError(.invalidArgument, "item \"\(id)\" in domain \"\(domain)\" is a \(item.kind); only files have contents")
            }
            let versions = try Catalog.versions(ofItemKey: itemKey, in: txn, dbs)
            let strict = options.contains(.strictVersioning)
            var candidates = versions
            if let requested {
                let match = versions.filter { $0.contentVersion == requested }
                candidates = strict ? match : match + versions.filter { $0.contentVersion != requested }
            }
            for version in candidates {
                let range = minimal.map {
                    version.layout.retrievedRange(for: $0, aligningTo: Int64(alignment), length: version.size)
                } ?? ByteRange(location: 0, length: version.size)
                if let zeros = try availability(of: version, range: range, in: txn, dbs) {
                    return FetchPlan(item: item, version: version, retrieved: range, hasZeroChunks: zeros,
                                     domainVersion: DomainVersion(rawValue: domainRecord.version))
                }
            }
            let asked = requested.map { "version \"\(String(decoding: $0, as: UTF8.self))\"" } ?? "any version"
            throw CacheError(.versionNoLongerAvailable,
                "\(asked) of item \"\(id)\" in domain \"\(domain)\" is not available in the cache for that range\(strict ? " (strict)" : ""); fetch it without --strict or put it again")
        }
    }

    /// Whether every chunk of `range` is in the cache: nil when one is absent, else whether any is a zero chunk.
    private static func availability<T: TransactionReading & ~Copyable>(
        of version: VersionRecord, range: ByteRange, in txn: borrowing T, _ dbs: Databases
    ) throws -> Bool? {
        guard range.length > 0 else { return false }
        let layout = version.layout
        var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
        var zeros = false
        let first = range.location >> layout.shift
        let last = (range.end - 1) >> layout.shift
        for index in first...last {
            switch try cursor.entry(index, in: txn) {
            case .absent: return nil
            case .zero: zeros = true
            case .stored: break
            }
        }
        return zeros
    }
}
