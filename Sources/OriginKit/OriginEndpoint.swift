import NIOCore
import SigV4

/// Where an origin is and how to authenticate to it.
public struct OriginEndpoint: Sendable {
    public enum Location: Sendable, Hashable {
        /// `http[s]://host[:port]/base/`, ending with `/`.
        case http(base: String)
        /// Path-style S3: `endpoint` is `http[s]://host[:port]`; `prefix` is empty or ends with `/`.
        case s3(endpoint: String, region: String, bucket: String, prefix: String)
    }

    public var location: Location
    /// Sent with every request (`Authorization: Bearer …` and the like). Values are credentials.
    public var headers: [(name: String, value: String)]
    /// For S3 only: what requests are signed with; nil sends them unsigned.
    public var credentials: AWSCredentials?
    public var policy: OriginPolicy

    public init(
        location: Location, headers: [(name: String, value: String)] = [], credentials: AWSCredentials? = nil,
        policy: OriginPolicy = OriginPolicy()
    ) {
        self.location = location
        self.headers = headers
        self.credentials = credentials
        self.policy = policy
    }
}
