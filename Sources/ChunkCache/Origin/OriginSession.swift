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
