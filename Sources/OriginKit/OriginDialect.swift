import AsyncHTTPClient
import NIOHTTP1

/// How one kind of origin spells its requests and reads its answers: plain HTTP or S3.
protocol OriginDialect: Sendable {
    /// Where requests go, for messages: scheme, host and port, never a credential.
    var host: String { get }

    /// The request for `item`: a `GET` of `range`, or a `HEAD` when `range` is nil, pinned to `version` when
    /// the dialect can pin it on the wire (HTTP `If-Match`; S3 `versionId` or `If-Match`).
    func request(_ item: String, range: Range<Int64>?, version: String?) throws -> HTTPClientRequest

    /// Whether a request for `version` carries the pin, so the server answers 412 when it moved on; when it
    /// cannot (a Last-Modified version), the reader compares the version of each response instead.
    func pins(_ version: String) -> Bool

    /// Whether a request for `version` is answered with that version even after the item moved on (an S3
    /// `VersionId` names a version the bucket keeps), rather than refused (an ETag in `If-Match` only checks
    /// that the current version is still the one named).
    func addresses(_ version: String) -> Bool

    /// The version a response names, for an item of `size` bytes.
    func version(of headers: HTTPHeaders, size: Int64) -> String

    /// Whether a response names a version at all (an error response may carry neither ETag nor date).
    func namesVersion(_ headers: HTTPHeaders) -> Bool

    /// The failure a final (non-retried) status means, given the start of its body; nil for a status to
    /// retry (5xx, 429).
    func failure(status: Int, body: String, item: String) -> OriginFailure?
}

extension OriginDialect {
    /// The statuses every dialect reads alike (CONTRACT §10); nil for 5xx and 429, which are retried.
    func commonFailure(status: Int, item: String) -> OriginFailure? {
        switch status {
        case 401: return .unauthorized
        case 403: return .forbidden
        case 404, 410: return .notFound(status: status)
        case 412: return .versionChanged(current: nil)
        case 429, 500...599: return nil
        default: return .invalidResponse(detail: "\(host) answered \(status) for \(item)")
        }
    }
}
