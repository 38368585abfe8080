import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// How HTTP requests are spelled and answers read.
struct HTTPDialect: OriginDialect {
    let base: String
    let headers: [(name: String, value: String)]
    let host: String

    init(base: String, headers: [(name: String, value: String)]) {
        self.base = base
        self.headers = headers
        host =
            URLComponents(string: base).map {
                "\($0.scheme ?? "http")://\($0.host ?? "?")\($0.port.map { ":\($0)" } ?? "")"
            } ?? "the origin"
    }

    /// The URL of `item` (or of a folder ending in `/`): each segment percent-encoded once.
    func url(_ item: String) -> String {
        base
            + item.split(separator: "/", omittingEmptySubsequences: false).map { SigV4Signer.percentEncode(String($0)) }
            .joined(separator: "/")
    }

    func request(_ item: String, range: Range<Int64>?, version: String?) throws -> HTTPClientRequest {
        request(item, ranges: range.map { [$0] } ?? [], version: version)
    }

    /// A `GET` of every range of `ranges` in one `Range` header (`bytes=a-b,c-d`), or a `HEAD` without any,
    /// pinned to `version` with `If-Match`.
    func request(_ item: String, ranges: [Range<Int64>], version: String?) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url(item))
        request.method = ranges.isEmpty ? .HEAD : .GET
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !ranges.isEmpty { request.headers.add(name: "Range", value: RangeList.header(ranges)) }
        if let version { request.headers.add(name: "If-Match", value: version) }
        return request
    }

    /// Only a strong ETag can go in `If-Match`.
    func pins(_ version: String) -> Bool { version.hasPrefix("\"") }

    /// An HTTP server serves its current bytes only: an ETag or a date names no version it keeps.
    func addresses(_ version: String) -> Bool { false }

    func version(of headers: HTTPHeaders, size: Int64) -> String {
        if let etag = headers.first(name: "etag"), etag.hasPrefix("\"") { return etag }
        return RemoteObject.fallbackVersion(lastModified: headers.first(name: "last-modified") ?? "no date", size: size)
    }

    func namesVersion(_ headers: HTTPHeaders) -> Bool {
        headers.contains(name: "etag") || headers.contains(name: "last-modified")
    }

    func failure(status: Int, body: String, item: String) -> OriginFailure? {
        commonFailure(status: status, item: item)
    }
}
