import Foundation
import SigV4

/// Why AWS credentials could not be read. The message names the file and profile, never a secret.
public struct AWSCredentialsError: Error, CustomStringConvertible {
    public let description: String
}

extension AWSCredentials {
    /// The credentials S3 origins sign with (CONTRACT §10): `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN` from the environment, else the profile `AWS_PROFILE` (default `default`) of
    /// `~/.aws/credentials` (or `AWS_SHARED_CREDENTIALS_FILE`); nil when there are none (requests go unsigned).
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        home: URL = URL(fileURLWithPath: NSHomeDirectory())
    ) throws -> AWSCredentials? {
        if let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty {
            guard let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
                throw AWSCredentialsError(
                    description: "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both")
            }
            return AWSCredentials(
                accessKeyID: key, secretAccessKey: secret,
                sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
        }
        let path = environment["AWS_SHARED_CREDENTIALS_FILE"] ?? home.appendingPathComponent(".aws/credentials").path
        let named = environment["AWS_PROFILE"]
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            if let named {
                throw AWSCredentialsError(
                    description:
                        "AWS_PROFILE is \"\(named)\" but \(path) cannot be read; create it or unset AWS_PROFILE")
            }
            return nil
        }
        let profile = named ?? "default"
        var section: String?
        var values: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard section == profile, let equals = line.firstIndex(of: "=") else { continue }
            values[line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()] = line[
                line.index(after: equals)...
            ].trimmingCharacters(in: .whitespaces)
        }
        guard let key = values["aws_access_key_id"], let secret = values["aws_secret_access_key"] else {
            if named == nil && values.isEmpty { return nil }
            throw AWSCredentialsError(
                description:
                    "profile \"\(profile)\" of \(path) lacks aws_access_key_id or aws_secret_access_key; add them or pick another AWS_PROFILE"
            )
        }
        return AWSCredentials(accessKeyID: key, secretAccessKey: secret, sessionToken: values["aws_session_token"])
    }
}
