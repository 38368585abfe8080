import Crypto
import Foundation

/// Signs HTTP requests with AWS Signature Version 4 (`AWS4-HMAC-SHA256`), header-based, as S3 and every
/// S3-compatible service (Ceph RGW, MinIO, moto) check them.
///
/// The algorithm is AWS's "Create a signed AWS API request": a canonical request (method, URI, sorted query,
/// sorted lower-cased headers, signed header names, payload hash), a string to sign over its SHA-256 and the
/// credential scope `DATE/REGION/SERVICE/aws4_request`, and an HMAC-SHA256 chain that derives the signing
/// key from the secret. S3 signs the path as sent: each segment is percent-encoded once, never twice.
public struct SigV4Signer: Sendable {
    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    /// The payload hash of a request without a body (SHA-256 of nothing).
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The headers to add to a request so it is signed: `x-amz-date`, `x-amz-content-sha256` (S3 wants it
    /// on every request), `x-amz-security-token` with temporary credentials, and `authorization`.
    ///
    /// - Parameters:
    ///   - method: The HTTP method, e.g. `GET`.
    ///   - encodedPath: The path exactly as it goes on the wire, each segment percent-encoded
    ///     (``percentEncode(_:)``), starting with `/`.
    ///   - query: Query parameters, not encoded: the signer encodes and sorts them.
    ///   - headers: The request's headers; `host` must be among them. Every one given is signed.
    ///   - payloadHash: Hex SHA-256 of the body, ``emptyPayloadHash`` for none, or `UNSIGNED-PAYLOAD`.
    ///   - date: The signing time; servers refuse one more than 15 minutes off.
    public func signingHeaders(
        method: String, encodedPath: String, query: [(String, String)], headers: [(String, String)],
        payloadHash: String = SigV4Signer.emptyPayloadHash, date: Date
    ) -> [(String, String)] {
        var added: [(String, String)] = [("x-amz-date", Self.timestamp(date))]
        if service == "s3" { added.append(("x-amz-content-sha256", payloadHash)) }
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        let authorization = self.authorization(
            method: method, encodedPath: encodedPath, query: query, headers: headers + added,
            payloadHash: payloadHash, date: date)
        return added + [("authorization", authorization)]
    }

    /// The `Authorization` header value for a request whose `headers` already hold `x-amz-date` (and every
    /// other header to sign).
    public func authorization(
        method: String, encodedPath: String, query: [(String, String)], headers: [(String, String)],
        payloadHash: String, date: Date
    ) -> String {
        let canonical = canonicalRequest(
            method: method, encodedPath: encodedPath, query: query, headers: headers,
            payloadHash: payloadHash)
        let scope = "\(Self.day(date))/\(region)/\(service)/aws4_request"
        let toSign = stringToSign(canonicalRequest: canonical.text, scope: scope, date: date)
        let signature = hex(
            HMAC<SHA256>.authenticationCode(for: Data(toSign.utf8), using: signingKey(day: Self.day(date))))
        return
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(canonical.signedHeaders), Signature=\(signature)"
    }

    /// The canonical request and the `SignedHeaders` list it names.
    func canonicalRequest(
        method: String, encodedPath: String, query: [(String, String)], headers: [(String, String)], payloadHash: String
    ) -> (text: String, signedHeaders: String) {
        let encoded: [(name: String, value: String)] = query.map {
            (Self.percentEncode($0.0), Self.percentEncode($0.1))
        }
        let sorted = encoded.sorted { $0.name == $1.name ? $0.value < $1.value : $0.name < $1.name }
        let canonicalQuery = sorted.map { $0.name + "=" + $0.value }.joined(separator: "&")
        // Same-named headers join with commas in the order given; values are trimmed and inner runs of
        // spaces folded, as the specification asks.
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            merged[name.lowercased(), default: []].append(Self.foldSpaces(value))
        }
        let names = merged.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let path = encodedPath.isEmpty ? "/" : encodedPath
        let text = [method, path, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].joined(separator: "\n")
        return (text, signedHeaders)
    }

    func stringToSign(canonicalRequest: String, scope: String, date: Date) -> String {
        let digest = hex(SHA256.hash(data: Data(canonicalRequest.utf8)))
        return "AWS4-HMAC-SHA256\n\(Self.timestamp(date))\n\(scope)\n\(digest)"
    }

    /// `kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), service), "aws4_request")`.
    func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters (`A-Z a-z 0-9 - _ . ~`), as SigV4
    /// wants for query keys and values and for each segment of an S3 path.
    public static func percentEncode(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// A `/`-separated key encoded segment by segment, for the path of an S3 request.
    public static func encodePath(_ key: String) -> String {
        key.split(separator: "/", omittingEmptySubsequences: false).map { percentEncode(String($0)) }.joined(
            separator: "/")
    }

    private static func foldSpaces(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
    }

    /// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
    static func timestamp(_ date: Date) -> String {
        let c = utc(date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    /// `YYYYMMDD` in UTC.
    static func day(_ date: Date) -> String { String(timestamp(date).prefix(8)) }

    private static func utc(_ date: Date) -> DateComponents {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
    }
}

private func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

private func hex<D: Digest>(_ digest: D) -> String { hex(Array(digest)) }

private func hex(_ code: HashedAuthenticationCode<SHA256>) -> String { hex(Array(code)) }
