import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// An S3 bucket (AWS, Ceph RGW, MinIO, moto) as an origin (CONTRACT §10): path-style requests signed with
/// SigV4, ranged `GetObject` pinned by `versionId` (versioned buckets) or `If-Match` (the ETag otherwise),
/// `HeadObject`, and `ListObjectsV2` over every page.
struct S3Origin: ReadingOrigin {
    let dialect: S3Dialect
    let reader: RangedReader

    init(
        endpoint: String, region: String, bucket: String, prefix: String, headers: [(name: String, value: String)],
        credentials: AWSCredentials?, policy: OriginPolicy
    ) {
        dialect = S3Dialect(
            endpoint: endpoint, bucket: bucket, prefix: prefix, headers: headers,
            signer: credentials.map { SigV4Signer(credentials: $0, region: region) })
        reader = RangedReader(client: HTTPClients.client(for: policy), dialect: dialect, policy: policy)
    }

    /// The keys below the prefix, a `ListObjectsV2` page at a time.
    func list(page: @Sendable ([RemoteEntry]) async throws -> Void) async throws {
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", dialect.prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try await reader.executeListing(
                { dialect.signed(method: .GET, path: "/" + dialect.bucket, query: query, extra: []) }, "the listing")
            let body = try await RangedReader.prefix(of: response.body, limit: 16 << 20)
            guard response.status == .ok else {
                throw dialect.failure(status: Int(response.status.code), body: body, item: "the listing")
                    ?? OriginFailure.transient(
                        detail: "\(dialect.host) answered \(response.status.code) for the listing")
            }
            let listing = S3Listing(xml: body)
            try await page(
                listing.entries.compactMap { entry in
                    guard entry.key.hasPrefix(dialect.prefix), entry.key.count > dialect.prefix.count else {
                        return nil
                    }
                    return RemoteEntry(
                        item: String(entry.key.dropFirst(dialect.prefix.count)), size: entry.size, version: entry.etag,
                        modificationDate: entry.lastModified)
                })
            let next = listing.isTruncated ? listing.nextToken : nil
            // A server that hands back the token it was given would list the same page forever.
            guard next == nil || next != token else {
                throw OriginFailure.invalidResponse(
                    detail:
                        "\(dialect.host) answered the listing with the continuation token it was sent; the origin's listing cannot go on"
                )
            }
            token = next
        } while token != nil
    }
}

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

/// The few elements of S3's XML that origins read: a `ListObjectsV2` page and an error's `Code`.
struct S3Listing {
    struct Entry {
        let key: String
        let size: Int64
        let etag: String?
        let lastModified: Double?
    }
    var entries: [Entry] = []
    var isTruncated = false
    var nextToken: String?

    init(xml: String) {
        for contents in Self.elements("Contents", in: xml) {
            // A size that is no count of bytes drops the entry: sizes from the origin become file lengths.
            guard let key = Self.elements("Key", in: contents).first, !key.isEmpty,
                let size = Int64(Self.elements("Size", in: contents).first ?? ""), size >= 0
            else { continue }
            entries.append(
                Entry(
                    key: key, size: size,
                    etag: Self.elements("ETag", in: contents).first,
                    lastModified: Self.elements("LastModified", in: contents).first.flatMap(Self.date(from:))))
        }
        isTruncated = Self.elements("IsTruncated", in: xml).first == "true"
        nextToken = Self.elements("NextContinuationToken", in: xml).first
    }

    static func errorCode(in xml: String) -> String? { elements("Code", in: xml).first }

    /// Parses `LastModified` (ISO 8601, with or without fractional seconds).
    static func date(from text: String) -> Double? {
        OriginDates.seconds(text) { text in
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: text)
        }
    }

    /// The decoded text of every `<name>…</name>` in `xml`, in order.
    static func elements(_ name: String, in xml: String) -> [String] {
        var found: [String] = []
        var rest = xml[...]
        while let open = rest.range(of: "<\(name)>"),
            let close = rest.range(of: "</\(name)>", range: open.upperBound..<rest.endIndex)
        {
            found.append(decodeEntities(String(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        return found
    }

    static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&#34;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }
}
