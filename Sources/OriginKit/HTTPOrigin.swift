import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// An HTTP(S) server as an origin (CONTRACT §10): `Range` GETs pinned with `If-Match`, versions from the
/// strong `ETag` (else `Last-Modified` and size), listings from nginx's `autoindex_format json`.
struct HTTPOrigin: ReadingOrigin {
    let dialect: HTTPDialect
    let reader: RangedReader

    init(base: String, headers: [(name: String, value: String)], policy: OriginPolicy) {
        dialect = HTTPDialect(base: base, headers: headers)
        reader = RangedReader(client: HTTPClients.client(for: policy), dialect: dialect, policy: policy)
    }

    func list(page: @Sendable ([RemoteEntry]) async throws -> Void) async throws {
        try await list(folder: "", page: page)
    }

    /// Lists one folder's files as a page, then walks its subfolders.
    private func list(folder: String, page: @Sendable ([RemoteEntry]) async throws -> Void) async throws {
        var request = HTTPClientRequest(url: dialect.url(folder))
        for (name, value) in dialect.headers { request.headers.add(name: name, value: value) }
        let response = try await reader.executeListing({ request }, folder)
        guard response.status == .ok else {
            throw dialect.failure(status: Int(response.status.code), body: "", item: folder.isEmpty ? "/" : folder)
                ?? OriginFailure.transient(
                    detail: "\(dialect.host) answered \(response.status.code) for the listing of \(folder)")
        }
        var body = try await response.body.collect(upTo: 64 << 20)
        let bytes = body.readBytes(length: body.readableBytes) ?? []
        guard let (files, folders) = NginxListing.entries(json: bytes, folder: folder) else {
            // Markup, whatever its Content-Type: nginx types a page by the types its config lists.
            let isMarkup = bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } == UInt8(ascii: "<")
            throw OriginFailure.invalidResponse(
                detail: Self.noListing(host: dialect.host, folder: folder, page: isMarkup))
        }
        if !files.isEmpty { try await page(files) }
        for subfolder in folders { try await list(folder: subfolder, page: page) }
    }
}

extension HTTPOrigin {
    /// What a sync needs of nginx, as the Origins article gives it: the JSON listing of every folder, and an
    /// `index` that names no real file, else nginx serves a folder's index.html in place of its listing.
    static let listingSettings = "`autoindex on; autoindex_format json;` and `index .chunkcache-no-index;`"

    /// Why `folder` gave no listing, and the nginx settings to change; `page` when an HTML page came instead.
    static func noListing(host: String, folder: String, page: Bool) -> String {
        let folder = folder.isEmpty ? "/" : folder
        guard page else {
            return "\(host) gave no JSON listing for \(folder); the origin must be nginx with \(listingSettings)"
        }
        return "\(host) served an HTML page for \(folder), not its JSON listing: nginx serves a folder's index.html "
            + "in place of its listing unless its `index` directive names no real file; where nginx serves this "
            + "origin, set \(listingSettings) (a name no file has)"
    }
}

/// An origin whose reads and probes are a ``RangedReader``'s: HTTP and S3 differ in their dialect only.
protocol ReadingOrigin: RemoteOrigin {
    var reader: RangedReader { get }
}

extension ReadingOrigin {
    func read(
        _ item: String, range: Range<Int64>, version: String?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (Int64, RemoteBytes) async throws -> Void
    ) async throws {
        try await reader.read(item, range: range, version: version, object: object, deliver: deliver)
    }

    func head(_ item: String, version: String?) async throws -> RemoteObject {
        try await reader.head(item, version: version)
    }

    func addresses(_ version: String) -> Bool { reader.dialect.addresses(version) }

    func warmUp(probing item: String?) async { await reader.warmUp(probing: item) }
}

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
        var request = HTTPClientRequest(url: url(item))
        request.method = range == nil ? .HEAD : .GET
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let range {
            request.headers.add(
                name: "Range", value: "bytes=\(range.lowerBound)-\(max(range.lowerBound, range.upperBound - 1))")
        }
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

extension OriginEndpoint {
    /// The origin client for this endpoint.
    public func makeOrigin() -> any RemoteOrigin {
        switch location {
        case .http(let base):
            return HTTPOrigin(base: base, headers: headers, policy: policy)
        case .s3(let endpoint, let region, let bucket, let prefix):
            return S3Origin(
                endpoint: endpoint, region: region, bucket: bucket, prefix: prefix, headers: headers,
                credentials: credentials, policy: policy)
        }
    }
}

/// What nginx's JSON autoindex tells of a file beyond its name and size.
enum NginxListing {
    /// The strong ETag nginx sends for a static file: its modification time and size in hex
    /// (`ngx_http_set_etag`). A server that spells its ETags otherwise is caught by the fetch's `If-Match`,
    /// which then learns the real version.
    static func etag(modified: Double, size: Int64) -> String {
        "\"\(String(UInt64(max(0, modified)), radix: 16))-\(String(UInt64(max(0, size)), radix: 16))\""
    }

    /// The files and subfolders (each ending in `/`) of one folder's `autoindex_format json` listing, or nil
    /// when `json` is not a JSON array.
    ///
    /// Entries whose name could leave the folder or alias it (empty, `.`, `..`, holding `/` or NUL) are
    /// dropped: a subfolder named `.` would list the same folder forever. A negative or absent size is
    /// dropped too: sizes from the origin become file lengths.
    static func entries(json: [UInt8], folder: String) -> (files: [RemoteEntry], folders: [String])? {
        guard let listing = try? JSONSerialization.jsonObject(with: Data(json)) as? [Any] else { return nil }
        var files: [RemoteEntry] = []
        var folders: [String] = []
        for case let entry as [String: Any] in listing {
            guard let name = entry["name"] as? String, let type = entry["type"] as? String,
                !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0")
            else { continue }
            if type == "directory" {
                folders.append(folder + name + "/")
            } else if type == "file" {
                // Through Double: NSNumber.int64Value traps on a size past Int64 (`1e30`).
                guard let number = entry["size"] as? NSNumber,
                    let size = Int64(exactly: number.doubleValue.rounded(.down)), size >= 0
                else { continue }
                let modified = (entry["mtime"] as? String).flatMap(date(from:))
                files.append(
                    RemoteEntry(
                        item: folder + name, size: size, version: modified.map { etag(modified: $0, size: size) },
                        modificationDate: modified))
            }
        }
        return (files, folders)
    }

    /// Parses autoindex's `mtime`, an RFC 1123 date (`Wed, 25 Nov 2026 02:27:53 GMT`).
    static func date(from text: String) -> Double? {
        OriginDates.seconds(text) { text in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            return formatter.date(from: text)
        }
    }
}
