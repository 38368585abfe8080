import Foundation
import OriginKit
import SigV4
import Synchronization

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
