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

    /// True until the server once answers a request of several ranges with the whole item.
    var readsManyRanges: Bool { reader.manyRanges.holds }

    func read(
        _ item: String, ranges: [Range<Int64>], version: String?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (_ offset: Int64, _ bytes: RemoteBytes) async throws -> Void
    ) async throws {
        try await reader.read(
            item, ranges: ranges, version: version, request: { dialect.request(item, ranges: $0, version: $1) },
            object: object, deliver: deliver)
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
