import NIOCore
import SigV4

/// Why an origin request failed, after the retries the failure allows. The engine maps each to the
/// `CacheError` code CONTRACT §10 names.
public enum OriginFailure: Error, Sendable, Hashable {
    /// 404 or 410 for the item itself: the only answer that means the item is gone (C2).
    case notFound(status: Int)
    /// 401.
    case unauthorized
    /// 403.
    case forbidden
    /// The item's bytes are no longer the version asked for: a 412 to `If-Match`, or a response whose
    /// version differs. `current` is what the origin holds now, when the response told it.
    case versionChanged(current: RemoteObject?)
    /// Connection refused, name not resolved, TLS failure, connect timeout or idle timeout. `detail` names
    /// the host and what happened, never a credential or a signed URL.
    case unreachable(detail: String)
    /// 5xx, 429, a reset or a short body, still failing after the last try.
    case transient(detail: String)
    /// A response that breaks HTTP or S3 (a `Content-Range` for other bytes, a size that changed within one
    /// version, an unparseable listing).
    case invalidResponse(detail: String)
}
