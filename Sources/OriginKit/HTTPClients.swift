import AsyncHTTPClient
import NIOCore
import Synchronization

/// The process's HTTP clients, one per set of timeouts (in practice one: tests shorten timeouts), each with a
/// keep-alive connection pool of up to 128 connections per host, enough for the deepest `--pipeline-depth`.
///
/// Clients live as long as the process and are never shut down: origins are used until exit, and a client
/// shut down under a request in flight fails it.
enum HTTPClients {
    private struct Key: Hashable {
        let connect: Duration
        let idle: Duration
    }

    private static let clients = Mutex<[Key: HTTPClient]>([:])

    /// Connections kept per host: the deepest pipeline a domain may have.
    static let connectionsPerHost = 128

    static func client(for policy: OriginPolicy) -> HTTPClient {
        let key = Key(connect: policy.connectTimeout, idle: policy.idleTimeout)
        return clients.withLock { clients in
            if let client = clients[key] { return client }
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .follow(max: 5, allowCycles: false),
                timeout: .init(connect: TimeAmount(policy.connectTimeout), read: TimeAmount(policy.idleTimeout)),
                decompression: .disabled)
            configuration.connectionPool = .init(
                idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost)
            // A refused connection is `serverUnreachable` at once, not after the connect timeout's worth of retries.
            configuration.connectionPool.retryConnectionEstablishment = false
            configuration.httpVersion = .http1Only
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[key] = client
            return client
        }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
