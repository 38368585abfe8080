import Foundation
import OriginKit
import SigV4
import Synchronization

/// What this process keeps per origin domain of a store: the origin client, the limit on requests in flight,
/// the downloads in flight and each item's read-ahead.
final class OriginSession: Sendable {
    let domain: String
    let settings: Settings
    let origin: any RemoteOrigin
    /// At most `--pipeline-depth` requests in flight (<doc:Contract#10-Origins-the-cold-path>).
    let requests: AsyncLimiter
    /// The prefetches' lane (``ChunkCache/prefetch(_:version:range:progress:)``): at most half the depth of
    /// extents under way, so a fetch always finds a request free.
    let prefetches: AsyncLimiter
    /// Chunks being downloaded: every fetch that needs one waits for the same download.
    let chunks = Flights<ChunkKey>()
    /// Items being discovered: concurrent first fetches of an item make one request.
    let discoveries = Flights<String>()
    /// Downloads running, some of them storing bytes a fetch already returned.
    let downloads = RunningCount()
    private let readAheads = Mutex<[String: ReadAhead]>([:])

    /// The domain settings a session is made from; a change makes a new session.
    struct Settings: Sendable, Equatable {
        let origin: Origin
        let headers: [OriginHeader]
        let pipelineDepth: Int
        let readAhead: Int64
        let policy: OriginPolicy
    }

    /// Items whose read-ahead is remembered; beyond it the state of an arbitrary one is dropped.
    static let rememberedItems = 4096

    init(domain: String, settings: Settings) throws(CacheError) {
        self.domain = domain
        self.settings = settings
        requests = AsyncLimiter(limit: settings.pipelineDepth)
        prefetches = AsyncLimiter(limit: settings.pipelineDepth / 2)
        origin = try Self.endpoint(domain: domain, settings).makeOrigin()
    }

    /// Records a fetch of `range` of `item` and returns what to download ahead of it (``ReadAhead``), and the
    /// item's new state when the fetch moved it. `stored` gives the state to start from when this session
    /// has none (what another process left); it is read outside the lock.
    func readAhead(_ item: String, fetching range: Range<Int64>, size: Int64, stored: () -> ReadAhead?) -> (
        ahead: Range<Int64>?, moved: ReadAhead?
    ) {
        if let step = readAheadIfRemembered(item, fetching: range, size: size) { return step }
        let start = stored()
        return readAheads.withLock { states in
            if states[item] == nil {
                if states.count >= Self.rememberedItems { states.remove(at: states.startIndex) }
                states[item] = start ?? ReadAhead()
            }
            return advance(&states, item, fetching: range, size: size)
        }
    }

    /// As ``readAhead(_:fetching:size:stored:)`` when this session remembers `item`; nil, with nothing
    /// recorded, when it does not (the caller then reads the stored position, blocking work).
    func readAheadIfRemembered(_ item: String, fetching range: Range<Int64>, size: Int64)
        -> (ahead: Range<Int64>?, moved: ReadAhead?)?
    {
        readAheads.withLock { states in
            guard states[item] != nil else { return nil }
            return advance(&states, item, fetching: range, size: size)
        }
    }

    /// Moves the remembered state of `item` past a fetch of `range`: what to download ahead, and the new
    /// state when it moved.
    private func advance(_ states: inout [String: ReadAhead], _ item: String, fetching range: Range<Int64>, size: Int64)
        -> (ahead: Range<Int64>?, moved: ReadAhead?)
    {
        let before = states[item]
        let ahead = states[item]?.advance(fetching: range, size: size, limit: settings.readAhead)
        let after = states[item]
        return (ahead, after == before ? nil : after)
    }

    private static func endpoint(domain: String, _ settings: Settings) throws(CacheError) -> OriginEndpoint {
        let headers = settings.headers.map { (name: $0.name, value: $0.value) }
        let origin = settings.origin
        switch origin.kind {
        case .http:
            return OriginEndpoint(location: .http(base: origin.url), headers: headers, policy: settings.policy)
        case .s3:
            let credentials: AWSCredentials?
            do {
                credentials = try AWSCredentials.load()
            } catch {
                throw CacheError(
                    .notAuthenticated,
                    "the AWS credentials for the origin of domain \"\(domain)\" cannot be read: \(error)")
            }
            return OriginEndpoint(
                location: .s3(
                    endpoint: origin.endpoint ?? "", region: origin.region ?? "", bucket: origin.bucket ?? "",
                    prefix: origin.prefix ?? ""),
                headers: headers, credentials: credentials, policy: settings.policy)
        }
    }
}

/// The origin sessions of one open store, by domain.
final class OriginSessions: Sendable {
    private let sessions = Mutex<[String: OriginSession]>([:])
    /// Timeouts and retries of origin requests: <doc:Contract#10-Origins-the-cold-path>'s, shortened by tests.
    let policy = Mutex(OriginPolicy())

    /// Waits until no download of this store runs: everything a fetch returned before it was stored is stored.
    func waitUntilStored() async {
        for session in sessions.withLock({ Array($0.values) }) { await session.downloads.waitForZero() }
    }

    /// What the sessions have under way, a line each: downloads running, requests holding and waiting for a
    /// permit, chunks and discoveries in flight. For a test that waits too long to say what it waits for.
    var pendingWork: [String] {
        sessions.withLock { Array($0.values) }.map { session in
            let requests = session.requests.usage
            let prefetches = session.prefetches.usage
            return
                "\(session.domain): \(session.downloads.current) downloads, requests \(requests.held) held \(requests.waiting) waiting, prefetches \(prefetches.held) held \(prefetches.waiting) waiting, \(session.chunks.count) chunks and \(session.discoveries.count) discoveries in flight"
        }
    }

    /// The session of `domain` made by an earlier fill, if any.
    func existing(_ domain: String) -> OriginSession? { sessions.withLock { $0[domain] } }

    /// Domains whose session a warm fetch's read-ahead could not make (S3 credentials missing, say), until a
    /// fill makes one: a warm fetch must not read the domain and the credentials again each time.
    private let unavailableForReadAhead = Mutex<Set<String>>([])

    /// The session a warm fetch's read-ahead uses: the existing one, else one `make` makes, unless making one
    /// failed before.
    func sessionForReadAhead(_ domain: String, make: () throws -> OriginSession) -> OriginSession? {
        if let existing = existing(domain) { return existing }
        guard !unavailableForReadAhead.withLock({ $0.contains(domain) }) else { return nil }
        do {
            return try make()
        } catch {
            unavailableForReadAhead.withLock { _ = $0.insert(domain) }
            return nil
        }
    }

    /// The existing session of `domain` when `record` configures it as it is; nil when there is none or its
    /// settings changed. Makes nothing: no blocking work.
    func existing(_ domain: String, matching record: DomainRecord) -> OriginSession? {
        guard let settings = settings(of: record), let existing = existing(domain), existing.settings == settings
        else { return nil }
        return existing
    }

    private func settings(of record: DomainRecord) -> OriginSession.Settings? {
        guard let origin = record.origin else { return nil }
        var policy = policy.withLock { $0 }
        if let readTimeout = record.readTimeout { policy.idleTimeout = .seconds(readTimeout) }
        return OriginSession.Settings(
            origin: origin, headers: record.headers, pipelineDepth: record.pipelineDepth, readAhead: record.readAhead,
            policy: policy)
    }

    /// The session of `domain` as `record` configures it, made anew when its settings changed.
    func session(for domain: String, _ record: DomainRecord) throws(CacheError) -> OriginSession? {
        guard let settings = settings(of: record) else { return nil }
        if let existing = existing(domain), existing.settings == settings { return existing }
        let session = try OriginSession(domain: domain, settings: settings)
        unavailableForReadAhead.withLock { _ = $0.remove(domain) }
        return sessions.withLock { sessions in
            if let existing = sessions[domain], existing.settings == settings { return existing }
            sessions[domain] = session
            return session
        }
    }
}

/// A chunk of one manifest: what a chunk flight downloads.
struct ChunkKey: Hashable, Sendable {
    let manifestID: UInt64
    let index: Int64
}
