import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// How S3 requests are spelled, signed and answered.
struct S3Dialect: OriginDialect {
    let endpoint: String
    let bucket: String
    let prefix: String
    let headers: [(name: String, value: String)]
    let signer: SigV4Signer?
    var host: String { endpoint }

    func request(_ item: String, range: Range<Int64>?, version: String?) throws -> HTTPClientRequest {
        let key = prefix + item
        let path =
            "/" + bucket + "/"
            + key.split(separator: "/", omittingEmptySubsequences: false).map { SigV4Signer.percentEncode(String($0)) }
            .joined(separator: "/")
        var query: [(String, String)] = []
        var extra: [(String, String)] = []
        if let range {
            extra.append(("range", "bytes=\(range.lowerBound)-\(max(range.lowerBound, range.upperBound - 1))"))
        }
        if let version {
            if version.hasPrefix("\"") {
                extra.append(("if-match", version))
            } else {
                query.append(("versionId", version))
            }
        }
        return signed(method: range == nil ? .HEAD : .GET, path: path, query: query, extra: extra)
    }

    /// A request to `path` (already percent-encoded) with `query` (not encoded), signed when there are
    /// credentials.
    func signed(method: HTTPMethod, path: String, query: [(String, String)], extra: [(String, String)])
        -> HTTPClientRequest
    {
        let queryString = query.map { SigV4Signer.percentEncode($0.0) + "=" + SigV4Signer.percentEncode($0.1) }.joined(
            separator: "&")
        var request = HTTPClientRequest(url: endpoint + path + (queryString.isEmpty ? "" : "?" + queryString))
        request.method = method
        var signedHeaders = extra
        signedHeaders.append(
            ("host", URLComponents(string: endpoint).map { ($0.host ?? "") + ($0.port.map { ":\($0)" } ?? "") } ?? ""))
        if let signer {
            signedHeaders += signer.signingHeaders(
                method: method.rawValue, encodedPath: path, query: query, headers: signedHeaders, date: Date())
        }
        for (name, value) in signedHeaders where name != "host" { request.headers.add(name: name, value: value) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return request
    }

    /// A versionId pins on the wire (`versionId=`), an ETag too (`If-Match`).
    func pins(_ version: String) -> Bool { true }

    /// A versioned bucket keeps every version by its `VersionId`; an ETag (quoted) only checks the current one.
    func addresses(_ version: String) -> Bool { !version.hasPrefix("\"") }

    func version(of headers: HTTPHeaders, size: Int64) -> String {
        if let id = headers.first(name: "x-amz-version-id"), !id.isEmpty, id != "null" { return id }
        if let etag = headers.first(name: "etag"), !etag.isEmpty { return etag }
        return RemoteObject.fallbackVersion(lastModified: headers.first(name: "last-modified") ?? "no date", size: size)
    }

    func namesVersion(_ headers: HTTPHeaders) -> Bool {
        headers.contains(name: "etag") || headers.contains(name: "x-amz-version-id")
    }

    /// S3's error codes say what a 404 or 400 means: a missing key is gone (C2), a missing version moved on,
    /// a missing bucket is a misconfigured domain, not a gone item.
    func failure(status: Int, body: String, item: String) -> OriginFailure? {
        switch S3Listing.errorCode(in: body) {
        case "NoSuchKey": return .notFound(status: status)
        case "NoSuchVersion": return .versionChanged(current: nil)
        case "InvalidArgument" where status == 400: return .versionChanged(current: nil)
        case "NoSuchBucket":
            return .invalidResponse(detail: "\(host) has no bucket \(bucket); check the domain's origin")
        default: return commonFailure(status: status, item: item)
        }
    }
}
