import NIOCore
import SigV4

/// Timeouts and retries of origin requests (CONTRACT §10). Tests shorten them; nothing else should.
public struct OriginPolicy: Sendable, Hashable {
    /// Connecting (TCP and TLS) gives up after this.
    public var connectTimeout: Duration = .seconds(5)
    /// A response that sends nothing for this long is abandoned.
    public var idleTimeout: Duration = .seconds(30)
    /// Tries of one request, the first included.
    public var attempts = 3
    /// The first retry waits about this long; each next one twice as long, with jitter.
    public var backoff: Duration = .milliseconds(200)
    /// A `Retry-After` longer than this is capped to it.
    public var maxRetryAfter: Duration = .seconds(10)

    public init() {}
}
