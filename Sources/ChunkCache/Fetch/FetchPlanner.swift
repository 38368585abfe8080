import LMDBKit

extension VersionRecord {
    /// Whether `range` is the whole file: then zero chunks stay holes and a fetch says `knownSparseRanges`
    /// (<doc:Contract#3-Partial-fetch>), warm or cold.
    func isWhole(_ range: ByteRange) -> Bool { range.location == 0 && range.length == size }
}

/// Chooses the version and range of a fetch (<doc:Contract#3-Partial-fetch>–<doc:Contract#4-Full-fetch>), reading the
/// catalogue in one snapshot, and says what serves it or what is absent (``PlanOutcome``).
enum FetchPlanner {
    /// The range to retrieve for `minimal` in a file of `size` bytes (<doc:Contract#3-Partial-fetch>): both ends
    /// clamped to `[0, size]`, the start rounded down and the end rounded up to `max(alignment, chunkSize)`, the end
    /// capped at `size`.
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
            throw CacheError(
                .invalidArgument, "alignment \(alignment) is not a power of two from 1 to 2^30; use e.g. 4096")
        }
    }

    /// Plans a fetch: what serves it, or, on an origin domain, what the store lacks
    /// (<doc:Contract#10-Origins-the-cold-path>).
    ///
    /// - Parameters:
    ///   - minimal: The range asked for; `nil` for the whole file.
    ///   - requested: The content version asked for; `nil` for the newest.
    /// - Throws: `noSuchItem` for an unknown domain or an item ``MissingItem`` confirms gone,
    ///   `invalidArgument` for a folder or symlink, `noPermission` for a non-materializing process,
    ///   `versionNoLongerAvailable` when a strict fetch's version cannot serve, `corruptData` naming the lost
    ///   chunks when no allowed version can serve a non-strict fetch (<doc:FileProviderRules#C4>).
    static func plan<T: TransactionReading & ~Copyable>(
        engine: Engine, domain: String, item id: String, requested: [UInt8]?, minimal: ByteRange?, alignment: Int,
        options: FetchOptions, request: FetchRequest, in txn: borrowing T
    ) throws -> PlanOutcome {
        engine.plansMade.add(1, ordering: .relaxed)
        let store = engine.store
        let dbs = store.dbs
        let domainRecord = try Records.domain(domain, in: txn, dbs)
        if let process = request.requestingProcess, domainRecord.nonMaterializingProcesses.contains(process) {
            throw CacheError(
                .noPermission,
                "process \"\(process)\" may not materialize files of domain \"\(domain)\"; nothing was downloaded")
        }
        let itemKey = Keys.item(domain: domain, id: id)
        let strict = options.contains(.strictVersioning)
        if domainRecord.origin != nil, try !txn.contains(dbs.items, key: itemKey) {
            return .miss(.undiscovered(asked: requested, range: minimal))
        }
        let item = try Records.item(id, domain: domain, key: itemKey, in: txn, dbs)
        guard item.kind == .file else {
            throw CacheError(
                .invalidArgument, "item \"\(id)\" in domain \"\(domain)\" is a \(item.kind); only files have contents")
        }
        let versions = try Records.versions(ofItemKey: itemKey, in: txn, dbs)
        let order = candidateOrder(of: versions, requested: requested, strict: strict)
        let domainVersion = DomainVersion(rawValue: domainRecord.version)
        if domainRecord.origin != nil {
            return try planFromOrigin(
                versions, order: order, item: item, requested: requested, strict: strict, minimal: minimal,
                alignment: alignment, domain: domainRecord, in: txn, dbs)
        }
        if let first = order.first,
            let plan = try serving(
                versions[first], item: item, minimal: minimal, alignment: alignment, domainVersion: domainVersion,
                in: txn, dbs)
        {
            return .serve(plan)
        }
        for index in order.thenNewest {
            if let plan = try serving(
                versions[index], item: item, minimal: minimal, alignment: alignment, domainVersion: domainVersion,
                in: txn, dbs)
            {
                return .serve(plan)
            }
        }
        let asked = requested.map { "version \"\(String(decoding: $0, as: UTF8.self))\"" } ?? "the newest version"
        if strict {
            throw CacheError(
                .versionNoLongerAvailable,
                "\(asked) of item \"\(id)\" in domain \"\(domain)\" cannot serve \(minimal.map { "range \($0)" } ?? "the whole file") (strict versioning); fetch it without strict versioning, or put that version again"
            )
        }
        guard let lostIndex = order.first ?? order.thenNewest.first else {
            throw CacheError(
                .corruptData, "item \"\(id)\" in domain \"\(domain)\" has no content version; put the file again")
        }
        let lost = versions[lostIndex]
        let range = retrieved(minimal, of: lost, alignment: alignment)
        throw CacheError(
            .corruptData,
            "the store lost \(try lostChunks(of: lost, range: range, in: txn, dbs)) of version \"\(String(decoding: lost.contentVersion, as: UTF8.self))\" of item \"\(id)\" in domain \"\(domain)\" (range \(range)), and no newer version holds that range; run `chunkcache verify --repair`, then put the file again"
        )
    }

    /// Plans a fetch of an origin domain, where what the store lacks is read from the origin
    /// (<doc:Contract#10-Origins-the-cold-path>): the version the candidate order puts first serves when it holds the
    /// range, else it is filled (``Absence/chunks(version:range:item:domainVersion:domain:)``). A version the store
    /// does not know is asked of the origin (``Absence/undiscovered(pinned:range:refresh:)``), strict or not: the
    /// origin may hold it, and a stored version may be older than it, which must never serve
    /// (<doc:FileProviderRules#B6>).
    private static func planFromOrigin<T: TransactionReading & ~Copyable>(
        _ versions: [VersionRecord], order: (first: Int?, thenNewest: Range<Int>), item: ItemRecord,
        requested: [UInt8]?,
        strict: Bool, minimal: ByteRange?, alignment: Int, domain: DomainRecord, in txn: borrowing T,
        _ dbs: Databases
    ) throws -> PlanOutcome {
        let domainVersion = DomainVersion(rawValue: domain.version)
        if requested != nil && order.first == nil {
            return .miss(.undiscovered(asked: requested, range: minimal, refresh: true))
        }
        if let first = order.first {
            let version = versions[first]
            if var plan = try serving(
                version, item: item, minimal: minimal, alignment: alignment, domainVersion: domainVersion, in: txn, dbs)
            {
                plan.fromOrigin = true
                return .serve(plan)
            }
            return .miss(
                .chunks(
                    ColdPlan(
                        version: version, range: retrieved(minimal, of: version, alignment: alignment), item: item,
                        domainVersion: domainVersion, domain: domain)))
        }
        for index in order.thenNewest {
            if var plan = try serving(
                versions[index], item: item, minimal: minimal, alignment: alignment, domainVersion: domainVersion,
                in: txn, dbs)
            {
                plan.fromOrigin = true
                return .serve(plan)
            }
        }
        return .miss(.undiscovered(asked: requested, range: minimal))
    }

    /// Which versions may serve a fetch, in the order they are tried (<doc:Contract#7-Command-line> "Which version
    /// serves a fetch", <doc:FileProviderRules#B6>): indices into `versions`, which is newest first.
    ///
    /// - `first`: the requested version when the store knows it; the newest when none was requested.
    /// - `thenNewest`: tried after `first`, newest first. Without strict versioning these are the versions
    ///   newer than the requested one, or every version when the requested one is unknown (gone). Never an
    ///   older one, and nothing after the newest when none was requested.
    static func candidateOrder(of versions: [VersionRecord], requested: [UInt8]?, strict: Bool) -> (
        first: Int?, thenNewest: Range<Int>
    ) {
        guard let requested else { return (versions.isEmpty ? nil : 0, 0..<0) }
        guard let index = versions.firstIndex(where: { $0.contentVersion == requested }) else {
            return (nil, strict ? 0..<0 : versions.indices)
        }
        return (index, strict ? 0..<0 : 0..<index)
    }

    /// The plan that serves `cold` now the store holds it, or nil when a chunk of its range is absent again
    /// (evicted or damaged since the fill): only the version's manifest is read, nothing is planned again.
    static func holding<T: TransactionReading & ~Copyable>(_ cold: ColdPlan, in txn: borrowing T, _ dbs: Databases)
        throws -> FetchPlan?
    {
        guard let zeros = try availability(of: cold.version, range: cold.range, in: txn, dbs) else { return nil }
        var plan = FetchPlan(
            item: cold.item, version: cold.version, retrieved: cold.range, hasZeroChunks: zeros,
            domainVersion: cold.domainVersion)
        plan.fromOrigin = true
        return plan
    }

    /// Whether the store still holds every chunk of `plan`'s range (a plan made in an earlier snapshot).
    static func stillHolds<T: TransactionReading & ~Copyable>(_ plan: FetchPlan, in txn: borrowing T, _ dbs: Databases)
        throws -> Bool
    {
        try availability(of: plan.version, range: plan.retrieved, in: txn, dbs) != nil
    }

    /// The plan for serving the fetch from `version`, or nil when a chunk of its range is absent.
    private static func serving<T: TransactionReading & ~Copyable>(
        _ version: VersionRecord, item: ItemRecord, minimal: ByteRange?, alignment: Int, domainVersion: DomainVersion,
        in txn: borrowing T, _ dbs: Databases
    ) throws -> FetchPlan? {
        let range = retrieved(minimal, of: version, alignment: alignment)
        guard let zeros = try availability(of: version, range: range, in: txn, dbs) else { return nil }
        return FetchPlan(
            item: item, version: version, retrieved: range, hasZeroChunks: zeros, domainVersion: domainVersion)
    }

    /// The range a fetch of `minimal` (nil: the whole file) retrieves from `version`.
    static func retrieved(_ minimal: ByteRange?, of version: VersionRecord, alignment: Int) -> ByteRange {
        minimal.map { version.layout.retrievedRange(for: $0, aligningTo: Int64(alignment), length: version.size) }
            ?? ByteRange(location: 0, length: version.size)
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
            case .stored, .filled: break
            }
        }
        return zeros
    }

    /// The most lost chunks an error message lists one by one.
    static let listedLostChunks = 8

    /// The absent chunks of `range` in `version`, as an error message names them: "chunk 3 (hash)", the first
    /// ``listedLostChunks`` of them, then how many more.
    private static func lostChunks<T: TransactionReading & ~Copyable>(
        of version: VersionRecord, range: ByteRange, in txn: borrowing T, _ dbs: Databases
    ) throws -> String {
        guard range.length > 0 else { return "no chunk" }
        let layout = version.layout
        var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
        var listed: [String] = []
        var count = 0
        for index in (range.location >> layout.shift)...((range.end - 1) >> layout.shift) {
            guard case .absent(let digest) = try cursor.entry(index, in: txn) else { continue }
            count += 1
            if listed.count < listedLostChunks { listed.append("chunk \(index)" + (digest.map { " (\($0))" } ?? "")) }
        }
        let more = count > listed.count ? " and \(count - listed.count) more" : ""
        return listed.joined(separator: ", ") + more
    }
}
