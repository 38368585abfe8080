import Dispatch
import FileIO
import Foundation
import LMDBKit
import OriginKit

/// What a fetch tells the cold path about itself.
struct ColdRequest: Sendable {
    let item: ItemIdentifier
    let strict: Bool
    /// The range asked for; nil for the whole file.
    let minimal: ByteRange?
    let alignment: Int
    let counters: DownloadProgress
    /// The fetch returns a hand-off file and may take its bytes before they are stored (``DirectBytes``).
    let handOver: Bool
    /// The fetch's claim on what it downloads, which eviction spares until the fetch ends.
    let claim: UnreadDownloads.Claim

    init(item: ItemIdentifier, strict: Bool, minimal: ByteRange?, alignment: Int, progress: DownloadProgress?, handOver: Bool = false,
         downloads: UnreadDownloads) {
        self.handOver = handOver
        claim = downloads.claim()
        self.item = item
        self.strict = strict
        self.minimal = minimal
        self.alignment = alignment
        counters = progress ?? DownloadProgress()
    }
}

/// The bytes a fetch served, for the read-ahead that follows it.
protocol ServedBytes {
    var servedItem: Item { get }
    var servedRange: Range<Int64> { get }
    /// Served from an origin domain: only those have read-ahead.
    var fromOriginDomain: Bool { get }
}

extension FetchResult: ServedBytes {
    var servedItem: Item { item }
    var servedRange: Range<Int64> { retrievedRange.location..<retrievedRange.end }
}

extension ChunkCache {
    /// Waits until every download this process started from an origin is stored.
    ///
    /// A fetch of a small cold range returns its bytes as soon as they arrive and stores the chunks behind it
    /// (read-ahead stores behind too): call this before the process exits so what was downloaded is kept
    /// (what is not is downloaded again next time; the store is never damaged).
    public func waitForDownloads() async {
        await store.origins.waitUntilStored()
    }

    /// Runs `attempt` (a fetch from the store) and, while it misses on an origin domain, fills what it lacks
    /// from the origin and runs it again, with the version the origin named when it discovered one. A
    /// hand-off of a small range whose every chunk this fetch downloads is written from the downloaded bytes
    /// at once, the chunks stored behind it (``DirectBytes``).
    ///
    /// - Parameter firstMiss: What a first attempt, made by the caller, lacked.
    func throughOrigin(
        _ request: ColdRequest, version: [UInt8]?, firstMiss: ColdMiss? = nil,
        _ attempt: @Sendable ([UInt8]?) async throws -> FetchResult
    ) async throws -> FetchResult {
        var version = version
        var readAheadDone = false
        var miss = firstMiss
        var rounds = ColdRounds(item: request.item)
        // Eviction spares what this fetch downloads until it has read it (PolicyProtection). A warm fetch
        // never went to the origin and holds nothing: it takes no lock here.
        defer { if rounds.wentToOrigin { request.claim.end() } }
        while true {
            if let pending = miss {
                miss = nil
                try rounds.count(pending)
                switch try await coldFill(pending, request, readAheadDone: &readAheadDone) {
                case .planAgain: break
                case .serve(let discovered): version = discovered
                case .moveOn: miss = .discover(pinned: nil, range: request.minimal, refresh: true)
                case .handOver(let bytes, let filled):
                    let served = try handOff(bytes, filled)
                    if !readAheadDone { readAhead(after: served, request.item) }
                    return served
                }
                continue
            }
            do {
                let served = try await attempt(version)
                if !readAheadDone { readAhead(after: served, request.item) }
                return served
            } catch let cold as ColdMiss {
                miss = cold
            }
        }
    }

    /// Writes downloaded bytes into a new hand-off file, at their own offsets in a file of the item's size.
    /// Bounded work (at most ``FetchThresholds/inlineBytes``) on the calling thread, as warm hand-offs are.
    private func handOff(_ bytes: [UInt8], _ filled: FilledRange) throws -> FetchResult {
        let store = self.store
        do {
            let (file, path) = try HandOff.createUniqueFile(in: store.tmpPath, prefix: "fetch-")
            var keep = false
            defer {
                try? file.close()
                if !keep { try? FileSystem.unlink(path) }
            }
            try file.resize(to: filled.version.size)
            let flags = try bytes.withUnsafeBytes { try Self.write($0, of: filled, to: file) }
            keep = true
            store.usage.noteUse(of: ItemIdentifier(domain: filled.domain, filled.item.identifier), recorded: filled.item.lastUsedDate, store: store)
            return FetchResult(
                url: URL(fileURLWithPath: path, isDirectory: false),
                item: Records.publicItem(filled.item, domain: filled.domain, version: filled.version), retrievedRange: filled.range,
                flags: flags, owner: .caller, domainVersion: filled.domainVersion, cloneStrategy: nil, fromOriginDomain: true)
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "writing the downloaded range of \(filled.item.identifier)")
        }
    }

    /// Writes a filled range's bytes at their offsets, by the warm path's rule (CONTRACT §3): when the range is
    /// the whole file its zero chunks stay holes and the result says `knownSparseRanges`; inside any other
    /// range every byte is written.
    private static func write(_ bytes: UnsafeRawBufferPointer, of filled: FilledRange, to file: FileDescriptor) throws -> MaterializationFlags {
        guard filled.version.isWhole(filled.range) else {
            try file.writeAll(toAbsoluteOffset: filled.range.location, bytes)
            return []
        }
        var flags: MaterializationFlags = []
        let chunkSize = filled.version.layout.chunkSize
        for start in stride(from: 0, to: bytes.count, by: chunkSize) {
            let chunk = UnsafeRawBufferPointer(rebasing: bytes[start..<min(start + chunkSize, bytes.count)])
            if isAllZero(chunk) {
                flags = .knownSparseRanges
            } else {
                try file.writeAll(toAbsoluteOffset: Int64(start), chunk)
            }
        }
        return flags
    }

    /// A range filled from the origin, for a hand-off written from its bytes.
    struct FilledRange: Sendable {
        let domain: String
        let item: ItemRecord
        let version: VersionRecord
        let range: ByteRange
        let domainVersion: DomainVersion
    }

    /// What a fetch does after a fill.
    enum ColdStep: Sendable {
        /// The range's bytes, downloaded by this fetch: written to its hand-off while they are stored.
        case handOver([UInt8], FilledRange)
        /// Plan again with the same version.
        case planAgain
        /// Plan again with this version, the one the origin holds.
        case serve([UInt8])
        /// The origin moved on from the version being filled: discover the one it holds now (non-strict).
        case moveOn
    }

    /// Fills one miss from the origin, mapping the origin's failures to the errors CONTRACT §10 names.
    func coldFill(_ miss: ColdMiss, _ request: ColdRequest, readAheadDone: inout Bool) async throws -> ColdStep {
        let store = self.store
        let item = request.item
        let session = try originSession(of: item.domain)
        let fill = ColdFill(store: store, session: session, item: item.rawValue, counters: request.counters)
        do {
            switch miss {
            case .discover(let pinned, let minimal, let refresh):
                guard let found = try await fill.discover(
                    pinned: pinned, minimal: minimal, alignment: request.alignment, refresh: refresh, direct: request.handOver)
                else { return .planAgain }
                guard let (range, bytes) = found.handedOver else { return .serve(found.version.contentVersion) }
                return .handOver(bytes, FilledRange(domain: item.domain, item: found.item, version: found.version, range: range,
                                                    domainVersion: found.domainVersion))
            case .fill(let version, let range, let record, let domainVersion):
                request.claim.protect(version, range)
                var ahead: Range<Int64>?
                if !readAheadDone {
                    ahead = advanceReadAhead(in: session, item, fetching: range.location..<range.end, size: version.size)
                    readAheadDone = true
                }
                guard let bytes = try await fill.fill(version, range: range, ahead: ahead, direct: request.handOver) else { return .planAgain }
                return .handOver(bytes, FilledRange(domain: item.domain, item: record, version: version, range: range, domainVersion: domainVersion))
            case .replace(let version, let index, let digest):
                try await fill.replace(version, index: index, digest: digest)
                return .planAgain
            }
        } catch let failure as OriginFailure {
            if case .versionChanged = failure, !request.strict { return .moveOn }
            if case .notFound = failure {
                try await store.writer.write { txn in try txn.removeGoneItem(domain: item.domain, item: item.rawValue, store.dbs) }
            }
            throw CacheError.origin(failure, item: item.rawValue, domain: item.domain, strict: request.strict)
        } catch is CancellationError {
            // Either this fetch was cancelled, or another fetch cancelled a download this one waited for.
            if Task.isCancelled { throw CacheError(.userCancelled, "the fetch of \(item) was cancelled") }
            return .planAgain
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "fetching \(item) from its origin")
        }
    }

    /// Records a fetch of `range` of `item` in its session's read-ahead (``ReadAhead``) and returns what to
    /// download after it. A process that has no state for the item continues from the position the last
    /// reader left in the store, and each new position is noted for the next (``ReadPositions``).
    private func advanceReadAhead(in session: OriginSession, _ item: ItemIdentifier, fetching range: Range<Int64>, size: Int64) -> Range<Int64>? {
        let store = self.store
        let step = session.readAhead(item.rawValue, fetching: range, size: size) {
            try? store.environment.read { txn in try txn.readPosition(of: item, store.dbs) }
        }
        if let moved = step.moved { store.usage.noteReadPosition(of: item, moved, store: store) }
        return step.ahead
    }

    /// The origin session of `domain`.
    func originSession(of domain: String) throws -> OriginSession {
        let store = self.store
        let record = try store.environment.read { txn in try Records.domain(domain, in: txn, store.dbs) }
        guard let session = try store.origins.session(for: domain, record) else {
            throw CacheError(.transient, "domain \"\(domain)\" lost its origin while a fetch ran; retry")
        }
        return session
    }

    /// Records a served fetch for its item's read-ahead and starts downloading what comes next, without
    /// waiting for it. The chunks are claimed before this returns, so the next fetch finds them in flight
    /// instead of asking for them again. Only items of origin domains have read-ahead.
    func readAhead(after served: some ServedBytes, _ item: ItemIdentifier) {
        guard served.fromOriginDomain,
              let session = store.origins.sessionForReadAhead(item.domain, make: { try originSession(of: item.domain) }),
              let ahead = advanceReadAhead(in: session, item, fetching: served.servedRange, size: served.servedItem.documentSize)
        else { return }
        let store = self.store
        let contentVersion = served.servedItem.itemVersion.contentVersion
        Diagnostics.attempt("read ahead in \(item)") {
            let key = Keys.version(itemKey: Keys.item(domain: item.domain, id: item.rawValue), contentVersion: contentVersion)
            let version = try store.environment.read { txn in
                try txn.withValue(store.dbs.versions, key: key) { try VersionRecord(decoding: $0, name: "a version of \(item)") }
            }
            let fill = ColdFill(store: store, session: session, item: item.rawValue, counters: DownloadProgress())
            if let version { try fill.prefetch(version, ahead: ahead) }
        }
    }

}

/// How many times one fetch went to its origin, and when it gives up (as `transient`).
///
/// Discoveries and version changes: a discovery, a fill and a new version when the origin moves on take
/// three; more means the file keeps changing there. Fills of a known version: a fetch reads what it
/// downloaded from the store, and another process's eviction can take it in between (this process's own
/// spares it, ``PolicyProtection``), so fills get more tries; running out of them means the store's bound
/// is too small for the reads running at once.
struct ColdRounds {
    let item: ItemIdentifier
    private var changes = 0
    private var fills = 0

    /// Whether the fetch filled or discovered from its origin, so may hold a claim on what it downloaded.
    var wentToOrigin: Bool { changes + fills > 0 }

    static let maxChanges = 3
    static let maxFills = 16

    init(item: ItemIdentifier) { self.item = item }

    mutating func count(_ miss: ColdMiss) throws(CacheError) {
        if case .fill = miss {
            fills += 1
            guard fills <= Self.maxFills else {
                throw CacheError(.transient,
                    "what this fetch downloaded of item \(item) was evicted before it could be read, \(Self.maxFills) times: the store's bound (init --max-size, --min-free) is too small for the reads running at once; raise it, then retry")
            }
        } else {
            changes += 1
            guard changes <= Self.maxChanges else {
                throw CacheError(.transient, "item \(item) kept changing at its origin while it was fetched; retry")
            }
        }
    }
}
