import Crypto
import Foundation

/// Credentials for AWS Signature Version 4. The secret and the session token never appear in a
/// description, a log line or an error message.
public struct AWSCredentials: Sendable, Hashable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// The `X-Amz-Security-Token` of temporary credentials, if any.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// Names the key id only: the secret stays out of every printed form.
    public var description: String { "AWSCredentials(\(accessKeyID), secret redacted)" }
}
